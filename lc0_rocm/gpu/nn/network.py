"""The GPU network runner: builds device layers from a `NetDescription` once and evaluates batches.

`GpuNetwork(net, device, dtype, max_batch)` uploads every weight once (fp32 or fp16 storage; float
accumulation everywhere) and sizes the activation workspace for `max_batch` positions. One batch of
n <= max_batch positions flows through three streams, like lc0's CUDA backend:

    upload stream   pinned slot input --H2D--> slot device input                      [ev_up]
    compute stream  wait ev_up; slot input --D2D--> workspace input; part A (expand, tower/body,
                    policy head -> float32 logits); policy --D2D--> slot [ev_pol]; part B (value and
                    moves-left heads -> float32 W, D, L, Q, M); heads --D2D--> slot [ev_done]
    download stream wait ev_pol: policy D2H into the slot's pinned output (while part B computes);
                    wait ev_done: heads D2H [ev_out]

A *slot* owns pinned host buffers, device staging buffers and the events of one batch in flight;
slots come from a pool that grows on demand. `submit(planes) -> Pending` queues a batch and returns at
once (the host copies the inputs into the slot's pinned buffer and issues ~15 runtime calls);
`collect(pending) -> NetOutputs` waits for that batch's last event without holding any lock. The
policy array it returns is a view of the slot's pinned memory: the slot goes back to the pool when the
last array viewing it is garbage-collected (the value/moves-left columns are small copies).
`evaluate(planes)` = submit every piece of at most max_batch (`planes.chunks`), then collect them all
(`NetOutputs.concat`).

Parts A and B are captured once per batch size (and moves-left on/off) into graphs (hipGraph) when
`graphs=True`: the first batch of a size runs eagerly (that makes and tunes the GEMM plans and
compiles the kernels), then both parts are captured on a private stream and replayed from then on,
one launch each. The workspace and staging pointers are fixed, so one graph serves every slot. A runtime
whose capture fails runs eagerly from then on (`graph_error` says why; logged once as a warning).
"""

from __future__ import annotations

import ctypes
import logging
import threading
import weakref
from collections import deque
from dataclasses import dataclass

import numpy as np

from ...encoding.outputs import POLICY_SIZE, NetOutputs
from ...encoding.packed import NUM_PLANES, PackedPlanes
from ...net.description import AttentionPolicyHead, ClassicalPolicyHead, ConvPolicyHead, NetDescription
from ..runtime.device import device_count
from ..runtime.dtypes import storage_type
from ..runtime.gemm import WORKSPACE_BYTES, Gemm
from ..runtime.hiperr import GpuError, check, hip_module
from ..runtime.memory import DeviceBuffer, PinnedBuffer
from ..runtime.stream import Event, Graph, Stream, time_ms
from .attention import AttentionBodyGpu, AttentionPolicyGpu
from .conv import ClassicalPolicyGpu, ConvPolicyGpu, ConvTowerGpu
from .heads import HeadsGpu
from .kernels import NnKernels
from .layers import CONV_PLANS, Context, SideStream, Workspace

log = logging.getLogger(__name__)
IN_BYTES = NUM_PLANES * (8 + 4)  # per position: 112 uint64 masks, then (after all masks) 112 float32 values
POLICY_BYTES = POLICY_SIZE * 4
HEADS_BYTES = 5 * 4
OUT_BYTES = POLICY_BYTES + HEADS_BYTES
# the tower plan timed fastest per (device, dtype, tower shape, batch size), shared by every runner of
# the process (a search thread's runner, each GPU's) so that they time once and all compute alike
_TOWER_PLAN_CHOICE: dict[tuple, str] = {}
_TOWER_PLAN_LOCK = threading.Lock()


