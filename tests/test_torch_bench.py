"""tools/torch_bench.py: the PyTorch rebuild of a net matches the numpy reference for every body and
head kind, and the script runs end to end on the CPU. Skipped where PyTorch is not installed (CI)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lc0_rocm.net.loader import net_from_proto  # noqa: E402
from lc0_rocm.net.make_net import make_net  # noqa: E402



@pytest.fixture(scope="module")
def tb():
    import netpaths  # noqa: F401  (puts the checkout on sys.path for the tools package)
    from tools import torch_bench

    return torch_bench


CASES = [
    ("tiny", {}, "sdpa"),  # attention body: PE_DENSE, gating, emb FFN, smolgen; attention policy; WDL; MLH
    ("tiny", {"input_embedding": "pe_map", "ffn_activation": "relu2", "value": "classical", "mlh": False}, "manual"),
    ("se", {}, "sdpa"),  # SE tower, conv policy
    ("apmish", {}, "sdpa"),  # SE tower + attention policy with an encoder
    ("classical", {}, "sdpa"),  # classical policy, tanh value
    ("hybrid", {}, "sdpa"),  # conv tower tokens into an attention body
]


@pytest.mark.parametrize("shape, overrides, attention", CASES, ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_torch_model_matches_numpy_reference_fp32(tb, shape, overrides, attention):
    net = net_from_proto(make_net(shape, seed=3, **overrides))
    planes = tb.check_positions(12, net.input_format)
    want = tb.reference_outputs(net, planes)
    model = tb.build_model(net, torch.float32, torch.device("cpu"), attention)
    with torch.inference_mode():
        got = model(*tb.to_device(planes, torch, torch.float32, torch.device("cpu")))
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-4)
    ok, msg = tb.compare(got, want, 1e-4, 1e-4)
    assert ok, msg


def test_compare_catches_a_different_net(tb):
    net, other = (net_from_proto(make_net("tiny", seed=s)) for s in (0, 1))
    planes = tb.check_positions(4, net.input_format)
    model = tb.build_model(other, torch.float32, torch.device("cpu"))
    with torch.inference_mode():
        got = model(*tb.to_device(planes, torch, torch.float32, torch.device("cpu")))
    ok, msg = tb.compare(got, tb.reference_outputs(net, planes), *tb.TOLERANCES["fp16"])
    assert not ok and "outside" in msg


def test_torch_bench_cpu_end_to_end(tb, tmp_path, capsys):
    rc = tb.main(["2", "3", "--device", "cpu", "--dtype", "fp32", "--modes", "eager", "--reps", "3", "--warmup", "1",
                  "--check-positions", "4", "--json", str(tmp_path / "t.json")])
    assert rc == 0
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["timer"] == "wall clock" and doc["dtype"] == "fp32"
    assert all(c["ok"] for c in doc["checks"]) and len(doc["checks"]) == 3  # eager on 4 positions, sizes 2 and 3
    rows = doc["results"]["eager"]
    assert [r["size"] for r in rows] == [2, 3]
    for r in rows:
        assert len(r["times_ms"]) == 3
        assert r["median_ms"] == pytest.approx(float(np.median(r["times_ms"])))
        assert r["median_nps"] == pytest.approx(r["size"] / r["median_ms"] * 1000)
    out = capsys.readouterr().out
    assert out.splitlines()[-3] == "size, eager ms, eager nps"


def test_torch_bench_bad_mode_is_one_line_error(tb, capsys):
    assert tb.main(["2", "--device", "cpu", "--modes", "warp-speed"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("torch_bench: error: unknown mode")
