#!/usr/bin/env python3
"""Time single network kernels on random data at a net's shapes (no net needed); a target for ncu.

    PYTHONPATH=. python3 tools/kernel_bench.py [--batch 256] [--dm 1024 --heads 32 --width 1024 --dff 1536]
        [--kernels mha_t128,mha,layernorm8,layernorm,act8_mish,attention_policy] [--reps 50] [--once]

Each kernel runs `--reps` times between two events on fresh random inputs (uploaded once, not zeros);
the median of 5 such runs is printed in microseconds with the bytes/FLOPs it implies. `--once` launches
each kernel a single time and exits (for `ncu --clock-control none -k regex:NAME python3 ...`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--dm", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--dff", type=int, default=1536)
    ap.add_argument("--pdm", type=int, default=1024)
    ap.add_argument("--kernels", default="mha_t128,mha,layernorm8,layernorm,act8_mish,bias_act_mish,"
                    "attention_policy,attention_policy_split,h2d,d2h")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--once", action="store_true")
    args = ap.parse_args()

    from lc0_rocm.encoding.outputs import POLICY_SIZE
    from lc0_rocm.encoding.policy_map import ATTENTION_MAP_SIZE, ATTENTION_POLICY_MAP
    from lc0_rocm.gpu.nn.kernels import NnKernels
    from lc0_rocm.gpu.runtime.device import get_device
    from lc0_rocm.gpu.runtime.hiperr import hip_call
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer, PinnedBuffer
    from lc0_rocm.gpu.runtime.stream import Event, Stream

    dev = get_device(0)
    s = Stream(dev)
    rng = np.random.default_rng(0)
    n, dm, heads, dff = args.batch, args.dm, args.heads, args.dff
    rows = n * 64

    def put(shape, scale=1.0, dtype=np.float16):
        a = (rng.standard_normal(shape, dtype=np.float32) * scale).astype(dtype)
        b = DeviceBuffer.allocate(dev, a.nbytes)
        b.upload(a)
        return b

    qkv, bias, att = put((rows, 3 * dm)), put((n, heads, 64, 64)), put((rows, dm))
    x, skip, gamma, beta, b1 = put((rows, dm)), put((rows, dm)), put(dm), put(dm), put(dm)
    ffh = put((rows, dff))
    qk, ppo = put((rows, 2 * args.pdm), 0.1), put((4, args.pdm))
    pmap = DeviceBuffer.allocate(dev, ATTENTION_MAP_SIZE * 4)
    pmap.upload(np.asarray(ATTENTION_POLICY_MAP, dtype=np.int32).reshape(-1))
    pol = DeviceBuffer.allocate(dev, n * POLICY_SIZE * 4)
    # k: the product's kernels (mha_t128, layernorm8, the whole-position policy kernel); k_old: the simple
    # attention and scalar LayerNorm kernels; k_split: the 16-blocks-per-position policy kernel
    k, k_old = NnKernels(dev, "f16", "t128", True), NnKernels(dev, "f16", "simple", False)
    k_split = NnKernels(dev, "f16", "t128", True)
    k_split.policy_split_below, k.policy_split_below = 10**9, 0
    pin = PinnedBuffer(n * POLICY_SIZE * 4)
    dpol = DeviceBuffer.allocate(dev, n * POLICY_SIZE * 4)
    depth = dm // heads
    mha_flops = 4.0 * 64 * 64 * depth * heads * n
    ln_bytes = 3 * rows * dm * 2
    benches = {
        "mha_t128": (lambda: k.mha(qkv, n, dm, heads, att, bias=bias, stream=s), 0, mha_flops),
        "mha": (lambda: k_old.mha(qkv, n, dm, heads, att, bias=bias, stream=s), 0, mha_flops),
        "layernorm8": (lambda: k.layernorm(x, att, rows, dm, gamma, beta, 1e-3, bias=b1, skip=skip, alpha=0.5,
                                           stream=s), ln_bytes, 0),
        "layernorm": (lambda: k_old.layernorm(x, att, rows, dm, gamma, beta, 1e-3, bias=b1, skip=skip, alpha=0.5,
                                              stream=s), ln_bytes, 0),
        # act8_mish: no bias, 8 elements per thread; bias_act_mish: the scalar kernel a bias needs
        "act8_mish": (lambda: k.bias_act(ffh, ffh, None, rows * dff, act="mish", stream=s), 2 * rows * dff * 2, 0),
        "bias_act_mish": (lambda: k.bias_act(ffh, ffh, b1, rows * dff, channels=dm, act="mish", stream=s),
                          2 * rows * dff * 2, 0),
        "attention_policy": (lambda: k.attention_policy(qk, n, args.pdm, ppo, pmap, pol, stream=s),
                             0, 2.0 * 64 * 64 * args.pdm * n),
        "attention_policy_split": (lambda: k_split.attention_policy(qk, n, args.pdm, ppo, pmap, pol, stream=s),
                                   0, 2.0 * 64 * 64 * args.pdm * n),
        "h2d": (lambda: hip_call("hipMemcpyHtoDAsync", dpol.ptr, pin.ptr, n * POLICY_SIZE * 4, s.handle), n * POLICY_SIZE * 4, 0),
        "d2h": (lambda: hip_call("hipMemcpyDtoHAsync", pin.ptr, dpol.ptr, n * POLICY_SIZE * 4, s.handle), n * POLICY_SIZE * 4, 0),
    }
    print(f"device {dev.describe()}; batch {n}, dm {dm}, heads {heads} (depth {depth}), dff {dff}")
    for name in [k for k in args.kernels.split(",") if k]:
        fn, nbytes, flops = benches[name]
        fn()
        s.synchronize()
        if args.once:
            continue
        times = []
        for _ in range(5):
            e0, e1 = Event(), Event()
            e0.record(s)
            for _ in range(args.reps):
                fn()
            e1.record(s)
            e1.synchronize()
            times.append(e0.elapsed_ms(e1) * 1e3 / args.reps)
        us = statistics.median(times)
        extra = ""
        if nbytes:
            extra += f"  {nbytes / us / 1e3:7.0f} GB/s"
        if flops:
            extra += f"  {flops / us / 1e6:7.1f} TFLOP/s"
        print(f"{name:18} {us:9.2f} us{extra}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
