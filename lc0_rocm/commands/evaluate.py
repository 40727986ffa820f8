"""`lc0-rocm eval`: evaluate one position with a network and print policy, WDL, Q and moves-left.

With --json it prints exactly one JSON object, the contract every backend is compared through:
  {"policy": {uci_move: probability, ...}, "wdl": [w, d, l] or null, "q": q, "mlh": m or null}
policy = softmax at temperature 1 (exact exp) of the raw logits over the legal moves, keys in UCI
notation (castling e1g1), sorted by decreasing probability; wdl/q/mlh from the side to move's view.
Without --json a short human-readable summary is printed instead.
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", "-w", metavar="FILE", help="network file (default: the bundled net)")
    parser.add_argument("--backend", "-b", default="auto", help="cpu, auto, rocm, rocm-fp16, rocm-auto (default auto)")
    parser.add_argument("--backend-opts", "-o", default="", metavar="OPTS",
                        help="lc0-style backend options, e.g. policy_head=optimistic,value_head=q")
    parser.add_argument("--fen", default=None, help="position FEN (default: the start position)")
    parser.add_argument("--moves", nargs="*", default=[], metavar="MOVE", help="UCI moves played from the FEN")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="moves shown in the summary (default 10)")
    parser.add_argument("--json", action="store_true", help="print the JSON contract instead of a summary")


def evaluate_position(backend, fen, moves) -> dict:
    """The JSON-contract dict for one position evaluated by `backend`."""
    from ..encoding.legal_policy import legal_policy
    from ..encoding.planes import encode_positions
    from ..encoding.position import parse_position

    history = parse_position(fen, moves)
    planes = encode_positions([history], backend.net.input_format)
    out = backend.evaluate(planes)
    probs = legal_policy(history.board, out.policy[0], transform=int(planes.transforms[0]), temperature=1.0,
                         use_fast_exp=False)
    ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0].uci()))
    return {
        "policy": {move.uci(): float(p) for move, p in ranked},
        "wdl": [float(v) for v in out.wdl[0]] if out.wdl is not None else None,
        "q": float(out.q[0]),
        "mlh": float(out.mlh[0]) if out.mlh is not None else None,
    }


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

    from ..backends.factory import create_backend, head_options, parse_backend_options
    from ..default_net import default_net_path
    from ..encoding.position import parse_position
    from ..net.loader import load_net

    parse_position(args.fen, args.moves)  # reject a bad position before loading a large net
    opts = parse_backend_options(args.backend_opts)
    net = load_net(args.weights or default_net_path(), **head_options(opts))
    backend = create_backend(args.backend, net, args.backend_opts)
    try:
        result = evaluate_position(backend, args.fen, args.moves)
    finally:
        backend.close()
    if args.json:
        print(json.dumps(result))
    else:
        print(_summary(result, args.top))
    return 0
