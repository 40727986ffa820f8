"""The GPU backends `rocm` (fp32), `rocm-fp16` and `rocm-auto` (fp16 where the device has fast fp16).

A thin `Backend` over `lc0_rocm.gpu.nn.network.GpuNetwork` (one device) or
`lc0_rocm.gpu.nn.multi.MultiGpuNetwork` (several); imported by the backend factory only when a GPU
backend is asked for, and with backends/gpu_lanes.py (its search threads' runners) the only modules
outside `lc0_rocm.gpu` that import it. Backend options (lc0 style, "key=value,..."):
  `gpu` (device index, default 0) or `gpus` (device list, lc0's demux: "gpus=0,1" or "gpus=0:1" splits every batch
  across the devices, one runner per entry; a device may repeat; "," also separates the list where the
  option string is not itself split on commas);
  `max_batch` (positions per device pass, default 1024; the constructor's `max_batch` argument overrides
  it: the engine's smaller device batch after the GPU ran out of memory);
  `mlh` (true/false);
  `graph_capture` (true/false, default true: each batch size is captured into hipGraphs on first use
  and replayed); `graph_precapture` (N: run and capture batch sizes 1..N at start, default 0);
  `buckets` (true/false, default true: a batch runs at the next of a few sizes, 1..8, then steps of
  8 / 32 / 64, so a search meets prepared graphs; `prepare(n)` runs them all once);
  `parallel_start` (true/false, default true: with several devices, each one's runner is built on its
  own thread, the GPUs' starts side by side);
  `early_start` (true/false, default false: with several devices and `parallel_start`, the backend is
  open as soon as one GPU's runner is ready; batches go to the runners ready so far and the others join
  as they come up, a late one's start failure raised by the next batch; `analyse` sets it, while
  `prepare`, `compiled_lanes` and `preferred_batch` wait for every GPU);
  `attention` (auto, simple or t128: the attention kernel; auto = t128 where it applies, simple for head
  depths t128 cannot serve); `vector_ln` (true/false, default true: the 16-byte-access LayerNorm kernel
  where widths allow); `side_stream` (true/false, default true: smolgen runs on a second stream beside
  Q|K|V at batches of at most 64); `gemm_tune` (true/false, default true: time the hipBLASLt
  heuristic's candidates once per shape and keep the fastest, cached on disk per device; false takes the
  heuristic's first choice; LC0_ROCM_GEMM_TUNE=0 also turns it off); `conv_plan` (auto, fused or direct:
  how a classical tower runs a batch; auto times Winograd and the direct small-batch kernels per batch
  size when its graph is captured and keeps the faster, gpu/nn/conv_small.py).
Besides `evaluate`, the backend has an asynchronous pair for a search that keeps batches in flight:
`submit(planes) -> GpuBatch` (queues the batch, in passes of at most `max_batch` positions, and returns
at once) and `collect(batch) -> NetOutputs` (waits for it, holding no lock); `evaluate` =
collect(submit(planes)). `evaluate_timed(planes)` also returns the device seconds of the batch (events
around upload, compute and download), which backendbench uses. `compiled_lanes(k, rows)` gives each
of a search's k threads a runner of its own for its compiled batch cycle (backends/gpu_lanes.py).
Failures of the GPU stack are
`BackendError`s with a one-line message that says what failed; the runtime's own errors keep their
type (`GpuError`, and `GpuOutOfMemoryError` when memory ran out, host memory included), so callers
catch the type.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from ..encoding.outputs import NetOutputs
from ..encoding.packed import PackedPlanes
from ..errors import BackendError, GpuOutOfMemoryError, Lc0RocmError
from ..gpu.nn.kernels import MHA_VARIANTS
from ..gpu.nn.layers import CONV_PLANS
from ..net.description import NetDescription
from .base import Backend
from .options import bool_option, choice_option, gpu_list, int_option

DEFAULT_MAX_BATCH = 1024
log = logging.getLogger(__name__)
# gfx archs without packed/fast fp16 math (pre-Vega GCN); everything newer, and NVIDIA sm_53+, has it
_SLOW_FP16_ARCHS = ("gfx801", "gfx802", "gfx803", "gfx805", "gfx810")


def gpu_available() -> bool:
    """True when hip-python finds a usable device (never raises)."""
    return device_usable(0)


def device_usable(index: int) -> bool:
    """True when device `index` opens (the process keeps it open; never raises)."""
    try:
        from ..gpu.runtime.device import gpu_available as probe
    except Exception:
        return False
    ok, _ = probe(index)
    return ok


def fp16_is_fast(arch: str) -> bool:
    """Whether `rocm-auto` should choose fp16 on a device of this arch (gfx... or sm_XY)."""
    if arch.startswith("sm_"):
        major_minor = arch[3:].rstrip("a")
        return major_minor.isdigit() and int(major_minor) >= 53 and major_minor != "61"
    if arch.startswith("gfx"):
        return arch not in _SLOW_FP16_ARCHS and not arch.startswith("gfx7") and not arch.startswith("gfx6")
    return False


@dataclass(frozen=True)
class GpuBatch:
    """A batch submitted to the GPU backend, for `collect`: the network that runs it and the handles of
    its passes (the network's `Pending` / `MultiPending`, one per piece of at most its max_batch), in order."""

    network: object  # GpuNetwork or MultiGpuNetwork
    passes: tuple


class RocmBackend(Backend):
    """A network on one or more HIP devices; precision 'fp32', 'fp16' or 'auto'; `max_batch` (positions
    per device pass) overrides the options' max_batch."""

    def __init__(self, net: NetDescription, precision: str = "auto", options: dict | None = None,
                 max_batch: int | None = None):
        super().__init__(net)
        opts = dict(options or {})
        if precision not in ("fp32", "fp16", "auto"):
            raise BackendError(f"unknown precision {precision!r} (fp32, fp16, auto)")
        if max_batch is not None and max_batch < 1:
            raise BackendError(f"max_batch must be >= 1, got {max_batch}")
        gpus = gpu_list(opts)
        self._max_batch = max_batch if max_batch is not None else int_option(opts, "max_batch", DEFAULT_MAX_BATCH)
        self.mlh = bool_option(opts, "mlh", True)
        graphs = bool_option(opts, "graph_capture", True)
        precapture = int_option(opts, "graph_precapture", 0, minimum=0)
        vector_ln = bool_option(opts, "vector_ln", True)
        side_stream = bool_option(opts, "side_stream", True)
        gemm_tune = bool_option(opts, "gemm_tune", True)
        buckets = bool_option(opts, "buckets", True)
        parallel_start = bool_option(opts, "parallel_start", True)
        early_start = bool_option(opts, "early_start", False)
        attention = choice_option(opts, "attention", MHA_VARIANTS, "auto")
        conv_plan = choice_option(opts, "conv_plan", CONV_PLANS, "auto")
        self.network = None
        self._lock = threading.Lock()  # guards close() against a concurrent start of an evaluation
        self._lane_runners: dict = {}  # search thread k -> the runner built for it (k past the network's own)
        self._lanes: dict = {}  # runner index -> its CompiledLane (backends/gpu_lanes.py)
        self._late_error = None  # a GPU's start failure after the backend opened (`early_start`)
        try:
            from ..gpu.nn.multi import MultiGpuNetwork
            from ..gpu.nn.network import GpuNetwork
            from ..gpu.runtime.device import get_device

            devices = [get_device(i) for i in gpus]
            self.device = devices[0]
            if precision == "auto":
                precision = "fp16" if all(fp16_is_fast(d.arch) for d in devices) else "fp32"
            self.precision = precision
            self.name = "rocm-fp16" if precision == "fp16" else "rocm"
            dtype = "f16" if precision == "fp16" else "f32"
            kw = dict(graphs=graphs, mha_variant=attention, vector_ln=vector_ln, side_stream=side_stream,
                      gemm_tune=gemm_tune, buckets=buckets, conv_plan=conv_plan)
            self._devices, self._dtype, self._kw = devices, dtype, kw
            if len(devices) == 1:
                self.network = GpuNetwork(net, self.device, dtype, self._max_batch, **kw)
            else:
                self.network = MultiGpuNetwork(net, devices, dtype, self._max_batch, parallel_start=parallel_start,
                                               early_start=early_start, **kw)
            if precapture:
                self.network.warm_up(range(1, min(precapture, self.network.max_batch) + 1), self.mlh)
        except (Lc0RocmError, MemoryError, ValueError, RuntimeError, OSError) as e:
            self._close_quietly()
            raise _start_failure(e) from None

    @property
    def preferred_batch(self) -> int:
        """MinibatchSize 0 on this backend: lc0's CUDA heuristic, twice the compute units
        (`network_cuda.cc: GetMiniBatchSize`), rounded down to a prepared run size (every GPU started)."""
        net = self._all_started() if self.network is not None else None
        runner = net.runners[0] if hasattr(net, "runners") else net
        want = max(1, 2 * int(getattr(self.device, "cu_count", 0) or 128))
        if runner is None or not getattr(runner, "buckets", False):
            return min(want, self.max_batch)
        sizes = [s for s in runner.bucket_sizes(min(want, runner.max_batch)) if s <= want]
        return sizes[-1] * (len(net.runners) if hasattr(net, "runners") else 1)

    @property
    def device_count(self) -> int:
        """GPUs behind this backend (the search's Threads 0 gives each at least two threads)."""
        return len(self._devices)

    @property
    def max_batch(self) -> int:
        """Positions per pass: max_batch per device, times the devices of a multi-GPU backend."""
        net = self.network
        return net.max_batch if net is not None else self._max_batch

    def _net(self):
        net = self.network
        if net is None:
            raise BackendError("the GPU backend is closed")
        return net

    def _all_started(self):
        """The network once every GPU's runner is ready (`early_start`); a start failure as one line."""
        net = self._net()
        if hasattr(net, "wait_all"):
            try:
                net.wait_all()
            except Exception as e:
                raise (self._late_start_failure(net, e) or e) from None
        return net

    def _late_start_failure(self, net, e: BaseException) -> BackendError | None:
        """`e` as the error to raise if it is a runner's start failure raised after the backend opened
        (`early_start`): as the constructor would have raised it, naming the GPU; else None."""
        failed = getattr(net, "start_failure", None)
        if failed is None or failed[1] is not e:
            return None
        if self._late_error is None:  # formatted once: `_failure` rewrites the error's message
            self._late_error = _start_failure(e, f" on GPU {self._devices[failed[0]].index}")
        return self._late_error

    def _evaluation_error(self, net, e: Exception) -> Exception:
        """What an evaluation raises for `e`: a GPU's late start failure as one line naming it, a failure
        of the GPU stack as `_failure`'s one line (its type kept), anything else unchanged."""
        late = self._late_start_failure(net, e)
        if late is not None:
            return late
        if isinstance(e, (Lc0RocmError, MemoryError)):
            return _failure("GPU evaluation failed", e)
        return e

    def submit(self, planes: PackedPlanes) -> GpuBatch:
        """Queue a batch of any size, in passes of at most the device batch (base.py's contract)."""
        net = self._net()
        passes = []
        try:
            for piece in planes.chunks(net.max_batch):
                passes.append(net.submit(piece, self.mlh))
        except Exception as e:
            for p in passes:  # give the queued passes' slots back
                try:
                    net.collect(p)
                except Exception:
                    pass
            raise self._evaluation_error(net, e) from None
        return GpuBatch(net, tuple(passes))

    def collect(self, handle: GpuBatch) -> NetOutputs:
        """The outputs of a submitted batch (waits for the device without holding any lock)."""
        try:
            return NetOutputs.concat([handle.network.collect(p) for p in handle.passes])
        except Exception as e:
            raise self._evaluation_error(handle.network, e) from None

    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        return self.collect(self.submit(planes))

    def compiled_lanes(self, count: int, rows: int):
        """Search thread k's own runner, described for its compiled batch cycle (lc0's multi-stream way:
        a stream, a workspace and captured graphs per search thread): the network's runners first (one
        per GPU), then runners built here on the GPUs in turn, each with its own copy of the weights and
        a workspace for batches of `rows` (not the network's max_batch: memory), its batch sizes
        prepared as `prepare` does; kept for the next searches (the engine's warm-up builds them at
        `isready`: search/warmup.py `prepare_backend`). None where graphs are off (nothing to launch
        from compiled code), a thread's batches would not fit the network's runners, or a runner of its
        own cannot be had (memory, the runtime's entry points: logged, and the threads go the Python way)."""
        from ..gpu.nn.network import GpuNetwork
        from .compiled_eval import KIND_GPU, CompiledEval
        from .gpu_lanes import CompiledLane

        net = self._all_started()
        base = list(net.runners) if hasattr(net, "runners") else [net]
        if not all(r.use_graphs for r in base) or rows > min(r.max_batch for r in base):
            return None
        size = base[0].run_size(rows)
        try:
            runners = []
            for k in range(count):
                r = base[k] if k < len(base) else self._lane_runners.get(k)
                if k >= len(base) and r is not None and r.max_batch < size:  # built for a smaller minibatch
                    self._drop_lane(k)
                    r = None
                if r is None:
                    r = GpuNetwork(self.net, self._devices[k % len(self._devices)], self._dtype, size, **self._kw)
                    self._lane_runners[k] = r
                    r.prepare(rows, self.mlh)  # its graphs now, not one by one inside the search
                runners.append(r)
            entries = []
            for k, r in enumerate(runners):
                lane = self._lanes.get(k)
                if lane is None or lane.runner is not r:
                    lane = self._lanes[k] = CompiledLane(r, self.mlh)
                else:
                    lane.refresh()  # graphs the runner captured since (a batch through Python)
                entries.append(CompiledEval(KIND_GPU, lane.words, lane.pin_in, lane.pin_out, None, lane.has_mlh, lane))
        except (Lc0RocmError, MemoryError) as e:
            log.warning("search threads without compiled GPU calls: %s", _one_line(e))
            return None
        return entries

    def _drop_lane(self, k: int) -> None:
        """Close search thread k's own runner (k past the network's runners) and its lane."""
        lane, runner = self._lanes.pop(k, None), self._lane_runners.pop(k, None)
        if lane is not None:
            lane.close()
        if runner is not None:
            runner.close()

    def prepare(self, max_batch: int) -> None:
        """Plan, tune and capture every run size of batches up to `max_batch` (the engine does this at
        `isready`, so that no search meets a new batch size)."""
        net = self._all_started()
        try:
            net.prepare(max_batch, self.mlh)
        except (Lc0RocmError, MemoryError) as e:
            raise _failure("GPU preparation failed", e) from None

    def evaluate_timed(self, planes: PackedPlanes) -> tuple[NetOutputs, float]:
        """(outputs, device seconds from the first upload to the last download)."""
        net = self._net()
        try:
            return net.evaluate_timed(planes, self.mlh)
        except Exception as e:
            raise self._evaluation_error(net, e) from None

    def _close_lanes(self) -> None:
        lanes, runners = list(self._lanes.values()), list(self._lane_runners.values())
        self._lanes, self._lane_runners = {}, {}
        for lane in lanes:
            lane.close()
        for r in runners:
            r.close()

    def _close_quietly(self) -> None:
        try:
            self._close_lanes()
            if self.network is not None:
                self.network.close()
        except Exception:
            pass
        self.network = None

    def close(self) -> None:
        with self._lock:
            self._close_lanes()
            if self.network is not None:
                self.network.close()
                self.network = None


def _failure(what: str, e: BaseException) -> BackendError:
    """A failure of the GPU stack as the error to raise, one line after `what`: the runtime's own error
    (a BackendError: GpuError, GpuOutOfMemoryError, ...) with its type and attributes kept, host memory
    running out as GpuOutOfMemoryError, any other package error as a BackendError."""
    line = f"{what}: {_one_line(e)}"
    if isinstance(e, BackendError):
        e.args = (line,)
        return e
    if isinstance(e, MemoryError):
        return GpuOutOfMemoryError(f"{what}: host memory ran out (MemoryError)")
    return BackendError(line)


def _start_failure(e: BaseException, where: str = "") -> BackendError:
    """A runner's start failure as the error to raise: one line, the runtime's types kept."""
    if isinstance(e, (Lc0RocmError, MemoryError)):
        return _failure(f"cannot start the GPU backend{where}", e)
    return BackendError(f"cannot start the GPU backend{where}: {type(e).__name__}: {_one_line(e)}")


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
