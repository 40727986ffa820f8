"""`lc0-rocm analyse INPUT…`: evaluate the positions of game collections (PGN, EPD, FEN lists, `-`).

Raw mode (default) gives each position the network's policy top-k, WDL, Q, moves-left and the played
move's rank and probability; `--nodes N` searches each position instead (best move, PV, score). Both
give the played move's loss in expected score, a judgement (NAG, lichess's thresholds by default) and
lichess's move accuracy; each game gets lichess's accuracy per side. Outputs: `--jsonl`, `--csv`,
`--pgn-out` (annotated), `--summary` (one row per game), `--plot DIR` (one PNG per game), `--html FILE`
(one page to look at); JSONL on stdout without a file of records. `--resume` continues an interrupted
run; `--ray ADDRESS` runs on a Ray cluster. The package `lc0_rocm.analyse` does the work; the record
schema is `lc0_rocm.analyse.records`'s docstring.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from ..analyse.reader import FORMATS
from ..analyse.records import THRESHOLDS
from ..backends.factory import BACKEND_NAMES, DEFAULT_BACKEND

if TYPE_CHECKING:
    from ..analyse.request import AnalyseRequest


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="PGN, EPD or FEN-list files; - for stdin")
    parser.add_argument("--format", default="auto", choices=FORMATS,
                        help="input format (default: from the extension, else the first line)")
    net = parser.add_argument_group("net and backend (as eval)")
    net.add_argument("--weights", "-w", metavar="FILE", help="network file (default: the bundled net)")
    net.add_argument("--backend", "-b", default=DEFAULT_BACKEND,
                     help=f"{', '.join(BACKEND_NAMES)} (default {DEFAULT_BACKEND}: the GPU if usable, else cpu)")
    net.add_argument("--backend-opts", "-o", default="", metavar="OPTS",
                     help="lc0-style backend options, e.g. gpus=0,1 (every batch split over two GPUs)")
    sel = parser.add_argument_group("which positions")
    sel.add_argument("--plies", metavar="A-B", help="plies of each game, from 1 (A-B, A-, -B or A)")
    sel.add_argument("--side", default="both", choices=("both", "white", "black"), help="positions of this side to move")
    sel.add_argument("--every", type=int, default=1, metavar="N", help="every Nth of the selected plies")
    sel.add_argument("--max-games", type=int, metavar="N", help="stop after N games")
    how = parser.add_argument_group("how")
    how.add_argument("--nodes", type=int, metavar="N", help="search each position with N nodes (default: raw network)")
    how.add_argument("--top", type=int, default=5, metavar="K", help="raw mode: policy moves per record (0: all; default 5)")
    how.add_argument("--thresholds", default="lichess", choices=tuple(THRESHOLDS),
                     help="judgement thresholds on expected-score loss: lichess ?! 0.05, ? 0.10, ?? 0.15 "
                          "(default); chesscom 0.05, 0.10, 0.20")
    how.add_argument("--inaccuracy", type=float, metavar="L", help="expected-score loss for ?! (overrides --thresholds)")
    how.add_argument("--mistake", type=float, metavar="L", help="loss for ? (overrides --thresholds)")
    how.add_argument("--blunder", type=float, metavar="L", help="loss for ?? and blunder=true (overrides --thresholds)")
    out = parser.add_argument_group("output")
    out.add_argument("--jsonl", metavar="FILE", help="one JSON record per position (- for stdout)")
    out.add_argument("--csv", metavar="FILE", help="the records as CSV")
    out.add_argument("--pgn-out", metavar="FILE", help="the games annotated ([%%eval], [%%wdl], NAGs)")
    out.add_argument("--summary", metavar="FILE",
                     help="one row per game: players, result, lichess accuracy, average loss, ?!/?/?? counts per "
                          "side (.csv, .json or .jsonl)")
    out.add_argument("--plot", metavar="DIR", help="one PNG per game: White's expected score over the moves")
    out.add_argument("--html", metavar="FILE", help="one self-contained page: the games' table, graphs, "
                     "move lists with NAGs and a board")
    out.add_argument("--resume", action="store_true", help="continue an interrupted run with the same outputs")
    out.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="progress line on stderr (default: when stderr is a terminal)")
    run = parser.add_argument_group("throughput and scale")
    run.add_argument("--batch-size", type=int, default=0, metavar="N",
                     help="positions per backend batch (default: the backend's max batch; 256 on the CPU)")
    run.add_argument("--workers", type=int, default=-1, metavar="N",
                     help="worker processes for parsing and formatting (default: 4 per GPU, at most one per "
                          "core less two; none below 4 cores or on the CPU backend)")
    run.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster ('auto', 'ray://host:10001', or 'local')")
    run.add_argument("--ray-actors", type=int, default=0, metavar="N",
                     help="Ray: backend actors (default: one per GPU of the cluster, or 2 on CPUs)")


def build_request(args: argparse.Namespace) -> AnalyseRequest:
    """The run's `AnalyseRequest` from the parsed command line, every value checked (InputError with one
    line on a bad one): the only reader of argparse's namespace for analyse."""
    from ..analyse.reader import InputError, Selection, check_inputs
    from ..analyse.records import Thresholds
    from ..analyse.request import AnalyseRequest, BackendChoice, Inputs, OutputFiles, Scale

    check_inputs(args.inputs)
    if args.inputs.count("-") > 1:
        raise InputError("stdin (-) can be read once")
    selection = Selection.parse(args.plies, args.side, args.every)
    if args.nodes is not None and args.nodes < 1:
        raise InputError(f"--nodes {args.nodes}: expected a positive number")
    if args.batch_size < 0 or args.top < 0 or (args.max_games is not None and args.max_games < 1):
        raise InputError("--batch-size, --top and --max-games cannot be negative (or 0 games)")
    if args.ray_actors < 0 or args.workers < -1:
        raise InputError("--ray-actors and --workers cannot be negative")
    base = THRESHOLDS[args.thresholds]
    thresholds = Thresholds(*(base.__dict__[k] if getattr(args, k) is None else getattr(args, k)
                              for k in ("inaccuracy", "mistake", "blunder")))
    if not 0 < thresholds.inaccuracy <= thresholds.mistake <= thresholds.blunder <= 1:
        raise InputError("expected 0 < --inaccuracy <= --mistake <= --blunder <= 1")
    if args.summary:
        from ..analyse.writers import summary_format

        summary_format(args.summary)
    if args.resume and "-" in args.inputs:
        raise InputError("--resume needs input files (stdin cannot be read again)")
    if args.html and args.ray:
        raise InputError("--html is not available with --ray")
    if args.html and not os.path.isdir(os.path.dirname(os.path.abspath(args.html))):
        raise InputError(f"--html {args.html}: no such folder")
    if args.html and args.resume and args.jsonl in (None, "-"):
        raise InputError("--html with --resume needs --jsonl FILE (the earlier games' records come from it)")
    if args.plot:
        from ..analyse.plot import require_matplotlib

        require_matplotlib()
        try:
            os.makedirs(args.plot, exist_ok=True)
        except OSError as e:
            raise InputError(f"--plot {args.plot}: {e.strerror}") from None
    return AnalyseRequest(
        inputs=Inputs(tuple(args.inputs), args.format),
        outputs=OutputFiles(args.jsonl, args.csv, args.pgn_out, args.summary, args.plot, args.html, args.resume,
                            args.progress),
        backend=BackendChoice(args.weights, args.backend, args.backend_opts, args.batch_size),
        scale=Scale(args.workers, args.ray, args.ray_actors),
        selection=selection, thresholds=thresholds, nodes=args.nodes, top=args.top, max_games=args.max_games,
        signature=_signature(args))


def _signature(args) -> dict:
    """What a resumed run must share with the interrupted one."""
    return {"inputs": [i if i == "-" else os.path.abspath(i) for i in args.inputs], "format": args.format,
            "mode": "search" if args.nodes else "raw", "nodes": args.nodes, "plies": args.plies,
            "side": args.side, "every": args.every, "top": args.top,
            "weights": os.path.abspath(args.weights) if args.weights else None}


def run(args) -> int:
    from ..analyse import driver

    return driver.run(build_request(args))
