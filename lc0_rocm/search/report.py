"""What a search reports: its `info` lines (score, WDL, PV for each MultiPV line) and lc0's
VerboseMoveStats table, read from a `Search`'s tree (lc0's `Search::SendUciInfo` and
`Search::GetVerboseStats`, `src/search/classic/search.cc`). `s` is always the reporting
search/search.py `Search`."""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Optional

import chess
import numpy as np

from .. import score as sc
from ..board import rules
from ..encoding.policy_map import board_move_to_index
from ..fastmath import fast_log_f64, wdl_rescale
from .core import backup as bk
from .core import pick as pk
from .core.tree import DRAW, LOSS, TABLEBASE, WIN
from .params import SearchParams
from .tree import NodeView

@dataclass
class EdgeInfo:
    """One root move as reported in `info`: move, visits, value (mover's view), proven state."""

    move: chess.Move
    n: int
    wl: float
    d: float
    m: float
    terminal: int  # the tree's terminal kind (0: not proven)
    p: float


@dataclass
class InfoLine:
    """One `info` line of search progress (rendered by the UCI layer)."""

    depth: int
    seldepth: int
    time_ms: int
    nodes: int
    score: tuple  # ("cp", int) or ("mate", int)
    wdl: tuple
    nps: Optional[int]
    multipv: Optional[int]
    pv: list
    moves_left: Optional[int] = None  # expected moves to the end of the game (nets with MLH)
    tbhits: int = 0
    comment: str = ""  # an `info string` instead of a line of numbers (e.g. a warning)


def best_edges(s, node: NodeView, count: int, root_level: bool = False) -> list[int]:
    """Indices of the `count` best children in lc0's GetBestChildrenNoTemperature order."""
    t = s.tree.arrays
    row = node.row
    if t.n[row] == 0 or t.first_edge[row] < 0:
        return []
    allowed, use_allowed = s._root_allowed() if root_level else (s._allowed, False)
    if count == 1:
        b = int(pk.best_edge(t, s._packed, row, allowed, use_allowed))
        return [] if b < 0 else [b]
    fe, ne = int(t.first_edge[row]), int(t.num_edges[row])
    idxs = [i for i in range(ne) if not use_allowed or pk.is_allowed(t, fe + i, allowed)]
    ds = float(bk.draw_score_at(t, s._packed, row))

    def cmp(a, b):
        return int(pk.prefer(t, int(t.e_child[fe + a]), float(t.e_p[fe + a]), int(t.e_child[fe + b]),
                             float(t.e_p[fe + b]), ds))
    return sorted(idxs, key=functools.cmp_to_key(cmp))[:count]


def best_and_ponder(s) -> tuple[Optional[chess.Move], Optional[chess.Move]]:
    """The move the search plays and the reply it expects (None when unknown): the best root edge
    and that child's best edge; a root never expanded (no legal move, or the search failed before
    the first evaluation) plays its first legal move (of the root filter's, when it has some)."""
    root = s.root
    best = best_edges(s, root, 1, root_level=True) if root.moves is not None else []
    if best:
        i = best[0]
        c = root.children[i]
        pb = best_edges(s, c, 1) if c is not None and c.n > 0 and c.moves is not None else []
        return root.moves[i], (c.moves[pb[0]] if pb else None)
    if root.moves is None or root.n == 0:
        legal = list(s.board.legal_moves)
        if s.root_filter:
            legal = [m for m in legal if m in s.root_filter] or legal
        return (legal[0] if legal else None), None
    return None, None


def edge_info(s, i: int) -> EdgeInfo:
    t = s.tree.arrays
    row = s._root_row()
    fe = int(t.first_edge[row])
    c = int(t.e_child[fe + i])
    move = rules.code_to_move(int(t.e_code[fe + i]), s.tree.chess960)
    p = float(t.e_p[fe + i])
    if c >= 0 and t.n[c] > 0:
        return EdgeInfo(move, int(t.n[c]), float(t.wl[c]), float(t.d[c]), float(t.m[c]), int(t.term[c]), p)
    return EdgeInfo(move, 0, -float(t.wl[row]), float(t.d[row]), 0.0, 0, p)


