#!/usr/bin/env python3
"""GPU performance suite for one device session: everything docs/perf.md's GPU section reports.

    PYTHONPATH=. python3 tools/perf_suite.py --out DIR [--nets bt4,t82] [--sizes 1,16,64,256,1024]
        [--extra-sizes 384,512,768] [--batches 50] [--profile bt4:256,bt4:1] [--baseline]
        [--gemm-peak] [--host] [--torch SIZES] [--smi]

Sections (each prints a short table; DIR/perf.json gets every number):
  gemm-peak  the card's own fp16 GEMM rate (8192^3 through our hipBLASLt path, and torch.matmul);
  bench      per net (make_net shapes, seed 3, fp16): lc0 backendbench's measurement (`run_bench`
             internals: warm-up, `batches` timed batches per size, first excluded) with the backend's
             device-event timer, plus the wall clock around `evaluate` (host work included);
  baseline   the same at a few sizes with the pre-issue-6 configuration (no graphs, simple attention,
             scalar LayerNorm kernel, GEMM tuning off) for before/after;
  host       host microseconds per batch in submit and collect (steady state, graphs on; the network's
             public submit / collect, the device synchronized between them);
  profile    NET:N: every kernel / GEMM of one forward at batch N recorded (the runtime's launch observer,
             lc0_rocm.gpu.runtime.observe, around `evaluate` of a network without graphs) and re-timed
             alone (each op replayed 20 times inside a hipGraph, timed with events), grouped by kind with
             time shares, the FLOPs per position counted from the recorded GEMM and attention shapes, and
             the device time of one evaluation with graphs; with --baseline also the old kernels' times;
  torch      tools/torch_bench.py (eager, torch.compile) on the same nets written to DIR;
  smi        nvidia-smi clocks / power sampled every 500 ms through the run (min/median/max).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LC0_GIVEN = {  # lc0 cuda-fp16, one thread, H100 (given to the project, not measured by us): batch -> nps
    "t82": {1: 685, 16: 8600, 64: 18700, 256: 24800, 1024: 28100},
    "bt4": {1: 624, 16: 6900, 64: 14300, 256: 18500, 1024: 20200},
}
GIVEN_GFLOP = {"bt4": 16.3, "t82": 8.85}  # per position, as given to the project
DATASHEET_TFLOPS = 989.4  # H100 SXM dense fp16 tensor peak (datasheet)
RESULTS: dict = {}
ABLATIONS = ("graph_capture=false", "attention=simple", "vector_ln=false", "side_stream=false", "gemm_tune=false")


def log(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------------ nvidia-smi sampling

class Smi:
    FIELDS = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active,pstate"

    def __init__(self, path: Path):
        self.path, self.proc = path, None
        try:
            self.f = open(path, "w")
            self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu=index,{self.FIELDS}", "--format=csv,noheader,nounits",
                                          "-lms", "500"], stdout=self.f, stderr=subprocess.DEVNULL)
        except (OSError, FileNotFoundError):
            self.proc = None

    def mark(self, label: str) -> None:
        if self.proc is not None:
            self.f.write(f"# {time.time():.3f} {label}\n")
            self.f.flush()

    def stop(self) -> dict:
        if self.proc is None:
            return {}
        self.proc.terminate()
        self.proc.wait()
        self.f.close()
        rows = [l.split(", ") for l in self.path.read_text().splitlines() if l and not l.startswith("#")]
        out = {}
        for i, name in enumerate(["sm_mhz", "mem_mhz", "power_w", "temp_c"]):
            vals = []
            for r in rows:
                try:
                    vals.append(float(r[1 + i]))
                except (ValueError, IndexError):
                    pass
            if vals:
                out[name] = {"min": min(vals), "median": statistics.median(vals), "max": max(vals)}
        return out


def smi_static() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,"
                               "clocks.sm,power.draw,pstate", "--format=csv"], capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except Exception as e:
        return f"nvidia-smi failed: {e}"


# ------------------------------------------------------------------ nets

def make(shape: str):
    from lc0_rocm.net.loader import net_from_proto
    from lc0_rocm.net.make_net import make_net

    proto = make_net(shape, seed=3)
    return proto, net_from_proto(proto)


def startpos(net):
    from lc0_rocm.bench.backendbench import STARTPOS_FEN, encode_fen

    return encode_fen(STARTPOS_FEN, net.input_format)


# ------------------------------------------------------------------ GEMM peak

def gemm_peak(dev) -> dict:
    from lc0_rocm.gpu.runtime.gemm import Gemm
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer
    from lc0_rocm.gpu.runtime.stream import Event, Stream

    res = {}
    s = Stream(dev)
    g = Gemm(dev)
    rng = np.random.default_rng(1)
    for size in (8192, 4096):
        a = (rng.standard_normal((size, size), dtype=np.float32)).astype(np.float16)
        bufs = [DeviceBuffer.allocate(dev, a.nbytes) for _ in range(3)]
        bufs[0].upload(a)
        bufs[1].upload(a[::-1].copy())
        g.linear(bufs[0], bufs[1], bufs[2], size, size, size, stream=s)  # plan + tuning
        s.synchronize()
        times = []
        for _ in range(5):
            e0, e1 = Event(), Event()
            e0.record(s)
            for _ in range(10):
                g.linear(bufs[0], bufs[1], bufs[2], size, size, size, stream=s)
            e1.record(s)
            e1.synchronize()
            times.append(e0.elapsed_ms(e1) / 10)
        ms = statistics.median(times)
        res[f"ours_{size}"] = {"ms": ms, "tflops": 2 * size**3 / ms / 1e9}
        for b in bufs:
            b.free()
    g.close()
    code = ("import torch, json\n"
            "x = torch.randn(8192, 8192, device='cuda', dtype=torch.float16)\n"
            "y = torch.randn(8192, 8192, device='cuda', dtype=torch.float16)\n"
            "[x @ y for _ in range(3)]; torch.cuda.synchronize()\n"
            "e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)\n"
            "e0.record(); [x @ y for _ in range(20)]; e1.record(); torch.cuda.synchronize()\n"
            "ms = e0.elapsed_time(e1) / 20\n"
            "print(json.dumps({'ms': ms, 'tflops': 2 * 8192**3 / ms / 1e9}))\n")
    try:  # torch in its own process: a second CUDA runtime next to ours is not worth the risk
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        res["torch_8192"] = json.loads(proc.stdout.strip().splitlines()[-1])
    except Exception as e:
        res["torch_error"] = str(e)
    return res


# ------------------------------------------------------------------ backendbench

def bench_net(name, net, sizes, batches, opts: str, label: str) -> list[dict]:
    from lc0_rocm.backends.rocm import RocmBackend
    from lc0_rocm.backends.factory import parse_backend_options
    from lc0_rocm.bench.backendbench import make_timer, measure_size, replicate

    b = RocmBackend(net, "fp16", parse_backend_options(opts))
    pos = startpos(net)
    timed = make_timer(b)
    rows = []
    try:
        for size in sizes:
            batch = replicate(pos, size)
            for _ in range(2):  # first use: eager run, plans, tuning, graph capture; then one replay
                b.evaluate(batch)
            st = measure_size(timed, pos, size, batches)
            wall = []
            for _ in range(max(5, batches // 2)):
                t0 = time.perf_counter()
                b.evaluate(batch)
                wall.append(time.perf_counter() - t0)
            wall_ms = 1e3 * statistics.median(wall)
            row = dict(net=name, config=label, size=size, mean_nps=st.mean_nps, mean_ms=st.mean_ms,
                       median_nps=st.median_nps, sdev_ms=st.sdev_ms, wall_ms=wall_ms, wall_nps=size / wall_ms * 1e3,
                       lc0_nps=LC0_GIVEN.get(name, {}).get(size))
            rows.append(row)
            ratio = f"{row['mean_nps'] / row['lc0_nps']:.2f}x lc0" if row["lc0_nps"] else ""
            log(f"  {name:4} {label:9} batch {size:5d}: {st.mean_ms:8.3f} ms {st.mean_nps:9.0f} nps (device) | "
                f"wall {wall_ms:8.3f} ms {row['wall_nps']:9.0f} nps  {ratio}")
    finally:
        b.close()
    return rows


# ------------------------------------------------------------------ correctness gate

def validate(name, net, opts: str, positions: int = 64) -> bool:
    """fp16 with `opts` against fp32 with the original kernels (checked by the test suite) on suite positions."""
    from lc0_rocm import validation_positions
    from lc0_rocm.backends.factory import parse_backend_options
    from lc0_rocm.backends.rocm import RocmBackend
    from lc0_rocm.commands.validate import compare
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.encoding.policy_map import legal_move_indices

    boards = validation_positions.boards(positions)
    planes = encode_positions(boards, net.input_format)
    legal = [legal_move_indices(b, int(t))[1] for b, t in zip(boards, planes.transforms)]
    ref_b = RocmBackend(net, "fp32", parse_backend_options("attention=simple,vector_ln=false,graph_capture=false"))
    try:
        ref = ref_b.evaluate(planes)
    finally:
        ref_b.close()
    b = RocmBackend(net, "fp16", parse_backend_options(opts))
    try:
        outs = [b.evaluate(planes) for _ in range(3)]  # eager + capture, then a graph replay
    finally:
        b.close()
    ok = True
    for out in outs[1:]:
        c = compare(ref, out, legal)
        good = c.nan == 0 and c.top1 >= 0.97 and c.max_abs["Q"] <= 0.05
        ok = ok and good
    log(f"  validate {name} fp16 [{opts or 'default'}] vs fp32 original kernels: top1 {c.top1:.3f}, "
        f"max |dQ| {c.max_abs['Q']:.4f}, NaN {c.nan}: {'PASS' if ok else 'FAIL'}")
    return ok


# ------------------------------------------------------------------ host overhead

def host_cost_us(g, planes, reps: int = 200) -> dict:
    """Host microseconds per batch spent in submit and in collect at steady state (the device is
    synchronized between the two, so collect does not wait), through the network's public calls."""
    g.evaluate(planes)
    g.evaluate(planes)
    sub, col = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        p = g.submit(planes)
        t1 = time.perf_counter()
        g.device.synchronize()
        t2 = time.perf_counter()
        out = g.collect(p)
        t3 = time.perf_counter()
        del out
        sub.append(t1 - t0)
        col.append(t3 - t2)
    return {"submit_us": 1e6 * statistics.median(sub), "collect_us": 1e6 * statistics.median(col)}


def host_overhead(net, sizes) -> dict:
    from lc0_rocm.bench.backendbench import replicate
    from lc0_rocm.gpu.runtime.device import get_device
    from lc0_rocm.gpu.nn.network import GpuNetwork

    import cProfile
    import io
    import pstats

    g = GpuNetwork(net, get_device(0), "f16", max_batch=max(sizes))
    out = {}
    try:
        for size in sizes:
            out[size] = host_cost_us(g, replicate(startpos(net), size))
            log(f"  host per batch {size:5d}: submit {out[size]['submit_us']:.1f} us, collect "
                f"{out[size]['collect_us']:.1f} us")
        planes = replicate(startpos(net), max(sizes))
        prof = cProfile.Profile()
        for _ in range(50):
            prof.enable()
            p = g.submit(planes)
            prof.disable()
            g.collect(p)
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
        log("  cProfile of 50 submits at batch %d (tottime):\n%s" % (max(sizes), buf.getvalue()[-2500:]))
    finally:
        g.close()
    return out


# ------------------------------------------------------------------ per-kernel profile

class OpRecorder:
    """Records every kernel launch and GEMM issued inside the `with` block (they still run), through the
    runtime's launch observer; `replay(op, stream)` issues one again."""

    def __init__(self):
        self.ops = []

    def __enter__(self):
        from lc0_rocm.gpu.runtime.observe import observe

        self._ctx = observe(self.ops.append)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    @staticmethod
    def replay(op, stream):
        op.replay(stream)


