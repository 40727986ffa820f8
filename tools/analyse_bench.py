#!/usr/bin/env python3
"""Throughput of `lc0-rocm analyse` (raw mode) against the backend's own nps, same backend, same run.

Writes a PGN of random legal games (python-chess, seeded) with about --positions positions, then:
  1. backendbench nps at --bench-batch (default 256): lc0's way (`lc0_rocm.bench.backendbench`:
     wall clock, a fresh batch encoded every time, evaluated synchronously), median of batches;
  2. `lc0-rocm analyse GAMES.pgn --jsonl OUT` (a subprocess: the real command, its reader, worker
     processes, batches and writer), positions / wall seconds from the first record written
     (the net load and the first batch's compile excluded) and from the start;
and prints both and the ratio. The issue's target on the H100: ratio >= 0.90 with a BT4-shape net.

    python3 tools/analyse_bench.py --weights /tmp/bt4.pb.gz --backend rocm-fp16 --positions 200000
    python3 tools/analyse_bench.py --backend cpu --positions 2000 --bench-batches 5   # a quick check
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


def analyse_nps(args, pgn: str, out: str) -> tuple[float, float, int]:
    cmd = [sys.executable, "-m", "lc0_rocm.cli", "analyse", pgn, "--jsonl", out, "--backend", args.backend,
           "--no-progress"]
    if args.weights:
        cmd += ["--weights", args.weights]
    if args.backend_opts:
        cmd += ["--backend-opts", args.backend_opts]
    cmd += args.analyse_args
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
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
    with open(out) as f:
        records = sum(1 for _ in f)
    steady = (records - first_records) / (end - first) if first and end > first else float("nan")
    return steady, records / (end - t0), records


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", "-w", help="network file (default: the bundled net)")
    ap.add_argument("--backend", "-b", default="auto")
    ap.add_argument("--backend-opts", "-o", default="")
    ap.add_argument("--positions", type=int, default=20000, help="positions in the generated games")
    ap.add_argument("--bench-batch", type=int, default=256, help="backendbench batch size (default 256)")
    ap.add_argument("--bench-batches", type=int, default=50, help="backendbench batches (default 50)")
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
    raw = backend_nps(args)
    print(f"backendbench nps at batch {args.bench_batch}: {raw:,.0f}")
    steady, overall, records = analyse_nps(args, pgn, os.path.join(work, "out.jsonl"))
    print(f"analyse: {records} records; {steady:,.0f} positions/s after the first write, {overall:,.0f} from the start")
    print(f"ratio analyse / backendbench: {steady / raw:.3f} (steady), {overall / raw:.3f} (from the start)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