def pv(s, i: int) -> list[chess.Move]:
    """The principal variation that starts with root edge `i`."""
    t = s.tree.arrays
    c960 = s.tree.chess960
    row = s._root_row()
    fe = int(t.first_edge[row])
    line = [rules.code_to_move(int(t.e_code[fe + i]), c960)]
    node = int(t.e_child[fe + i])
    while node >= 0 and t.n[node] > 0 and t.first_edge[node] >= 0:
        b = int(pk.best_edge(t, s._packed, node, s._allowed, False))
        if b < 0:
            break
        fe = int(t.first_edge[node])
        line.append(rules.code_to_move(int(t.e_code[fe + b]), c960))
        node = int(t.e_child[fe + b])
    return line


def info_lines(s) -> list[InfoLine]:
    root = s.root
    now = time.monotonic()
    elapsed_ms = int((now - s.start_time) * 1000)
    nps = None
    playouts = s.playouts
    if s.first_batch_time is not None:
        ms = int((now - s.first_batch_time) * 1000)
        if ms > 0:
            nps = playouts * 1000 // ms
    depth = s.cum_depth // playouts if playouts else 0
    lines = []
    tbhits = s.tb_hits
    for k, i in enumerate(best_edges(s, root, max(1, s.params.multipv), root_level=True)):
        e = edge_info(s, i)
        if e.terminal and e.wl != 0:
            score = ("mate", sc.mate_score(e.m, e.wl, tablebase=e.terminal == TABLEBASE))
        else:
            score = ("cp", sc.uci_score(s.score_type, e.wl, e.d, s.has_wdl, s.display))
        m = e.m if e.n > 0 else 1.0 + root.m  # lc0's default for an unvisited edge
        nodes = e.n if s.params.per_pv_counters else playouts + s.initial_visits
        lines.append(InfoLine(
            depth=max(depth, 1), seldepth=s.max_depth, time_ms=elapsed_ms,
            nodes=nodes, score=score,
            wdl=sc.wdl_triplet(e.wl, e.d, s.score_type, s.display), nps=nps,
            multipv=k + 1 if s.params.multipv > 1 else None, pv=pv(s, i),
            moves_left=int((1.0 + m) / 2.0) if s.mlh_enabled else None, tbhits=tbhits))
    return lines


def verbose_stats_lines(s) -> list[str]:
    """lc0's VerboseMoveStats table for the root (one string per move, best last, then the node)."""
    root = s.root
    if root.moves is None:
        return []
    params = s.params
    t = s.tree.arrays
    vp = float(pk.visited_policy(t, root.row))
    fpu_value = params.fpu_value if params.fpu_value_at_root is None else params.fpu_value_at_root
    fpu_abs = params.fpu_absolute if params.fpu_absolute_at_root is None else params.fpu_absolute_at_root
    ds = s.display.draw_score
    # -GetQ(-draw_score) - ...: the sign of a zero as lc0 prints it
    fpu = fpu_value if fpu_abs else -(root.wl - ds * root.d) - fpu_value * math.sqrt(vp)
    cpuct = params.cpuct
    if params.cpuct_factor:
        cpuct += params.cpuct_factor * fast_log_f64((root.n + params.cpuct_base) / params.cpuct_base)
    u_coeff = cpuct * math.sqrt(max(root.n - 1 if root.n > 0 else 0, 1))
    m_on = s.mlh_enabled and abs(root.wl) > params.moves_left_threshold
    moves, priors, children = root.moves, root.p, root.children
    rows = []
    for i in range(len(moves)):
        c = children[i]
        n = c.n if c is not None else 0
        nif = c.n_in_flight if c is not None else 0
        q = c.wl + ds * c.d if (c is not None and n > 0) else fpu
        u = u_coeff * priors[i] / (1 + n + nif)
        m = float(pk.m_utility(t, s._packed, root.row, c.row, q)) if (m_on and n > 0) else 0.0
        rows.append((n, q + u, i, q, u, m, nif))
    rows.sort(key=lambda r: (r[0], r[1]))
    out = []
    for n, _, i, q, u, m, nif in rows:
        c = children[i]
        mv = moves[i]
        try:
            nn_index = board_move_to_index(s.board, mv, 0)
        except ValueError:
            nn_index = -1
        line = f"{_king_takes_rook(s.board, mv):<5} ({nn_index:<4}) N: {n:>7} (+{nif:>2}) (P: {_pct(priors[i])}%) "
        line += _verbose_stats(c, q, s.display, solid=root.n >= params.solid_tree_threshold)
        line += f"(U: {u:6.5f}) (S: {q + u + m:8.5f}) "
        line += _verbose_tail(c, 1, ds)
        out.append(line)
    line = f"node  ({root.num_edges:>4}) N: {root.n:>7} (+{root.n_in_flight:>2}) (P: {_pct(vp)}%) "
    line += _verbose_stats(root, fpu, s.display, sign=-1) + _verbose_tail(root, -1, ds)
    out.append(line)
    return out


