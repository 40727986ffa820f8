"""Classical residual towers on the GPU (Winograd convolutions, every fusion variant) vs the float64 CPU
reference: random nets of 64, 128 and 256 filters, with and without SE, the SE unit fused into the
output transform or run as GEMMs (`conv_fuse_se=False`, the path of towers wider than 256), conv and
classical policy heads, at batches 1, 7 and 256. fp32 storage: every output within 1e-4 absolute.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

FP32_ATOL = 1e-4
# (filters, blocks, se_channels, policy, fuse_se)
NETS = [(64, 3, 8, "conv", True), (128, 2, 0, "conv", True), (128, 2, 8, "classical", False),
        (256, 2, 8, "conv", True), (256, 2, 8, "conv", False)]


@pytest.mark.parametrize("filters,blocks,se,policy,fuse", NETS)
def test_conv_net_fp32_matches_float64_reference(gpu, filters, blocks, se, policy, fuse):
    from lc0_rocm import validation_positions
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.net.loader import net_from_proto
    from lc0_rocm.net.make_net import make_net
    from lc0_rocm.reference import Reference

    overrides = dict(filters=filters, blocks=blocks, se_channels=se, policy=policy)
    net = net_from_proto(make_net("se", seed=5, **overrides))
    planes = encode_positions(validation_positions.boards(256), net.input_format)
    ref = Reference(net, np.float64).forward(planes)
    g = GpuNetwork(net, gpu, "f32", max_batch=256, conv_fuse_se=fuse)
    try:
        for n in (1, 7, 256):
            out = g.evaluate(planes.rows(0, n))
            for name in ("policy", "q", "d", "wdl"):
                got, want = getattr(out, name), getattr(ref, name)[:n]
                assert not np.isnan(got).any(), f"{overrides} n={n}: NaN in {name}"
                diff = float(np.abs(got - want).max())
                assert diff <= FP32_ATOL, f"{overrides} fuse={fuse} n={n}: {name} max |Δ| {diff:.2e}"
    finally:
        g.close()
