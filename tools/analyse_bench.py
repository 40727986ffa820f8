#!/usr/bin/env python3
"""Throughput of `lc0-rocm analyse` (raw mode) against the backend's own nps, same backend, same run.

Writes a PGN of random legal games (python-chess, seeded) with about --positions positions, then:
  1. backendbench nps at --bench-batch (default 256): lc0's way (`lc0_rocm.bench.backendbench`:
     wall clock, a fresh batch encoded every time, evaluated synchronously), median of batches;
  2. for each --configs entry (backend options, e.g. "" for one GPU and "gpus=0,1"):
     `lc0-rocm analyse GAMES.pgn --jsonl OUT` (a subprocess: the real command, its reader, worker
     processes, batches and writer), positions / wall seconds from the first record written
     (the net load and the first batch's compile excluded: "steady") and from the start;
  3. with --host: the host pipeline alone (reading, replay, selection, encoding, records, writing:
     `pipeline.run_raw` in process, its worker processes and an `Outputs` JSONL file) on a stand-in
     backend, `backends.replay.ReplayBackend` answering every batch at once with rows recorded
     from one batch of the cpu backend: the rate the host can feed a GPU with.
and prints each figure and its ratio to backendbench. Each analyse run also prints where its start went
(`start:` on stderr, seconds from the process start: imports, net loaded, backend created, start position
checked, first games prepared, first batch, first record written), the command run through
`traced_cli`; --start-overlap times the net load, the GPU's open and both on two threads (`start_overlap`); `--runs 2` runs each config twice, so that the second run's start is what a user's second
run on the machine pays (numba's, the kernels' and the GEMM tuning's disk caches filled by the first).
With --split: the host's cost per position of
each step of a worker's job (python-chess's reader, the python-chess path's replay, FEN, SAN, histories,
planes and legal moves, the compiled path, then records, judgements, summary and JSONL text), on one
core in this process.

    python3 tools/analyse_bench.py -w t82.pb.gz -b rocm-fp16 --positions 300000 --configs "" "gpus=0,1" --host
    python3 tools/analyse_bench.py --backend cpu --positions 2000 --bench-batches 5   # a quick check
    python3 tools/analyse_bench.py --host-only --positions 20000                      # the host rate only
    python3 tools/analyse_bench.py --split --host-only --positions 10000              # ... and its split
    python3 tools/analyse_bench.py --host-only --workers-sweep 0 2 4 8 16 30         # ... by worker count
    python3 tools/analyse_bench.py -w t82.pb.gz -b random --positions 20000 --configs "" --runs 2  # the start
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def write_games(path: str, positions: int, seed: int = 1, plies: int = 80) -> tuple[int, int]:
    """Random legal games of about `plies` plies until `positions` positions; (games, positions)."""
    import chess
    import chess.pgn

    rng = random.Random(seed)
    games = total = 0
    with open(path, "w") as f:
        while total < positions:
            board = chess.Board()
            n = min(plies, positions - total)
            while board.ply() < n and not board.is_game_over():
                board.push(rng.choice(list(board.legal_moves)))
            if not board.move_stack:
                break
            game = chess.pgn.Game.from_board(board)
            game.headers["Round"] = str(games + 1)
            f.write(str(game) + "\n\n")
            games += 1
            total += len(board.move_stack)
    return games, total


def backend_nps(args) -> float:
    """backendbench's mean nps at --bench-batch on this backend (lc0's timing: encode + evaluate)."""
    from lc0_rocm import validation_positions
    from lc0_rocm.api import open_backend
    from lc0_rocm.bench.backendbench import BatchEncoder, batch_timer, measure_batches
    from lc0_rocm.encoding.history import History

    with open_backend(args.weights, args.backend, args.backend_opts) as ev:
        encoder = BatchEncoder(History.from_board(validation_positions.boards(1)[0]), ev.net.input_format)
        timed = batch_timer(ev.backend, encoder)
        for _ in range(2):
            timed(args.bench_batch)  # warm-up (clocks, graph capture)
        stats = measure_batches(timed, args.bench_batch, args.bench_batches)
        print(f"backend {ev.backend_name}: mean {stats.mean_nps:,.0f} nps, median {stats.median_nps:,.0f}")
        return stats.mean_nps


def warm_compiled() -> None:
    """Compile (or load from numba's disk cache) the move generator and the per-game code the workers
    use, once, so that no timed run pays a machine's first-ever compile."""
    import chess

    from lc0_rocm.analyse.reader import RawGame, Selection
    from lc0_rocm.analyse.work import WorkConfig, legal_codes, prepare
    from lc0_rocm.encoding.history import History

    legal_codes(History.from_board(chess.Board()).last, False, 0)
    prepare(RawGame(0, "", 1, "pgn", "1. e4 e5 *\n"), WorkConfig("raw", Selection(), 1, 5))


def host_split(pgn: str) -> None:
    """Microseconds a position of each step of prepare and finish (one core, no worker process)."""
    import chess
    import numpy as np

    from lc0_rocm.analyse.formats import jsonl_text
    from lc0_rocm.analyse.reader import Selection, read_games
    from lc0_rocm.analyse.records import Thresholds, judge_game
    from lc0_rocm.analyse.summary import game_summary
    from lc0_rocm.analyse.work import FinishConfig, RowOutputs, WorkConfig, finish, legal_codes, parse_game, prepare, raw_records
    from lc0_rocm.encoding.history import History
    from lc0_rocm.encoding.planes import encode_positions

    cost: dict = {}
    clock = time.perf_counter

    def timed(name, fn, *a, **k):
        t = clock()
        r = fn(*a, **k)
        cost[name] = cost.get(name, 0.0) + clock() - t
        return r

    games = timed("  read (reader split)", lambda: [g for g, _ in read_games([pgn])])
    cfg = WorkConfig("raw", Selection(), 1, 5)
    positions, tasks = 0, []
    for g in games:
        board, moves, _, _ = timed("  parse (python-chess read_game)", parse_game, g)

        def replay():
            boards = [board.copy(stack=False)]
            for m in moves:
                boards.append(boards[-1].copy(stack=False))
                boards[-1].push(m)
            return boards
        boards = timed("  python: replay (copy, push)", replay)
        timed("  python: FEN", lambda: [b.fen() for b in boards[:-1]])
        timed("  python: SAN", lambda: [b.san(m) for b, m in zip(boards, moves)])

        def histories():
            h = History.from_board(board.copy(stack=False))
            out = [h]
            for b, m in zip(boards[1:], moves):
                h = h.push(m, b)
                out.append(h)
            return out
        hs = timed("  python: histories", histories)
        planes = timed("  python: planes", encode_positions, hs, 1)
        timed("  python: legal moves, policy indices",
              lambda: [legal_codes(hs[i].last, False, int(planes.transforms[i])) for i in range(len(moves))])
        timed("prepare, python-chess path (all of it, parse included)", prepare, g, cfg, compiled=False)
        tasks.append(timed("prepare, compiled path (all of it, parse included)", prepare, g, cfg))
        positions += len(moves)
    rng = np.random.default_rng(0)
    for t in tasks:
        wdl = rng.dirichlet([1, 1, 1], t.n_rows).astype(np.float32)
        out = RowOutputs(wdl[:, 0] - wdl[:, 2], wdl, rng.uniform(0, 90, t.n_rows).astype(np.float32),
                         rng.normal(size=len(t.gather_col)).astype(np.float32))
        timed("  records, numpy per record (before)", raw_records, t, out, 5, compiled=False)
        recs = timed("  records, compiled (softmax, top-k, dicts)", raw_records, t, out, 5)
        timed("  judgements", judge_game, recs, Thresholds(), "raw")
        timed("  summary", game_summary, recs, dict(t.headers), t.number, len(t.moves))
        timed("  JSONL text", jsonl_text, recs, "raw")
        timed("finish, numpy records (all of it)", finish, t, out, FinishConfig(compiled=False))
        timed("finish, compiled records (all of it)", finish, t, out, FinishConfig())
    print(f"host split, {len(games)} games, {positions} positions, us a position:")
    for name, seconds in cost.items():
        print(f"  {name:56s} {1e6 * seconds / positions:8.1f}")


def host_rate(args, pgn: str, out: str) -> tuple[float, float, int]:
    """(steady, from-the-start positions/s, records) of the host pipeline on the replay stand-in."""
    from types import SimpleNamespace

    import chess

    from lc0_rocm.analyse.sizing import default_workers
    from lc0_rocm.analyse.pipeline import RunConfig, make_pool, run_raw
    from lc0_rocm.analyse.reader import Selection
    from lc0_rocm.analyse.work import FinishConfig, WorkConfig
    from lc0_rocm.analyse.writers import Outputs
    from lc0_rocm.api import open_backend
    from lc0_rocm.backends.replay import RecordingBackend, ReplayBackend
    from lc0_rocm.encoding.history import History
    from lc0_rocm.encoding.planes import encode_positions

    workers = args.workers if args.workers >= 0 else default_workers(args.backend, args.backend_opts)
    with open_backend(args.host_weights, "cpu") as ev:
        rng = random.Random(2)
        hist, board = [], chess.Board()
        for _ in range(64):  # one recorded batch of varied positions, replayed for every batch
            if board.is_game_over():
                board = chess.Board()
            board.push(rng.choice(list(board.legal_moves)))
            hist.append(History.from_board(board.copy()))
        rec = RecordingBackend(ev.backend)
        rec.evaluate(encode_positions(hist, ev.net.input_format))
        replay = ReplayBackend(ev.net, rec.batches, max_batch=args.host_batch)
        t0 = time.monotonic()
        pool = make_pool(workers)
        outputs = Outputs({"jsonl": out}, "raw", {}, note=lambda s: None)
        cfg = RunConfig([pgn], "auto", WorkConfig("raw", Selection(), ev.net.input_format, 5),
                        FinishConfig("raw", 5, frozenset({"jsonl"})), args.host_batch, workers, pool=pool)
        first, first_n, n = None, 0, 0

        def sink(unit, outs):
            nonlocal first, first_n, n
            outputs.write(unit, outs)
            n += sum(go.positions for go in outs)
            if first is None:
                first, first_n = time.monotonic(), n

        run_raw(SimpleNamespace(backend=replay, net=ev.net), cfg, sink)
        outputs.close(complete=True)
        end = time.monotonic()
    print(f"host pipeline: {workers} worker processes, batch {args.host_batch}, {replay.misses} replayed batches")
    steady = (n - first_n) / (end - first) if first and end > first else float("nan")
    return steady, n / (end - t0), n


START_STEPS = ("imports", "net loaded", "backend created", "start position checked", "first games prepared",
               "first batch", "first record written")


def traced_cli(argv: list) -> int:
    """`lc0_rocm.cli.main(argv)` (the real command, in this process) with its start's steps timed: one
    line `start: STEP SECONDS, ...` on stderr at the first record written, seconds from the process start
    (`ANALYSE_BENCH_T0`, the parent's clock just before it started this process). The steps are the
    command's own functions, wrapped: `api.load_for_backend` (net loaded), `api.create_backend` (backend
    created: with several GPUs and the early start, the first one ready), `api._check_start_position`,
    the pipeline's first prepared unit, its first batch handed to the backend, the first `Outputs.write`."""
    t0 = float(os.environ.get("ANALYSE_BENCH_T0", time.time()))
    steps: dict = {}

    def mark(step: str) -> None:
        steps.setdefault(step, time.time() - t0)

    from lc0_rocm import api, cli
    from lc0_rocm.analyse import driver, pipeline, writers

    mark("imports")

    def after(owner, name: str, step: str) -> None:
        fn = getattr(owner, name)

        def timed(*a, **k):
            r = fn(*a, **k)
            mark(step)
            return r
        setattr(owner, name, timed)

    after(api, "load_for_backend", "net loaded")
    after(api, "create_backend", "backend created")
    after(api, "_check_start_position", "start position checked")
    units = pipeline.Stages.units

    def first_units(self):
        for item in units(self):
            mark("first games prepared")
            yield item
    pipeline.Stages.units = first_units
    run_raw = driver.run_raw
    driver.run_raw = lambda ev, cfg, sink: run_raw(ev, cfg, sink, on_batch=lambda n: mark("first batch"))
    write = writers.Outputs.write

    def first_write(self, *a, **k):
        r = write(self, *a, **k)
        if "first record written" not in steps:
            mark("first record written")
            sys.stderr.write("start: " + ", ".join(f"{s} {steps[s]:.2f}" for s in START_STEPS if s in steps) + "\n")
        return r
    writers.Outputs.write = first_write
    code = cli.main(argv)
    # the interpreter's teardown after this (numba's compiled code, a GPU's context) counts in the parent's
    # figures: this line lets it be told apart
    sys.stderr.write(f"done: the command returned {time.time() - t0:.2f} s after the process start\n")
    return code


OVERLAP_SNIPPET = """
import sys, threading, time
from lc0_rocm.api import load_for_backend
from lc0_rocm.backends.factory import gpu_usable
what, weights = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
gpu = threading.Thread(target=gpu_usable) if what == "both" else None
if gpu is not None:
    gpu.start()
if what in ("net", "both"):
    load_for_backend(weights)
if what == "gpu":
    gpu_usable()
if gpu is not None:
    gpu.join()
print(f"{time.perf_counter() - t0:.3f}")
"""


def start_overlap(args, rounds: int = 3) -> None:
    """Whether the GPU's first steps (hip-python imported, the first device opened:
    `backends.factory.gpu_usable`) can run beside the net load on a thread of the same process: the net
    load alone, the device open alone, both together (fresh processes, medians of `rounds`). Both ~ the
    larger of the two: they overlap; ~ their sum: one holds the GIL the other needs (the gzip inflate
    takes it back at every output block; on the 2-core VM a Python-busy thread triples the load)."""
    import statistics

    times: dict = {"net": [], "gpu": [], "both": []}
    for _ in range(rounds):
        for what in times:
            out = subprocess.run([sys.executable, "-c", OVERLAP_SNIPPET, what, args.weights], capture_output=True,
                                 text=True, check=True, cwd=str(Path(__file__).resolve().parent.parent))
            times[what].append(float(out.stdout.split()[-1]))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"start overlap: net load {med['net']:.3f} s, GPU open {med['gpu']:.3f} s, both on two threads "
          f"{med['both']:.3f} s (sum {med['net'] + med['gpu']:.3f}, larger {max(med['net'], med['gpu']):.3f})")