def gemm_roles(g) -> dict:
    """(n, k) -> role names, from the network's Linear layers."""
    roles = defaultdict(set)

    def add(lin, name):
        if lin is not None:
            roles[(lin.n, lin.k)].add(name)

    body = g.body
    if body is not None:
        add(body.preproc, "emb_preproc")
        add(body.emb, "emb")
        if body.emb_ffn is not None:
            add(body.emb_ffn[0], "emb_ffn1")
            add(body.emb_ffn[1], "emb_ffn2")
        add(body.global_w, "smolgen_global")
        for e in body.encoders:
            add(e.qkv, "qkv")
            add(e.out, "out_proj")
            add(e.ffn1, "ffn1")
            add(e.ffn2, "ffn2")
            if e.smolgen is not None:
                add(e.smolgen.compress, "smolgen_compress")
                add(e.smolgen.dense1, "smolgen_dense1")
                add(e.smolgen.dense2, "smolgen_dense2")
    pol = g.policy
    if hasattr(pol, "wqk"):
        add(pol.emb, "policy_emb")
        add(pol.wqk, "policy_qk")
    for head, tag in ((g.heads.value, "value"), (g.heads.mlh, "mlh")):
        if head is not None:
            add(head.emb, f"{tag}_emb")
            add(head.fc1, f"{tag}_fc1")
            add(head.fc2, f"{tag}_fc2")
    return {k: "|".join(sorted(v)) for k, v in roles.items()}


