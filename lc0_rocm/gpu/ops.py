"""Host launchers of the elementwise kernels (lc0_rocm/kernels/bias_act.hip); numpy twin: lc0_rocm.activations.

`bias_act(dev, y, x, bias, total, channels, inner, act, dtype)` computes y = act(x + bias[(i // inner) % channels])
over `total` elements (bias may be None; y may be x). Checks shapes and dtype names before launching.
Without a bias, with `total` a multiple of 8 and 16-byte aligned buffers it runs `act8_*` (8 elements per
thread, 16-byte accesses).
"""

from __future__ import annotations

from .kernel import get_kernel

ACTIVATIONS = ("none", "relu", "relu2", "mish", "swish", "selu", "tanh", "sigmoid")
DTYPES = {"f16": 2, "f32": 4}
BLOCK = 256
MAX_GRID = 65535
VECTOR_ACT = True  # use act8_* where it applies (the perf suite turns it off to time the old path)


def bias_act(dev, y, x, bias, total: int, channels: int = 1, inner: int = 1, act: str = "none",
             dtype: str = "f16", stream=None) -> None:
    if act not in ACTIVATIONS:
        raise ValueError(f"unknown activation {act!r} (known: {', '.join(ACTIVATIONS)})")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")
    if total < 0 or channels < 1 or inner < 1:
        raise ValueError(f"bad sizes total={total} channels={channels} inner={inner}")
    size = DTYPES[dtype]
    if x.nbytes < total * size or y.nbytes < total * size:
        raise ValueError(f"buffers too small for {total} {dtype} elements")
    if bias is not None and bias.nbytes < channels * size:
        raise ValueError(f"bias buffer too small for {channels} {dtype} elements")
    if total == 0:
        return
    import numpy as np

    from .kernel import ptr

    if VECTOR_ACT and bias is None and total % 8 == 0 and x.ptr % 16 == 0 and y.ptr % 16 == 0:
        n8 = total // 8
        k = get_kernel(dev, "bias_act.hip", f"act8_{act}_{dtype}")
        k.launch(min((n8 + BLOCK - 1) // BLOCK, MAX_GRID), BLOCK, (y, x, np.int32(n8)), stream=stream)
        return
    k = get_kernel(dev, "bias_act.hip", f"bias_act_{act}_{dtype}")
    grid = min((total + BLOCK - 1) // BLOCK, MAX_GRID)
    k.launch(grid, BLOCK, (y, x, ptr(0) if bias is None else bias, np.int32(total), np.int32(channels),
                           np.int32(inner)), stream=stream)
