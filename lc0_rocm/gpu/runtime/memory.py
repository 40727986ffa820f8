"""Device memory: owned buffers, views, an arena sized once, pinned host buffers, upload/download.

Pointers are plain ints. `DeviceBuffer.allocate` owns its hipMalloc; `view()` and `Arena.alloc()` return
non-owning views that keep their parent alive. Copies without a stream run on the device's default
stream and wait for it; with a stream they are queued and the caller synchronizes.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .hiperr import GpuError, GpuOutOfMemoryError, hip_call


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


class DeviceBuffer:
    """`nbytes` of device memory at `ptr`; freed with this object only when `owns` (made by `allocate`).

    A view (`parent` given) keeps its parent alive and never frees anything."""

    def __init__(self, device, ptr: int, nbytes: int, parent: "DeviceBuffer | None" = None, owns: bool = False):
        self.device, self.ptr, self.nbytes = device, int(ptr), int(nbytes)
        self._parent, self._owns = parent, owns

    @classmethod
    def allocate(cls, device, nbytes: int) -> "DeviceBuffer":
        if nbytes <= 0:
            raise ValueError(f"allocation size must be positive, got {nbytes}")
        device.make_current()
        try:
            ptr = hip_call("hipMalloc", int(nbytes))
        except GpuOutOfMemoryError:
            raise GpuOutOfMemoryError(f"out of GPU memory: cannot allocate {_mib(nbytes)} "
                                      f"({_mib(device.free_memory())} free of {_mib(device.total_memory)})") from None
        return cls(device, int(ptr), nbytes, owns=True)

    def view(self, offset: int, nbytes: int) -> "DeviceBuffer":
        if offset < 0 or nbytes < 0 or offset + nbytes > self.nbytes:
            raise ValueError(f"view [{offset}, {offset + nbytes}) outside buffer of {self.nbytes} bytes")
        return DeviceBuffer(self.device, self.ptr + offset, nbytes, parent=self)

    def _check_host(self, arr: np.ndarray, what: str) -> None:
        if not arr.flags.c_contiguous:
            raise ValueError(f"{what} array must be C-contiguous")
        if arr.nbytes > self.nbytes:
            raise ValueError(f"{what} of {arr.nbytes} bytes does not fit a buffer of {self.nbytes} bytes")

    def upload(self, arr: np.ndarray, stream=None) -> None:
        """Copy a host array to the start of this buffer."""
        self._check_host(arr, "upload")
        if arr.nbytes == 0:
            return
        s = stream or self.device.stream
        hip_call("hipMemcpyHtoDAsync", self.ptr, arr, arr.nbytes, s.handle)
        if stream is None:
            s.synchronize()

    def download(self, out: np.ndarray, stream=None) -> np.ndarray:
        """Copy the start of this buffer into a host array (out must be writable); returns out."""
        self._check_host(out, "download")
        if not out.flags.writeable:
            raise ValueError("download target must be writable")
        if out.nbytes == 0:
            return out
        s = stream or self.device.stream
        hip_call("hipMemcpyDtoHAsync", out, self.ptr, out.nbytes, s.handle)
        if stream is None:
            s.synchronize()
        return out

    def to_numpy(self, dtype, shape) -> np.ndarray:
        return self.download(np.empty(shape, dtype=dtype))

    def fill_byte(self, value: int, stream=None, nbytes: int | None = None) -> None:
        """Set every byte (or the first nbytes) to value; 0xFF makes every f16/f32 element a NaN."""
        s = stream or self.device.stream
        hip_call("hipMemsetAsync", self.ptr, int(value), self.nbytes if nbytes is None else int(nbytes), s.handle)
        if stream is None:
            s.synchronize()

    def copy_from(self, src: "DeviceBuffer", nbytes: int | None = None, stream=None) -> None:
        n = min(self.nbytes, src.nbytes) if nbytes is None else int(nbytes)
        s = stream or self.device.stream
        hip_call("hipMemcpyDtoDAsync", self.ptr, src.ptr, n, s.handle)
        if stream is None:
            s.synchronize()

    def free(self) -> None:
        if self._owns and self.ptr:
            self.device.make_current()
            hip_call("hipFree", self.ptr)
        self.ptr, self._owns = 0, False

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"DeviceBuffer(ptr=0x{self.ptr:x}, nbytes={self.nbytes})"


class Arena:
    """One device allocation sized once at start; `alloc` hands out aligned views, `reset` takes all back."""

    def __init__(self, device, nbytes: int):
        self.device = device
        self.base = DeviceBuffer.allocate(device, nbytes)
        self.capacity = int(nbytes)
        self.used = 0

    def alloc(self, nbytes: int, align: int = 256) -> DeviceBuffer:
        if nbytes <= 0:
            raise ValueError(f"allocation size must be positive, got {nbytes}")
        start = (self.used + align - 1) // align * align
        if start + nbytes > self.capacity:
            raise GpuError(f"GPU memory arena exhausted: {_mib(nbytes)} requested, "
                           f"{_mib(self.used)} of {_mib(self.capacity)} already in use")
        self.used = start + nbytes
        return self.base.view(start, nbytes)

    def reset(self) -> None:
        self.used = 0

    def free(self) -> None:
        self.base.free()


_HOST_MALLOC_PORTABLE = 1  # hipHostMallocPortable: pinned for every device, not only the current one


class PinnedBuffer:
    """Page-locked host memory (hipHostMalloc, portable): fast, async-capable uploads and downloads."""

    def __init__(self, nbytes: int):
        if nbytes <= 0:
            raise ValueError(f"allocation size must be positive, got {nbytes}")
        self.ptr = 0
        self.ptr = int(hip_call("hipHostMalloc", int(nbytes), _HOST_MALLOC_PORTABLE))
        self.nbytes = int(nbytes)
        self._raw = (ctypes.c_char * self.nbytes).from_address(self.ptr)

    def array(self, dtype, shape) -> np.ndarray:
        """A numpy view of the start of this buffer (valid while the buffer lives)."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape)) if np.ndim(shape) else int(shape)
        if count * dtype.itemsize > self.nbytes:
            raise ValueError(f"{count} x {dtype} does not fit {self.nbytes} pinned bytes")
        return np.frombuffer(self._raw, dtype=dtype, count=count).reshape(shape)

    def free(self) -> None:
        if self.ptr:
            hip_call("hipHostFree", self.ptr)
            self.ptr = 0

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass
