"""Whole networks on the GPU vs the numpy CPU reference.

Nets: every committed net in weights/, the real maia nets (../shared/weights) and T82-/BT4-shape random
nets generated here with make_net (never stored). Gates, per net:
  fp32: policy logits, W, D, L, Q, moves-left within 1e-4 absolute of the float64 reference, no NaN;
  fp16: over 512 suite positions, top-1 policy agreement >= 99%, mean |ΔQ| <= 0.005, max |ΔQ| <= 0.03,
        no NaN (reference: the float32 CPU reference; for the two big generated nets, whose CPU
        reference over 512 positions is too slow, the GPU fp32 result, itself checked by the fp32 test).
Also: batch sizes 1, 7, 64, 256 give the same answers, and the `rocm*` backends through the factory.
"""

from __future__ import annotations

import numpy as np
import pytest

from netpaths import COMMITTED_NETS, MAIA_NETS

pytestmark = pytest.mark.gpu

FP32_ATOL = 1e-4
FP16_POSITIONS = 512
GENERATED = {"gen-t82": "t82", "gen-bt4": "bt4"}
NETS = [p.name for p in COMMITTED_NETS] + [p.name for p in MAIA_NETS] + list(GENERATED)
_CACHE: dict = {}


def _net(spec: str):
    """(NetDescription, boards, planes for 512 suite positions, legal indices), cached per process."""
    if spec not in _CACHE:
        from lc0_rocm import validation_positions
        from lc0_rocm.encoding.planes import encode_positions
        from lc0_rocm.encoding.policy_map import legal_move_indices
        from lc0_rocm.net.loader import load_net, net_from_proto
        from lc0_rocm.net.make_net import make_net

        if spec in GENERATED:
            net = net_from_proto(make_net(GENERATED[spec], seed=3))
        else:
            path = next(p for p in list(COMMITTED_NETS) + MAIA_NETS if p.name == spec)
            if not path.exists():
                pytest.skip(f"{path} not present")
            net = load_net(path)
        boards = validation_positions.boards(FP16_POSITIONS)
        planes = encode_positions(boards, net.input_format)
        legal = [legal_move_indices(b, int(t))[1] for b, t in zip(boards, planes.transforms)]
        _CACHE.clear()  # keep one net in memory (the BT4 description is ~760 MB of float32)
        _CACHE[spec] = (net, planes, legal)
    return _CACHE[spec]


def _head(planes, n):
    return planes.rows(0, n)


def _max_diffs(out, ref) -> dict:
    d = {"policy": np.abs(out.policy - ref.policy).max(), "Q": np.abs(out.q - ref.q).max(),
         "D": np.abs(out.d - ref.d).max()}
    if ref.wdl is not None:
        d["WDL"] = np.abs(out.wdl - ref.wdl).max()
    if ref.mlh is not None:
        d["MLH"] = np.abs(out.mlh - ref.mlh).max()
    return {k: float(v) for k, v in d.items()}


def _nan_count(out) -> int:
    return sum(int(np.isnan(a).sum()) for a in (out.policy, out.wdl, out.q, out.d, out.mlh) if a is not None)


@pytest.mark.parametrize("spec", NETS)
def test_fp32_matches_float64_reference(gpu, spec):
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net, planes, _ = _net(spec)
    n = 16 if spec in GENERATED else 64
    sub = _head(planes, n)
    ref = Reference(net, np.float64).forward(sub)
    g = GpuNetwork(net, gpu, "f32", max_batch=n)
    try:
        out = g.evaluate(sub)
    finally:
        g.close()
    assert _nan_count(out) == 0
    diffs = _max_diffs(out, ref)
    assert max(diffs.values()) <= FP32_ATOL, f"{spec} fp32 max |Δ| {diffs}"
    assert (out.mlh is None) == (ref.mlh is None) and (out.wdl is None) == (ref.wdl is None)


@pytest.mark.parametrize("spec", NETS)
def test_fp16_agrees_with_reference(gpu, spec):
    from lc0_rocm.backends.cpu import CpuBackend
    from lc0_rocm.commands.validate import compare
    from lc0_rocm.gpu.nn.network import GpuNetwork

    net, planes, legal = _net(spec)
    if spec in GENERATED:
        g32 = GpuNetwork(net, gpu, "f32", max_batch=256)
        try:
            ref = g32.evaluate(planes)
        finally:
            g32.close()
    else:
        ref = CpuBackend(net, threads=8).evaluate(planes)
    g = GpuNetwork(net, gpu, "f16", max_batch=256)
    try:
        out = g.evaluate(planes)
    finally:
        g.close()
    c = compare(ref, out, legal)
    summary = (f"{spec} fp16: top1 {c.top1:.4f}, |ΔQ| max {c.max_abs['Q']:.4g} mean {c.mean_abs['Q']:.4g}, "
               f"NaN {c.nan}")
    assert c.nan == 0, summary
    assert c.top1 >= 0.99, summary
    assert c.mean_abs["Q"] <= 0.005 and c.max_abs["Q"] <= 0.03, summary


@pytest.mark.parametrize("spec", ["bt-small-smolgen-pedense.pb.gz", "apmish-small.pb.gz", "maia-1500.pb.gz"])
def test_batch_sizes_agree(gpu, spec):
    """Batches of 1, 7, 64 and 256 (different GEMM shapes, a partial last pass) give the reference's answers."""
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net, planes, _ = _net(spec)
    sub = _head(planes, 300)
    ref = Reference(net, np.float64).forward(sub)
    for batch in (1, 7, 64, 256):
        g = GpuNetwork(net, gpu, "f32", max_batch=batch)
        try:
            out = g.evaluate(sub)  # 300 positions in passes of `batch`
        finally:
            g.close()
        diffs = _max_diffs(out, ref)
        assert max(diffs.values()) <= FP32_ATOL, f"{spec} batch {batch}: {diffs}"


def test_factory_backends(gpu):
    from lc0_rocm.backends.factory import create_backend
    from lc0_rocm.reference import Reference

    net, planes, _ = _net("t82-small-pemap.pb.gz")
    sub = _head(planes, 10)
    ref = Reference(net, np.float64).forward(sub)
    for name, precision in (("rocm", "fp32"), ("rocm-fp16", "fp16"), ("rocm-auto", "fp16")):
        b = create_backend(name, net, "max_batch=8")
        try:
            assert b.precision == precision and b.max_batch == 8
            out = b.evaluate(sub)
        finally:
            b.close()
        tol = FP32_ATOL if precision == "fp32" else 0.05
        assert np.abs(out.q - ref.q).max() <= tol and out.policy.shape == (10, 1858)
    b = create_backend("rocm", net, "mlh=false")
    try:
        assert b.evaluate(sub).mlh is None
    finally:
        b.close()
