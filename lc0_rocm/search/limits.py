"""What one search is asked to do and what it reports: the UCI `go` parameters, the limits a time
manager derives from them, and the statistics the search hands its stoppers after every batch.

`GoParams` holds one optional field per UCI `go` keyword (times in milliseconds, as the protocol
sends them). A time manager (search/timemgr.py) turns them into a `SearchLimits` for one search;
the search reports an `IterationStats` after each batch to its `Stopper` (search/stoppers.py).

Beyond the clock: movetime gives a deadline of movetime - MoveOverheadMs. `nodes`: visits in the
tree (reused ones count). `depth`: average depth of the new playouts. `infinite` / `ponder`: no
intrinsic stops, only `stop` (or the explicit nodes/depth limits). A node limit below one is one
(the root is always evaluated, so the move played is one the search looked at).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

DEFAULT_SMART_PRUNING_FACTOR = 1.33
SMART_PRUNING_TOLERANCE_MS = 200
SMART_PRUNING_TOLERANCE_NODES = 300
NODE_LIMIT_MAX = 4_000_000_000


@dataclass
class GoParams:
    """One `go` command: every field optional, times in milliseconds (UCI units)."""

    wtime: Optional[int] = None
    btime: Optional[int] = None
    winc: Optional[int] = None
    binc: Optional[int] = None
    movestogo: Optional[int] = None
    depth: Optional[int] = None
    nodes: Optional[int] = None
    mate: Optional[int] = None
    movetime: Optional[int] = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list[str] = field(default_factory=list)


@dataclass
class SearchLimits:
    """What stops one search; None means "no such limit"."""

    deadline_ms: Optional[float] = None  # since the search started: the earliest hard deadline
    nodes: int = NODE_LIMIT_MAX  # visits in the tree, reused ones included
    depth: Optional[int] = None
    infinite: bool = False  # no intrinsic stops (smart pruning): infinite, ponder, mate
    hold_bestmove: bool = False  # go infinite / ponder: bestmove only after stop (or ponderhit)
    mate: Optional[int] = None  # go mate N: stop once a mate in <= N moves is proven
    from_clock: bool = False  # deadline_ms came from the clock budget (not from movetime)
    clock_ms: Optional[float] = None  # the time manager's budget for this move (None: no clock)
    clock_extra_ms: float = 0.0  # smooth: piggy-bank time the move may add to clock_ms
    clock_stopper: Optional["SmoothStopper"] = None  # smooth: watches every batch (see Stopper)


@dataclass
class IterationStats:
    """What the search reports to the stoppers after each batch."""

    time_ms: float = 0.0  # since the search started
    total_nodes: int = 0  # root N: new playouts + reused visits
    playouts: int = 0  # new playouts of this search
    batches: int = 0
    average_depth: float = 0.0
    edge_n: list[int] = field(default_factory=list)  # visits of each (allowed) root move
    win_found: bool = False
    num_losing_edges: int = 0
    may_resign: bool = True
    mate_depth: Optional[int] = None  # shortest proven mate (moves) among the root moves
    # lc0's TimeUsageHint::kNeedMoreTime: the most visited root move is not the one of highest
    # Q (+M). Only the smooth manager reads it (it then may spend its piggy bank).
    need_more_time: bool = False


def to_int64(x: float) -> int:
    """C++'s float to int64 conversion (toward zero), as lc0's managers and stoppers truncate."""
    return int(x) if math.isfinite(x) else 0
