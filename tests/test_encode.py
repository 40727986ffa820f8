"""The compiled encoder (`board.encode`) against the general encoder (`encoding.planes`), bit for bit.

Positions: every ply of the famous games and hand-made lines of tests/data/games.json (en passant,
castling-right changes, promotions, high rule-50 starts, repetitions, pawnless endings with
Mirror/Transpose canonicalisation), a few extra lines (knight-shuffle repetitions, FEN starts
reached by a double push) and seeded random playouts from varied starts. All of them live in one set
of tree arrays (positions shared by several lines are stored once, rows in shuffled order, so the
`parent` chains are a real tree), and every position is encoded for every input format and every
FillEmptyHistory mode: masks, values and transform must equal `encode_positions` of its History.
"""

from __future__ import annotations

import functools
import json
import random
import time
from pathlib import Path

import chess
import numpy as np
import pytest

from lc0_rocm.encoding.history import History
from lc0_rocm.encoding.planes import FILL_MODES, INPUT_FORMATS, encode_positions
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.encoding.transforms import transform_bitboard as ref_transform_bitboard
from lc0_rocm.board.encode import FILL_CODES, NUM_PLANES, encode, input_hash, transform_bitboard
from lc0_rocm.jit import jit

DATA = json.loads((Path(__file__).resolve().parent / "data" / "games.json").read_text())

