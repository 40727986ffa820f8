"""`lc0-rocm backendbench`: throughput of a backend against batch size, printed as lc0 prints it.

Same flags as `lc0 backendbench` (--weights, --backend, --backend-opts, --batches, --start-batch-size,
--max-batch-size, --batch-step, --fen, --clippy, and master's --header-only-once) plus --table,
--device-time and --csv, --json and --plot files. stdout has lc0 v0.32.1's line per batch size
("Benchmark batch size N with inference average time T ms - throughput X nps.", `bench.report`), or
with --table lc0 master's statistics table; what was loaded, how time is measured and how long the
run will take (estimated from the warm-up) go to stderr.

Sizes: lc0's defaults (100 batches of every size 1..256) unless given. On the cpu backend, when none
of --batches, --max-batch-size and --batch-step is given, they are chosen from one probe batch to
finish in about a minute (`bench.backendbench.fit_config`; lc0's defaults take hours on a CPU), and
the choice is said on stderr.

Timing is lc0's by default: the wall clock around each batch, encoding the position into every row
of the batch included, as lc0 does (`bench.backendbench`). A backend that times itself on the device
(the GPU) adds its device time per batch as an extra last column ("device ms"); --device-time makes
the device time the table's timing and the wall clock the extra column.
"""

from __future__ import annotations

import argparse
import sys

from ..backends.factory import BACKEND_NAMES, DEFAULT_BACKEND


def _one_line_error(message: str):
    """Argument errors of this sub-command: one line and exit code 1, like every other user error."""
    print(f"lc0-rocm: error: backendbench: {message}", file=sys.stderr)
    sys.exit(1)


