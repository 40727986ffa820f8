"""The random-net generator and writer: committed nets, lc0's acceptance, activation scale, CLI.

Truths: the real lc0 0.32.1 (`lc0 describenet`, eigen backend) must load and evaluate every
committed net and every input-format variant; the README's commands must reproduce the committed
files; an independent float64 forward of the attention body (written here) bounds every
intermediate value of 15-layer nets so fp16 backends can run them.
"""

from __future__ import annotations

import gzip
import math
import os
import re
import subprocess

import numpy as np
import pytest

from lc0_oracle import require_lc0, require_lczero
from netpaths import COMMITTED_NETS, WEIGHTS_DIR

from lc0_rocm.cli import main
from lc0_rocm.net import schema
from lc0_rocm.net.loader import load_net, net_from_proto, read_net
from lc0_rocm.net.make_net import SHAPES, make_net, net_shape
from lc0_rocm.net.writer import iter_layers, write_net

INPUT_FORMATS = (1, 2, 3, 4, 5, 132, 133)
EXPECTED_NETS = {"bt-small-smolgen-pedense.pb.gz", "t82-small-pemap.pb.gz", "apmish-small.pb.gz",
                 "se-classical-small.pb.gz"}


def _readme_commands():
    text = (WEIGHTS_DIR / "README.md").read_text()
    return re.findall(r"`lc0-rocm make-net --shape (\S+) --seed (\d+) --out weights/(\S+)`", text)


# --------------------------------------------------------------------------- committed nets


def test_committed_nets_present_small_linear16():
    assert {p.name for p in COMMITTED_NETS} == EXPECTED_NETS
    for p in COMMITTED_NETS:
        assert p.stat().st_size <= 4 * 1024 * 1024, p.name
        net = read_net(p)
        assert net.format.weights_encoding == 1
        assert all(not layer.HasField("encoding") for _, layer in iter_layers(net)), p.name
        mv = net.min_version
        assert (mv.major, mv.minor, mv.patch) <= (0, 32, 1)


def test_readme_commands_regenerate_committed_nets():
    cmds = _readme_commands()
    assert {name for _, _, name in cmds} == EXPECTED_NETS
    for shape, seed, name in cmds:
        committed = gzip.decompress((WEIGHTS_DIR / name).read_bytes())
        assert make_net(shape, seed=int(seed)).SerializeToString() == committed, name


@pytest.fixture(scope="module")
def lc0_bin():
    return require_lc0()


@pytest.fixture(scope="module")
def format_nets(tmp_path_factory):
    """A tiny net for each of the 7 input formats (what the encoding tests use)."""
    d = tmp_path_factory.mktemp("formats")
    return {f: write_net(make_net("tiny", seed=f, input_format=f), d / f"tiny-{f}.pb.gz") for f in INPUT_FORMATS}