EXTRA_LINES = [
    (None, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8 e2e4"),
    ("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2", "g1f3 b8c6 f3g1 c6b8 g1f3"),
    ("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3", "d4e3 d2e3 e7e5 g1f3"),
    ("8/8/8/8/8/2k5/7K/6Q1 w - - 30 60", "h2g2 c3d3 g2h2 d3c3 h2g2 c3d3 g2h2 d3c3"),
    ("8/8/8/3k4/8/8/8/4K2R w K - 0 1", "e1f1 d5e5 f1e1 e5d5 h1h2 d5e5"),
]

RANDOM_STARTS = [
    None,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3",
    "8/8/4k3/8/8/4K3/4R3/8 w - - 93 140",
    "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "8/8/3k4/8/8/8/1K6/3R4 b - - 0 70",
    "8/2k5/8/8/3B4/4K3/7R/r7 b - - 5 90",
    "7k/8/8/8/8/8/8/K5Q1 w - - 0 1",
    "1n2k1n1/8/8/8/8/8/8/1N2K1N1 w - - 0 1",
]


def _random_lines(seed=11, games=40, plies=60):
    rng = random.Random(seed)
    for g in range(games):
        fen = RANDOM_STARTS[g % len(RANDOM_STARTS)]
        board = chess.Board(fen) if fen else chess.Board()
        moves = []
        for _ in range(plies):
            legal = list(board.legal_moves)
            if not legal or board.is_insufficient_material():
                break
            if len(board.move_stack) >= 4 and rng.random() < 0.3:
                back = board.move_stack[-2]  # our previous move reversed: invites repetitions
                m = chess.Move(back.to_square, back.from_square)
                if m not in legal:
                    m = rng.choice(legal)
            else:
                caps = [m for m in legal if board.is_capture(m)]
                doubles = [m for m in legal if board.pawns >> m.from_square & 1
                           and abs(m.to_square - m.from_square) == 16]  # en-passant flags
                r = rng.random()
                m = rng.choice(caps if caps and r < 0.3 else doubles if doubles and r > 0.8 else legal)
            board.push(m)
            moves.append(m.uci())
        yield fen, " ".join(moves)


def _lines():
    out = [(None, g["uci"]) for g in DATA["games"].values()]
    out += [(line["fen"], line["uci"]) for line in DATA["lines"]]
    out += EXTRA_LINES
    out += list(_random_lines())
    return out


class Tree:
    """All positions of all lines in the search's arrays (rows shuffled, shared prefixes once)."""

    def __init__(self, lines, seed=3):
        keyed = {}  # (fen, moves prefix) -> (History, parent key)
        for fen, uci in lines:
            moves = tuple(uci.split())
            h = parse_position(fen, [])
            keyed.setdefault((fen, ()), (h, None))
            for k, mv in enumerate(moves, 1):
                h = h.push(chess.Move.from_uci(mv))
                keyed.setdefault((fen, moves[:k]), (h, (fen, moves[:k - 1])))
        keys = list(keyed)
        random.Random(seed).shuffle(keys)
        row = {key: r for r, key in enumerate(keys)}
        n = len(keys)
        self.histories = [keyed[key][0] for key in keys]
        self.parent = np.array([-1 if keyed[k][1] is None else row[keyed[k][1]] for k in keys], np.int32)
        self.bbs = np.array([h.last.bbs for h in self.histories], np.uint64).reshape(n, 12)
        self.castling = np.array([h.last.castling for h in self.histories], np.uint64)
        self.black = np.array([h.last.black_to_move for h in self.histories], np.uint8)
        self.ep_file = np.array([h.last.ep_file for h in self.histories], np.int8)
        self.rule50 = np.array([h.last.rule50 for h in self.histories], np.int16)
        self.reps = np.array([h.last.repetitions for h in self.histories], np.int8)
        self.startpos = np.array([h.first.is_startpos_board for h in self.histories], np.bool_)
        assert self.rule50.max() < 2 ** 15 and self.reps.max() < 127

    def __len__(self):
        return len(self.histories)

    def encode(self, node, fmt, fill):
        masks = np.full(NUM_PLANES, 0xDEADBEEFDEADBEEF, np.uint64)  # must be fully overwritten
        values = np.full(NUM_PLANES, np.nan, np.float32)
        t = encode(node, self.parent, self.bbs, self.castling, self.black, self.ep_file, self.rule50,
                   self.reps, bool(self.startpos[node]), fmt, fill, masks, values)
        return masks, values, t


@functools.lru_cache(maxsize=None)
def _tree() -> Tree:
    return Tree(_lines())


@functools.lru_cache(maxsize=None)
def _reference(fmt, fill):
    return encode_positions([History(h.last) for h in _tree().histories], fmt, fill)


def test_tree_covers_the_interesting_cases():
    tree = _tree()
    assert len(tree) > 2000
    assert (tree.reps > 0).sum() > 50 and (tree.reps > 1).any()
    assert (tree.ep_file >= 0).sum() > 20 and (tree.castling != 0).sum() > 200
    assert (tree.parent < 0).sum() == len({fen for fen, _ in _lines()})
    assert ((tree.parent >= 0) & (tree.parent != np.arange(len(tree)) - 1)).sum() > len(tree) // 2
    roots = tree.parent < 0
    assert (tree.ep_file[roots] >= 0).sum() >= 2 and (tree.rule50[roots] > 0).sum() >= 3
    assert set(_reference(3, "fen_only").transforms.tolist()) == set(range(8))  # every transform


@pytest.mark.parametrize("fmt", INPUT_FORMATS)
@pytest.mark.parametrize("fill", FILL_MODES)
def test_encode_equals_the_general_encoder(fmt, fill):
    tree = _tree()
    ref = _reference(fmt, fill)
    for node in range(len(tree)):
        masks, values, t = tree.encode(node, fmt, FILL_CODES[fill])
        if not (np.array_equal(masks, ref.masks[node]) and t == ref.transforms[node]
                and values.tobytes() == ref.values[node].tobytes()):
            h = tree.histories[node]
            bad = np.nonzero(masks != ref.masks[node])[0].tolist()
            pytest.fail(f"format {fmt} fill {fill} position {h.board.fen()} ({len(h)} plies): "
                        f"transform {t} vs {ref.transforms[node]}, planes {bad} differ")


def test_transforms_equal_the_reference():
    rng = np.random.default_rng(5)
    xs = rng.integers(0, 2 ** 63, size=200, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 200, np.uint64)
    for t in range(8):
        for x in xs:
            assert int(transform_bitboard(x, t)) == ref_transform_bitboard(int(x), t)


@jit
def _hash_all(nodes, parent, bbs, castling, black, ep_file, rule50, reps, startpos, fmt, fill, masks, values, out):
    for j in range(nodes.shape[0]):
        n = nodes[j]
        encode(n, parent, bbs, castling, black, ep_file, rule50, reps, startpos[n], fmt, fill, masks[j], values[j])
        out[j] = input_hash(masks[j], values[j], black[n], ep_file[n])


def test_input_hash():
    tree = _tree()
    n = len(tree)
    nodes = np.arange(n, dtype=np.int64)
    for fmt in (1, 4, 133):
        masks = np.zeros((n, NUM_PLANES), np.uint64)
        values = np.zeros((n, NUM_PLANES), np.float32)
        hashes = np.zeros(n, np.uint64)
        _hash_all(nodes, tree.parent, tree.bbs, tree.castling, tree.black, tree.ep_file, tree.rule50, tree.reps,
                  tree.startpos, fmt, FILL_CODES["fen_only"], masks, values, hashes)
        keys = {}
        for j in range(n):
            key = (masks[j].tobytes(), values[j, 109].tobytes(), int(tree.black[j]), int(tree.ep_file[j]))
            assert keys.setdefault(key, int(hashes[j])) == int(hashes[j])
        assert len(set(keys.values())) == len(keys)  # distinct inputs, distinct hashes
        assert len(keys) > n // 2
    # every single-bit change of the input changes the key
    m, v = masks[n - 1].copy(), values[n - 1].copy()
    b, e = int(tree.black[n - 1]), int(tree.ep_file[n - 1])
    h0 = int(input_hash(m, v, b, e))
    seen = {h0}
    for p in range(NUM_PLANES):
        for bit in range(0, 64, 7):
            m2 = m.copy()
            m2[p] ^= np.uint64(1 << bit)
            seen.add(int(input_hash(m2, v, b, e)))
    v2 = v.copy()
    v2[109] = np.nextafter(v[109], np.float32(2))
    seen.add(int(input_hash(m, v2, b, e)))
    seen.add(int(input_hash(m, v, 1 - b, e)))
    seen |= {int(input_hash(m, v, b, f)) for f in range(-1, 8) if f != e}
    assert len(seen) == 1 + NUM_PLANES * 10 + 1 + 1 + 8


def test_input_hash_is_xxh64():
    xxhash = pytest.importorskip("xxhash")
    tree = _tree()
    masks, values, _ = tree.encode(len(tree) - 1, 5, FILL_CODES["always"])
    for black, ep in ((0, -1), (1, 4)):
        tail = int(values.view(np.uint32)[109]) | black << 32 | (ep + 1) << 33
        want = xxhash.xxh64_intdigest(masks.tobytes() + tail.to_bytes(8, "little"))
        assert int(input_hash(masks, values, black, ep)) == want


@jit
def _encode_loop(reps_n, node, parent, bbs, castling, black, ep_file, rule50, reps, startpos, fmt, fill, masks,
                 values):
    t = 0
    for _ in range(reps_n):
        t += encode(node, parent, bbs, castling, black, ep_file, rule50, reps, startpos, fmt, fill, masks, values)
    return t


@pytest.mark.parametrize("game, plies, fmt, transform", [
    ("kasparov_topalov_1999", 41, 1, 0),  # middlegame, black to move (ranks mirrored), 31 pieces
    ("byrne_fischer_century_1956", 80, 4, 1),  # canonical: 8 slots since the last pawn move, then Flip
])
def test_encode_speed(game, plies, fmt, transform):
    """A position with 8 history slots encoded from a compiled loop (time printed, loosely bounded)."""
    moves = DATA["games"][game]["uci"].split()[:plies]
    tree = Tree([(None, " ".join(moves))])
    node = max(range(len(tree)), key=lambda r: len(tree.histories[r]))
    masks = np.zeros(NUM_PLANES, np.uint64)
    values = np.zeros(NUM_PLANES, np.float32)
    args = (node, tree.parent, tree.bbs, tree.castling, tree.black, tree.ep_file, tree.rule50, tree.reps,
            bool(tree.startpos[node]), fmt, FILL_CODES["fen_only"], masks, values)
    ref = encode_positions([History(tree.histories[node].last)], fmt, "fen_only")
    assert _encode_loop(1, *args) == ref.transforms[0] == transform and np.array_equal(masks, ref.masks[0])
    assert (masks[5:8 * 13:13] != 0).all()  # 8 history slots (kings)
    n = 200_000
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        _encode_loop(n, *args)
        best = min(best, (time.perf_counter() - t0) / n)
    print(f"encode format {fmt}, {len(tree.histories[node])} positions: {best * 1e9:.0f} ns per call")
    assert best < 5e-6
