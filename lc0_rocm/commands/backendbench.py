"""`lc0-rocm backendbench`: throughput of a backend against batch size, printed as lc0 master prints it.

Same flags as `lc0 backendbench` (--weights, --backend, --backend-opts, --batches, --start-batch-size,
--max-batch-size, --batch-step, --fen, --clippy, --header-only-once) plus --csv, --json and --plot
files. The table goes to stdout; what was loaded and how time is measured goes to stderr.
"""

from __future__ import annotations

import argparse
import sys

STARTPOS_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def _one_line_error(message: str):
    """Argument errors of this sub-command: one line and exit code 1, like every other user error."""
    print(f"lc0-rocm: error: backendbench: {message}", file=sys.stderr)
    sys.exit(1)


def _bool(value: str) -> bool:
    """lc0's boolean flags also take a value: --clippy, --clippy=true, --clippy=false."""
    v = value.lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def configure(parser: argparse.ArgumentParser) -> None:
    from ..default_net import default_net_path

    parser.error = _one_line_error  # type: ignore[method-assign]
    parser.add_argument("-w", "--weights", default=None, help=f"network file (default: {default_net_path()})")
    parser.add_argument("-b", "--backend", default="auto", help="cpu, rocm, rocm-fp16, rocm-auto or auto (default: auto)")
    parser.add_argument("-o", "--backend-opts", default="", help='backend options, "key=value,key=value"')
    parser.add_argument("--batches", type=int, default=100, help="batches per batch size (default: 100)")
    parser.add_argument("--start-batch-size", type=int, default=1, help="first batch size (default: 1)")
    parser.add_argument("--max-batch-size", type=int, default=256, help="largest batch size, at most 1024 (default: 256)")
    parser.add_argument("--batch-step", type=int, default=1, help="batch size step, at most 256 (default: 1)")
    parser.add_argument("--fen", default=STARTPOS_FEN, help="position to evaluate (default: the start position)")
    parser.add_argument("--clippy", nargs="?", const=True, default=False, type=_bool, metavar="true|false",
                        help="recommend minibatch sizes, as lc0's Clippy does")
    parser.add_argument("--header-only-once", nargs="?", const=True, default=False, type=_bool, metavar="true|false",
                        help="print the table header only once")
    parser.add_argument("--csv", metavar="FILE", help="also write the table as a CSV file")
    parser.add_argument("--json", metavar="FILE", help="also write every measurement as JSON")
    parser.add_argument("--plot", metavar="FILE.png", help="also plot nps and ms per batch (needs lc0-rocm[plot])")


def _check_output_path(flag: str, path: str) -> None:
    from pathlib import Path

    from ..errors import Lc0RocmError

    parent = Path(path).expanduser().resolve().parent
    if not parent.is_dir():
        raise Lc0RocmError(f"{flag}: directory {parent} does not exist")


def run(args) -> int:
    import os
    import platform
    from pathlib import Path

    import numpy as np

    from ..backends.factory import create_backend, head_options
    from ..bench import report
    from ..bench.backendbench import BenchConfig, encode_fen, run_bench, timer_kind
    from ..bench.clippy import Clippy
    from ..default_net import default_net_path
    from ..errors import Lc0RocmError
    from ..net.loader import load_net

    config = BenchConfig(args.batches, args.start_batch_size, args.max_batch_size, args.batch_step)
    try:
        config.validate()
    except ValueError as e:
        raise Lc0RocmError(str(e)) from None
    for flag, path in (("--csv", args.csv), ("--json", args.json), ("--plot", args.plot)):
        if path:
            _check_output_path(flag, path)
    if args.plot:
        report.require_matplotlib()  # fail now, not after the whole run

    weights = Path(args.weights).expanduser() if args.weights else default_net_path()
    net = load_net(weights, **head_options(args.backend_opts))
    position = encode_fen(args.fen, net.input_format)
    backend = create_backend(args.backend, net, args.backend_opts)
    timer = timer_kind(backend)
    print(
        f"backendbench: net {weights}, backend {backend.name}"
        f"{' (' + args.backend_opts + ')' if args.backend_opts else ''}, "
        f"{'device' if timer == 'device' else 'wall-clock'} timing, {args.batches} batches per size "
        f"(first excluded), warm-up 2 x {args.max_batch_size}",
        file=sys.stderr,
    )

    clippy = Clippy() if args.clippy else None

    def on_size(s):
        if report.header_due(s.size, config.start_batch_size, config.batch_step, args.header_only_once):
            print(report.HEADER)
        print(report.format_row(s), flush=True)
        if clippy is not None:
            clippy.update(s.size, s.mean_nps)
            if clippy.interim_due():
                print(clippy.box(final=False), flush=True)

    try:
        warm, stats = run_bench(backend, position, config, on_size)
    finally:
        backend.close()
    if clippy is not None:
        print(clippy.box(final=True), flush=True)

    if args.csv:
        report.write_csv(args.csv, stats)
    if args.json:
        info = {
            "tool": "lc0-rocm backendbench",
            "weights": str(weights),
            "backend": backend.name,
            "backend_opts": args.backend_opts,
            "fen": args.fen,
            "timer": timer,
            "batches": config.batches,
            "start_batch_size": config.start_batch_size,
            "max_batch_size": config.max_batch_size,
            "batch_step": config.batch_step,
            "host": {
                "python": platform.python_version(),
                "numpy": np.__version__,
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
            },
        }
        report.write_json(args.json, info, warm, stats, clippy.recommendations if clippy else None)
    if args.plot:
        report.write_plot(args.plot, stats, title=f"{weights.name} — backend {backend.name} ({timer} timing)")
    return 0
