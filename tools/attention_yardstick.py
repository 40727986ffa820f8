#!/usr/bin/env python3
"""What attention on the matrix units would cost at our nets' shapes: a yardstick in PyTorch, measured before building.

One encoder layer's attention (64 squares, smolgen bias added to the logits, softmax, times V) at
BT4 (32 heads) and T82 (24 heads) shapes, depth 32, fp16, timed with CUDA events (median of 20 after
warm-up), three ways:
  pack   the layout change a GEMM path needs first: Q|K|V as our QKV GEMM writes them
         ([B*64, 3*H*d], row-major) into head-major [3, B, H, 64, d];
  gemm   the issue's path: QK^T as one strided-batched GEMM (cuBLAS via torch.baddbmm, the bias added
         in the GEMM's beta term, the scale as alpha), softmax (torch's kernel, fp32 math), PV as a
         second batched GEMM; the B*H*64*64 logits go through memory;
  sdpa   torch's fused tensor-core attention with an additive mask (scaled_dot_product_attention);
and prints microseconds per layer. Compare with `tools/kernel_bench.py --kernels mha_t128` (our fused
kernel on the CUDA cores) at the same batch. Needs PyTorch with CUDA; nothing of it is in the product.

    python3 tools/attention_yardstick.py --batches 16,256,1024
"""

from __future__ import annotations

import argparse
import statistics


def time_us(fn, torch, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="16,256,1024")
    ap.add_argument("--depth", type=int, default=32)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F

    d = args.depth
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, fp16, depth {d}")
    print("| net | batch | pack µs | gemm path µs | sdpa µs | gemm + pack µs |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, heads in (("BT4", 32), ("T82", 24)):
        for batch in [int(x) for x in args.batches.split(",")]:
            g = torch.Generator(device="cuda").manual_seed(1)
            qkv = torch.randn(batch * 64, 3 * heads * d, device="cuda", dtype=torch.float16, generator=g)
            bias = torch.randn(batch * heads, 64, 64, device="cuda", dtype=torch.float16, generator=g)
            scale = 1.0 / d ** 0.5
            packed = qkv.view(batch, 64, 3, heads, d).permute(2, 0, 3, 1, 4).contiguous()
            q, k, v = (packed[i].view(batch * heads, 64, d) for i in range(3))

            def pack():
                return qkv.view(batch, 64, 3, heads, d).permute(2, 0, 3, 1, 4).contiguous()

            def gemm_path():
                s = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=scale)
                return torch.bmm(torch.softmax(s, dim=-1), v)

            q4, k4, v4 = (t.view(batch, heads, 64, d) for t in (q, k, v))
            mask = bias.view(batch, heads, 64, 64)

            def sdpa():
                return F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask, scale=scale)

            ref = torch.softmax(q.float() @ k.float().transpose(1, 2) * scale + bias.float(), -1) @ v.float()
            for fn in (gemm_path, sdpa):
                err = (fn().float().view_as(ref) - ref).abs().max().item()
                assert err < 2e-2, f"{fn.__name__}: max error {err}"
            t_pack, t_gemm, t_sdpa = time_us(pack, torch), time_us(gemm_path, torch), time_us(sdpa, torch)
            print(f"| {name} | {batch} | {t_pack:.1f} | {t_gemm:.1f} | {t_sdpa:.1f} | {t_gemm + t_pack:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
