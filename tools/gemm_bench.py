#!/usr/bin/env python3
"""TFLOP/s of the GEMMs lc0-rocm runs, with the algorithm lc0_rocm.gpu.runtime.gemm picked (tuned once, cached).

    python3 tools/gemm_bench.py [--dtype f16|f32] [--batches 1,16,256] [--all-shapes]

Default: the BT4 FFN GEMMs at batch 256 (M = 64·256 = 16384; N=1536, K=1024 and N=1024, K=1536) plus the
attention projections, fp16. Each shape is checked against numpy float64 first (512 random rows, the
whole output NaN-checked), then timed with events: 3 warm-ups, 50 timed runs rotating over 4 input sets
(more bytes than L2 holds, so the cache does not flatter the number), median reported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BT4_FFN = [(1536, 1024), (1024, 1536)]
OTHERS = [(768, 768), (2304, 768), (1024, 768), (768, 1024), (1024, 1024), (3072, 1024)]


def bench_shape(dev, gemm, m: int, n: int, k: int, dtype: str, sets: int = 4, runs: int = 50):
    from lc0_rocm.gpu.runtime.dtypes import storage_type
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer
    from lc0_rocm.gpu.runtime.stream import Event

    rng = np.random.default_rng()
    t = storage_type(dtype).numpy
    xs, ws, ys, host = [], [], [], []
    for _ in range(sets):
        x = rng.standard_normal((m, k), dtype=np.float32).astype(t)
        w = (rng.standard_normal((n, k), dtype=np.float32) / np.sqrt(k)).astype(t)
        xd, wd, yd = (DeviceBuffer.allocate(dev, b) for b in (x.nbytes, w.nbytes, m * n * x.itemsize))
        xd.upload(x)
        wd.upload(w)
        yd.fill_byte(0xFF)
        xs.append(xd), ws.append(wd), ys.append(yd), host.append((x, w))
    gemm.linear(xs[0], ws[0], ys[0], m, n, k, dtype=dtype)  # plan: tune or read the cache
    y = ys[0].to_numpy(t, (m, n))
    rows = np.sort(rng.choice(m, min(m, 512), replace=False))
    ref = host[0][0][rows].astype(np.float64) @ host[0][1].astype(np.float64).T
    err = float(np.linalg.norm(y[rows] - ref) / np.linalg.norm(ref))
    nan = int(np.isnan(y).sum())
    s = dev.stream
    for i in range(3):
        gemm.linear(xs[i % sets], ws[i % sets], ys[i % sets], m, n, k, dtype=dtype, stream=s)
    times = []
    for i in range(runs):
        a, b = Event(), Event()
        a.record(s)
        gemm.linear(xs[i % sets], ws[i % sets], ys[i % sets], m, n, k, dtype=dtype, stream=s)
        b.record(s)
        times.append((a, b))
    s.synchronize()
    ms = float(np.median([a.elapsed_ms(b) for a, b in times]))
    cands, tuned_ms = gemm.plan_info(m, n, k, dtype)
    return {"m": m, "n": n, "k": k, "dtype": dtype, "ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9,
            "rel_err": err, "nan": nan, "candidates": cands}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from lc0_rocm.gpu.runtime.dtypes import STORAGE_TYPES

    ap.add_argument("--dtype", default="f16", choices=list(STORAGE_TYPES))
    ap.add_argument("--batches", default="256", help="comma-separated batch sizes (M = 64 * batch)")
    ap.add_argument("--all-shapes", action="store_true", help="also the attention/embedding shapes")
    args = ap.parse_args(argv)
    from lc0_rocm.gpu.runtime.device import get_device
    from lc0_rocm.gpu.runtime.gemm import Gemm

    dev = get_device(0)
    gemm = Gemm(dev)
    shapes = BT4_FFN + (OTHERS if args.all_shapes else [])
    print(f"device: {dev.describe()}")
    print(f"{'M':>6} {'N':>5} {'K':>5} {'dtype':>5} {'ms':>8} {'TFLOP/s':>8} {'rel.err':>9} {'cands':>5}")
    ok = True
    for batch in (int(b) for b in args.batches.split(",")):
        for n, k in shapes:
            r = bench_shape(dev, gemm, 64 * batch, n, k, args.dtype)
            limit = 1e-3 if args.dtype == "f16" else 1e-5
            flag = "" if r["rel_err"] <= limit and r["nan"] == 0 else "  WRONG"
            ok &= not flag
            print(f"{r['m']:>6} {n:>5} {k:>5} {args.dtype:>5} {r['ms']:>8.4f} {r['tflops']:>8.1f} "
                  f"{r['rel_err']:>9.2e} {r['candidates']:>5}{flag}")
    gemm.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