class _Slot:
    """One batch in flight: pinned host buffers, device staging buffers, events."""

    def __init__(self, device, max_batch: int):
        self.max_batch = max_batch
        self.pin_in = PinnedBuffer(max_batch * IN_BYTES)
        self.pin_out = PinnedBuffer(max_batch * OUT_BYTES)
        self.dev_in = DeviceBuffer.allocate(device, max_batch * IN_BYTES)
        self.dev_out = DeviceBuffer.allocate(device, max_batch * OUT_BYTES)
        self.ev_start = Event(timing=True)
        self.ev_up = Event(timing=False)
        self.ev_pol = Event(timing=False)
        self.ev_done = Event(timing=False)
        self.ev_out = Event(timing=True)
        self._in_u8 = self.pin_in.array(np.uint8, max_batch * IN_BYTES)

    def inputs(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Views of the pinned input for n positions: masks uint64 [n, 112], values float32 [n, 112]."""
        m = self._in_u8[: n * NUM_PLANES * 8].view(np.uint64).reshape(n, NUM_PLANES)
        v = self._in_u8[n * NUM_PLANES * 8: n * IN_BYTES].view(np.float32).reshape(n, NUM_PLANES)
        return m, v

    def free(self) -> None:
        for e in (self.ev_start, self.ev_up, self.ev_pol, self.ev_done, self.ev_out):
            e.close()
        self.dev_in.free()
        self.dev_out.free()
        self.pin_in.free()
        self.pin_out.free()


class _SlotPool:
    """Free slots; `release` may run from any thread (a garbage-collection finalizer calls it).

    A slot whose outputs are still referenced when the network closes is freed when it comes back.
    """

    def __init__(self, device, max_batch: int):
        self.device, self.max_batch = device, max_batch
        self.free: deque[_Slot] = deque()
        self.created = 0
        self.closed = False
        self._lock = threading.Lock()

    def acquire(self) -> _Slot:
        try:
            return self.free.pop()
        except IndexError:
            pass
        with self._lock:
            slot = _Slot(self.device, self.max_batch)
            self.created += 1
            return slot

    def release(self, slot: _Slot) -> None:
        if self.closed:
            try:
                slot.free()
            except Exception:
                pass
            return
        self.free.append(slot)  # deque.append is atomic

    def close(self) -> None:
        self.closed = True
        while True:
            try:
                slot = self.free.pop()
            except IndexError:
                break
            slot.free()


@dataclass
class Pending:
    """A submitted batch: collect it with `GpuNetwork.collect`."""

    slot: _Slot
    n: int
    with_mlh: bool
    collected: bool = False
    timed: bool = False
    n_valid: int = 0  # positions of the caller's batch (n >= n_valid rows were computed)


class GpuNetwork:
    """One network on one device in one storage dtype ('f32' or 'f16')."""

    def __init__(self, net: NetDescription, device, dtype: str = "f16", max_batch: int = 1024,
                 gemm: Gemm | None = None, graphs: bool = True, mha_variant: str = "auto",
                 vector_ln: bool = True, side_stream: bool = True, gemm_tune: bool = True, buckets: bool = True,
                 conv_fuse_se: bool = True, conv_plan: str = "auto"):
        itemsize = storage_type(dtype).itemsize
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if conv_plan not in CONV_PLANS:
            raise ValueError(f"conv_plan must be one of {', '.join(CONV_PLANS)}, got {conv_plan!r}")
        self.net, self.device, self.dtype, self.max_batch = net, device, dtype, int(max_batch)
        self.use_graphs = bool(graphs)
        self.graph_error: str | None = None
        self.buckets = bool(buckets)
        self._own_gemm = gemm is None
        device.make_current()
        stream = Stream(device)
        self.upload_stream, self.download_stream = Stream(device), Stream(device)
        self._capture_stream = Stream(device)
        ws = Workspace(device, itemsize)
        self.ctx = Context(device, dtype, gemm or Gemm(device, tune=gemm_tune),
                           NnKernels(device, dtype, mha_variant, vector_ln), stream, self.max_batch, ws)
        self.ctx.conv_fuse_se, self.ctx.conv_plan = bool(conv_fuse_se), conv_plan
        self.tower_plans: dict[int, str] = {}  # batch size -> the tower plan its graph runs (timed at capture)
        self._multi_device = device_count() > 1  # make the device current before each enqueue
        if side_stream and net.body is not None and any(e.mha.smolgen is not None for e in net.body.encoders):
            self.ctx.side = SideStream(device, self.ctx.gemm.workspace.nbytes if gemm else WORKSPACE_BYTES)
        self._lock = threading.Lock()  # orders enqueues (and graph captures) on the compute stream
        self._graphs: dict[tuple, tuple[Graph, Graph]] = {}
        self.graph_captures = 0
        self.pool = None
        try:
            self._build()
            b = self.max_batch
            if self.tower is not None:
                ws.request("tower", b * 64 * self.tower.filters)
            if self.body is not None:
                ws.request("x", b * 64 * self.body.E)
            ws.request("input", b * IN_BYTES, 1)
            ws.request("policy", b * POLICY_SIZE, 4)
            ws.request("heads", b * 5, 4)
            ws.allocate(stream)
            self.pool = _SlotPool(device, self.max_batch)
        except Exception:
            self.close()
            raise
        hip = hip_module("hip")  # the per-batch calls, looked up once; their statuses go to `check`
        self._h2d, self._d2h, self._d2d = hip.hipMemcpyHtoDAsync, hip.hipMemcpyDtoHAsync, hip.hipMemcpyDtoDAsync
        self._record, self._wait, self._sync = hip.hipEventRecord, hip.hipStreamWaitEvent, hip.hipEventSynchronize

    def _build(self) -> None:
        net, ctx = self.net, self.ctx
        self.tower = ConvTowerGpu(ctx, net.tower) if net.tower is not None else None
        self.body = None
        if net.body is not None:
            self.body = AttentionBodyGpu(ctx, net.body, self.tower.filters if self.tower is not None else 0)
        elif self.tower is None:
            raise ValueError("net has neither a conv tower nor an attention body")
        head = net.policy
        if isinstance(head, AttentionPolicyHead):
            self.policy = AttentionPolicyGpu(ctx, head)
        elif isinstance(head, ConvPolicyHead):
            self.policy = ConvPolicyGpu(ctx, head)
        elif isinstance(head, ClassicalPolicyHead):
            self.policy = ClassicalPolicyGpu(ctx, head)
        else:
            raise ValueError(f"unknown policy head {type(head).__name__}")
        self._policy_follows_plan = self.tower is not None and not isinstance(head, AttentionPolicyHead)
        # a classical tower's heads run in fp32 (heads.py): a tanh value head's Q passes validate in fp16
        classical = net.body is None
        self.heads = HeadsGpu(ctx, net.value, net.moves_left, wide=classical,
                              width=self.tower.filters if classical else 0)

    @property
    def workspace_bytes(self) -> int:
        return self.ctx.ws.nbytes

    # ------------------------------------------------------------------ the forward pass, in two parts

    def _tower_plan(self, n: int) -> str:
        """The plan the tower runs a batch of n with: the timed choice, else the default (eager runs)."""
        return self.tower_plans.get(n) or self.tower.plans(n)[0]

    def _plan_key(self, n: int) -> tuple:
        t = self.net.tower
        shape = (t.input.n_out, len(t.blocks), tuple(b.se is not None for b in t.blocks), t.activation)
        return (self.device.name, self.device.arch_full, self.dtype, shape, n)

    def _part_a(self, n: int, plan: str | None = None) -> None:
        """Workspace input -> tower and/or body -> policy logits (float32) in workspace `policy`."""
        ws = self.ctx.ws
        x = ws["input"]
        if self.tower is not None:
            plan = plan or self._tower_plan(n)
            self.tower(ws["input"], ws["tower"], n, plan=plan)
            x = ws["tower"]
        if self.body is not None:
            self.body(ws["tower"] if self.body.body.embedding == "tower" else ws["input"], ws["x"], n)
            x = ws["x"]
        self._feats = x
        if self._policy_follows_plan:  # a conv or classical policy head runs with the tower's plan
            self.policy(x, ws["policy"], n, plan=plan)
        else:
            self.policy(x, ws["policy"], n)

    def _part_b(self, n: int, with_mlh: bool) -> None:
        """Body output -> value and moves-left heads -> workspace `heads` (float32 [n, 5])."""
        self.heads(self._feats, self.ctx.ws["heads"], n, with_mlh=with_mlh)

    def _compute(self, n: int, with_mlh: bool, slot: _Slot) -> None:
        """Queue parts A and B on the compute stream (graphs when captured) with the slot copies between."""
        ctx, ws, s = self.ctx, self.ctx.ws, self.ctx.stream.handle
        key = (n, with_mlh)
        graphs = self._graphs.get(key) if self.use_graphs else None
        check(self._d2d(ws["input"].ptr, slot.dev_in.ptr, n * IN_BYTES, s)[0], "hipMemcpyDtoDAsync")
        if graphs is not None:
            graphs[0].launch(ctx.stream)
        else:
            if self.use_graphs:  # each plan's first run (GEMM plans, kernels) before the capture times them
                for plan in self._untimed_plans(n)[1:]:
                    self._part_a(n, plan)
            self._part_a(n)
        check(self._d2d(slot.dev_out.ptr, ws["policy"].ptr, n * POLICY_BYTES, s)[0], "hipMemcpyDtoDAsync")
        check(self._record(slot.ev_pol.handle, s)[0], "hipEventRecord")
        if graphs is not None:
            graphs[1].launch(ctx.stream)
        else:
            self._part_b(n, with_mlh)
        check(self._d2d(slot.dev_out.ptr + n * POLICY_BYTES, ws["heads"].ptr, n * HEADS_BYTES, s)[0],
              "hipMemcpyDtoDAsync")
        check(self._record(slot.ev_done.handle, s)[0], "hipEventRecord")
        if self.use_graphs and graphs is None:
            # every GEMM plan of this size now exists and is tuned, every kernel compiled: capture
            try:
                self._capture(n, with_mlh)
            except GpuError as e:  # a runtime without working capture: stay eager, say so once
                self.graph_error = str(e)
                self.use_graphs = False
                log.warning("graph capture failed (%s); running without graphs", e)

    def _untimed_plans(self, n: int) -> list[str]:
        """The tower plans still to time for batches of n (none if there is no choice or it is made)."""
        if self.tower is None or n in self.tower_plans:
            return []
        plans = self.tower.plans(n)
        if len(plans) > 1:
            with _TOWER_PLAN_LOCK:
                chosen = _TOWER_PLAN_CHOICE.get(self._plan_key(n))
            if chosen is None:
                return plans
            self.tower_plans[n] = chosen
        else:
            self.tower_plans[n] = plans[0]
        return []

    def _capture(self, n: int, with_mlh: bool) -> None:
        ctx = self.ctx
        saved = ctx.stream
        ctx.stream = self._capture_stream
        try:
            plans = self._untimed_plans(n)
            if plans:  # capture each, keep the fastest (the measurement that picks the kernels per size)
                # the replays below write the workspace: every batch queued before (this one's eager pass,
                # earlier ones' graphs) must be done with it first
                saved.synchronize()
                timed = []
                for plan in plans:
                    g = Graph.capture(self._capture_stream, lambda: self._part_a(n, plan))
                    reps = 15 if n <= 64 else 5  # medians of a few ms each at big batches: start-up stays short
                    timed.append((time_ms(lambda: g.launch(self._capture_stream), self._capture_stream,
                                          repeat=reps, warmup=2), plan, g))
                timed.sort(key=lambda t: t[0])
                with _TOWER_PLAN_LOCK:  # another runner may have timed this size meanwhile: its choice holds
                    best = _TOWER_PLAN_CHOICE.setdefault(self._plan_key(n), timed[0][1])
                ga = next(g for _, plan, g in timed if plan == best)
                for _, plan, g in timed:
                    if plan != best:
                        g.close()
                self.tower_plans[n] = best
                log.debug("tower plans at batch %d: %s", n, ", ".join(f"{p} {ms:.3f} ms" for ms, p, _ in timed))
            else:
                ga = Graph.capture(self._capture_stream, lambda: self._part_a(n))
            gb = Graph.capture(self._capture_stream, lambda: self._part_b(n, with_mlh))
        finally:
            ctx.stream = saved
        self._graphs[(n, with_mlh)] = (ga, gb)
        self.graph_captures += 1

    def prepare(self, up_to: int, with_mlh: bool = True) -> None:
        """Run (and capture) every run size a batch of up to `up_to` positions can take."""
        self.warm_up(self.bucket_sizes(up_to) if self.buckets else range(1, min(up_to, self.max_batch) + 1),
                     with_mlh)

    def warm_up(self, sizes, with_mlh: bool = True) -> None:
        """Run (and capture graphs for) each batch size once, on zero planes (lc0's graph pre-capture)."""
        for n in sizes:
            z = PackedPlanes(np.zeros((n, NUM_PLANES), np.uint64), np.zeros((n, NUM_PLANES), np.float32),
                             np.zeros(n, np.int32))
            self.collect(self.submit(z, with_mlh))

    # ------------------------------------------------------------------ asynchronous API

    def run_size(self, n: int) -> int:
        """Rows computed for a batch of n: n itself, or with `buckets` the next of a few sizes (1..8,
        then steps of 8 to 256, 32 to 512, 64 beyond), so that a search's varying batch sizes meet
        graphs and GEMM plans prepared in advance instead of planning, tuning and capturing mid-search
        (steps of 32 above 64 cost 2-4 % of engine nps in padding, measured on the H100)."""
        if not self.buckets or n <= 8:
            return n
        step = 8 if n <= 256 else (32 if n <= 512 else 64)
        return min(self.max_batch, -(-n // step) * step)

    def bucket_sizes(self, up_to: int) -> list[int]:
        """The distinct run sizes of batches of 1..up_to positions."""
        return sorted({self.run_size(n) for n in range(1, min(up_to, self.max_batch) + 1)})

    def submit(self, planes: PackedPlanes, with_mlh: bool = True, timed: bool = False) -> Pending:
        """Queue one batch of at most max_batch positions; returns at once (`timed`: for collect(timed=True)).
        Rows past the batch in its run size hold whatever the slot held: their outputs are dropped."""
        n_valid = len(planes)
        if not 1 <= n_valid <= self.max_batch:
            raise ValueError(f"submit: batch of {n_valid} positions, expected 1..{self.max_batch}")
        n = self.run_size(n_valid)
        if self.ctx is None:
            raise GpuError("the GPU network is closed")
        if self._multi_device:
            self.device.make_current()  # a new slot's events belong to the current device
        slot = self.pool.acquire()
        try:
            m, v = slot.inputs(n)
            np.copyto(m[:n_valid], planes.masks, casting="unsafe")
            np.copyto(v[:n_valid], planes.values, casting="unsafe")
            rec, wait = self._record, self._wait
            with self._lock:
                if self._multi_device:
                    self.device.make_current()
                up, dn = self.upload_stream.handle, self.download_stream.handle
                if timed:
                    check(rec(slot.ev_start.handle, up)[0], "hipEventRecord")
                check(self._h2d(slot.dev_in.ptr, slot.pin_in.ptr, n * IN_BYTES, up)[0], "hipMemcpyHtoDAsync")
                check(rec(slot.ev_up.handle, up)[0], "hipEventRecord")
                check(wait(self.ctx.stream.handle, slot.ev_up.handle, 0)[0], "hipStreamWaitEvent")
                self._compute(n, with_mlh, slot)
                check(wait(dn, slot.ev_pol.handle, 0)[0], "hipStreamWaitEvent")
                check(self._d2h(slot.pin_out.ptr, slot.dev_out.ptr, n * POLICY_BYTES, dn)[0], "hipMemcpyDtoHAsync")
                check(wait(dn, slot.ev_done.handle, 0)[0], "hipStreamWaitEvent")
                check(self._d2h(slot.pin_out.ptr + n * POLICY_BYTES, slot.dev_out.ptr + n * POLICY_BYTES,
                                n * HEADS_BYTES, dn)[0], "hipMemcpyDtoHAsync")
                check(rec(slot.ev_out.handle, dn)[0], "hipEventRecord")
        except BaseException:
            self.pool.release(slot)
            raise
        return Pending(slot, n, with_mlh, timed=timed, n_valid=n_valid)

    def collect(self, pending: Pending, timed: bool = False):
        """Wait for a submitted batch (no lock held) and return its NetOutputs (and device seconds if timed)."""
        if pending.collected:
            raise ValueError("collect: this batch was already collected")
        if timed and not pending.timed:
            raise ValueError("collect(timed=True) needs submit(timed=True)")
        pending.collected = True
        slot, n = pending.slot, pending.n
        try:
            check(self._sync(slot.ev_out.handle)[0], "hipEventSynchronize")
            seconds = slot.ev_start.elapsed_ms(slot.ev_out) * 1e-3 if timed else 0.0
        except BaseException:
            self.pool.release(slot)
            raise
        # a fresh ctypes object over the pinned output: the arrays below keep it alive, and the slot
        # returns to the pool when it is collected
        raw = (ctypes.c_char * (n * OUT_BYTES)).from_address(slot.pin_out.ptr)
        weakref.finalize(raw, self.pool.release, slot)
        flat = np.frombuffer(raw, dtype=np.float32)
        k = pending.n_valid  # rows past the caller's batch (bucket padding) are dropped
        policy = flat[: n * POLICY_SIZE].reshape(n, POLICY_SIZE)[:k]
        heads = flat[n * POLICY_SIZE: n * (POLICY_SIZE + 5)].reshape(n, 5)[:k].copy()
        wdl = self.net.value.wdl
        has_mlh = pending.with_mlh and self.net.moves_left is not None
        out = NetOutputs(
            policy=policy,
            wdl=np.ascontiguousarray(heads[:, :3]) if wdl else None,
            q=np.ascontiguousarray(heads[:, 3]),
            d=np.ascontiguousarray(heads[:, 1]) if wdl else np.zeros(k, np.float32),
            mlh=np.ascontiguousarray(heads[:, 4]) if has_mlh else None,
        )
        return (out, seconds) if timed else out

    # ------------------------------------------------------------------ synchronous API

    def evaluate(self, planes: PackedPlanes, with_mlh: bool = True) -> NetOutputs:
        pend = [self.submit(piece, with_mlh) for piece in planes.chunks(self.max_batch)]
        return NetOutputs.concat([self.collect(p) for p in pend])

    def evaluate_timed(self, planes: PackedPlanes, with_mlh: bool = True) -> tuple[NetOutputs, float]:
        """Like evaluate; also the device seconds from the first upload to the last download."""
        pend = [self.submit(piece, with_mlh, timed=True) for piece in planes.chunks(self.max_batch)]
        outs = [self.collect(p) for p in pend]
        seconds = pend[0].slot.ev_start.elapsed_ms(pend[-1].slot.ev_out) * 1e-3  # outs keep the slots leased
        return NetOutputs.concat(outs), seconds

    def close(self) -> None:
        ctx = getattr(self, "ctx", None)
        if ctx is None:
            return
        try:
            self.device.synchronize()
        except Exception:
            pass
        for ga, gb in self._graphs.values():
            ga.close()
            gb.close()
        self._graphs.clear()
        if self.pool is not None:
            self.pool.close()
        ctx.free()
        if self._own_gemm:
            ctx.gemm.close()
        for s in (ctx.stream, self.upload_stream, self.download_stream, self._capture_stream):
            s.close()
        self.ctx = None
