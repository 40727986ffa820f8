"""`lc0-rocm eval` end to end (real subprocesses) and backend creation by name.

The JSON contract is checked against the real lc0 0.32.1: probabilities = exact softmax of eigen's
raw logits over lc0's own legal-move indices, WDL rebuilt from lc0's Q and D. Positions keep castling
rights or are from a non-canonical net, so lc0's bindings (which ignore canonical transforms) index
the policy correctly. Bad input must give exit code 1 and exactly one stderr line, no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from oracle_positions import MAIA, REPO
from lc0_oracle import require_lczero
from netpaths import require_shared

from lc0_rocm.backends.factory import create_backend, gpu_usable, head_options, parse_backend_options
from lc0_rocm.errors import BackendError
from lc0_rocm.net.loader import load_net

ATOL = 1e-4
WEIGHTS = REPO / "weights"


def run_eval(*args, env=None):
    return subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "eval", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


def eval_json(*args) -> dict:
    res = run_eval("--json", *args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def lc0_contract(path, fen, moves, options=""):
    """What the JSON should say, computed from lc0's eigen backend."""
    lb = require_lczero()
    backend = lb.Backend(weights=lb.Weights(str(path)), backend="eigen", options=options)
    state = lb.GameState(fen=fen, moves=list(moves))
    out = backend.evaluate(state.as_input(backend))[0]
    idx = list(state.policy_indices())
    logits = np.array(out.p_raw(*idx), dtype=np.float64)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    q, d = out.q(), out.d()
    return {m: float(x) for m, x in zip(state.moves(), p)}, [(1 + q - d) / 2, d, (1 - q - d) / 2], q, out.m()


CASES = [
    (MAIA[0], None, []),
    (MAIA[-1], "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 0 1", []),
    (MAIA[-1], None, ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]),
    (MAIA[3], "8/P1k5/8/8/8/8/5Kp1/8 w - - 0 1", []),  # promotions, no castling (maia is not canonical)
    (WEIGHTS / "bt-small-smolgen-pedense.pb.gz", None, ["d2d4", "g8f6", "c2c4"]),
]


@pytest.mark.parametrize("path,fen,moves", CASES, ids=[f"{c[0].name}-{i}" for i, c in enumerate(CASES)])
def test_eval_json_matches_lc0(path, fen, moves):
    require_shared(path)
    args = ["--backend", "cpu", "--weights", path] + (["--fen", fen] if fen else []) + (["--moves", *moves] if moves else [])
    got = eval_json(*args)
    policy, wdl, q, m = lc0_contract(path, fen, moves)
    assert set(got) == {"policy", "wdl", "q", "mlh"}
    assert set(got["policy"]) == set(policy)
    for move, p in policy.items():
        assert abs(got["policy"][move] - p) <= ATOL, move
    probs = list(got["policy"].values())
    assert probs == sorted(probs, reverse=True)
    assert abs(sum(probs) - 1) < 1e-5
    assert np.allclose(got["wdl"], wdl, atol=ATOL)
    assert abs(got["q"] - q) <= ATOL
    net = load_net(path)
    if net.has_moves_left:
        assert abs(got["mlh"] - m) <= ATOL
    else:
        assert got["mlh"] is None


def test_eval_classical_value_net_has_null_wdl_and_mlh():
    path = WEIGHTS / "se-classical-small.pb.gz"
    if not path.exists():
        pytest.skip("se-classical-small.pb.gz missing")
    got = eval_json("--backend", "cpu", "--weights", path)
    policy, _, q, _ = lc0_contract(path, None, [])
    assert got["wdl"] is None and got["mlh"] is None
    assert abs(got["q"] - q) <= ATOL
    assert max(abs(got["policy"][k] - v) for k, v in policy.items()) <= ATOL


def test_eval_multihead_options_select_heads():
    path = WEIGHTS / "bt-small-smolgen-pedense.pb.gz"
    net = load_net(path)
    if "optimistic" not in net.available_policy_heads:
        pytest.skip("net has no optimistic head")
    value = "q" if "q" in net.available_value_heads else "winner"
    opts = f"policy_head=optimistic,value_head={value}"
    got = eval_json("--backend", "cpu", "--weights", path, "-o", opts)
    policy, wdl, q, m = lc0_contract(path, None, [], options=opts)
    assert max(abs(got["policy"][k] - v) for k, v in policy.items()) <= ATOL
    assert np.allclose(got["wdl"], wdl, atol=ATOL)
    vanilla = eval_json("--backend", "cpu", "--weights", path)
    assert vanilla["policy"] != got["policy"]