def analyse_nps(args, pgn: str, out: str, opts: str) -> tuple[float, float, int]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--traced-cli", "analyse", pgn, "--jsonl", out,
           "--backend", args.backend, "--no-progress"]
    if args.weights:
        cmd += ["--weights", args.weights]
    if opts:
        cmd += ["--backend-opts", opts]
    cmd += args.analyse_args
    if os.path.exists(out):
        os.remove(out)  # the previous run's file would read as this run's first write
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=dict(os.environ, ANALYSE_BENCH_T0=repr(time.time())))
    first, first_records = None, 0
    while p.poll() is None:
        if first is None and os.path.exists(out) and os.path.getsize(out) > 0:
            first = time.monotonic()
            with open(out) as f:
                first_records = sum(1 for line in f if line.endswith("\n"))
        time.sleep(0.01)
    end = time.monotonic()
    err = p.stderr.read()
    if p.returncode != 0:
        sys.exit(f"analyse failed ({p.returncode}): {err.strip()}")
    sys.stderr.write(err)
    sys.stderr.write(f"exit: the process ended {end - t0:.2f} s after its start\n")
    with open(out) as f:
        records = sum(1 for _ in f)
    steady = (records - first_records) / (end - first) if first and end > first else float("nan")
    return steady, records / (end - t0), records


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--traced-cli"]:
        return traced_cli(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", "-w", help="network file (default: the bundled net)")
    ap.add_argument("--backend", "-b", default="auto")
    ap.add_argument("--backend-opts", "-o", default="", help="backend options of backendbench (one GPU)")
    ap.add_argument("--configs", nargs="*", default=None, metavar="OPTS",
                    help="backend options of each analyse run (default: --backend-opts), e.g. '' 'gpus=0,1'")
    ap.add_argument("--host", action="store_true", help="also measure the host pipeline on the replay stand-in")
    ap.add_argument("--host-only", action="store_true", help="only the host pipeline (no backendbench, no GPU)")
    ap.add_argument("--host-weights", default=None, help="net of the stand-in's recorded batch (default: bundled)")
    ap.add_argument("--split", action="store_true", help="also the host's cost per position of each step")
    ap.add_argument("--host-batch", type=int, default=1024, help="batch size of the host measurement")
    ap.add_argument("--workers", type=int, default=-1, help="host measurement: worker processes (default: analyse's on --backend "
                    "and --backend-opts)")
    ap.add_argument("--workers-sweep", type=int, nargs="+", metavar="N",
                    help="host measurement once per worker count (the curve that sets analyse's default)")
    ap.add_argument("--positions", type=int, default=20000, help="positions in the generated games")
    ap.add_argument("--bench-batch", type=int, default=256, help="backendbench batch size (default 256)")
    ap.add_argument("--bench-batches", type=int, default=50, help="backendbench batches (default 50)")
    ap.add_argument("--runs", type=int, default=1, help="analyse runs of each config (2: the second run's start too)")
    ap.add_argument("--start-overlap", action="store_true",
                    help="also: the net load, the GPU's open and both on two threads, each in a fresh process")
    ap.add_argument("--pgn", help="use this PGN instead of generating one")
    ap.add_argument("--keep", metavar="DIR", help="keep the generated PGN and the JSONL here")
    ap.add_argument("analyse_args", nargs="*", help="extra analyse flags after --, e.g. -- --workers 8")
    args = ap.parse_args(argv)
    work = args.keep or tempfile.mkdtemp(prefix="analyse-bench-")
    os.makedirs(work, exist_ok=True)
    pgn = args.pgn or os.path.join(work, "games.pgn")
    if not args.pgn:
        t0 = time.monotonic()
        games, positions = write_games(pgn, args.positions)
        print(f"wrote {games} random games, {positions} positions, to {pgn} in {time.monotonic() - t0:.1f} s")
    t0 = time.monotonic()
    warm_compiled()
    print(f"compiled move generator and per-game code ready (numba cache) in {time.monotonic() - t0:.1f} s")
    if args.split:
        host_split(pgn)
    if args.start_overlap:
        start_overlap(args)
    raw = None
    if not args.host_only:
        raw = backend_nps(args)
        print(f"backendbench nps at batch {args.bench_batch}: {raw:,.0f}")
        for opts in (args.configs if args.configs is not None else [args.backend_opts]):
            for run in range(1, args.runs + 1):
                steady, overall, records = analyse_nps(args, pgn, os.path.join(work, "out.jsonl"), opts)
                print(f"analyse -o '{opts}' (run {run}): {records} records; {steady:,.0f} positions/s after the "
                      f"first write, {overall:,.0f} from the start; ratio to backendbench {steady / raw:.3f} "
                      f"(steady), {overall / raw:.3f} (from the start)", flush=True)
    if args.host or args.host_only:
        for workers in args.workers_sweep or [args.workers]:
            args.workers = workers
            steady, overall, records = host_rate(args, pgn, os.path.join(work, "host.jsonl"))
            ratio = f"; {steady / raw:.2f}x backendbench" if raw else ""
            print(f"host pipeline (replay stand-in backend): {records} records; {steady:,.0f} positions/s steady, "
                  f"{overall:,.0f} from the start{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
