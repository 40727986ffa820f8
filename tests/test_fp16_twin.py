"""Where fp16 moves Q in a classical tower with a tanh value head, measured by the float64 twin of the GPU's
fp16 path (tests/fp16_twin.py) on the 512 positions `lc0-rocm validate` uses.

The twin without roundings is the float64 reference (lc0_rocm/reference.py). With the roundings of the
path as it was when Winograd landed (every store fp16), the input convolution's fp16 U and M and the
value head's fp16 weights and stores were the largest movers of Q; the path now (input convolution and
heads in fp32) must stay within validate's fp16 limits, at most 0.7x the old path's mean |ΔQ|, and no
worse than the direct (pre-Winograd) convolution on max and mean |ΔQ|. The split SE plan of big batches
(z, the pooled means and the SE layers' outputs stored in fp16) must stay within validate's limits and
within 1.25x the fused plan's mean |ΔQ| (measured 1.04-1.07x; max 0.92-1.51x). The GPU runs the same path:
tests/gpu/test_conv_nets_gpu.py checks `validate -b rocm-fp16` on these nets.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fp16_twin import EXACT, GPU_PATH, WINOGRAD_ALL_FP16, Fp16Path, Twin
from netpaths import WEIGHTS_DIR

from lc0_rocm import validation_positions
from lc0_rocm.commands.validate import DEFAULT_POSITIONS, FP16_Q_MAX, FP16_Q_MEAN
from lc0_rocm.encoding.planes import encode_positions
from lc0_rocm.net.loader import load_net, net_from_proto
from lc0_rocm.net.make_net import make_net
from lc0_rocm.reference import Reference

NETS = {"se-classical-small": lambda: load_net(WEIGHTS_DIR / "se-classical-small.pb.gz"),
        "classical-32x4-seed5": lambda: net_from_proto(make_net("classical", seed=5, filters=32, blocks=4))}


def _planes(net, n):
    return encode_positions(validation_positions.boards(n), net.input_format)


@pytest.mark.parametrize("shape,value", [("classical", "tanh"), ("se", "wdl")])
def test_twin_without_roundings_is_the_float64_reference(shape, value):
    net = net_from_proto(make_net(shape, seed=2, filters=16, blocks=2))
    planes = _planes(net, 48)
    q, wdl = Twin(net, EXACT).forward(planes)
    ref = Reference(net, np.float64).forward(planes)
    np.testing.assert_allclose(q, ref.q, atol=1e-12)
    assert (wdl is None) == (value == "tanh")
    if wdl is not None:
        np.testing.assert_allclose(wdl, ref.wdl, atol=1e-12)


@pytest.mark.parametrize("name", list(NETS))
def test_fp16_path_keeps_q_within_validate_limits_and_below_the_old_paths(name):
    net = NETS[name]()
    planes = _planes(net, DEFAULT_POSITIONS)
    q0 = Twin(net, EXACT).forward(planes)[0]
    err = {label: np.abs(Twin(net, path).forward(planes)[0] - q0)
           for label, path in (("now", GPU_PATH), ("winograd all fp16", WINOGRAD_ALL_FP16),
                               ("direct conv", Fp16Path(conv="direct")), ("split SE", replace(GPU_PATH, se="split")))}
    table = ", ".join(f"{k}: max {v.max():.2e} mean {v.mean():.2e}" for k, v in err.items())
    now, old, direct = err["now"], err["winograd all fp16"], err["direct conv"]
    assert now.max() <= FP16_Q_MAX and now.mean() <= FP16_Q_MEAN, f"{name}: {table}"
    assert now.mean() <= 0.7 * old.mean(), f"{name}: the fp32 input conv and heads no longer pay: {table}"
    assert now.max() <= direct.max() and now.mean() <= direct.mean(), f"{name}: worse than before Winograd: {table}"
    split = err["split SE"]
    assert split.max() <= FP16_Q_MAX and split.mean() <= 1.25 * now.mean(), f"{name}: split SE plan: {table}"


def test_input_convolution_dominates_winograds_rounding():
    """The input convolution's fp16 transforms (U, V, M) move Q more than those of all eight block
    convolutions together (512 positions: mean |ΔQ| 1.07e-4 against 5.7e-5; 9.4e-5 with the rule-50
    plane zeroed, so not that plane's size): why it, alone of the tower's convolutions, runs in fp32."""
    net = NETS["se-classical-small"]()
    planes = _planes(net, 128)
    q0 = Twin(net, EXACT).forward(planes)[0]
    wino = frozenset({"filters", "wino_v", "wino_m"})
    first = np.abs(Twin(net, Fp16Path(wino, convs=frozenset({0}))).forward(planes)[0] - q0)
    blocks = np.abs(Twin(net, Fp16Path(wino, convs=frozenset(range(1, 9)))).forward(planes)[0] - q0)
    assert first.mean() > blocks.mean(), (first.mean(), blocks.mean())
