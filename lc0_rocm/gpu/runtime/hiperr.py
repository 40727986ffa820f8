"""The one status checker of the runtime: unpack hip-python's status-first tuples, raise typed errors.

hip-python returns `(status, value...)` from every call. `hip_call("hipMalloc", n)` calls
`hip.hipMalloc(n)`, raises `GpuError("hipMalloc failed: hipErrorOutOfMemory (2)")` on a bad status and
returns the value (None, one value, or a tuple); a status that says memory ran out (hipErrorOutOfMemory,
hipBLASLt's HIPBLAS_STATUS_ALLOC_FAILED) raises `GpuOutOfMemoryError` instead, so that callers catch the
type (the engine retries with a smaller device batch); `rtc_call` (hipRTC, raising `CompileError`) and
`lt_call` (hipBLASLt) do the same for the other two libraries. A library that cannot be loaded at all
(hip-python's "failed to dlopen"/"failed to dlsym") also becomes a `GpuError` naming the call.

Every one of them ends in `check(status, call)`, which is also the hot loop's checker: a caller that
holds a hip-python function itself (the network's per-batch copies and event calls) passes the
status it got straight to `check`, which costs one truth test when the call succeeded.
`hip_status(call, ...)` returns the status without raising, for calls where a non-zero status is an
answer (hipEventQuery's hipErrorNotReady). hip-python itself is imported lazily, module by module
(`hip_module`), so this package imports on machines without it.
"""

from __future__ import annotations

from typing import Any

from ...errors import CompileError, GpuError, GpuOutOfMemoryError

__all__ = ["GpuError", "GpuOutOfMemoryError", "CompileError", "GemmError", "OUT_OF_MEMORY_STATUSES", "check",
           "hip_module", "hip_modules", "hip_call", "rtc_call", "lt_call", "hip_status", "rtc_status", "hip_enum"]


class GemmError(GpuError):
    """A hipBLASLt matmul could not be set up or run; the message names the shape and dtype."""

    def __init__(self, message: str, m: int = 0, n: int = 0, k: int = 0, dtype: str = ""):
        super().__init__(f"{message} (m={m} n={n} k={k} dtype={dtype})")
        self.m, self.n, self.k, self.dtype = m, n, k, dtype


_MODULES: dict[str, Any] = {}
# the hip-python status members (hip.hipError_t, hipblaslt.hipblasStatus_t) that mean memory ran out
OUT_OF_MEMORY_STATUSES = frozenset({"hipErrorOutOfMemory", "HIPBLAS_STATUS_ALLOC_FAILED"})


def hip_module(lib: str):
    """The hip-python module `hip.<lib>` ('hip', 'hiprtc', 'hipblaslt', 'hipblas'); GpuError if hip-python
    is not installed. Importing a module loads no library: hip-python opens it at the first call."""
    mod = _MODULES.get(lib)
    if mod is None:
        try:  # `from hip import <lib>`: hip-python 10 exposes its modules as attributes of `hip` only
            mod = _MODULES[lib] = getattr(__import__("hip", fromlist=[lib]), lib)
        except (ImportError, AttributeError) as e:
            raise GpuError(f"hip-python is not installed ({e}); install lc0-rocm[rocm]") from None
    return mod


def hip_modules() -> dict[str, Any]:
    """{'hip', 'hiprtc', 'hipblaslt'} -> hip-python modules; GpuError if hip-python is not installed."""
    return {lib: hip_module(lib) for lib in ("hip", "hiprtc", "hipblaslt")}


def hip_enum(lib: str, enum: str, member: str):
    """An enum member of a hip-python module, e.g. hip_enum('hip', 'hipMemcpyKind', 'hipMemcpyHostToDevice')."""
    return getattr(getattr(hip_module(lib), enum), member)


def _status_name(status) -> str:
    name = getattr(status, "name", None)
    value = getattr(status, "value", status)
    return f"{name} ({int(value)})" if name else f"status {int(value)}"


def check(status, call: str, exc=GpuError) -> None:
    """Raise `exc` naming `call` and the status unless `status` (a hip-python status enum or an int) is 0;
    `GpuOutOfMemoryError` for an out-of-memory status (an int status carries no library, so it is `exc`)."""
    if status and int(getattr(status, "value", status)):  # the first test alone decides a success
        kind = GpuOutOfMemoryError if getattr(status, "name", None) in OUT_OF_MEMORY_STATUSES else exc
        raise kind(f"{call} failed: {_status_name(status)}")


def _call(lib: str, call: str, args: tuple):
    fn = getattr(hip_module(lib), call)
    try:
        result = fn(*args)
    except RuntimeError as e:  # hip-python could not dlopen the library or dlsym the function
        raise GpuError(f"{call} failed: {e}") from None
    if not isinstance(result, tuple):
        return 0, result
    status, rest = result[0], result[1:]
    value = None if not rest else rest[0] if len(rest) == 1 else rest
    return status, value


def hip_call(call: str, *args):
    """Call hip.<call>(*args); GpuError (GpuOutOfMemoryError) naming the call and the hipError_t on failure."""
    status, value = _call("hip", call, args)
    check(status, call)
    return value


def rtc_call(call: str, *args):
    """Call hiprtc.<call>(*args); CompileError naming the call and the hiprtcResult on failure."""
    status, value = _call("hiprtc", call, args)
    check(status, call, CompileError)
    return value


def lt_call(call: str, *args):
    """Call hipblaslt.<call>(*args); GpuError naming the call and the hipblasStatus_t on failure."""
    status, value = _call("hipblaslt", call, args)
    check(status, call)
    return value


def hip_status(call: str, *args):
    """(status, value) of hip.<call>(*args), without raising on a bad status."""
    return _call("hip", call, args)


def rtc_status(call: str, *args):
    """Like rtc_call but returns (status_code, status_name, value) without raising (for compile failures)."""
    status, value = _call("hiprtc", call, args)
    return int(getattr(status, "value", status)), _status_name(status), value
