"""The GPU backends `rocm` (fp32), `rocm-fp16` and `rocm-auto` (fp16 where the device has fast fp16).

A thin `Backend` over `lc0_rocm.gpu.network.GpuNetwork`; imported by the backend factory only when a
GPU backend is asked for. Backend options (lc0 style, "key=value,..."): `gpu` (device index, default 0),
`max_batch` (positions per device pass, default 1024; larger batches are run in pieces), `mlh`
(true/false). Evaluations are serialized (one at a time per backend). Failures of the GPU stack become `BackendError` with a one-line message.
"""

from __future__ import annotations

import threading

from ..encoding.packed import PackedPlanes
from ..errors import BackendError, Lc0RocmError
from ..net.description import NetDescription
from .base import Backend, NetOutputs

DEFAULT_MAX_BATCH = 1024
# gfx archs without packed/fast fp16 math (pre-Vega GCN); everything newer, and NVIDIA sm_53+, has it
_SLOW_FP16_ARCHS = ("gfx801", "gfx802", "gfx803", "gfx805", "gfx810")


def gpu_available() -> bool:
    """True when hip-python finds a usable device (never raises)."""
    try:
        from ..gpu.device import gpu_available as probe
    except Exception:
        return False
    ok, _ = probe()
    return ok


def fp16_is_fast(arch: str) -> bool:
    """Whether `rocm-auto` should choose fp16 on a device of this arch (gfx... or sm_XY)."""
    if arch.startswith("sm_"):
        major_minor = arch[3:].rstrip("a")
        return major_minor.isdigit() and int(major_minor) >= 53 and major_minor != "61"
    if arch.startswith("gfx"):
        return arch not in _SLOW_FP16_ARCHS and not arch.startswith("gfx7") and not arch.startswith("gfx6")
    return False


def _int_option(opts: dict, key: str, default: int, minimum: int) -> int:
    if key not in opts:
        return default
    try:
        value = int(opts[key])
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise BackendError(f"backend option {key}={opts[key]!r}: expected an integer >= {minimum}")
    return value


def _bool_option(opts: dict, key: str, default: bool) -> bool:
    if key not in opts:
        return default
    v = opts[key].strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off"):
        return False
    raise BackendError(f"backend option {key}={opts[key]!r}: expected true or false")


class RocmBackend(Backend):
    """A network on a HIP device; precision 'fp32', 'fp16' or 'auto'."""

    def __init__(self, net: NetDescription, precision: str = "auto", options: dict | None = None):
        super().__init__(net)
        opts = dict(options or {})
        if precision not in ("fp32", "fp16", "auto"):
            raise BackendError(f"unknown precision {precision!r} (fp32, fp16, auto)")
        index = _int_option(opts, "gpu", 0, 0)
        self._max_batch = _int_option(opts, "max_batch", DEFAULT_MAX_BATCH, 1)
        self.mlh = _bool_option(opts, "mlh", True)
        self.network = None
        self._lock = threading.Lock()  # one evaluation at a time: the network's buffers are shared
        try:
            from ..gpu.device import get_device
            from ..gpu.network import GpuNetwork

            self.device = get_device(index)
            if precision == "auto":
                precision = "fp16" if fp16_is_fast(self.device.arch) else "fp32"
            self.precision = precision
            self.name = "rocm-fp16" if precision == "fp16" else "rocm"
            self.network = GpuNetwork(net, self.device, "f16" if precision == "fp16" else "f32", self._max_batch)
        except Lc0RocmError as e:
            raise BackendError(f"cannot start the GPU backend: {_one_line(e)}") from None
        except (ValueError, RuntimeError, OSError) as e:
            raise BackendError(f"cannot start the GPU backend: {type(e).__name__}: {_one_line(e)}") from None

    @property
    def max_batch(self) -> int:
        return self._max_batch

    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        with self._lock:
            if self.network is None:
                raise BackendError("the GPU backend is closed")
            try:
                return self.network.evaluate(planes, with_mlh=self.mlh)
            except Lc0RocmError as e:
                raise BackendError(f"GPU evaluation failed: {_one_line(e)}") from None

    def close(self) -> None:
        with self._lock:
            if self.network is not None:
                self.network.close()
                self.network = None


def _one_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