def display(params: SearchParams, root_black: bool) -> sc.Display:
    """What `info` shows for these settings, seen from the root's side (lc0's SendUciInfo)."""
    mode = params.contempt_mode
    sign = 1.0 if (mode == "black") == root_black else -1.0
    diff = 0.0 if mode == "none" else params.wdl_rescale_diff * params.wdl_eval_objectivity
    active = params.wdl_rescale_diff != 0.0 and mode != "none"
    return sc.Display(active=active, ratio=params.wdl_rescale_ratio, diff=diff, sign=sign, max_s=params.wdl_max_s,
                      draw_score=-params.draw_score if root_black else params.draw_score)



def _king_takes_rook(board: chess.Board, mv: chess.Move) -> str:
    """Move text as lc0's verbose stats print it: castling as king-takes-rook (e1h1)."""
    if not board.chess960 and board.is_castling(mv):
        rook = (mv.to_square & ~7) | (7 if mv.to_square > mv.from_square else 0)
        return chess.Move(mv.from_square, rook).uci()
    return mv.uci()


def _pct(p: float) -> str:
    return f"{p * 100:5.{1 if p >= 0.99995 else 2}f}"


def _verbose_stats(n: Optional[NodeView], fpu: float, display: sc.Display, sign: int = 1, solid: bool = False) -> str:
    if n is None:
        if solid:  # lc0 allocates all children of a node with >= SolidTreeThreshold visits: blanks, not dashes
            return "(WL:  0.00000) (D: 0.000) (M:  0.0) (Q:  0.00000) "
        return f"(WL:  -.-----) (D: -.---) (M:  -.-) (Q: {fpu:8.5f}) "
    wl, d, _ = wdl_rescale(np.float32(sign * n.wl), np.float32(n.d), display.ratio, display.diff, display.sign,
                              True, display.max_s)
    q = np.float32(wl) + np.float32(display.draw_score) * np.float32(d)
    return f"(WL: {float(wl):8.5f}) (D: {float(d):5.3f}) (M: {n.m:4.1f}) (Q: {float(q):8.5f}) "


def _verbose_tail(n: Optional[NodeView], sign: int, ds: float = 0.0) -> str:
    v = None
    if n is not None:
        v = n.wl + sign * ds * n.d if n.terminal else n.v
    text = f"(V: {sign * v:7.4f}) " if v is not None else "(V:  -.----) "
    if n is not None:
        lo, up = (n.lower, n.upper) if sign > 0 else (-n.upper, -n.lower)
        if lo == up:
            text += "(T) "
        elif lo == DRAW and up == WIN:
            text += "(W) "
        elif lo == LOSS and up == DRAW:
            text += "(L) "
    return text

