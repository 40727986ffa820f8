"""`lc0-rocm eval`: evaluate one position with a network and print policy, WDL, Q and moves-left.

With --json it prints exactly one JSON object, the contract every backend is compared through:
  {"policy": {uci_move: probability, ...}, "wdl": [w, d, l] or null, "q": q, "mlh": m or null}
policy = softmax at temperature 1 (exact exp) of the raw logits over the legal moves, keys in UCI
notation (castling e1g1), sorted by decreasing probability; wdl/q/mlh from the side to move's view.
Without --json a short human-readable summary is printed instead. The numbers are
`lc0_rocm.api.Evaluator.evaluate(...).to_json()`: this command is the API on one position.
"""

from __future__ import annotations

import argparse

from ..backends.factory import BACKEND_NAMES, DEFAULT_BACKEND


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", "-w", metavar="FILE", help="network file (default: the bundled net)")
    parser.add_argument("--backend", "-b", default=DEFAULT_BACKEND,
                        help=f"{', '.join(BACKEND_NAMES)} (default {DEFAULT_BACKEND}: the GPU if usable, else cpu)")
    parser.add_argument("--backend-opts", "-o", default="", metavar="OPTS",
                        help="lc0-style backend options, e.g. policy_head=optimistic,value_head=q")
    parser.add_argument("--fen", default=None, help="position FEN (default: the start position)")
    parser.add_argument("--moves", nargs="*", default=[], metavar="MOVE", help="UCI moves played from the FEN")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="moves shown in the summary (default 10)")
    parser.add_argument("--json", action="store_true", help="print the JSON contract instead of a summary")


def _summary(result: dict, top: int) -> str:
    lines = []
    if result["wdl"] is not None:
        w, d, l = result["wdl"]
        lines.append(f"WDL   {w:.4f} {d:.4f} {l:.4f}   (win/draw/loss for the side to move)")
    lines.append(f"Q     {result['q']:+.5f}")
    if result["mlh"] is not None:
        lines.append(f"MLH   {result['mlh']:.2f} plies left")
    policy = result["policy"]
    if not policy:
        lines.append("no legal moves")
    else:
        lines.append(f"policy ({len(policy)} legal moves, temperature 1), top {min(top, len(policy))}:")
        for move, p in list(policy.items())[:top]:
            lines.append(f"  {move:<6} {100 * p:7.3f}%")
    return "\n".join(lines)


def run(args) -> int:
    import json

    from ..api import open_backend
    from ..encoding.position import parse_position

    parse_position(args.fen, args.moves)  # reject a bad position before loading a large net
    with open_backend(args.weights, args.backend, args.backend_opts) as evaluator:
        result = evaluator.evaluate((args.fen, args.moves)).to_json()
    if args.json:
        print(json.dumps(result))
    else:
        print(_summary(result, args.top))
    return 0
