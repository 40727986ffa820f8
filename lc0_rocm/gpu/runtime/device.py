"""Device selection and attributes (hipDeviceGetAttribute, hipGetDeviceProperties for the arch name).

`get_device(i)` opens device i once per process and caches it; `gpu_available()` says whether a GPU is
usable here and why not, without raising. `Device.arch` is the architecture without feature flags
('gfx90a' from 'gfx90a:sramecc+:xnack-'); under the HIP-on-CUDA test layer it is 'sm_90'.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .hiperr import GpuError, hip_call, hip_enum

_DEVICES: dict[int, "Device"] = {}


def _attr(name: str, index: int) -> int:
    return int(hip_call("hipDeviceGetAttribute", hip_enum("hip", "hipDeviceAttribute_t", f"hipDeviceAttribute{name}"), index))


@dataclass
class Device:
    """One GPU: identity, the limits kernels and launchers need, and a default stream."""

    index: int
    name: str = ""
    arch: str = ""
    arch_full: str = ""
    warp_size: int = 0
    cu_count: int = 0
    total_memory: int = 0
    l2_bytes: int = 0
    max_shared_per_block: int = 0
    max_threads_per_block: int = 0
    clock_khz: int = 0
    stream: object = field(default=None, repr=False)

    @classmethod
    def open(cls, index: int = 0) -> "Device":
        count = device_count()
        if count == 0:
            raise GpuError("no GPU found (hipGetDeviceCount returned 0)")
        if not 0 <= index < count:
            raise GpuError(f"GPU index {index} out of range: {count} device(s) present")
        dev = cls(index)
        dev.make_current()
        props = hip_call("hipGetDeviceProperties", index)
        dev.arch_full = str(props.gcnArchName)
        dev.arch = dev.arch_full.split(":")[0]
        name = hip_call("hipDeviceGetName", 256, index)
        dev.name = (name.decode() if isinstance(name, (bytes, bytearray)) else str(name)).rstrip("\x00")
        dev.warp_size = _attr("WarpSize", index)
        dev.cu_count = _attr("MultiprocessorCount", index)
        dev.l2_bytes = _attr("L2CacheSize", index)
        dev.max_shared_per_block = _attr("MaxSharedMemoryPerBlock", index)
        dev.max_threads_per_block = _attr("MaxThreadsPerBlock", index)
        dev.clock_khz = _attr("ClockRate", index)
        dev.total_memory = int(hip_call("hipDeviceTotalMem", index))
        if not dev.arch or dev.warp_size not in (32, 64):
            raise GpuError(f"device {index} reports arch {dev.arch_full!r} and warp size {dev.warp_size}")
        from .stream import Stream

        dev.stream = Stream(dev)
        return dev

    def make_current(self) -> None:
        hip_call("hipSetDevice", self.index)

    def synchronize(self) -> None:
        self.make_current()
        hip_call("hipDeviceSynchronize")

    def free_memory(self) -> int:
        """Bytes free on the device now."""
        self.make_current()
        free, _total = hip_call("hipMemGetInfo")
        return int(free)

    def describe(self) -> str:
        return (f"{self.name} ({self.arch}, {self.cu_count} CUs, warp {self.warp_size}, "
                f"{self.total_memory / 2**30:.1f} GiB)")


def device_count() -> int:
    return int(hip_call("hipGetDeviceCount"))


def get_device(index: int = 0) -> Device:
    """The process-wide Device for `index`, opened on first use."""
    dev = _DEVICES.get(index)
    if dev is None:
        dev = _DEVICES[index] = Device.open(index)
    return dev


def gpu_available(index: int = 0) -> tuple[bool, str]:
    """(True, description) if device `index` opens, else (False, the reason). Never raises."""
    try:
        return True, get_device(index).describe()
    except GpuError as e:
        return False, str(e)
    except Exception as e:  # anything odd from a half-installed stack still means "no GPU here"
        return False, f"{type(e).__name__}: {e}"