def op_label(op, roles) -> str:
    if op.kind == "gemm":
        plan = op.target
        return f"gemm {roles.get((plan.n, plan.k), f'{plan.n}x{plan.k}')}"
    name = op.name
    for sfx in ("_f16", "_f32"):
        if name.endswith(sfx):
            name = name[: -len(sfx)]
    return name


def op_flops(op, n: int) -> float:
    if op.kind == "gemm":
        plan = op.target
        return 2.0 * plan.m * plan.n * plan.k
    if op.name.startswith("mha"):
        heads, positions = op.grid[0], op.grid[1]
        # depth from the module options is not at hand; the qkv row stride (3*dm) and dm are arguments
        dm = int(op.args[2])
        depth = dm // heads
        return 4.0 * 64 * 64 * depth * heads * positions
    return 0.0


def _arg_key(x):
    if hasattr(x, "ptr") or type(x).__name__ == "ptr":
        return "p"
    if isinstance(x, np.generic):
        return x.item()
    return repr(x)


def time_ops(rec: OpRecorder, dev, reps: int = 20) -> list[float]:
    """Milliseconds of each recorded op alone (replayed `reps` times in one graph; identical ops timed once)."""
    from lc0_rocm.gpu.runtime.stream import Event, Graph, Stream

    s = Stream(dev)
    cache = {}
    times = []
    for op in rec.ops:
        if op.kind == "gemm":
            key = ("gemm", id(op.target), op.args[0].ptr == op.args[2].ptr)
        else:
            key = ("kernel", id(op.target), op.grid, op.block, op.shared, tuple(_arg_key(x) for x in op.args))
        if key not in cache:
            try:
                g = Graph.capture(s, lambda: [rec.replay(op, s) for _ in range(reps)])
                g.launch(s)
                s.synchronize()
                e0, e1 = Event(), Event()
                e0.record(s)
                for _ in range(3):
                    g.launch(s)
                e1.record(s)
                e1.synchronize()
                cache[key] = e0.elapsed_ms(e1) / (3 * reps)
                g.close()
            except Exception as e:  # fall back to plain launches
                log(f"    (graph timing failed for {op_label(op, {})}: {e}; timing plain launches)")
                s.synchronize()
                e0, e1 = Event(), Event()
                e0.record(s)
                for _ in range(reps):
                    rec.replay(op, s)
                e1.record(s)
                e1.synchronize()
                cache[key] = e0.elapsed_ms(e1) / reps
        times.append(cache[key])
    s.close()
    return times


def profile(name, net, n: int, baseline: bool, base_opts: str = "") -> dict:
    from lc0_rocm.bench.backendbench import replicate
    from lc0_rocm.gpu.runtime.device import get_device
    from lc0_rocm.gpu.nn.network import GpuNetwork

    dev = get_device(0)
    planes = replicate(startpos(net), n)
    from lc0_rocm.backends.options import bool_option, choice_option, parse_backend_options
    from lc0_rocm.gpu.nn.kernels import MHA_VARIANTS
    from lc0_rocm.gpu.nn.layers import CONV_PLANS

    o = parse_backend_options(base_opts)
    kw_new = dict(mha_variant=choice_option(o, "attention", MHA_VARIANTS, "auto"),
                  vector_ln=bool_option(o, "vector_ln", True),
                  conv_plan=choice_option(o, "conv_plan", CONV_PLANS, "auto"))
    configs = [("new", kw_new)]
    if baseline:
        configs.append(("old kernels", dict(mha_variant="simple", vector_ln=False, side_stream=False)))
    result = {}
    for label, kw in configs:
        g = GpuNetwork(net, dev, "f16", max_batch=n, graphs=True, **kw)
        try:
            g.evaluate(planes)  # eager: plans, tuning; captures the graphs
            g.evaluate(planes)
            _, dev_s = g.evaluate_timed(planes)  # a graph replay, transfers included
        finally:
            g.close()
        g = GpuNetwork(net, dev, "f16", max_batch=n, graphs=False, **kw)  # eager: every launch observed
        try:
            g.evaluate(planes)  # plans and kernels made (tuned plans come from the disk cache)
            with OpRecorder() as rec:
                g.evaluate(planes)
            times = time_ops(rec, dev)
            roles = gemm_roles(g)
        finally:
            g.close()
        groups = defaultdict(lambda: [0.0, 0])
        for op, t in zip(rec.ops, times):
            lab = op_label(op, roles)
            groups[lab][0] += t
            groups[lab][1] += 1
        total = sum(times)
        flops = sum(op_flops(op, n) for op in rec.ops) / n
        gemm_ms = sum(t for op, t in zip(rec.ops, times) if op.kind == "gemm")
        log(f"  profile {name} batch {n} [{label}]: {len(rec.ops)} ops, sum of ops {total:.3f} ms, "
            f"evaluate (device, graphs, with transfers) {dev_s * 1e3:.3f} ms; "
            f"{flops / 1e9:.2f} GFLOP/position counted; GEMMs {100 * gemm_ms / total:.1f}% of op time")
        rows = sorted(groups.items(), key=lambda kv: -kv[1][0])
        for lab, (t, cnt) in rows:
            log(f"    {lab:42} {cnt:4d} ops {t:9.4f} ms {100 * t / total:6.2f}%")
        result[label] = dict(ops=len(rec.ops), sum_ms=total, evaluate_ms=dev_s * 1e3, gflop_per_pos=flops / 1e9,
                             groups={lab: {"ms": t, "count": c, "share": t / total} for lab, (t, c) in rows})
    return result


# ------------------------------------------------------------------ torch

def torch_bench(name, proto, sizes, out_dir: Path) -> dict:
    from lc0_rocm.net.writer import write_net

    path = out_dir / f"{name}.pb.gz"
    if not path.exists():
        write_net(proto, path)
    js = out_dir / f"torch_{name}.json"
    cmd = [sys.executable, str(Path(__file__).resolve().parent / "torch_bench.py"), *map(str, sizes), "-w", str(path),
           "--modes", "eager,compile", "--warmup", "5", "--reps", "20", "--json", str(js)]
    log(f"  $ {' '.join(cmd)}")
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    (out_dir / f"torch_{name}.log").write_text(proc.stdout + proc.stderr)
    log(proc.stdout[-3000:])
    if proc.returncode != 0:
        log(f"  torch_bench failed ({proc.returncode}): {proc.stderr[-1500:]}")
        return {"error": proc.stderr[-1500:]}
    res = json.loads(js.read_text())
    res["seconds"] = time.time() - t0
    try:
        path.unlink()  # the net file is large; keep only the JSON
    except OSError:
        pass
    return res


# ------------------------------------------------------------------ main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="perf_out")
    ap.add_argument("--nets", default="bt4,t82")
    ap.add_argument("--sizes", default="1,16,64,256,1024")
    ap.add_argument("--extra-sizes", default="")
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--baseline", action="store_true", help="also the pre-issue-6 configuration")
    ap.add_argument("--baseline-sizes", default="1,256")
    ap.add_argument("--profile", default="", help="comma list of NET:BATCH")
    ap.add_argument("--gemm-peak", action="store_true")
    ap.add_argument("--host", action="store_true")
    ap.add_argument("--torch", default="", help="batch sizes for tools/torch_bench.py (empty: skip)")
    ap.add_argument("--multi", default="", help="backend option list for a multi-GPU run, e.g. gpus=0:1")
    ap.add_argument("--opts", default="", help="backend options of the main configuration")
    ap.add_argument("--ablation", default="", help="batch sizes at which each optimisation is switched off alone")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("LC0_ROCM_CACHE", str(Path("/tmp/lc0-rocm-cache")))

    from lc0_rocm.gpu.runtime.device import get_device

    dev = get_device(0)
    log(f"device: {dev.describe()}; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    log(smi_static())
    RESULTS["device"] = dev.describe()
    RESULTS["smi_static"] = smi_static()
    smi = Smi(out / "smi.csv")
    t_start = time.time()
    try:
        if args.gemm_peak:
            smi.mark("gemm-peak")
            RESULTS["gemm_peak"] = gemm_peak(dev)
            log(f"gemm peak: {json.dumps(RESULTS['gemm_peak'])}")
        sizes = [int(x) for x in args.sizes.split(",") if x]
        extra = [int(x) for x in args.extra_sizes.split(",") if x]
        prof = defaultdict(list)
        for item in [p for p in args.profile.split(",") if p]:
            nm, nb = item.split(":")
            prof[nm].append(int(nb))
        for name in [x for x in args.nets.split(",") if x]:
            t0 = time.time()
            proto, net = make(name)
            log(f"net {name}: built in {time.time() - t0:.1f} s")
            base_opts = args.opts
            if not validate(name, net, base_opts):
                base_opts = ",".join(x for x in (args.opts, "attention=simple,vector_ln=false") if x)
                log(f"  benchmarking {name} with {base_opts!r} instead")
            RESULTS.setdefault("validated_opts", {})[name] = base_opts
            smi.mark(f"bench {name}")
            RESULTS.setdefault("bench", []).extend(bench_net(name, net, sizes + extra, args.batches, base_opts, "new"))
            if args.baseline:
                os.environ["LC0_ROCM_GEMM_TUNE"] = "0"
                try:
                    RESULTS["bench"].extend(bench_net(
                        name, net, [int(x) for x in args.baseline_sizes.split(",")], args.batches,
                        "graph_capture=false,attention=simple,vector_ln=false,side_stream=false,"
                        "gemm_tune=false", "baseline"))
                finally:
                    os.environ.pop("LC0_ROCM_GEMM_TUNE", None)
            if args.ablation:
                smi.mark(f"ablation {name}")
                ab_sizes = [int(x) for x in args.ablation.split(",")]
                for opts in ABLATIONS:
                    full = ",".join(x for x in (base_opts, opts) if x)
                    RESULTS.setdefault("ablation", []).extend(
                        bench_net(name, net, ab_sizes, max(10, args.batches // 2), full, opts))
            if args.multi:
                smi.mark(f"multi {name}")
                RESULTS.setdefault("multi", []).extend(bench_net(name, net, sizes + extra, args.batches,
                                                                 args.multi, args.multi))
            if args.host:
                RESULTS.setdefault("host", {})[name] = host_overhead(net, [1, 16, 256])
            for n in prof.get(name, []):
                smi.mark(f"profile {name} {n}")
                RESULTS.setdefault("profile", {})[f"{name}:{n}"] = profile(name, net, n, args.baseline, base_opts)
            if args.torch:
                smi.mark(f"torch {name}")
                del net
                RESULTS.setdefault("torch", {})[name] = torch_bench(name, proto, [int(x) for x in args.torch.split(",")], out)
            del proto
            (out / "perf.json").write_text(json.dumps(RESULTS, indent=1, default=str))
    finally:
        RESULTS["smi"] = smi.stop()
        RESULTS["seconds"] = time.time() - t_start
        (out / "perf.json").write_text(json.dumps(RESULTS, indent=1, default=str))
    summary()
    return 0


def summary() -> None:
    peak = RESULTS.get("gemm_peak", {}).get("ours_8192", {}).get("tflops")
    log("\n==== summary (fp16) ====")
    if peak:
        log(f"our fp16 GEMM peak 8192^3: {peak:.0f} TFLOP/s; torch: "
            f"{RESULTS['gemm_peak'].get('torch_8192', {}).get('tflops', float('nan')):.0f}; datasheet {DATASHEET_TFLOPS}")
    log(f"{'net':4} {'config':28} {'batch':>5} {'ms':>9} {'nps':>8} {'wall nps':>9} {'lc0 nps':>8} {'x lc0':>6} "
        f"{'%FLOPbd':>7} {'%GEMMpk':>7}")
    for r in RESULTS.get("bench", []) + RESULTS.get("multi", []):
        gflop = GIVEN_GFLOP.get(r["net"], float("nan"))
        tflops = r["mean_nps"] * gflop / 1e3
        lc0 = r.get("lc0_nps")
        log(f"{r['net']:4} {r['config'][:28]:28} {r['size']:5d} {r['mean_ms']:9.3f} {r['mean_nps']:8.0f} {r['wall_nps']:9.0f} "
            f"{lc0 or 0:8.0f} {(r['mean_nps'] / lc0) if lc0 else float('nan'):6.2f} "
            f"{100 * tflops / DATASHEET_TFLOPS:7.1f} {100 * tflops / peak if peak else float('nan'):7.1f}")
    smi = RESULTS.get("smi")
    if smi:
        log("nvidia-smi during the run: " + ", ".join(f"{k} {v['min']:.0f}/{v['median']:.0f}/{v['max']:.0f}"
                                                      for k, v in smi.items()) + " (min/median/max)")
    log(f"suite time {RESULTS.get('seconds', 0):.0f} s")


if __name__ == "__main__":
    sys.exit(main())
