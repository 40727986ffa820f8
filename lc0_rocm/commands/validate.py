"""`lc0-rocm validate`: compare a backend with the numpy CPU reference over a set of positions.

Evaluates the first N positions of the built-in suite (`lc0_rocm.validation_positions`), or with
`--pgn FILE` every position along the games of a PGN file (at most `--max-positions`), with the chosen
backend and with the numpy reference: float32 (lc0's CPU precision) for a GPU backend, float64 for the
cpu backend (itself the float32 reference: compared with itself it could only pass; `auto` without a
GPU is the cpu backend), and prints one table: max and mean
|Δ| of the policy probabilities (softmax over the legal moves, temperature 1), the raw logits, W, D, L,
Q and moves-left, the top-1 move agreement and the NaN count. With `--nodes N` the MCTS also searches
every position (that has legal moves) for N nodes with each of the two, under deterministic settings
(fresh tree and NN cache per position, MinibatchSize `--minibatch`, smart pruning off), and the table
gains the share of positions where both searches choose the same move (informational: near-equal
moves may legitimately swap under reduced precision). Limits depend on the backend's precision:

  fp32 (rocm, cpu):       every max |Δ| (probabilities, W, D, L, Q, moves-left) <= 1e-4, no NaN
  fp16 (rocm-fp16/-auto): top-1 agreement >= 99%, mean |ΔQ| <= 0.005, max |ΔQ| <= 0.03, no NaN

Exit status: 0 within limits, 2 outside them (the table marks which), 1 on an error (bad arguments,
unreadable net, no GPU). Progress goes to stderr once the net is loaded (`lc0-rocm: validate: ...`,
a line per stage and one a second at most within it); the table alone goes to stdout.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field

from ..backends.factory import BACKEND_NAMES, DEFAULT_BACKEND

FP32_LIMIT = 1e-4
FP16_TOP1 = 0.99
FP16_Q_MEAN = 0.005
FP16_Q_MAX = 0.03
DEFAULT_POSITIONS = 512
PROGRESS_INTERVAL_S = 1.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", "-w", metavar="FILE", help="network file (default: the bundled net)")
    parser.add_argument("--backend", "-b", default=DEFAULT_BACKEND,
                        help=f"backend to check: {', '.join(BACKEND_NAMES)} (default {DEFAULT_BACKEND})")
    parser.add_argument("--backend-opts", "-o", default="", metavar="OPTS", help="lc0-style backend options")
    parser.add_argument("--positions", "-n", type=int, default=DEFAULT_POSITIONS, metavar="N",
                        help=f"positions from the built-in suite (default {DEFAULT_POSITIONS})")
    parser.add_argument("--batch", type=int, default=256, metavar="N", help="positions per evaluation (default 256)")
    parser.add_argument("--pgn", metavar="FILE", help="positions from real games: every position of every game in FILE")
    parser.add_argument("--max-positions", type=int, metavar="N", help="with --pgn: at most N positions (default all)")
    parser.add_argument("--nodes", type=int, metavar="N",
                        help="also search each position for N nodes with both and compare the best moves")
    parser.add_argument("--minibatch", type=int, default=16, metavar="N",
                        help="with --nodes: the search's MinibatchSize (default 16)")


@dataclass
class Comparison:
    """Differences between a backend's outputs and the reference's over a set of positions."""

    positions: int = 0
    scored: int = 0  # positions with legal moves (policy metrics are over these)
    max_abs: dict = field(default_factory=dict)  # quantity -> max |Δ|
    mean_abs: dict = field(default_factory=dict)  # quantity -> mean |Δ|
    top1: float = 1.0
    nan: int = 0
    search_nodes: int = 0  # --nodes: nodes per search (0: no search comparison)
    search_agree: int = 0  # positions where both searches chose the same move
    search_total: int = 0  # positions searched (those with legal moves)


QUANTITIES = ("policy", "logits", "W", "D", "L", "Q", "MLH")
LABELS = {"policy": "policy (probs)", "logits": "policy (logits)", "W": "W", "D": "D", "L": "L", "Q": "Q",
          "MLH": "moves left"}


def compare(ref, out, legal_indices) -> Comparison:
    """Compare two `NetOutputs` of the same positions; legal_indices[i] = int array of legal-move indices."""
    import numpy as np

    c = Comparison(positions=len(ref))
    nan = 0
    for arr in (out.policy, out.wdl, out.q, out.d, out.mlh):
        if arr is not None:
            nan += int(np.isnan(arr).sum())
    c.nan = nan

    prob_d, logit_d, agree = [], [], []
    for i, idx in enumerate(legal_indices):
        if len(idx) == 0:
            continue
        a = ref.policy[i, idx].astype(np.float64)
        b = out.policy[i, idx].astype(np.float64)
        logit_d.append(np.abs(b - a))
        pa, pb = _softmax(a), _softmax(b)
        prob_d.append(np.abs(pb - pa))
        agree.append(int(np.argmax(a)) == int(np.argmax(b)) if not np.isnan(b).any() else False)
    c.scored = len(agree)
    c.top1 = float(np.mean(agree)) if agree else 1.0

    def put(name, diffs):
        d = np.concatenate([np.ravel(x) for x in diffs]) if diffs else np.zeros(0)
        d = np.where(np.isnan(d), np.inf, d)  # a NaN is as far off as anything can be
        c.max_abs[name] = float(d.max()) if d.size else 0.0
        c.mean_abs[name] = float(d.mean()) if d.size else 0.0

    put("policy", prob_d)
    put("logits", logit_d)
    if ref.wdl is not None and out.wdl is not None:
        for j, name in enumerate("WDL"):
            put(name, [np.abs(out.wdl[:, j].astype(np.float64) - ref.wdl[:, j])])
    put("Q", [np.abs(out.q.astype(np.float64) - ref.q)])
    if ref.mlh is not None and out.mlh is not None:
        put("MLH", [np.abs(out.mlh.astype(np.float64) - ref.mlh)])
    return c


def _softmax(x):
    import numpy as np

    e = np.exp(x - np.max(x))
    return e / e.sum()


def limits(precision: str) -> dict:
    """quantity -> (max limit or None, mean limit or None); plus 'top1' -> minimum agreement."""
    if precision == "fp16":
        return {"Q": (FP16_Q_MAX, FP16_Q_MEAN), "top1": FP16_TOP1}
    return {q: (FP32_LIMIT, None) for q in ("policy", "W", "D", "L", "Q", "MLH")}


def failures(c: Comparison, precision: str) -> list[str]:
    """Human-readable reasons the comparison is outside the limits of `precision` (empty: pass)."""
    lim = limits(precision)
    bad = []
    if c.nan:
        bad.append(f"{c.nan} NaN values")
    for q, (mx, mean) in ((k, v) for k, v in lim.items() if k != "top1"):
        if q not in c.max_abs:
            continue
        if mx is not None and not c.max_abs[q] <= mx:
            bad.append(f"max |Δ{LABELS[q]}| {c.max_abs[q]:.3g} > {mx:g}")
        if mean is not None and not c.mean_abs[q] <= mean:
            bad.append(f"mean |Δ{LABELS[q]}| {c.mean_abs[q]:.3g} > {mean:g}")
    if "top1" in lim and c.top1 < lim["top1"]:
        bad.append(f"top-1 agreement {100 * c.top1:.2f}% < {100 * lim['top1']:.0f}%")
    return bad


def format_table(c: Comparison, precision: str) -> str:
    lim = limits(precision)
    rows = [f"{'quantity':<17}{'max |Δ|':>12}{'mean |Δ|':>12}   limit"]
    for q in QUANTITIES:
        if q not in c.max_abs:
            continue
        mx, mean = lim.get(q, (None, None))
        limit = ", ".join(s for s in ((f"max {mx:g}" if mx is not None else ""),
                                      (f"mean {mean:g}" if mean is not None else "")) if s) or "-"
        rows.append(f"{LABELS[q]:<17}{c.max_abs[q]:>12.3e}{c.mean_abs[q]:>12.3e}   {limit}")
    top1_limit = f">= {100 * lim['top1']:.0f}%" if "top1" in lim else "-"
    rows.append(f"{'top-1 agreement':<17}{100 * c.top1:>11.2f}%{'':>12}   {top1_limit}  ({c.scored} positions)")
    rows.append(f"{'NaN values':<17}{c.nan:>12d}{'':>12}   0")
    if c.search_nodes:
        pct = 100.0 * c.search_agree / c.search_total if c.search_total else 100.0
        rows.append(f"{'search bestmove':<17}{pct:>11.2f}%{'':>12}   -  ({c.search_agree}/{c.search_total} positions, "
                    f"{c.search_nodes} nodes)")
    return "\n".join(rows)


def run(args) -> int:
    import os

    import numpy as np

    from .. import validation_positions
    from ..api import open_backend
    from ..backends.cpu import CpuBackend
    from ..backends.options import bool_option
    from ..default_net import default_net_path
    from ..encoding.planes import encode_positions
    from ..encoding.policy_map import legal_move_indices
    from ..errors import Lc0RocmError

    if args.positions < 1:
        raise Lc0RocmError(f"--positions must be >= 1, got {args.positions}")
    if args.batch < 1:
        raise Lc0RocmError(f"--batch must be >= 1, got {args.batch}")
    if args.nodes is not None and args.nodes < 1:
        raise Lc0RocmError(f"--nodes must be >= 1, got {args.nodes}")
    if args.minibatch < 1:
        raise Lc0RocmError(f"--minibatch must be >= 1, got {args.minibatch}")
    if args.max_positions is not None and not args.pgn:
        raise Lc0RocmError("--max-positions needs --pgn")
    if args.pgn:
        boards = validation_positions.pgn_boards(args.pgn, args.max_positions)
        source = f"{len(boards)} positions from {args.pgn}"
    else:
        boards = validation_positions.boards(args.positions)
        source = f"{len(boards)} positions"
    weights = args.weights or default_net_path()
    evaluator = open_backend(weights, args.backend, args.backend_opts)
    net, backend = evaluator.net, evaluator.backend
    mlh = bool_option(evaluator.options, "mlh", True)
    ref_dtype = np.float64 if backend.name == CpuBackend.name else np.float32  # never the backend itself
    ref_backend = CpuBackend(net, dtype=ref_dtype, mlh=mlh, threads=os.cpu_count())
    progress = Progress(len(boards))
    try:
        planes = encode_positions(boards, net.input_format)
        legal = [legal_move_indices(b, int(t))[1] for b, t in zip(boards, planes.transforms)]
        precision = getattr(backend, "precision", "fp32")
        out = _evaluate(backend, planes, args.batch, progress.stage(f"{backend.name} evaluates"))
        ours = (search_bestmoves(backend, net, boards, args.nodes, args.minibatch,
                                 progress.stage(f"{backend.name} searches {args.nodes} nodes"))
                if args.nodes else None)
    finally:
        evaluator.close()
    ref_name = f"the cpu reference ({np.dtype(ref_dtype).name})"
    ref = _evaluate(ref_backend, planes, args.batch, progress.stage(f"{ref_name} evaluates"))
    theirs = (search_bestmoves(ref_backend, net, boards, args.nodes, args.minibatch,
                               progress.stage(f"{ref_name} searches {args.nodes} nodes"))
              if args.nodes else None)

    c = compare(ref, out, legal)
    if args.nodes:
        pairs = [(a, b) for a, b in zip(ours, theirs) if b is not None]
        c.search_nodes = args.nodes
        c.search_total = len(pairs)
        c.search_agree = sum(a == b for a, b in pairs)
    print(f"validate: {backend.name} ({precision}) vs cpu reference ({np.dtype(ref_dtype).name}), {weights}, {source}")
    print(format_table(c, precision))
    bad = failures(c, precision)
    print("result: PASS" if not bad else "result: FAIL (" + "; ".join(bad) + ")")
    return 0 if not bad else 2


class Progress:
    """validate's progress on stderr: `stage(name)` says a stage starts and returns its `step(done)`,
    which says how many of the positions are done, once a PROGRESS_INTERVAL_S at most (and at the end)."""

    def __init__(self, total: int):
        self.total = total
        self.t0 = time.monotonic()

    def say(self, text: str) -> None:
        print(f"lc0-rocm: validate: {text} ({time.monotonic() - self.t0:.0f} s)", file=sys.stderr, flush=True)

    def stage(self, name: str):
        self.say(f"{name} {self.total} positions")
        last = [time.monotonic()]

        def step(done: int) -> None:
            now = time.monotonic()
            if done >= self.total or now - last[0] >= PROGRESS_INTERVAL_S:
                last[0] = now
                self.say(f"{name}: {done}/{self.total} positions")

        return step


def search_bestmoves(backend, net, boards, nodes: int, minibatch: int, step=lambda done: None) -> list:
    """The move our MCTS chooses after `nodes` nodes from each board (None without legal moves), with
    deterministic settings: a fresh tree and NN cache per position, no smart pruning; `step(done)`
    after each board."""
    from ..encoding.history import History
    from ..search.leaf_evaluator import LeafEvaluator
    from ..search.factory import GamePosition, new_search
    from ..search.limits import SearchLimits
    from ..search.params import params_from_settings

    params = params_from_settings({"MinibatchSize": minibatch, "SmartPruningFactor": 0})
    result = []
    for board in boards:
        if not any(board.generate_legal_moves()):
            result.append(None)
            step(len(result))
            continue
        position = GamePosition(History.from_board(board), [m.uci() for m in board.move_stack],
                                board.root().fen(), board.chess960, board)
        ev = LeafEvaluator(backend, net.input_format)
        try:
            s = new_search(position, ev, params, SearchLimits(nodes=nodes), has_wdl=net.has_wdl,
                           has_mlh=net.has_moves_left)
            s.run()
        finally:
            ev.close()
        if s.error is not None:
            raise s.error
        result.append(s.bestmove)
        step(len(result))
    return result


def _evaluate(backend, planes, batch: int, step=lambda done: None):
    from ..encoding.outputs import NetOutputs

    outs, done = [], 0
    for piece in planes.chunks(batch):
        outs.append(backend.evaluate(piece))
        done += len(outs[-1])
        step(done)
    return NetOutputs.concat(outs)
