#!/usr/bin/env python3
"""How fast the engine is ready: process start to `uciok`, to `readyok`, and a first `go` with a clock.

Role: the start-up benchmark (docs/perf.md, "First start and second start"); timings are never unit
tests. Each run starts a fresh engine process (`python -m lc0_rocm.cli` of this checkout, or
`--engine CMD`) and times, from the process start:
  - `uciok` (median over --repeat runs, beside a bare `python -c pass` started the same way, so the
    figure is what the engine adds to the interpreter's own start);
  - `readyok` after `isready` (the net loads; a warm cache also loads the compiled search);
  - with --cold, every run gets an empty cache (LC0_ROCM_CACHE in a fresh temporary folder): then
    also `go wtime W btime W` sent right after `readyok` (bestmove time, and whether the answer was
    the policy move of a search still compiling), and the time until the background compile is
    loaded (the engine's stderr note).

  python3 tools/startup_bench.py --repeat 5
  python3 tools/startup_bench.py --cold --repeat 3 --wtime 60000

Prints one line per run and the medians; --json FILE writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _reader(stream, q: queue.Queue, t0: float) -> None:
    for line in stream:
        q.put((time.perf_counter() - t0, line.rstrip("\n")))
    q.put((time.perf_counter() - t0, None))


def _until(q: queue.Queue, prefix: str, timeout: float) -> tuple[float, str]:
    end = time.monotonic() + timeout
    while True:
        t, line = q.get(timeout=max(0.01, end - time.monotonic()))
        if line is None:
            raise RuntimeError(f"engine output ended before {prefix!r}")
        if line.startswith(prefix):
            return t, line


def bare_start(runs: int) -> float:
    """Median seconds of `python -c pass` from start to exit."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def one_run(cmd: list[str], cold: bool, wtime: int, timeout: float) -> dict:
    env = dict(os.environ)
    tmp = None
    if cold:
        tmp = tempfile.TemporaryDirectory(prefix="lc0-rocm-cold-")
        env.pop("NUMBA_CACHE_DIR", None)
        env["LC0_ROCM_CACHE"] = tmp.name
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         bufsize=1, cwd=REPO, env=env)
    out: queue.Queue = queue.Queue()
    err: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(p.stdout, out, t0), daemon=True).start()
    threading.Thread(target=_reader, args=(p.stderr, err, t0), daemon=True).start()

    def send(line: str) -> None:
        p.stdin.write(line + "\n")
        p.stdin.flush()

    row = {}
    try:
        send("uci")
        row["uciok_s"] = _until(out, "uciok", timeout)[0]
        send("isready")
        row["readyok_s"] = _until(out, "readyok", timeout)[0]
        if cold:
            send("position startpos")
            t_go = time.perf_counter() - t0
            send(f"go wtime {wtime} btime {wtime}")
            lines = []
            while True:
                t, line = _until(out, "", timeout)
                lines.append(line)
                if line.startswith("bestmove"):
                    break
            row["first_go_s"] = t - t_go
            row["first_go_policy_move"] = any("policy move" in x for x in lines)
            row["compiled_s"] = _until(err, "lc0-rocm: the search is compiled", 900)[0]
        send("quit")
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if tmp is not None:
            # the background compile runs in its own session: wait for it to let go of the folder
            for _ in range(600):
                if not any(Path(tmp.name).rglob("compile.lock")) or _unlocked(Path(tmp.name)):
                    break
                time.sleep(1)
            tmp.cleanup()
    return row


def _unlocked(folder: Path) -> bool:
    import fcntl

    for lock in folder.rglob("compile.lock"):
        with open(lock, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default=f"{shlex.quote(sys.executable)} -m lc0_rocm.cli",
                    help="the engine's command line (default: this checkout's lc0_rocm.cli)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="an empty compile cache for every run")
    ap.add_argument("--wtime", type=int, default=60000, help="with --cold: the first go's clock (ms)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--json", help="write the runs and medians to this file")
    args = ap.parse_args()
    cmd = shlex.split(args.engine)
    bare = bare_start(args.repeat)
    rows = []
    for i in range(args.repeat):
        row = one_run(cmd, args.cold, args.wtime, args.timeout)
        rows.append(row)
        print(f"run {i + 1}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                           for k, v in row.items()), flush=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if isinstance(rows[0][k], float)}
    med["uciok_over_bare_ms"] = (med["uciok_s"] - bare) * 1000
    print(f"bare interpreter {bare * 1000:.0f} ms; medians: "
          + ", ".join(f"{k} {v:.3f}" for k, v in med.items()))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": rows, "median": med, "bare_s": bare}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
