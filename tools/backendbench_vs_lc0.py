"""lc0-rocm's backendbench beside lc0's own, same nets, same card, same run, wall clock as lc0 times.

For each net shape (`make_net`, seed 3) and batch size: lc0's `backendbench` (a given lc0 binary and
backend, e.g. lc0 master built with CUDA, `--backend=cuda-fp16`) and ours (`lc0_rocm.bench.backendbench
.run_bench`, the same loop as `lc0-rocm backendbench`: warm-up, `--batches` batches, the first
excluded, wall clock around encoding + blocking evaluation; device time as an extra column).
Prints one markdown table per net and writes JSON under --out.

    python3 tools/backendbench_vs_lc0.py --lc0 .dev/lc0/lc0 --nets t82,bt4 --sizes 1,16,64,256,1024 \\
        --batches 30 --out $OUT/bench
    python3 tools/backendbench_vs_lc0.py ... --backend-opts gpus=0:1 --lc0-backend-opts "(backend=cuda-fp16,gpu=0),(backend=cuda-fp16,gpu=1)" --lc0-backend demux
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

_LC0_LINE = re.compile(r"Benchmark batch size (\d+) with inference average time ([\d.]+)ms - throughput ([\d.]+) nps")


def lc0_bench(lc0: str, weights: Path, backend: str, opts: str, size: int, batches: int) -> dict:
    cmd = [lc0, "backendbench", f"--weights={weights}", f"--backend={backend}", f"--batches={batches}",
           f"--start-batch-size={size}", f"--max-batch-size={size}", "--batch-step=1"]
    if opts:
        cmd.append(f"--backend-opts={opts}")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    text = res.stdout + res.stderr
    m = [x for x in _LC0_LINE.finditer(text) if int(x.group(1)) == size]
    if m:
        return {"ms": float(m[-1].group(2)), "nps": float(m[-1].group(3))}
    # lc0 master prints a table: size, mean nps, mean ms, ...
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) >= 3 and cells[0] == str(size):
            return {"nps": float(cells[1]), "ms": float(cells[2])}
    raise RuntimeError(f"no result for batch {size} in lc0's output:\n{text[-2000:]}")


def ours_bench(weights: Path, backend: str, opts: str, sizes: list[int], batches: int) -> dict:
    from lc0_rocm.api import open_backend
    from lc0_rocm.bench.backendbench import BenchConfig, position_history, run_bench
    from lc0_rocm.encoding.history import STARTPOS_FEN

    out = {}
    with open_backend(weights, backend=backend, options=opts) as ev:
        hist = position_history(STARTPOS_FEN)
        for size in sizes:
            _, (s,) = run_bench(ev.backend, hist, BenchConfig(batches=batches, start_batch_size=size,
                                                              max_batch_size=size, batch_step=1))
            device_ms = 1000 * sum(s.extra_times) / len(s.extra_times) if s.extra_times else None
            out[size] = {"nps": s.mean_nps, "ms": s.mean_ms, "median_nps": s.median_nps, "device_ms": device_ms}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lc0", default="", help="lc0 binary to compare with (none: ours only)")
    p.add_argument("--lc0-backend", default="cuda-fp16")
    p.add_argument("--lc0-backend-opts", default="")
    p.add_argument("--backend", default="rocm-fp16", help="our backend (default rocm-fp16)")
    p.add_argument("--backend-opts", default="")
    p.add_argument("--nets", default="t82,bt4", help="make_net shapes or net files, comma-separated")
    p.add_argument("--sizes", default="1,16,64,256,1024")
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--out", default=None, help="folder for results.json")
    a = p.parse_args(argv)
    from lc0_rocm.net.make_net import make_net
    from lc0_rocm.net.writer import write_net

    sizes = [int(x) for x in a.sizes.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in a.nets.split(","):
            path = Path(shape)
            if path.exists():  # a net file (a real net, e.g. a maia): named by its file name
                shape = path.name
            else:
                path = Path(tmp) / f"{shape}.pb.gz"
                write_net(make_net(shape, seed=3), path)
            ours = ours_bench(path, a.backend, a.backend_opts, sizes, a.batches)
            theirs = {}
            for s in sizes:
                try:
                    theirs[s] = lc0_bench(a.lc0, path, a.lc0_backend, a.lc0_backend_opts, s, a.batches) if a.lc0 \
                        else None
                except Exception as e:  # noqa: BLE001  (lc0 failing is reported, ours still counts)
                    print(f"lc0 batch {s}: {type(e).__name__}: {str(e)[-300:]}", flush=True)
                    theirs[s] = None
            results[shape] = {"ours": ours, "lc0": theirs}
            print(f"\n{shape} (ours: {a.backend} {a.backend_opts}; lc0: {a.lc0_backend} {a.lc0_backend_opts})")
            print("| batch | ours wall ms | ours nps | ours device ms | lc0 ms | lc0 nps | ×lc0 |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            for s in sizes:
                o, t = ours[s], theirs[s]
                dev = f"{o['device_ms']:.3f}" if o["device_ms"] is not None else ""
                lc0 = f"{t['ms']:.3f} | {t['nps']:.0f} | {o['nps'] / t['nps']:.2f}" if t else " | | "
                print(f"| {s} | {o['ms']:.3f} | {o['nps']:.0f} | {dev} | {lc0} |", flush=True)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
