"""`lc0-rocm analyse --nodes N`: the engine's search (`lc0_rocm.search.search.Search`, as `go nodes N`)
at every selected position, one tree per game reused from move to move as the UCI engine reuses it.

Settings are the engine's defaults except: no pipelining (Threads 1: the tree is lc0's visit for
visit, so a run gives the same records every time and on every worker) and no smart pruning (every
position gets its N visits, reused ones included). Per position: the best move, its PV, Q and WDL
from the search (side to move), lc0's centipawn score or a proven mate, and the played move's
expected score: its child's value when the search visited it, else the network's value of the
position after it (or the game's result when it ends the game).
"""

from __future__ import annotations

from typing import Optional

import chess

from .records import after_move, centipawns, game_end, record
from .pipeline import RunConfig, Stages


class GameSearcher:
    """Searches the positions of games with one backend (one NN cache for the whole run)."""

    def __init__(self, evaluator, nodes: int, minibatch: int = 0, cache_size: int = 200_000):
        from ..search.leaf_evaluator import LeafEvaluator
        from ..search.params import params_from_settings
        from ..search.warmup import warm_up

        self.api = evaluator
        self.nodes = int(nodes)
        net = evaluator.net
        self.has_wdl, self.has_mlh = bool(net.has_wdl), bool(net.has_moves_left)
        self.nn = LeafEvaluator(evaluator.backend, net.input_format, cache_size)
        self.params = params_from_settings({"MinibatchSize": minibatch, "SmartPruningFactor": 0, "Threads": 1})
        warm_up(self.nn, self.has_wdl, self.has_mlh, minibatch)

    def close(self) -> None:
        self.nn.close()

    def records(self, task) -> list[dict]:
        """The records of a game's selected plies (task: work.GameTask)."""
        from ..encoding.position import parse_position
        from ..search.tree import NodeTree

        if not task.plies:
            return []
        tree = NodeTree()
        h = parse_position(task.start_fen, [])
        want = set(task.plies)
        out = []
        for ply in range(1, task.plies[-1] + 1):
            if ply in want:
                out.append(self._position(task, ply, tree, h, len(out)))
            if ply <= len(task.moves):
                h = h.push(chess.Move.from_uci(task.moves[ply - 1]))
        return out

    def _position(self, task, ply: int, tree, h, i: int) -> dict:
        from ..search.factory import GamePosition, new_search
        from ..search.limits import SearchLimits

        moves = task.moves[: ply - 1]
        played = task.moves[ply - 1] if ply <= len(task.moves) else None
        board = h.board
        white = board.turn == chess.WHITE
        common = (task.number, ply, task.fens[i], white, played, task.sans[i])
        if not any(board.legal_moves):
            q = -1.0 if board.is_checkmate() else 0.0
            return record(*common, None, q, [0.0, 0.0, 1.0] if q < 0 else [0.0, 1.0, 0.0], nodes=0, pv=[], cp=None,
                          mate=0 if q < 0 else None)
        position = GamePosition(h, list(moves), task.start_fen, task.chess960, board)
        s = new_search(position, self.nn, self.params, SearchLimits(nodes=self.nodes), tree, has_wdl=self.has_wdl,
                       has_mlh=self.has_mlh)
        s.run()
        if s.error is not None:
            raise s.error
        root = s.root
        best = s.bestmove
        idx = root.moves.index(best)
        child = root.children[idx]
        wl, d = (child.wl, child.d) if child is not None and child.n > 0 else (-root.wl, root.d)
        info = s.info_lines()[0]
        mate = info.score[1] if info.score[0] == "mate" else None
        return record(*common, best.uci(), wl, self._wdl(wl, d), self._played(task, ply, root, played, white),
                      nodes=root.n, pv=[m.uci() for m in info.pv], cp=None if mate is not None else centipawns(wl),
                      mate=mate)

    def _wdl(self, wl: float, d: float) -> Optional[list]:
        """[w, d, l] of a search value (W - L, D), None for a value-only net."""
        return [(1 + wl - d) / 2, d, (1 - wl - d) / 2] if self.has_wdl else None

    def _played(self, task, ply: int, root, played: Optional[str], white: bool) -> tuple:
        """(`played_score`, `_after`) of the played move (`records.after_move`)."""
        if played is None:
            return None, None
        move = chess.Move.from_uci(played)
        child = root.children[root.moves.index(move)] if move in root.moves else None
        if child is not None and child.n > 0:
            wl, d = child.wl, child.d
            mate = None
            if child.is_terminal and wl != 0:
                from ..score import mate_score

                mate = mate_score(child.m, wl)
        else:
            if ply == len(task.moves) and task.final_score is not None:  # the move ended the game (`work.prepare`)
                return game_end(task.final_score)
            e = self.api.evaluate((task.start_fen, task.moves[:ply]))
            wl = -e.q
            d = e.wdl[1] if e.wdl is not None else 0.0
            mate = None
        return after_move(white, wl, self._wdl(wl, d), mate)


def run_search_mode(evaluator, cfg: RunConfig, nodes: int, sink, minibatch: int = 0) -> None:
    """Analyse the inputs with a search of `nodes` visits per position; games to `sink` in order."""
    searcher = GameSearcher(evaluator, nodes, minibatch)
    try:
        search_units(searcher, cfg, sink)
    finally:
        searcher.close()


def search_units(searcher: GameSearcher, cfg: RunConfig, sink) -> None:
    """The reader and writer stages around `searcher` (the local run's and a Ray actor's loop)."""
    stages = Stages(cfg, sink)
    ok = False
    try:
        for unit, tasks in stages.units():
            stages.finish(unit, tasks, [searcher.records(t) if t.error is None else None for t in tasks])
        ok = True
    finally:
        stages.close(interrupted=not ok)
