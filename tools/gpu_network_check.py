"""Per-net x dtype table of the GPU backends against the numpy CPU reference (what `lc0-rocm validate`
measures), for nets given as files or as make_net shapes ("gen:bt4", "gen:t82").

    python3 tools/gpu_network_check.py weights/*.pb.gz ../shared/weights/maia-*.pb.gz gen:t82 gen:bt4 \
        [--positions 512] [--big-positions 64] [--json out.json]

Reference: the float32 CPU reference (all BLAS threads). Generated nets use --big-positions (their CPU
reference is slow). Prints one row per (net, dtype): max |Δ| of policy probabilities and logits, max and
mean |ΔQ|, max |ΔD|, max |ΔMLH|, top-1 agreement, NaN count, PASS/FAIL by validate's limits, and the
GPU time per position of the evaluation (second pass, batch 256, host work included; not a benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def load(spec: str):
    from lc0_rocm.net.loader import load_net, net_from_proto
    from lc0_rocm.net.make_net import make_net

    if spec.startswith("gen:"):
        return spec, net_from_proto(make_net(spec[4:], seed=3)), True
    return Path(spec).name, load_net(spec), False


def main() -> int:
    from lc0_rocm import validation_positions
    from lc0_rocm.backends.cpu import CpuBackend
    from lc0_rocm.commands.validate import compare, failures
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.encoding.policy_map import legal_move_indices
    from lc0_rocm.gpu.runtime.device import get_device
    from lc0_rocm.gpu.nn.network import GpuNetwork

    ap = argparse.ArgumentParser()
    ap.add_argument("nets", nargs="+")
    ap.add_argument("--positions", type=int, default=512)
    ap.add_argument("--big-positions", type=int, default=64)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dev = get_device(0)
    print(f"device: {dev.describe()}")
    rows = []
    for spec in args.nets:
        name, net, big = load(spec)
        n = args.big_positions if big else args.positions
        boards = validation_positions.boards(n)
        planes = encode_positions(boards, net.input_format)
        legal = [legal_move_indices(b, int(t))[1] for b, t in zip(boards, planes.transforms)]
        ref = CpuBackend(net, threads=os.cpu_count()).evaluate(planes)
        for dtype in ("f32", "f16"):
            g = GpuNetwork(net, dev, dtype, max_batch=256)
            try:
                g.evaluate(planes)  # warm-up: kernels compiled, GEMM plans made for these shapes
                t0 = time.perf_counter()
                out = g.evaluate(planes)
                ms = (time.perf_counter() - t0) * 1e3
            finally:
                g.close()
            c = compare(ref, out, legal)
            bad = failures(c, "fp16" if dtype == "f16" else "fp32")
            row = dict(net=name, dtype=dtype, positions=n, policy=c.max_abs["policy"], logits=c.max_abs["logits"],
                       q_max=c.max_abs["Q"], q_mean=c.mean_abs["Q"], d_max=c.max_abs.get("D", 0.0),
                       mlh_max=c.max_abs.get("MLH", float("nan")), top1=c.top1, nan=c.nan,
                       ok=not bad, why="; ".join(bad), us_per_pos=1e3 * ms / n)
            rows.append(row)
            print(f"  {name} {dtype}: {'PASS' if not bad else 'FAIL ' + row['why']}", flush=True)
        del net, ref
    hdr = (f"{'net':<34}{'dtype':>5}{'pos':>5}{'|Δp|max':>10}{'|Δlogit|':>10}{'|ΔQ|max':>10}{'|ΔQ|mean':>10}"
           f"{'|ΔD|max':>10}{'|ΔMLH|':>10}{'top1':>8}{'NaN':>5}{'us/pos':>8}  result")
    print(hdr)
    for r in rows:
        print(f"{r['net']:<34}{r['dtype']:>5}{r['positions']:>5}{r['policy']:>10.2e}{r['logits']:>10.2e}"
              f"{r['q_max']:>10.2e}{r['q_mean']:>10.2e}{r['d_max']:>10.2e}{r['mlh_max']:>10.2e}"
              f"{100 * r['top1']:>7.2f}%{r['nan']:>5d}{r['us_per_pos']:>8.1f}  {'PASS' if r['ok'] else 'FAIL'}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 2


if __name__ == "__main__":
    sys.exit(main())
