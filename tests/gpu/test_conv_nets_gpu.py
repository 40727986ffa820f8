"""Classical residual towers on the GPU (Winograd convolutions, every fusion variant) vs the float64 CPU
reference: random nets of 64, 128 and 256 filters, with and without SE, the SE unit fused into the
output transform or run as GEMMs (`conv_fuse_se=False`, the path of towers wider than 256), conv and
classical policy heads, at batches 1, 7 and 256. fp32 storage: every output within 1e-4 absolute.
The split SE plan (`conv_plan="split"`: pooling in conv2's output transform, the SE layers as GEMMs
over all boards, the block end in the next input transform, `winograd_in_se`) on make-net SE shapes at
batches 1, 7, 64 and 300: fp32 within 1e-4 absolute; fp16 within validate's gates (top-1 >= 99 %, mean
|ΔQ| <= 0.005, max |ΔQ| <= 0.03, no NaN).
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


# make-net SE shapes for the split plan: relu towers with conv (se, se256x20 cut to 2 blocks to keep the
# float64 reference quick) and classical heads, a mish tower with an attention policy (apmish)
SPLIT_NETS = [("se", {}), ("classical", {}), ("apmish", {}), ("se256x20", {"blocks": 2})]
SPLIT_BATCHES = (1, 7, 64, 300)


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("shape,overrides", SPLIT_NETS, ids=[s for s, _ in SPLIT_NETS])
def test_split_se_plan_matches_reference(gpu, shape, overrides, dtype):
    from lc0_rocm import validation_positions
    from lc0_rocm.commands.validate import compare
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.encoding.policy_map import legal_move_indices
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.net.loader import net_from_proto
    from lc0_rocm.net.make_net import make_net
    from lc0_rocm.reference import Reference

    net = net_from_proto(make_net(shape, seed=3, **overrides))
    assert any(b.se is not None for b in net.tower.blocks), f"{shape}: no SE block to split"
    boards = validation_positions.boards(max(SPLIT_BATCHES))
    planes = encode_positions(boards, net.input_format)
    legal = [legal_move_indices(b, int(t))[1] for b, t in zip(boards, planes.transforms)]
    ref = Reference(net, np.float64).forward(planes)
    g = GpuNetwork(net, gpu, dtype, max_batch=max(SPLIT_BATCHES), conv_plan="split")
    try:
        for n in SPLIT_BATCHES:
            out = g.evaluate(planes.rows(0, n))
            want = ref.take(np.arange(n))
            what = f"{shape}{overrides or ''} split {dtype} n={n}"
            if dtype == "f32":
                for name in ("policy", "q", "d", "wdl", "mlh"):
                    got = getattr(out, name)
                    assert (got is None) == (getattr(want, name) is None), f"{what}: {name} present on one side"
                    if got is None:
                        continue
                    assert not np.isnan(got).any(), f"{what}: NaN in {name}"
                    diff = float(np.abs(got - getattr(want, name)).max())
                    assert diff <= FP32_ATOL, f"{what}: {name} max |Δ| {diff:.2e}"
                continue
            c = compare(want, out, legal[:n])
            summary = (f"{what}: top1 {c.top1:.4f}, |ΔQ| max {c.max_abs['Q']:.4g} mean {c.mean_abs['Q']:.4g}, "
                       f"NaN {c.nan}")
            with_top1 = n >= 64  # one or seven positions: a single near tie would decide the fraction
            assert c.nan == 0 and (c.top1 >= 0.99 or not with_top1), summary
            assert c.mean_abs["Q"] <= 0.005 and c.max_abs["Q"] <= 0.03, summary
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


# the direct small-batch plan (conv_small.hip): (filters, blocks, se_channels, policy); towers of at most 128
DIRECT_NETS = [(32, 2, 8, "conv"), (64, 3, 8, "conv"), (128, 2, 0, "conv"), (96, 2, 16, "classical")]


def _direct_case(filters, blocks, se, policy, positions=64):
    from lc0_rocm import validation_positions
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.net.loader import net_from_proto
    from lc0_rocm.net.make_net import make_net

    net = net_from_proto(make_net("se", seed=7, filters=filters, blocks=blocks, se_channels=se, policy=policy))
    return net, encode_positions(validation_positions.boards(positions), net.input_format)


@pytest.mark.parametrize("filters,blocks,se,policy", DIRECT_NETS)
def test_direct_plan_fp32_matches_float64_reference(gpu, filters, blocks, se, policy):
    """conv_plan=direct at batches 1, 7 and 64 (eager, then the captured graph's replay, which must give the
    same bytes): every output within 1e-4 of the float64 reference; above its 64 boards the tower is Winograd."""
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net, planes = _direct_case(filters, blocks, se, policy, 80)
    ref = Reference(net, np.float64).forward(planes)
    g = GpuNetwork(net, gpu, "f32", max_batch=80, conv_plan="direct")
    try:
        assert g.tower.small is not None
        for n in (1, 7, 64, 80):
            first = g.evaluate(planes.rows(0, n))
            again = g.evaluate(planes.rows(0, n))  # the graph captured after the first
            assert g.tower_plans[n] == ("direct" if n <= 64 else "fused")
            for name in ("policy", "q", "d", "wdl"):
                got, want = getattr(first, name), getattr(ref, name)[:n]
                assert not np.isnan(got).any(), f"n={n}: NaN in {name}"
                diff = float(np.abs(got - want).max())
                assert diff <= FP32_ATOL, f"{filters}x{blocks} se {se} n={n}: {name} max |Δ| {diff:.2e}"
                assert np.array_equal(got, getattr(again, name)), f"n={n}: graph replay differs in {name}"
    finally:
        g.close()


@pytest.mark.parametrize("filters,blocks,se,policy", DIRECT_NETS)
def test_direct_plan_fp16_agrees_with_reference(gpu, filters, blocks, se, policy):
    """fp16 storage, the direct plan at batch 64: validate's gates (top-1 >= 99 %, |ΔQ| mean <= 0.005, max <=
    0.03, no NaN) against the float64 reference, and no worse than the Winograd plan on the same positions."""
    from lc0_rocm.commands.validate import compare
    from lc0_rocm.encoding.policy_map import legal_move_indices
    from lc0_rocm import validation_positions
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net, planes = _direct_case(filters, blocks, se, policy, 64)
    boards = validation_positions.boards(64)
    legal = [legal_move_indices(b, int(t))[1] for b, t in zip(boards, planes.transforms)]
    ref = Reference(net, np.float64).forward(planes)
    errs = {}
    for plan in ("direct", "fused"):
        g = GpuNetwork(net, gpu, "f16", max_batch=64, conv_plan=plan)
        try:
            assert plan == "fused" or g.tower.small is not None
            out = g.evaluate(planes)
        finally:
            g.close()
        c = compare(ref, out, legal)
        assert c.nan == 0 and c.top1 >= 0.99 and c.mean_abs["Q"] <= 0.005 and c.max_abs["Q"] <= 0.03, (plan, c)
        errs[plan] = c.mean_abs["Q"]
    assert errs["direct"] <= 1.5 * errs["fused"] + 1e-5, errs


def test_auto_plan_times_once_per_size_and_shares_the_choice(gpu):
    """conv_plan=auto: the first batch of a size times both plans at capture and keeps one; a second runner
    of the same tower shape (a search thread's, another GPU's) takes that choice without timing; both
    answer within 1e-4 of the reference in fp32."""
    from lc0_rocm.gpu.nn import network
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net, planes = _direct_case(64, 2, 8, "conv", 16)
    ref = Reference(net, np.float64).forward(planes)
    network._TOWER_PLAN_CHOICE.clear()
    a = GpuNetwork(net, gpu, "f32", max_batch=16)
    b = GpuNetwork(net, gpu, "f32", max_batch=16)
    try:
        for n in (1, 16):
            for g in (a, b):
                g.evaluate(planes.rows(0, n))
                out = g.evaluate(planes.rows(0, n))
                assert float(np.abs(out.q - ref.q[:n]).max()) <= FP32_ATOL
            assert a.tower_plans[n] in ("fused", "direct") and b.tower_plans[n] == a.tower_plans[n]
        assert len(network._TOWER_PLAN_CHOICE) == 2
    finally:
        a.close()
        b.close()
