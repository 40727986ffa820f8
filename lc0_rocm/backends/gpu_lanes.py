"""A network runner as one search thread's own, for compiled code (backends/gpu_round_trip.py).

`CompiledLane(runner, with_mlh)` holds what the thread's compiled batch cycle needs from Python: the
lane words (entry points, the runner's compute stream, an event, pinned buffers, workspace pointers,
the run sizes and the captured graphs) and the pinned input and output as arrays. The thread
must be the runner's only user while it searches (lc0's multi-stream way; the backend gives each
search thread a runner of its own: backends/rocm.py `compiled_lanes`).

Python keeps three jobs: `enter()` on the thread before its compiled call (the runner's device made
current: the HIP runtime's current device is per thread), `evaluate_eager` for a batch whose run size
has no graphs yet (the runner's own submit/collect runs it and captures them; `refresh()` then puts
them in the lane words), and `error(status)` turning a failed call's status into the runtime's typed
error (GpuError, GpuOutOfMemoryError) as every other call does (runtime/hiperr.py `check`).
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

from ..encoding.outputs import POLICY_SIZE, NetOutputs
from ..encoding.packed import PackedPlanes
from ..gpu.runtime.hiperr import GpuError, check, hip_call, hip_module
from ..gpu.runtime.memory import PinnedBuffer
from ..gpu.runtime.stream import Event
from . import gpu_round_trip as cb


class CompiledLane:
    """One runner (a `GpuNetwork`) described for a search thread's compiled batch cycle."""

    def __init__(self, runner, with_mlh: bool):
        self.runner, self.with_mlh = runner, bool(with_mlh)
        mb = runner.max_batch
        runner.device.make_current()
        self.pin_in_buf = PinnedBuffer(mb * cb.IN_WORDS * 8)
        self.pin_out_buf = PinnedBuffer(mb * (POLICY_SIZE + cb.HEADS) * 4)
        self.event = Event(timing=False)
        self.pin_in = self.pin_in_buf.array(np.uint64, mb * cb.IN_WORDS)
        self.pin_out = self.pin_out_buf.array(np.float32, mb * (POLICY_SIZE + cb.HEADS))
        self.has_mlh = self.with_mlh and runner.net.moves_left is not None
        ws = runner.ctx.ws
        lane = np.zeros(cb.lane_size(mb), np.int64)
        lane[: cb.L_STREAM] = hip_entry_points()
        lane[cb.L_STREAM] = runner.ctx.stream.ptr
        lane[cb.L_EVENT] = int(self.event.handle)
        lane[cb.L_PIN_IN], lane[cb.L_PIN_OUT] = self.pin_in_buf.ptr, self.pin_out_buf.ptr
        lane[cb.L_WS_IN], lane[cb.L_WS_POLICY], lane[cb.L_WS_HEADS] = (ws["input"].ptr, ws["policy"].ptr,
                                                                       ws["heads"].ptr)
        lane[cb.L_WDL] = int(bool(runner.net.value.wdl))
        lane[cb.L_MAX_BATCH] = mb
        for n in range(1, mb + 1):
            lane[cb.L_RUN_SIZE + n] = runner.run_size(n)
        self.words = lane
        self.refresh()

    def enter(self) -> None:
        """On the search thread, before its compiled call."""
        self.runner.device.make_current()

    def refresh(self) -> None:
        """The runner's captured graphs into the lane words (after `evaluate_eager` captured more)."""
        at = cb.L_RUN_SIZE + self.runner.max_batch + 1
        for (n, mlh), (ga, gb) in list(self.runner._graphs.items()):
            if mlh == self.with_mlh and n <= self.runner.max_batch:
                self.words[at + 2 * n] = int(ga.exec)
                self.words[at + 2 * n + 1] = int(gb.exec)

    def evaluate_eager(self, masks: np.ndarray, values: np.ndarray) -> NetOutputs:
        """One batch the runner's own way (captures the graphs of its run size), then `refresh`."""
        n = len(masks)
        planes = PackedPlanes(np.ascontiguousarray(masks, np.uint64), np.ascontiguousarray(values, np.float32),
                              np.zeros(n, np.int32))
        out = self.runner.collect(self.runner.submit(planes, self.with_mlh))
        self.refresh()
        return out

    def error(self, status: int) -> GpuError:
        """The typed error of the call that failed with `status` (the lane's L_FAILED names it)."""
        return call_error(status, int(self.words[cb.L_FAILED]))

    def close(self) -> None:
        self.event.close()
        self.pin_in_buf.free()
        self.pin_out_buf.free()


def call_error(status: int, failed: int) -> GpuError:
    """The error `check` raises for hipError_t `status` of the round trip's call number `failed`
    (gpu_round_trip.C_*): GpuOutOfMemoryError when memory ran out, else GpuError, naming the call."""
    call = cb.CALL_NAMES[failed] if 0 <= failed < len(cb.CALL_NAMES) else "a HIP call"
    try:
        typed = hip_module("hip").hipError_t(int(status))
    except ValueError:  # a status hip-python does not know: an int, a GpuError naming its number
        typed = int(status)
    try:
        check(typed, f"{call} (compiled batch cycle)")
    except GpuError as e:
        return e
    return GpuError(f"{call} (compiled batch cycle) failed: status {int(status)}")


def _library_path() -> bytes:
    """The HIP runtime library as hip-python resolves it (its own lookup: bundled, ROCm SDK, ROCM_PATH,
    then the loader's search path)."""
    try:
        from rocm.bindings.util.paths import get_library_path
    except ImportError:  # an older hip-python: it opens the plain name through the loader's path
        return b"libamdhip64.so"
    return get_library_path("amdhip64")


def hip_entry_points() -> np.ndarray:
    """int64 addresses of gpu_round_trip.HIP_ENTRY_POINTS in the HIP runtime hip-python uses (GpuError
    if one is missing)."""
    hip_call("hipGetDeviceCount")  # hip-python opens its library at the first call: open it first
    path = _library_path()
    try:  # only the copy already loaded: a second copy would be a second runtime, blind to our handles
        lib = ctypes.CDLL(os.fsdecode(path), mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL)
    except OSError as e:
        raise GpuError(f"cannot find the loaded HIP runtime {os.fsdecode(path)}: {e}") from None
    out = np.zeros(len(cb.HIP_ENTRY_POINTS), np.int64)
    for i, name in enumerate(cb.HIP_ENTRY_POINTS):
        try:
            out[i] = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
        except AttributeError:
            out[i] = 0
        if not out[i]:
            raise GpuError(f"the HIP runtime {os.fsdecode(path)} has no {name}")
    return out
