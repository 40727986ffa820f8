"""The search's byte-assembling encoder against the general encoder (`encoding.planes`), byte for byte.

Positions: seeded random games from the start position and from FENs (castling rights, en passant,
pawnless endings, high rule-50 counts), every supported input format and fill mode. Where the fast
encoder declines (None), the search falls back to the general one, so only its answers are checked,
and the test also makes sure it answers for the cases the search meets most.
"""

from __future__ import annotations

import functools
import random

import chess
import numpy as np
import pytest

from lc0_rocm.encoding.history import History
from lc0_rocm.encoding.packed import NUM_PLANES
from lc0_rocm.encoding.planes import encode_position_into
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.search.fast_encode import encode_row

STARTS = [
    None,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3",
    "8/8/4k3/8/8/4K3/4R3/8 w - - 93 140",
    "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",
]


@functools.lru_cache(maxsize=None)
def _histories(seed=7, games=12, plies=50) -> tuple:
    return tuple(_walk(seed, games, plies))


def _walk(seed, games, plies):
    rng = random.Random(seed)
    for g in range(games):
        fen = STARTS[g % len(STARTS)]
        board = chess.Board(fen) if fen else chess.Board()
        moves = []
        yield parse_position(fen, [])
        for _ in range(plies):
            legal = list(board.legal_moves)
            if not legal or board.is_insufficient_material():
                break
            caps = [m for m in legal if board.is_capture(m)]
            m = rng.choice(caps if caps and rng.random() < 0.3 else legal)
            board.push(m)
            moves.append(m.uci())
            yield parse_position(fen, moves)


@pytest.mark.parametrize("input_format", [1, 2, 3, 4, 132, 5])
@pytest.mark.parametrize("fill", ["fen_only", "no", "always"])
def test_rows_equal_the_general_encoder(input_format, fill):
    answered = total = flipped = 0
    for h in _histories():
        total += 1
        got = encode_row(h.last, h.first, input_format, fill)
        if got is None:
            continue
        answered += 1
        raw, rule50, t = got
        masks = np.zeros(NUM_PLANES, np.uint64)
        values = np.ones(NUM_PLANES, np.float32)
        hist = History(h.last)
        ref_t = encode_position_into(hist, input_format, masks, values, fill)
        assert raw == masks.tobytes() and t == ref_t, (input_format, fill, h.board.fen())
        assert np.float32(rule50) == values[109] and (values[np.arange(NUM_PLANES) != 109] == 1).all()
        flipped += t == 1
    if input_format == 5:
        assert answered == 0  # V2: always the general encoder
    elif fill != "always":
        assert answered > total * 0.6, (answered, total)  # the common cases are covered
    if input_format in (3, 4, 132) and fill == "fen_only":
        assert flipped > 10  # the Flip transform was exercised
