"""Bad weights files: `lc0-rocm describenet` must exit 1 with exactly one stderr line, no traceback.

Each case builds a broken file (truncated gzip, garbage, wrong magic, unsupported formats, missing
layers, ...) and checks the CLI's exit code, the single `lc0-rocm: error: ...` line and that the
message names the offending field. One case goes through a real subprocess to cover the entry point.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from netpaths import WEIGHTS_DIR

from lc0_rocm.cli import main
from lc0_rocm.errors import NetFormatError
from lc0_rocm.net import codec
from lc0_rocm.net.loader import load_net
from lc0_rocm.net.make_net import make_net

GOOD = WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz"


def _net_with(mutate, shape="tiny", **kw):
    net = make_net(shape, seed=4, **kw)
    mutate(net)
    return gzip.compress(net.SerializeToString())


def _set(obj, **fields):
    for k, v in fields.items():
        setattr(obj, k, v)


def _missing_q_w(net):
    net.weights.encoder[1].mha.ClearField("q_w")


def _rpe(net):
    codec.fill_layer(net.weights.encoder[0].mha.rpe_q, np.ones(8))


def _onnx(net):
    net.onnx_model.model = b"\x08\x07"
    net.format.network_format.network = 5
    net.ClearField("weights")


def _bad_magic(net):
    net.magic = 0x1C1


CASES = [
    # id, file bytes (or a callable giving them), regex the error line must match
    ("empty", lambda: b"", r"empty file"),
    ("one-byte", lambda: b"\x0d", r"not an Lc0 network"),
    ("truncated-gzip", lambda: GOOD.read_bytes()[: GOOD.stat().st_size // 2], r"truncated gzip"),
    ("corrupt-gzip", lambda: GOOD.read_bytes()[:20] + b"\xff" * 400, r"gzip"),
    ("non-gzip-garbage", lambda: np.random.default_rng(1).bytes(5000), r"not an Lc0 network"),
    ("gzip-of-garbage", lambda: gzip.compress(np.random.default_rng(2).bytes(5000)), r"not an Lc0 network"),
    ("gzip-of-text", lambda: gzip.compress(b"hello world, this is not a network\n" * 50), r"not an Lc0 network"),
    ("old-text-format", lambda: b"2\n1 2 3\n", r"old text weights format"),
    ("wrong-magic", lambda: _net_with(_bad_magic), r"bad magic 0x1c1"),
    ("value-param", lambda: _net_with(lambda n: _set(n.format.network_format, value=3)), r"value: VALUE_PARAM"),
    ("network-onnx", lambda: _net_with(_onnx), r"NETWORK_ONNX"),
    ("rpe", lambda: _net_with(_rpe), r"encoder\[0\]\.mha\.rpe_q: RPE"),
    ("missing-layer", lambda: _net_with(_missing_q_w), r"missing layer weights\.encoder\[1\]\.mha\.q_w"),
    ("missing-value-head", lambda: _net_with(lambda n: n.weights.ClearField("value"), "se"), r"value head weights"),
    ("wrong-size", lambda: _net_with(lambda n: codec.fill_layer(n.weights.encoder[0].ln1_betas, np.ones(5))),
     r"encoder\[0\]\.ln1_betas: expected 32 values, found 5"),
    ("min-version-too-new", lambda: _net_with(lambda n: _set(n.min_version, major=1, minor=0, patch=0)),
     r"min_version: the net requires lc0 1\.0\.0"),
    ("weights-encoding-unknown", lambda: _net_with(lambda n: _set(n.format, weights_encoding=0)),
     r"weights_encoding: UNKNOWN"),
    ("ffn-softmax", lambda: _net_with(lambda n: _set(n.format.network_format, ffn_activation=9)),
     r"ffn_activation: ACTIVATION_SOFTMAX"),
    ("input-unknown", lambda: _net_with(lambda n: _set(n.format.network_format, input=0)), r"input: INPUT_UNKNOWN"),
    ("conv-policy-on-attention-body", lambda: _net_with(lambda n: _set(n.format.network_format, policy=2)),
     r"POLICY_CONVOLUTION is not supported with an attention body"),
    ("no-headcount", lambda: _net_with(lambda n: n.weights.ClearField("headcount")), r"headcount"),
    ("bad-layer-encoding", lambda: _net_with(lambda n: _set(n.weights.encoder[0].ln1_gammas, encoding=2,
                                                            params=b"\x00\x3c\x00")), r"ln1_gammas: 3 bytes"),
]


def _run_cli(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_file_one_line_error(tmp_path, capsys, case):
    name, make, pattern = case
    path = tmp_path / f"{name}.pb.gz"
    path.write_bytes(make())
    with pytest.raises(NetFormatError):
        load_net(path)
    rc, out, err = _run_cli(capsys, ["describenet", str(path)])
    assert rc == 1 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lc0-rocm: error: "), err
    assert "Traceback" not in err
    assert re.search(pattern, lines[0]), lines[0]


def test_unknown_head_from_cli(capsys):
    rc, out, err = _run_cli(capsys, ["describenet", str(GOOD), "--policy-head", "opponent"])
    assert rc == 1 and err.splitlines() == [
        "lc0-rocm: error: policy head 'opponent' does not exist in this net (available: vanilla, optimistic)"]


def test_missing_file_and_directory(tmp_path, capsys):
    for target in (tmp_path / "nope.pb.gz", tmp_path):
        rc, out, err = _run_cli(capsys, ["describenet", str(target)])
        assert rc == 1 and len(err.splitlines()) == 1 and err.startswith("lc0-rocm: error: ")


def test_entry_point_subprocess(tmp_path):
    """Through a real interpreter: exit status 1, one stderr line, nothing on stdout."""
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes(GOOD.read_bytes()[:1000])
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "describenet", str(bad)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == ["lc0-rocm: error: bad.pb.gz: truncated gzip stream"]


def test_good_file_describes(capsys):
    rc, out, err = _run_cli(capsys, ["describenet", str(GOOD)])
    assert rc == 0 and err == ""
    assert "NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT" in out and "Encoder layers: 6" in out
    assert "Smolgen: compress 8, hidden 32, gen/head 16 (swish)" in out
