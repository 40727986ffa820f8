"""bias_act kernels vs numpy float64 (lc0_rocm.activations) for every activation, fp16 and fp32 storage."""

from __future__ import annotations

import numpy as np
import pytest

from lc0_rocm.activations import ACTIVATION_FUNCTIONS

from gpucheck import assert_close

pytestmark = pytest.mark.gpu

# fp32: a few ulp of expf/tanhf; fp16: the rounding of the stored result (2^-11 relative) plus slack.
TOL = {"f32": (5e-6, 1e-6), "f16": (1.5e-3, 2e-4)}
NP = {"f32": np.float32, "f16": np.float16}


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("act", list(ACTIVATION_FUNCTIONS))
@pytest.mark.parametrize("layout", ["rows", "nchw", "nobias", "act8"])
def test_bias_act_matches_float64_reference(gpu, act, dtype, layout):
    from lc0_rocm.gpu.nn import kernels
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer

    rng = np.random.default_rng()
    channels, inner = {"rows": (37, 1), "nchw": (19, 64), "nobias": (1, 1), "act8": (1, 1)}[layout]
    total = 3 * channels * inner + 13 if layout != "nchw" else 5 * channels * inner  # odd sizes: tails
    if layout == "act8":
        total = 8 * 70_001  # no bias, a multiple of 8: the 16-byte-per-thread act8 kernel
    x = (rng.standard_normal(total) * 3).astype(NP[dtype])
    bias = (rng.standard_normal(channels)).astype(NP[dtype])
    xd = DeviceBuffer.allocate(gpu, x.nbytes)
    yd = DeviceBuffer.allocate(gpu, x.nbytes)
    bd = DeviceBuffer.allocate(gpu, bias.nbytes)
    xd.upload(x)
    bd.upload(bias)
    yd.fill_byte(0xFF)  # NaN everywhere: an unwritten element fails the comparison
    use_bias = layout not in ("nobias", "act8")
    kernels.bias_act(gpu, yd, xd, bd if use_bias else None, total, channels, inner, act, dtype)
    got = yd.to_numpy(NP[dtype], total)
    pre = x.astype(np.float64)
    if use_bias:
        pre = pre + bias.astype(np.float64)[(np.arange(total) // inner) % channels]
    want = ACTIVATION_FUNCTIONS[act](pre)
    rtol, atol = TOL[dtype]
    assert_close(got, want, rtol, atol, f"bias_act {act} {dtype} {layout}")


def test_bias_act_in_place_large(gpu):
    from lc0_rocm.gpu.nn import kernels
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer

    rng = np.random.default_rng()
    total, channels = 70_000_000, 1024  # more than the 65535-block grid covers in one pass
    x = rng.standard_normal(total, dtype=np.float32).astype(np.float16)
    bias = rng.standard_normal(channels, dtype=np.float32).astype(np.float16)
    xd = DeviceBuffer.allocate(gpu, x.nbytes)
    bd = DeviceBuffer.allocate(gpu, bias.nbytes)
    xd.upload(x)
    bd.upload(bias)
    kernels.bias_act(gpu, xd, xd, bd, total, channels, 1, "mish", "f16")
    got = xd.to_numpy(np.float16, total)
    idx = rng.integers(0, total, size=200_000)
    want = ACTIVATION_FUNCTIONS["mish"](x[idx].astype(np.float64) + bias[idx % channels].astype(np.float64))
    assert_close(got[idx], want, *TOL["f16"], "in-place mish f16")
    assert not np.isnan(got).any()


def test_bias_act_rejects_bad_arguments(gpu):
    from lc0_rocm.gpu.nn import kernels
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer

    buf = DeviceBuffer.allocate(gpu, 1024)
    with pytest.raises(ValueError, match="unknown activation"):
        kernels.bias_act(gpu, buf, buf, None, 10, act="gelu2")
    with pytest.raises(ValueError, match="too small"):
        kernels.bias_act(gpu, buf, buf, None, 1000, act="relu", dtype="f32")
