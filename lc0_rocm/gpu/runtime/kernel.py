"""Kernels: load a code object, look up functions, launch with packed arguments.

`Module(code)` loads bytes from the compiler; `Module.function(name)` returns a `Kernel`. Arguments are
typed explicitly (a plain Python int could be a pointer, an int32 or a size_t): `DeviceBuffer` or
`ptr(int)` for pointers, numpy scalars (np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64,
np.float16) or ctypes values. hip-python packs them with natural alignment into the launch buffer.
`get_kernel(device, file, name)` compiles (disk cache), loads and looks up once per process.
Launches are reported to the observers of `observe` (profilers) when there are any.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import observe
from .hiperr import hip_call, hip_enum
from .memory import DeviceBuffer


class ptr:  # noqa: N801 - reads like a cast at the call site: k.launch(..., args=(ptr(p), ...))
    """A raw device address passed as a kernel pointer argument."""

    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = int(value)


_NP_TO_CTYPES = {
    np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.uint32): ctypes.c_uint32,
    np.dtype(np.int64): ctypes.c_int64,
    np.dtype(np.uint64): ctypes.c_uint64,
    np.dtype(np.float32): ctypes.c_float,
    np.dtype(np.float64): ctypes.c_double,
}


def _to_ctypes(a):
    if isinstance(a, DeviceBuffer):
        return ctypes.c_void_p(a.ptr)
    if isinstance(a, ptr):
        return ctypes.c_void_p(a.value)
    if isinstance(a, np.generic):
        if a.dtype == np.float16:
            return ctypes.c_uint16(int(a.view(np.uint16)))
        ct = _NP_TO_CTYPES.get(a.dtype)
        if ct is None:
            raise TypeError(f"unsupported kernel argument dtype {a.dtype}")
        return ct(a.item())
    if isinstance(a, (ctypes._SimpleCData, ctypes.Structure)):
        return a
    raise TypeError(f"kernel argument {a!r} has no explicit type: use DeviceBuffer, ptr(), a numpy scalar "
                    f"or a ctypes value")


def _dim3(d) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, int) else tuple(d)
    if not 1 <= len(d) <= 3 or any(int(x) < 1 for x in d):
        raise ValueError(f"launch dimensions must be 1 to 3 positive ints, got {d}")
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


class Kernel:
    """One __global__ function of a loaded module."""

    def __init__(self, module: "Module", name: str, handle):
        self.module, self.name, self.handle = module, name, handle

    def launch(self, grid, block, args=(), shared: int = 0, stream=None) -> None:
        """Launch on `stream` (the device's default stream if None); asynchronous."""
        grid, block = _dim3(grid), _dim3(block)
        packed = tuple(_to_ctypes(a) for a in args)
        s = stream if stream is not None else self.module.device.stream
        self._launch(grid, block, packed, shared, s)
        if observe.OBSERVERS:
            observe.notify(observe.Launch("kernel", self.name, self, tuple(args), grid, block, int(shared),
                                          lambda st: self._launch(grid, block, packed, shared, st)))

    def _launch(self, grid, block, packed: tuple, shared: int, s) -> None:
        gx, gy, gz = grid
        bx, by, bz = block
        hip_call("hipModuleLaunchKernel", self.handle, gx, gy, gz, bx, by, bz, int(shared),
                 None if s is None else s.handle, None, packed if packed else None)

    def attribute(self, name: str) -> int:
        """A hipFunction_attribute, e.g. 'NUM_REGS', 'MAX_THREADS_PER_BLOCK', 'LOCAL_SIZE_BYTES'."""
        attr = hip_enum("hip", "hipFunction_attribute", f"HIP_FUNC_ATTRIBUTE_{name}")
        return int(hip_call("hipFuncGetAttribute", attr, self.handle))


class Module:
    """A loaded code object; unloaded when garbage-collected (only if the load succeeded)."""

    def __init__(self, code: bytes, device=None):
        self.handle = None
        self.device = device
        if device is not None:
            device.make_current()
        self._code = bytes(code)  # hipModuleLoadData may read the image lazily: keep it alive
        self.handle = hip_call("hipModuleLoadData", self._code)
        self._functions: dict[str, Kernel] = {}

    def function(self, name: str) -> Kernel:
        k = self._functions.get(name)
        if k is None:
            k = self._functions[name] = Kernel(self, name, hip_call("hipModuleGetFunction", self.handle, name.encode()))
        return k

    def __del__(self):
        try:
            if self.handle is not None:
                hip_call("hipModuleUnload", self.handle)
                self.handle = None
        except Exception:
            pass


_MODULES: dict[tuple, Module] = {}


def get_module(device, filename: str, options=()) -> Module:
    """The loaded module of lc0_rocm/kernels/<filename> compiled with `options`, once per process."""
    from .compiler import compile_file

    key = (device.index, filename, tuple(options))
    mod = _MODULES.get(key)
    if mod is None:
        mod = _MODULES[key] = Module(compile_file(device, filename, options), device)
    return mod


def get_kernel(device, filename: str, name: str, options=()) -> Kernel:
    return get_module(device, filename, options).function(name)
