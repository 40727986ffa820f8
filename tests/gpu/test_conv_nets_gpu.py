"""Classical residual towers on the GPU (Winograd convolutions, every fusion variant) vs the float64 CPU
reference: random nets of 64, 128 and 256 filters, with and without SE, the SE unit fused into the
output transform or run as GEMMs (`conv_fuse_se=False`, the path of towers wider than 256), conv and
classical policy heads, at batches 1, 7 and 256. fp32 storage: every output within 1e-4 absolute.
And `lc0-rocm validate` (fp16 and fp32) on classical tanh value heads: the committed se-classical-small and
make-net "classical" shapes, whose fp16 Q once failed the 0.03 gate (tests/test_fp16_twin.py).
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

FP32_ATOL = 1e-4
# (filters, blocks, se_channels, policy, fuse_se)
# make-net "classical" (SE tower, classical policy, tanh value) as (filters, blocks, seed), and the committed net
CLASSICAL = ["se-classical-small.pb.gz", (32, 4, 0), (32, 4, 5), (64, 6, 3), (128, 4, 3)]
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


@pytest.mark.parametrize("backend", ["rocm-fp16", "rocm"])
@pytest.mark.parametrize("spec", CLASSICAL, ids=lambda s: s if isinstance(s, str) else "classical-{}x{}-seed{}".format(*s))
def test_validate_passes_on_classical_value_heads(gpu, spec, backend, tmp_path, capsys):
    from lc0_rocm.cli import main
    from lc0_rocm.net.make_net import make_net
    from lc0_rocm.net.writer import write_net
    from netpaths import WEIGHTS_DIR

    if isinstance(spec, str):
        path = WEIGHTS_DIR / spec
    else:
        filters, blocks, seed = spec
        path = write_net(make_net("classical", seed=seed, filters=filters, blocks=blocks), tmp_path / "net.pb.gz")
    rc = main(["validate", "-w", str(path), "-b", backend])
    out = capsys.readouterr().out
    with capsys.disabled():  # the table, pass or fail (tools/fp16_check.sh shows them)
        print(f"\n{spec} {backend}:\n{out}")
    assert rc == 0 and "result: PASS" in out, out