@pytest.mark.oracle
def test_lc0_describenet_accepts(lc0_bin, format_nets):
    for path in list(COMMITTED_NETS) + list(format_nets.values()):
        r = subprocess.run([lc0_bin, "describenet", "-w", str(path)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (path.name, r.stderr[-500:])
        assert "Weights encoding: LINEAR16" in r.stdout


@pytest.mark.oracle
def test_lc0_eigen_evaluates_without_nan(format_nets):
    lb = require_lczero()
    for path in list(COMMITTED_NETS) + list(format_nets.values()):
        desc = load_net(path)
        w = lb.Weights(str(path))  # never call w.filters(): it crashes on nets without residual blocks
        assert (w.input_format(), w.policy_format(), w.value_format(), w.moves_left_format()) == (
            desc.input_format, desc.policy_format, desc.value_format, desc.moves_left_format)
        b = lb.Backend(weights=w, backend="eigen")
        games = [lb.GameState(), lb.GameState(moves=["e2e4", "e7e5", "g1f3"]),
                 lb.GameState(fen="8/P1k5/8/8/8/8/5Kp1/8 w - - 0 1")]
        outs = b.evaluate(*[g.as_input(b) for g in games])
        logits = np.array([o.p_raw(*range(1858)) for o in outs])
        q = np.array([o.q() for o in outs])
        d = np.array([o.d() for o in outs])
        m = np.array([o.m() for o in outs])
        assert np.all(np.isfinite(logits)) and np.all(np.isfinite(q)) and np.all(np.isfinite(m)), path.name
        # outputs are O(1), not degenerate, and depend on the position
        assert 0.05 < logits.std() < 10 and np.abs(logits).max() < 30, path.name
        assert np.all(np.abs(q) < 1) and np.all((d >= 0) & (d < 1))
        assert np.ptp(logits, axis=0).max() > 1e-3, path.name
        if desc.has_moves_left:
            assert np.all((m > 5) & (m < 60)), (path.name, m)


# --------------------------------------------------------------------------- activation scale

_ACT = {
    "mish": lambda x: x * np.tanh(np.logaddexp(0, x)),
    "swish": lambda x: x / (1 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0),
    "relu2": lambda x: np.maximum(x, 0) ** 2,
}


def _ln(x, ln):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return ln.beta + ln.gamma * (x - mu) / np.sqrt(var + ln.eps)


def _dense(x, d):
    y = x @ d.w.astype(np.float64).T
    return y if d.b is None else y + d.b


def _body_maxima(net) -> dict[str, float]:
    """Independent float64 forward of an attention body; the largest |value| of each kind of tensor."""
    rng = np.random.default_rng(0)
    planes = np.zeros((64, 112))
    for p in range(12):  # a sparse, position-like input
        planes[rng.choice(64, 3, replace=False), p] = 1.0
    planes[:, 104:108] = 1.0
    planes[:, 111] = 1.0
    b = net.body
    peak: dict[str, float] = {}

    def track(name, x):
        peak[name] = max(peak.get(name, 0.0), float(np.abs(x).max()))
        return x

    if b.embedding == "pe_dense":
        pos = _dense(planes[:, :12].reshape(1, -1), b.preproc).reshape(64, -1)
    else:
        pos = rng.integers(-1, 2, (64, 64)).astype(np.float64)
    x = track("embedding", _ACT[b.activation](_dense(np.concatenate([planes, pos], 1), b.emb)))
    if b.emb_ln is not None:
        x = _ln(x, b.emb_ln)
    if b.gate_mult is not None:
        x = x * b.gate_mult + b.gate_add
    if b.emb_ffn is not None:
        h = track("ffn hidden", _ACT[b.emb_ffn.activation](_dense(x, b.emb_ffn.dense1)))
        x = _ln(track("pre-LN sum", x + b.alpha * _dense(h, b.emb_ffn.dense2)), b.emb_ffn_ln)
    for enc in b.encoders:
        m = enc.mha
        hd, dep = m.heads, m.depth
        q, k, v = (_dense(x, d).reshape(64, hd, dep).transpose(1, 0, 2) for d in (m.q, m.k, m.v))
        logits = track("attention logits", q @ k.transpose(0, 2, 1) / math.sqrt(dep))
        if m.smolgen is not None:
            s = m.smolgen
            c = _dense(x, s.compress).reshape(1, -1)
            u = _ln(_ACT[s.activation](_dense(c, s.dense1)), s.ln1)
            u = _ln(_ACT[s.activation](_dense(u, s.dense2)), s.ln2).reshape(hd, -1)
            logits = logits + track("smolgen bias", (u @ b.smolgen_global.T.astype(np.float64)).reshape(hd, 64, 64))
        p = np.exp(logits - logits.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        o = _dense((p @ v).transpose(1, 0, 2).reshape(64, -1), m.out)
        x = _ln(track("pre-LN sum", x + b.alpha * o), enc.ln1)
        h = track("ffn hidden", _ACT[enc.ffn.activation](_dense(x, enc.ffn.dense1)))
        x = _ln(track("pre-LN sum", x + b.alpha * _dense(h, enc.ffn.dense2)), enc.ln2)
        track("tokens", x)
    return peak


@pytest.mark.parametrize("shape,overrides", [
    ("t82", dict(embedding=96, heads=6, dff=128, smolgen_hc=8, smolgen_hs=64, smolgen_g=64)),
    ("bt4", dict(embedding=96, heads=6, dff=144, emb_dff=144, preproc_d=16, policy_embedding=96, policy_d_model=96,
                 smolgen_hc=8, smolgen_hs=64, smolgen_g=64, value_channels=16, mlh_channels=8)),
])
def test_fifteen_layers_stay_fp16_friendly(shape, overrides):
    net = net_from_proto(make_net(shape, seed=1, **overrides))
    assert len(net.body.encoders) == 15
    peak = _body_maxima(net)
    # fp16 tops out at 65504 and keeps ~3 significant digits: everything must stay well inside
    assert max(peak.values()) < 50, peak
    assert peak["tokens"] < 10 and peak["attention logits"] > 0.1, peak


# --------------------------------------------------------------------------- shapes, writer, CLI


def test_bt4_dims():
    s = net_shape("bt4")
    assert (s.embedding, s.layers, s.heads, s.dff, s.emb_dff, s.preproc_d) == (1024, 15, 32, 1536, 1536, 512)
    assert (s.smolgen_hc, s.smolgen_hs, s.smolgen_g, s.smolgen_activation, s.default_activation) == (
        32, 256, 256, "swish", "mish")
    # one layer and a narrow preprocessing keep this fast; the other dims are BT4's
    net = net_from_proto(make_net("bt4", layers=1, preproc_d=8))
    d = net.metadata["dims"]
    assert (d["embedding_size"], d["heads"], d["dff"], d["emb_dff"]) == (1024, 32, 1536, 1536)
    assert (d["smolgen_hc"], d["smolgen_hs"], d["smolgen_g"]) == (32, 256, 256)
    assert (d["policy_embedding"], d["policy_d_model"], d["value_channels"], d["mlh_channels"]) == (1024, 1024, 128, 32)
    assert net.value.fc1.w.shape == (128, 8192) and net.network_format == 7 and net.input_embedding == 2
    assert net.available_policy_heads == ("vanilla", "optimistic", "soft")
    assert net.available_value_heads == ("winner", "q", "st")


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LC0_ROCM_SLOW"), reason="set LC0_ROCM_SLOW=1 (writes a ~370 MB BT4 net)")
def test_full_bt4_generates_and_loads(tmp_path):
    import time

    t = time.perf_counter()
    path = write_net(make_net("bt4"), tmp_path / "bt4.pb.gz")
    assert time.perf_counter() - t < 120
    net = load_net(path)
    assert len(net.body.encoders) == 15 and net.body.preproc.w.shape == (64 * 512, 768)


def test_deterministic_and_seeded():
    a = make_net("apmish", seed=3).SerializeToString()
    assert a == make_net("apmish", seed=3).SerializeToString()
    assert a != make_net("apmish", seed=4).SerializeToString()


def test_every_shape_loads():
    for shape in SHAPES:
        if shape in ("t82", "bt4"):
            continue  # big; covered by the dims tests
        net = net_from_proto(make_net(shape, seed=2))
        assert net.policy is not None and net.value is not None, shape


def test_write_variants(tmp_path):
    net = make_net("se", seed=1)
    plain = write_net(net, tmp_path / "se.pb")
    assert plain.read_bytes() == net.SerializeToString()  # .pb: uncompressed
    from_bytes = write_net(net.SerializeToString(), tmp_path / "se.pb.gz")
    assert gzip.decompress(from_bytes.read_bytes()) == net.SerializeToString()
    from_name = write_net("se", tmp_path / "se2.pb.gz", seed=1)
    assert gzip.decompress(from_name.read_bytes()) == net.SerializeToString()
    f16 = write_net("se", tmp_path / "se16.pb.gz", encoding="FLOAT16", seed=1)
    layers = [layer for _, layer in iter_layers(read_net(f16))]
    assert {layer.encoding for layer in layers} == {2} and read_net(f16).min_version.minor == 33


def test_overrides_validated():
    with pytest.raises(ValueError, match="unknown net shape field"):
        make_net("tiny", embeding=8)
    with pytest.raises(ValueError, match="divisible"):
        make_net("tiny", embedding=30, heads=4)
    with pytest.raises(ValueError, match="unknown net shape"):
        make_net("t99")


def test_make_net_cli(tmp_path, capsys):
    out = tmp_path / "n.pb.gz"
    rc = main(["make-net", "--shape", "tiny", "--out", str(out), "--seed", "5", "--input-format", "132",
               "--embedding", "16", "--layers", "3", "--heads", "2", "--dff", "24",
               "--set", "smolgen=false", "--set", "input_embedding=pe_map", "--set", "policy_heads=vanilla,soft"])
    assert rc == 0 and "wrote" in capsys.readouterr().out
    net = load_net(out, policy_head="soft")
    b = net.body
    assert (net.input_format, b.embedding, b.embedding_size, len(b.encoders)) == (132, "pe_map", 16, 3)
    assert b.encoders[0].mha.heads == 2 and b.encoders[0].ffn.dense1.n_out == 24
    assert b.encoders[0].mha.smolgen is None and b.smolgen_global is None
    assert net.available_policy_heads == ("vanilla", "soft")
    # same net as the Python API with the same arguments
    api = make_net("tiny", seed=5, input_format=132, embedding=16, layers=3, heads=2, dff=24, smolgen=False,
                   input_embedding="pe_map", policy_heads=("vanilla", "soft"))
    assert gzip.decompress(out.read_bytes()) == api.SerializeToString()
    rc = main(["make-net", "--shape", "tiny", "--out", str(out), "--set", "nonsense=1"])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("lc0-rocm: error: ") and len(err.splitlines()) == 1
    # values are read by lc0_rocm.values' one parser (yes/on/1 are true as for every option)
    for text in ("yes", "ON", "1", "true"):
        assert main(["make-net", "--shape", "tiny", "--out", str(out), "--set", f"smolgen={text}"]) == 0
    for item, expected in [("smolgen=maybe", "--set smolgen=maybe: expected true or false, got 'maybe'"),
                           ("layers=two", "--set layers=two: expected an integer, got 'two'")]:
        capsys.readouterr()
        assert main(["make-net", "--shape", "tiny", "--out", str(out), "--set", item]) == 1
        assert capsys.readouterr().err == f"lc0-rocm: error: {expected}\n"


def test_schema_roundtrip_field_numbers():
    """A few wire-level facts of net.proto: magic is fixed32 field 1; weights field 10; Layer.dims 5."""
    net = schema.Net(magic=0x1C0)
    assert net.SerializeToString()[:5] == bytes([0x0D, 0xC0, 0x01, 0x00, 0x00])
    layer = schema.Layer(dims=[3, 4])
    assert layer.SerializeToString() in (b"\x28\x03\x28\x04", b"\x2a\x02\x03\x04")
    assert schema.enum_value("NetworkFormat.InputFormat", "INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON") == 133
