"""Streams, events and graphs: ordering work on the GPU, timing it, replaying it.

`Stream` wraps a non-blocking hipStream_t; `Event` a hipEvent_t (timing on by default). `time_ms` runs a
callable between two events and returns the median milliseconds over repeats (after warm-ups).
`Graph.capture(stream, fn)` records everything `fn()` queues on `stream` (hipStreamBeginCapture in
relaxed mode ... hipStreamEndCapture, hipGraphInstantiate) without running it; `graph.launch(s)`
replays it on any stream of the same device with one call. Work queued during a capture must be
capture-safe: kernel launches, hipBLASLt matmuls with a caller-given workspace, device-to-device
copies; no synchronization, no allocation, no event query.
"""

from __future__ import annotations

import statistics
from typing import Callable

from .hiperr import check, hip_call, hip_enum, hip_status

_STREAM_NON_BLOCKING = 1  # hipStreamNonBlocking
_EVENT_DISABLE_TIMING = 2  # hipEventDisableTiming


class _HipHandle:
    """Owns one HIP handle: `close()` destroys it with `_destroy` (once); garbage collection closes."""

    _destroy = ""
    handle = None

    def close(self) -> None:
        if self.handle is not None:
            hip_call(self._destroy, self.handle)
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Stream(_HipHandle):
    """A HIP stream; `handle` is what hip-python functions take, `ptr` its address."""

    _destroy = "hipStreamDestroy"

    def __init__(self, device=None):
        if device is not None:
            device.make_current()
        self.handle = None
        self.handle = hip_call("hipStreamCreateWithFlags", _STREAM_NON_BLOCKING)

    @property
    def ptr(self) -> int:
        return int(self.handle)

    def synchronize(self) -> None:
        hip_call("hipStreamSynchronize", self.handle)

    def wait(self, event: "Event") -> None:
        """Work queued on this stream after this call waits for `event`."""
        hip_call("hipStreamWaitEvent", self.handle, event.handle, 0)


class Event(_HipHandle):
    """A HIP event; `elapsed_ms(later)` needs both events recorded and `timing=True`."""

    _destroy = "hipEventDestroy"

    def __init__(self, timing: bool = True):
        self.handle = None
        self.handle = hip_call("hipEventCreateWithFlags", 0 if timing else _EVENT_DISABLE_TIMING)

    def record(self, stream: Stream | None = None) -> "Event":
        hip_call("hipEventRecord", self.handle, None if stream is None else stream.handle)
        return self

    def synchronize(self) -> None:
        hip_call("hipEventSynchronize", self.handle)

    def query(self) -> bool:
        """True when all work before the record has finished (hipErrorNotReady -> False)."""
        status, _ = hip_status("hipEventQuery", self.handle)
        if status == hip_enum("hip", "hipError_t", "hipErrorNotReady"):
            return False
        check(status, "hipEventQuery")
        return True

    def elapsed_ms(self, later: "Event") -> float:
        return float(hip_call("hipEventElapsedTime", self.handle, later.handle))


class Graph(_HipHandle):
    """An executable graph (hipGraphExec_t) captured from one stream; `launch(stream)` replays it."""

    def __init__(self, graph, exec_handle):
        self.graph, self.exec = graph, exec_handle

    @classmethod
    def capture(cls, stream: Stream, fn: Callable[[], object]) -> "Graph":
        """Record what fn() queues on `stream` (nothing runs) and instantiate it."""
        mode = hip_enum("hip", "hipStreamCaptureMode", "hipStreamCaptureModeRelaxed")
        hip_call("hipStreamBeginCapture", stream.handle, mode)
        try:
            fn()
        except BaseException:
            try:
                g = hip_call("hipStreamEndCapture", stream.handle)
                if g is not None:
                    hip_call("hipGraphDestroy", g)
            except Exception:
                pass
            raise
        graph = hip_call("hipStreamEndCapture", stream.handle)
        try:
            res = hip_call("hipGraphInstantiate", graph, 0)
            exec_handle = res[0] if isinstance(res, tuple) else res
        except BaseException:
            hip_call("hipGraphDestroy", graph)
            raise
        return cls(graph, exec_handle)

    def launch(self, stream: Stream) -> None:
        hip_call("hipGraphLaunch", self.exec, stream.handle)

    def close(self) -> None:
        if self.exec is not None:
            hip_call("hipGraphExecDestroy", self.exec)
            self.exec = None
        if self.graph is not None:
            hip_call("hipGraphDestroy", self.graph)
            self.graph = None


def time_ms(fn: Callable[[], object], stream: Stream, repeat: int = 20, warmup: int = 3) -> float:
    """Median milliseconds of `fn()` (which queues work on `stream`), timed with events per repeat."""
    for _ in range(warmup):
        fn()
    stream.synchronize()
    starts = [Event() for _ in range(repeat)]
    ends = [Event() for _ in range(repeat)]
    for s, e in zip(starts, ends):
        s.record(stream)
        fn()
        e.record(stream)
    ends[-1].synchronize()
    return statistics.median(s.elapsed_ms(e) for s, e in zip(starts, ends))
