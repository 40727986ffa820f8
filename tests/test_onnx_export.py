"""ONNX export: onnxruntime (CPU) running the exported graph equals the numpy reference within 1e-4.

Covered: every committed net in weights/, maia-1100, every policy/value head of the multihead net,
the generated hybrid (conv tower + attention body) net; batch sizes 1 and ~24 through one dynamic-
batch graph; the `export-onnx` command end to end (file written, names, one-line errors).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from oracle_positions import MAIA, POSITIONS, REPO
from netpaths import require_shared

from lc0_rocm import reference
from lc0_rocm.encoding.planes import encode_positions
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.net.loader import load_net
from lc0_rocm.onnx_export import INPUT_NAME, OUTPUT_MLH, OUTPUT_POLICY, OUTPUT_VALUE, OUTPUT_WDL, build_model

ort = pytest.importorskip("onnxruntime")

ATOL = 1e-4
COMMITTED = sorted((REPO / "weights").glob("*.pb.gz"))
NETS = COMMITTED + [MAIA[0]]


def _planes(net):
    from oracle_positions import positions_for

    histories = [parse_position(fen, moves) for fen, moves in positions_for(net.input_format)]
    return encode_positions(histories, net.input_format)


def _run(model, dense):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, {INPUT_NAME: dense})))


def _compare(net, model, planes, label):
    ref = reference.forward(net, planes)
    dense = planes.expand()
    res = _run(model, dense)
    expected = {OUTPUT_POLICY: ref.policy}
    if net.has_wdl:
        expected[OUTPUT_WDL] = ref.wdl
    else:
        expected[OUTPUT_VALUE] = ref.q[:, None]
    if net.has_moves_left:
        expected[OUTPUT_MLH] = ref.mlh[:, None]
    assert set(res) == set(expected)
    errs = {}
    for name, want in expected.items():
        assert res[name].shape == want.shape and res[name].dtype == np.float32
        errs[name] = float(np.abs(res[name] - want).max())
        assert errs[name] <= ATOL, f"{label} {name}: {errs[name]:.3g}"
    print(f"\n{label}: " + " ".join(f"{k.split('/')[-1]}={v:.2e}" for k, v in errs.items()))
    # batch of one through the same dynamic-batch graph
    one = _run(model, dense[3:4])
    np.testing.assert_allclose(one[OUTPUT_POLICY], ref.policy[3:4], atol=ATOL)


@pytest.mark.parametrize("path", NETS, ids=[p.name for p in NETS])
def test_onnx_matches_reference(path):
    if not path.exists():
        pytest.skip(f"{path} missing")
    net = load_net(path)
    _compare(net, build_model(net), _planes(net), path.name)


def test_onnx_every_head_of_multihead_net():
    path = REPO / "weights" / "bt-small-smolgen-pedense.pb.gz"
    heads = load_net(path)
    for ph in heads.available_policy_heads:
        for vh in heads.available_value_heads:
            net = load_net(path, policy_head=ph, value_head=vh)
            _compare(net, build_model(net), _planes(net), f"{path.name} {ph}/{vh}")


def test_onnx_hybrid_and_classical_value(tmp_path):
    from lc0_rocm.net.make_net import make_net
    from lc0_rocm.net.writer import write_net

    for shape, kw in (("hybrid", {}), ("tiny", dict(value="classical", ffn_activation="relu2", input_embedding="pe_map",
                                                     multihead=False, policy_encoders=1))):
        path = write_net(make_net(shape, seed=3, **kw), tmp_path / f"{shape}.pb.gz")
        net = load_net(path)
        _compare(net, build_model(net), _planes(net), shape)


def test_export_onnx_command(tmp_path):
    out = tmp_path / "maia.onnx"
    res = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "export-onnx", "--weights", str(require_shared(MAIA[0])), "--out",
                          str(out)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert res.returncode == 0, res.stderr
    assert out.stat().st_size > 1_000_000
    import onnx

    model = onnx.load(str(out))
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == [INPUT_NAME]
    assert [o.name for o in model.graph.output] == [OUTPUT_POLICY, OUTPUT_WDL]
    net = load_net(MAIA[0])
    planes = encode_positions([parse_position(*POSITIONS[2])], net.input_format)
    got = _run(model, planes.expand())
    np.testing.assert_allclose(got[OUTPUT_POLICY], reference.forward(net, planes).policy, atol=ATOL)


@pytest.mark.parametrize("args,needle", [
    (["--weights", "/nonexistent.pb.gz", "--out", "{tmp}/x.onnx"], "nonexistent"),
    (["--weights", "README.md", "--out", "{tmp}/x.onnx"], "README.md"),
    (["--out", "/nonexistent-dir/x.onnx"], "nonexistent-dir"),
    (["--policy-head", "nope", "--out", "{tmp}/x.onnx"], "nope"),
])
def test_export_onnx_bad_input(args, needle, tmp_path):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "export-onnx", *args], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lc0-rocm: error: ") and needle in lines[0]