def test_eval_default_weights_and_summary():
    got = eval_json("--backend", "cpu")  # default net: weights/ bundled net
    assert len(got["policy"]) == 20 and abs(sum(got["policy"].values()) - 1) < 1e-5
    assert got["wdl"] is not None and abs(sum(got["wdl"]) - 1) < 1e-5
    res = run_eval("--backend", "cpu", "--top", "3")
    assert res.returncode == 0, res.stderr
    best = next(iter(got["policy"]))
    assert "WDL" in res.stdout and best in res.stdout and "Q " in res.stdout
    assert len([line for line in res.stdout.splitlines() if line.startswith("  ")]) == 3


def test_eval_mate_position_has_empty_policy():
    got = eval_json("--backend", "cpu", "--weights", require_shared(MAIA[0]), "--fen", "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
                    "--moves", "d1d8")
    assert got["policy"] == {}


@pytest.mark.parametrize("args,needle", [
    (["--fen", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1"], "FEN"),
    (["--fen", "8/8/8/8/8/8/8/8 w - - 0 1"], "FEN"),
    (["--moves", "e2e4", "e2e4"], "illegal move"),
    (["--moves", "e2e9"], "e2e9"),
    (["--weights", "/nonexistent/net.pb.gz"], "nonexistent"),
    (["--weights", "README.md"], "README.md"),
    (["--backend", "nonsense"], "nonsense"),
    (["-o", "policy_head=nope"], "nope"),
    (["-o", "garbage"], "garbage"),
])
def test_eval_bad_input_is_one_line_exit_1(args, needle, tmp_path):
    res = run_eval("--backend", "cpu", *args) if "--backend" not in args else run_eval(*args)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("lc0-rocm: error: ") and needle in lines[0]
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_eval_truncated_weights_file(tmp_path):
    bad = tmp_path / "cut.pb.gz"
    bad.write_bytes((WEIGHTS / "bt-small-smolgen-pedense.pb.gz").read_bytes()[:5000])
    res = run_eval("--backend", "cpu", "--weights", bad)
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1
    assert "Traceback" not in res.stderr


# ------------------------------------------------------------------------------------------------
# backend factory


def test_parse_backend_options():
    assert parse_backend_options("") == {}
    assert parse_backend_options("gpus=0,1,policy_head=vanilla") == {"gpus": "0,1", "policy_head": "vanilla"}
    assert parse_backend_options(" policy_head=optimistic , value_head=q,") == {"policy_head": "optimistic",
                                                                               "value_head": "q"}
    assert head_options("mlh=false,value_head=st") == {"value_head": "st"}
    with pytest.raises(BackendError):
        parse_backend_options("policy_head")
    with pytest.raises(BackendError):
        parse_backend_options("=x")


def test_create_backend_cpu_and_errors():
    net = load_net(require_shared(MAIA[0]))
    cpu = create_backend("cpu", net, "batch_size=8,threads=2,mlh=false")
    assert cpu.name == "cpu" and cpu.chunk == 8 and cpu.threads == 2 and cpu.mlh is False
    with pytest.raises(BackendError, match="threads"):
        create_backend("cpu", net, "threads=-1")
    with pytest.raises(BackendError, match="unknown backend"):
        create_backend("cuda", net)
    with pytest.raises(BackendError, match="batch_size"):
        create_backend("cpu", net, "batch_size=0")
    with pytest.raises(BackendError, match="mlh"):
        create_backend("cpu", net, "mlh=maybe")
    with pytest.raises(BackendError, match="policy_head"):
        create_backend("cpu", net, "policy_head=optimistic")  # the net was loaded with vanilla


def test_rocm_without_gpu_is_a_clean_error_and_auto_falls_back(capsys):
    ok, why = gpu_usable()
    if ok:
        pytest.skip("a GPU is usable here")
    net = load_net(require_shared(MAIA[0]))
    for name in ("rocm", "rocm-fp16", "rocm-auto"):
        with pytest.raises(BackendError, match="^no GPU"):
            create_backend(name, net)
    backend = create_backend("auto", net)
    assert backend.name == "cpu"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "using the cpu backend" in err[0]
    res = run_eval("--backend", "rocm", "--weights", MAIA[0])
    assert res.returncode == 1 and res.stderr.startswith("lc0-rocm: error: no GPU")
    assert len(res.stderr.strip().splitlines()) == 1


def test_eval_default_backend_is_auto_with_one_notice_and_the_cpu_numbers():
    ok, why = gpu_usable()
    if ok:
        pytest.skip("a GPU is usable here")
    auto = run_eval("--json")
    cpu = run_eval("--json", "--backend", "cpu")
    assert auto.returncode == 0 and cpu.returncode == 0, auto.stderr + cpu.stderr
    assert auto.stderr.splitlines() == [f"lc0-rocm: {why}; using the cpu backend"] and cpu.stderr == ""
    assert auto.stdout == cpu.stdout