def _bool(value: str) -> bool:
    """lc0's boolean flags also take a value: --clippy, --clippy=true, --clippy=false (values.py)."""
    from ..values import BadValue, parse_bool

    try:
        return parse_bool(value)
    except BadValue as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def configure(parser: argparse.ArgumentParser) -> None:
    from ..default_net import default_net_path

    parser.error = _one_line_error  # type: ignore[method-assign]
    parser.add_argument("-w", "--weights", default=None, help=f"network file (default: {default_net_path()})")
    parser.add_argument("-b", "--backend", default=DEFAULT_BACKEND,
                        help=f"{', '.join(BACKEND_NAMES)} (default: {DEFAULT_BACKEND})")
    parser.add_argument("-o", "--backend-opts", default="", help='backend options, "key=value,key=value"')
    parser.add_argument("--batches", type=int, default=None,
                        help="batches per batch size (default: 100; cpu: fitted to about a minute)")
    parser.add_argument("--start-batch-size", type=int, default=1, help="first batch size (default: 1)")
    parser.add_argument("--max-batch-size", type=int, default=None,
                        help="largest batch size, at most 1024 (default: 256; cpu: fitted to about a minute)")
    parser.add_argument("--batch-step", type=int, default=None,
                        help="batch size step, at most 256 (default: 1; cpu: fitted to about a minute)")
    parser.add_argument("--fen", default=None, help="position to evaluate (default: the start position)")
    parser.add_argument("--clippy", nargs="?", const=True, default=False, type=_bool, metavar="true|false",
                        help="recommend minibatch sizes, as lc0's Clippy does")
    parser.add_argument("--table", nargs="?", const=True, default=False, type=_bool, metavar="true|false",
                        help="print lc0 master's statistics table (mean/median/min/max nps, sdev, cv, first batch) "
                             "instead of lc0 v0.32.1's lines")
    parser.add_argument("--header-only-once", nargs="?", const=True, default=False, type=_bool, metavar="true|false",
                        help="with --table: print the table header only once")
    parser.add_argument("--device-time", nargs="?", const=True, default=False, type=_bool, metavar="true|false",
                        help="time batches by the backend's device events (GPU backends) instead of lc0's wall clock "
                             "around encoding + evaluation; the wall clock becomes the extra column")
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

    from ..api import open_backend
    from ..bench import report
    from ..bench.backendbench import (BatchEncoder, BenchConfig, estimate_seconds, has_device_timer, position_history,
                                      run_bench, timer_kind)
    from ..bench.clippy import Clippy
    from ..default_net import default_net_path
    from ..encoding.history import STARTPOS_FEN
    from ..errors import Lc0RocmError

    lc0_sizes = (args.batches, args.max_batch_size, args.batch_step)
    config = BenchConfig(100 if args.batches is None else args.batches, args.start_batch_size,
                         256 if args.max_batch_size is None else args.max_batch_size,
                         1 if args.batch_step is None else args.batch_step)
    try:
        config.validate()
    except ValueError as e:
        raise Lc0RocmError(str(e)) from None
    for flag, path in (("--csv", args.csv), ("--json", args.json), ("--plot", args.plot)):
        if path:
            _check_output_path(flag, path)
    if args.plot:
        report.require_matplotlib()  # fail now, not after the whole run
    fen = STARTPOS_FEN if args.fen is None else args.fen
    position = position_history(fen)  # a bad FEN fails before the net is loaded

    weights = Path(args.weights).expanduser() if args.weights else default_net_path()
    evaluator = open_backend(weights, args.backend, args.backend_opts)
    backend = evaluator.backend
    if args.device_time and not has_device_timer(backend):
        evaluator.close()
        raise Lc0RocmError(f"--device-time: backend {backend.name} does not time itself on a device")
    try:
        encoder = BatchEncoder(position, backend.net.input_format)
        if backend.name == "cpu" and lc0_sizes == (None, None, None):
            config = _fit_to_cpu(backend, encoder, config.start_batch_size)
    except BaseException:
        evaluator.close()
        raise
    timer = timer_kind(backend, "device" if args.device_time else "wall")
    extra = ("wall" if timer == "device" else "device") if has_device_timer(backend) else None
    timing = ("device time per batch (uploads, compute, downloads)" if timer == "device"
              else "wall-clock timing around encoding + evaluation, as lc0")
    print(
        f"backendbench: net {weights}, backend {backend.name}"
        f"{' (' + args.backend_opts + ')' if args.backend_opts else ''}, {timing}"
        f"{f'; extra column: {extra} ms per batch' if extra and args.table else ''}, {config.batches} batches per "
        f"size{' (first excluded)' if args.table else ''}, warm-up 2 x {config.max_batch_size}",
        file=sys.stderr,
    )

    def on_warm(warm):
        eta = estimate_seconds(config, min(warm) / config.max_batch_size, warm_up=False)
        print(f"backendbench: {len(config.sizes())} batch sizes x {config.batches} batches: at least {_duration(eta)} "
              f"to go (estimated from the warm-up batches)", file=sys.stderr, flush=True)

    clippy = Clippy() if args.clippy else None

    def on_size(s):
        if args.table:
            if report.header_due(s.size, config.start_batch_size, config.batch_step, args.header_only_once):
                print(report.header(s.extra_kind))
            print(report.format_row(s), flush=True)
        else:
            print(report.v032_line(s), flush=True)
        if clippy is not None:
            clippy.update(s.size, s.mean_nps if args.table else report.v032_nps(s))
            if clippy.interim_due():
                print(clippy.box(final=False), flush=True)

    try:
        warm, stats = run_bench(backend, position, config, on_size, primary=timer, encoder=encoder, on_warm=on_warm)
    finally:
        evaluator.close()
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
            "fen": fen,
            "timer": timer,
            "extra_timer": extra,
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


def _fit_to_cpu(backend, encoder, start: int):
    """lc0's sizes take hours on a CPU: sizes that take about a minute here, from one probe batch of 16
    (after one that loads the encoder and warms the caches); said on stderr."""
    from ..bench.backendbench import BenchConfig, batch_timer, estimate_seconds, fit_config

    timed = batch_timer(backend, encoder)
    timed(16)
    per_position = timed(16).wall / 16
    config = fit_config(per_position)
    if start != 1:
        config = BenchConfig(config.batches, min(start, config.max_batch_size), config.max_batch_size,
                             config.batch_step)
    lc0_default = estimate_seconds(BenchConfig(), per_position)
    print(f"backendbench: cpu backend without --batches/--max-batch-size/--batch-step: --batches {config.batches} "
          f"--start-batch-size {config.start_batch_size} --max-batch-size {config.max_batch_size} --batch-step "
          f"{config.batch_step} (about a minute here; lc0's defaults would take about {_duration(lc0_default)})",
          file=sys.stderr, flush=True)
    return config


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
