"""Helpers of the network-kernel tests: device arrays, NaN-poisoned outputs, per-dtype tolerances."""

from __future__ import annotations

import numpy as np

NP = {"f32": np.float32, "f16": np.float16}
# (rtol, atol) for kernel outputs vs the float64 twin computed on the same (storage-rounded) inputs:
# fp32 = float accumulation error; fp16 = that plus rounding the stored result to 11 bits.
TOL = {"f32": (2e-5, 2e-5), "f16": (2e-3, 2e-3)}
BATCHES = (1, 7, 64, 256)


class Dev:
    """Upload / allocate / download on one device for one storage dtype."""

    def __init__(self, gpu, dtype: str):
        from lc0_rocm.gpu.nn.kernels import NnKernels

        self.gpu, self.dtype, self.np = gpu, dtype, NP[dtype]
        self.k = NnKernels(gpu, dtype)
        self._keep = []

    def put(self, arr: np.ndarray, dtype=None):
        """Device copy of arr (cast to the storage dtype unless `dtype` is given)."""
        from lc0_rocm.gpu.runtime.memory import DeviceBuffer

        host = np.ascontiguousarray(arr, dtype=dtype or self.np)
        buf = DeviceBuffer.allocate(self.gpu, max(host.nbytes, 16))
        buf.upload(host)
        self._keep.append(buf)
        return buf

    def nan(self, count: int, dtype=None):
        """A buffer of `count` elements, every byte 0xFF (NaN in fp16 and fp32)."""
        from lc0_rocm.gpu.runtime.memory import DeviceBuffer

        itemsize = np.dtype(dtype or self.np).itemsize
        buf = DeviceBuffer.allocate(self.gpu, max(count * itemsize, 16))
        buf.fill_byte(0xFF)
        self._keep.append(buf)
        return buf

    def get(self, buf, shape, dtype=None) -> np.ndarray:
        self.gpu.stream.synchronize()
        return buf.to_numpy(dtype or self.np, shape).astype(np.float64)

    def rand(self, rng, shape, scale: float = 1.0) -> np.ndarray:
        """Random values already rounded to the storage dtype (so the twin sees exactly the GPU's input)."""
        return (rng.standard_normal(shape) * scale).astype(self.np).astype(np.float64)
