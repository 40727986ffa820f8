"""The 1858 policy map, the conv/attention gather maps, transforms and the legal-move softmax.

Truths used:
* lc0 0.32.1's own tables (kMoveStrs, kConvPolicyMap, kAttnPolicyMap in src/neural/encoder.cc and
  src/neural/tables/*.h at tag v0.32.1): their sha256 digests are pinned below (computed once from
  the tag's sources), our rule-generated tables must hash identically.
* python-chess move generation on the board the network sees: for a canonical transform T the
  legal moves of the transformed board must be exactly the moves we index through T.
* lc0 0.32's `src/neural/encoder.cc: MoveToNNIndex` for the v0.32 bug-compatible mapping (180-degree rotation for T with Transpose).
* `Output.p_softmax` of lc0's eigen backend on maia for the FastExp softmax (bit-exact).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import chess
import numpy as np
import pytest

from lc0_oracle import require_lc0, require_lczero
from uci_pipe import UciPipe

from lc0_rocm.encoding import policy_map as pm
from lc0_rocm.encoding.legal_policy import fast_exp, legal_policy, softmax_logits
from lc0_rocm.encoding.planes import encode_position
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.encoding.transforms import (
    inverse_transform,
    transform_bitboard,
    transform_bitboards,
    transform_square,
)

REPO = Path(__file__).resolve().parent.parent
DATA = json.loads((REPO / "tests" / "data" / "games.json").read_text())
MAIA = REPO.parent / "shared" / "weights" / "maia-1100.pb.gz"

# sha256 of lc0 v0.32.1's tables: " ".join(kMoveStrs); kConvPolicyMap / kAttnPolicyMap as little-endian int16.
LC0_MOVES_SHA = "c4c47aca96e213995c772d1aab24498e3ad9c91209d3467889f20fa1a10678dd"
LC0_CONV_SHA = "a65b9ce4b8cf3f99c8a98ad8da746ad09f3397b0ef7271a5dab8bee3cf01c94f"
LC0_ATTN_SHA = "2cde8db6b669bd5c89646fab72e1572e440dfaaa41c0cab0beba151538398419"


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(a).astype("<i2").tobytes()).hexdigest()


def _line_histories(pred):
    out = []
    for line in DATA["lines"]:
        h = parse_position(line["fen"], [])
        hs = [h]
        for mv in line["uci"].split():
            h = h.push(chess.Move.from_uci(mv))
            hs.append(h)
        out.extend(x for x in hs if pred(x.board))
    return out


def _game_boards():
    out = []
    for g in DATA["games"].values():
        b = chess.Board()
        for mv in g["uci"].split():
            b.push_uci(mv)
            out.append(b.copy(stack=False))
    for line in DATA["lines"]:
        b = chess.Board(line["fen"]) if line["fen"] else chess.Board()
        out.append(b.copy(stack=False))
        for mv in line["uci"].split():
            b.push_uci(mv)
            out.append(b.copy(stack=False))
    return out


BOARDS = _game_boards()


# ---- tables


def test_move_list_matches_lc0():
    assert len(pm.POLICY_MOVES) == 1858 == len(set(pm.POLICY_MOVES))
    assert hashlib.sha256(" ".join(pm.POLICY_MOVES).encode()).hexdigest() == LC0_MOVES_SHA
    assert pm.POLICY_MOVES[:3] == ("a1b1", "a1c1", "a1d1") and pm.POLICY_MOVES[-1] == "h7h8b"
    assert pm.MOVE_INDEX["e1h1"] == 103  # O-O


def test_conv_and_attention_maps_match_lc0():
    assert pm.CONV_POLICY_MAP.shape == (73 * 64,) and pm.ATTENTION_POLICY_MAP.shape == (4288,)
    assert _sha(pm.CONV_POLICY_MAP) == LC0_CONV_SHA
    assert _sha(pm.ATTENTION_POLICY_MAP) == LC0_ATTN_SHA
    for table, gather in ((pm.CONV_POLICY_MAP, pm.CONV_POLICY_GATHER), (pm.ATTENTION_POLICY_MAP, pm.ATTENTION_POLICY_GATHER)):
        assert (table >= 0).sum() == 1858
        assert np.array_equal(table[gather], np.arange(1858))
    sq = chess.parse_square
    # spot checks of the plane meaning (`src/neural/tables/policy_map.h: kConvPolicyMap`)
    assert pm.CONV_POLICY_MAP[0 * 64 + sq("e2")] == pm.MOVE_INDEX["e2e3"]
    assert pm.CONV_POLICY_MAP[(7 * 2 + 6) * 64 + sq("a1")] == pm.MOVE_INDEX["a1h1"]
    assert pm.CONV_POLICY_MAP[56 * 64 + sq("g1")] == pm.MOVE_INDEX["g1h3"]
    assert pm.CONV_POLICY_MAP[64 * 64 + sq("b7")] == pm.MOVE_INDEX["b7a8r"]
    assert pm.CONV_POLICY_MAP[72 * 64 + sq("b7")] == pm.MOVE_INDEX["b7c8q"]
    assert pm.ATTENTION_POLICY_MAP[4096 + 24 * 1 + 3 * 0 + 2] == pm.MOVE_INDEX["b7a8b"]
    assert pm.ATTENTION_POLICY_MAP[sq("b7") * 64 + sq("a8")] == pm.MOVE_INDEX["b7a8"]


# ---- transforms


def test_square_transforms():
    sq = chess.parse_square
    assert transform_square(sq("b1"), 1) == sq("g1")
    assert transform_square(sq("b1"), 2) == sq("b8")
    assert transform_square(sq("b1"), 4) == sq("h7")  # anti-diagonal reflection
    assert transform_square(sq("h1"), 4) == sq("h1") and transform_square(sq("a8"), 4) == sq("a8")
    rng = np.random.default_rng(1)
    vals = rng.integers(0, 2**64, size=40, dtype=np.uint64)
    for t in range(8):
        inv = inverse_transform(t)
        for s in range(64):
            assert transform_square(transform_square(s, t), inv) == s
        arr = transform_bitboards(vals, t)
        for v, a in zip(vals.tolist(), arr.tolist()):
            expect = sum(1 << transform_square(s, t) for s in range(64) if v >> s & 1)
            assert transform_bitboard(v, t) == expect == a


def _net_board(board: chess.Board, t: int) -> chess.Board:
    """The board the network sees: side-to-move frame (white at the bottom), then transform t."""
    b = board.mirror() if board.turn == chess.BLACK else board.copy(stack=False)
    out = chess.Board(None)
    for s, piece in b.piece_map().items():
        out.set_piece_at(transform_square(s, t), piece)
    out.turn = chess.WHITE
    if b.ep_square is not None:
        out.ep_square = transform_square(b.ep_square, t)
    return out


def _symmetric_transforms(board: chess.Board):
    if board.castling_rights:
        return [0]
    return list(range(8)) if not board.pawns else [0, 1]


def test_transformed_moves_are_the_moves_of_the_transformed_board():
    hs = _line_histories(lambda b: not b.castling_rights)
    boards = [h.board for h in hs] + [b for b in BOARDS if not b.castling_rights][::5]
    n_checked = {t: 0 for t in range(8)}
    for board in boards:
        for t in _symmetric_transforms(board):
            moves, idx = pm.legal_move_indices(board, t)
            ref_moves, ref_idx = pm.legal_move_indices(_net_board(board, t), 0)
            assert sorted(idx.tolist()) == sorted(ref_idx.tolist()), (board.fen(), t)
            assert len(set(idx.tolist())) == len(moves)
            n_checked[t] += 1
    assert all(n_checked[t] >= 10 for t in range(8)), n_checked


def test_net_board_matches_encoded_planes():
    """Tie the move transform to the (oracle-verified) plane transform of canonical formats."""
    seen = set()
    for h in _line_histories(lambda b: True):
        p = encode_position(h, 4)
        t = int(p.transforms[0])
        seen.add(t)
        nb = _net_board(h.board, t)
        planes = [int(x) for x in p.masks[0, :12]]
        for k, pt in enumerate((chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)):
            assert planes[k] == int(nb.pieces(pt, chess.WHITE)), (h.board.fen(), t)
            assert planes[6 + k] == int(nb.pieces(pt, chess.BLACK)), (h.board.fen(), t)
    assert len(seen) >= 5, seen


def test_bug_compatible_v032_mapping():
    """lc0 v0.32: rank flip if Mirror|Transpose, file flip if Flip|Transpose (0.32's `MoveToNNIndex`)."""
    rot = [s ^ 63 for s in range(64)]
    for board in [h.board for h in _line_histories(lambda b: not b.castling_rights and not b.pawns)][:30]:
        black = board.turn == chess.BLACK
        for t in range(8):
            for m in board.legal_moves:
                correct = pm.move_to_index(m, black, t)
                bug = pm.move_to_index(m, black, t, bug_compatible_v032=True)
                if not t & 4:
                    assert bug == correct
                else:
                    a, b = m.from_square ^ (56 if black else 0), m.to_square ^ (56 if black else 0)
                    assert bug == pm.FROM_TO_INDEX[rot[a] * 64 + rot[b]]
    # under T = 4, b1 goes to h7 (correct) but to g8 in v0.32
    m = chess.Move(chess.B1, chess.B2)
    assert pm.move_to_index(m, False, 4) == pm.MOVE_INDEX["h7g7"]
    assert pm.move_to_index(m, False, 4, bug_compatible_v032=True) == pm.MOVE_INDEX["g8g7"]
    # the position of that demonstration chooses T = 4
    h = parse_position("8/8/8/8/8/2k5/7K/6Q1 w - - 0 1", [])
    assert encode_position(h, 5).transforms[0] == 4


@pytest.mark.parametrize("bug", (False, True))
def test_index_move_round_trip(bug):
    for black in (False, True):
        for t in range(8):
            for i in range(1858):
                m = pm.index_to_move(i, black, t, bug)
                assert pm.move_to_index(m, black, t, bug) == i


def test_board_move_conversions():
    n = 0
    for board in BOARDS[::2]:
        for t in _symmetric_transforms(board):
            moves, idx = pm.legal_move_indices(board, t)
            for m, i in zip(moves, idx):
                assert pm.board_move_to_index(board, m, t) == i
                assert pm.index_to_board_move(board, int(i), t) == m
                n += 1
    assert n > 3000
    b = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1")
    assert pm.board_move_to_index(b, chess.Move.from_uci("e8g8")) == pm.MOVE_INDEX["e1h1"]
    assert pm.board_move_to_index(b, chess.Move.from_uci("e8c8")) == pm.MOVE_INDEX["e1a1"]
    assert pm.index_to_board_move(b, pm.MOVE_INDEX["e1a1"]) == chess.Move.from_uci("e8c8")
    b = chess.Board("8/1P4k1/8/8/8/8/8/K7 w - - 0 1")
    assert pm.index_to_board_move(b, pm.MOVE_INDEX["b7b8"]) == chess.Move.from_uci("b7b8n")
    assert pm.board_move_to_index(b, chess.Move.from_uci("b7b8n")) == pm.MOVE_INDEX["b7b8"]
    with pytest.raises(ValueError):
        pm.move_to_index(chess.Move.from_uci("a1b3"[:2] + "c4"), False)
    with pytest.raises(ValueError):
        pm.index_to_move(1858, False)


# ---- softmax over legal moves


def test_fast_exp_accuracy():
    a = np.linspace(-80, 20, 20001).astype(np.float32)
    rel = fast_exp(a) / np.exp(a.astype(np.float64)) - 1
    assert np.abs(rel).max() < 3e-3
    assert fast_exp(np.float32([-200.0]))[0] == 0.0


def test_softmax_with_temperature_matches_float64():
    rng = np.random.default_rng(0)
    board = chess.Board()
    logits = rng.normal(0, 2, 1858).astype(np.float32)
    for temp in (1.0, 1.359, 0.5):
        probs = legal_policy(board, logits, temperature=temp, use_fast_exp=False)
        _, idx = pm.legal_move_indices(board)
        x = logits[idx].astype(np.float64) / temp
        ref = np.exp(x - x.max())
        ref /= ref.sum()
        assert np.allclose(list(probs.values()), ref, rtol=1e-5, atol=1e-7)
        fast = legal_policy(board, logits, temperature=temp)
        assert np.allclose(list(fast.values()), ref, rtol=5e-3)
        assert abs(sum(fast.values()) - 1) < 1e-5


def test_softmax_matches_lc0_p_softmax_bit_exact():
    lb = require_lczero()
    if not MAIA.is_file():
        pytest.skip("../shared/weights/maia-1100.pb.gz not present")
    be = lb.Backend(lb.Weights(str(MAIA)))
    g = DATA["games"]["kasparov_topalov_1999"]["uci"].split()
    checked = 0
    for k in (0, 1, 12, 25, 40, 61):
        gs = lb.GameState(moves=g[:k])
        out = be.evaluate(gs.as_input(be))[0]
        board = chess.Board()
        for mv in g[:k]:
            board.push_uci(mv)
        moves, idx = pm.legal_move_indices(board)
        ref = np.array(out.p_softmax(*idx.tolist()), dtype=np.float32)
        raw = np.array(out.p_raw(*range(1858)), dtype=np.float32)
        assert np.array_equal(softmax_logits(raw[idx], 1.0, True), ref)
        probs = legal_policy(board, raw, temperature=1.0)
        assert np.array_equal(np.array([probs[m] for m in moves], dtype=np.float32), ref)
        checked += 1
    assert checked == 6


# ---- the v0.32 mapping against the real lc0 binary (VerboseMoveStats prints each move's prior P,
# computed by lc0 through its own transform mapping, and its untransformed NN index)

_LC0_POSITIONS = [
    "8/8/8/8/8/2k5/7K/6Q1 w - - 0 1",  # T = 4 (the Transpose case of 0.32's MoveToNNIndex)
    "8/8/3k4/8/8/8/1K6/3R4 b - - 0 70",  # black to move, pawnless
    "3K4/8/8/6k1/8/8/8/7r w - - 0 80",  # Mirror (+ Transpose)
    "8/2k5/8/8/3B4/4K3/7R/r7 b - - 0 90",
    "8/5k2/8/2p5/2P5/2K5/8/8 w - - 0 50",  # pawns: Flip only
    "8/8/5k2/8/8/4K3/4R3/8 b - - 0 71",  # T = 4, black to move
    "8/8/2k5/8/3K4/8/4R3/8 w - - 0 76",  # T = 5
    "8/8/2k1R3/8/2K5/8/8/8 b - - 0 79",  # T = 5, black
    "8/8/8/2K4r/4k3/8/8/8 w - - 0 83",  # T = 7
    "2R5/8/8/8/3r4/8/2K5/k7 b - - 0 6",  # T = 7, black
]


def _lc0_verbose_stats(net: Path, fens: list[str]) -> list[dict[str, tuple[int, float]]]:
    lc0 = UciPipe([require_lc0(), f"--weights={net}", "--backend=eigen"], stderr=subprocess.DEVNULL)
    try:
        for line in ("uci", "setoption name VerboseMoveStats value true", "setoption name PolicyTemperature value 1"):
            lc0.send(line)
        out = []
        for fen in fens:
            lc0.send(f"position fen {fen}")
            stats = {}
            for line in lc0.answer("go nodes 1")[:-1]:
                parts = line.split()
                if line.startswith("info string") and parts[2] != "node":
                    idx = int(line.split("(")[1].split(")")[0])
                    p = float(line.split("(P:")[1].split("%")[0])
                    stats[parts[2]] = (idx, p)
            out.append(stats)
    finally:
        lc0.close()
    return out


def _print_tol(p: float) -> float:
    """Half a unit of the last digit lc0 prints (3 significant digits), plus the precision lost
    by lc0 storing P in 16 bits per edge (relative ~1e-3)."""
    return 0.51 * 10 ** (np.floor(np.log10(max(p, 1e-3))) - 2) + 1e-3 * p + 1e-6


def test_bug_compatible_v032_matches_lc0_binary(tmp_path):
    lb = require_lczero()
    make_net = pytest.importorskip("lc0_rocm.net.make_net").make_net
    from lc0_rocm.net.writer import write_net

    net = tmp_path / "tiny_v2.pb.gz"
    write_net(make_net("tiny", input_format=5), net)
    be = lb.Backend(lb.Weights(str(net)))
    stats = _lc0_verbose_stats(net, _LC0_POSITIONS)
    transforms = set()
    for fen, st in zip(_LC0_POSITIONS, stats):
        h = parse_position(fen, [])
        board = h.board
        t = int(encode_position(h, 5).transforms[0])
        transforms.add(t)
        assert sorted(st) == sorted(m.uci() for m in board.legal_moves)
        raw = np.array(be.evaluate(lb.GameState(fen=fen).as_input(be))[0].p_raw(*range(1858)), dtype=np.float32)
        bug = legal_policy(board, raw, t, temperature=1.0, bug_compatible_v032=True)
        correct = legal_policy(board, raw, t, temperature=1.0)
        for m in board.legal_moves:
            idx, p = st[m.uci()]
            assert pm.board_move_to_index(board, m, 0) == idx, (fen, m)
            assert abs(100 * bug[m] - p) <= _print_tol(p), (fen, m, bug[m], p)
        worst_correct = max(abs(100 * correct[m] - st[m.uci()][1]) - _print_tol(st[m.uci()][1])
                            for m in board.legal_moves)
        if t & 4:
            assert worst_correct > 0.1  # the correct mapping reads other logits than v0.32
        else:
            assert worst_correct <= 0
    assert {1, 3, 4, 5, 7} <= transforms, transforms
