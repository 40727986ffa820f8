"""lc0's four time managers: the clock budget of each move, and the TimeManager option string.

A time manager turns a `GoParams` (search/limits.py) into the `SearchLimits` of one search with
`limits(go, ply, black_to_move)` and hears how the search went through `search_done(limits,
elapsed_ms)`. lc0's `TimeManager` option picks one manager and configures it; the string is parsed
by `make_time_manager(spec, move_overhead_ms)` (lc0: src/search/classic/stoppers/factory.cc,
MakeTimeManager, and the OptionsDict config syntax of src/utils/optionsdict.cc):

    legacy                                  the default
    legacy(steepness=7.0,midpoint-move=51.5)
    smooth(max-move-budget=0.3,mle-legacy(midpoint=45.2,steepness=5.93))
    alphazero(alphazero-time-pct=12)
    simple(base-pct=1.4,ply-pct=0.049,time-factor=1.5,opening-bonus-pct=0)

The managers (each budget is for the clock of the side to move, less MoveOverheadMs):

- legacy (stoppers/legacy.cc): the expected number of moves still to play comes from a
  log-logistic model of game length (midpoint-move 51.5, steepness 7), capped by movestogo; the
  remaining time plus the increments of those moves is split evenly; the first move of a game gets
  a bonus (first-move-bonus 1.8 + book-ply-bonus 0.25 per ply, up to 12 plies); time a search did not
  use is saved and spent on the next move (immediate-use 1.0); slowmover scales the budget. The
  deadline never exceeds time - MoveOverheadMs.
- smooth (stoppers/smooth.cc): budgets in nodes from an nps estimate and the expected tree reuse,
  keeps a piggy bank of time for moves where the best move is about to be overtaken, and learns nps,
  tree reuse and the share of the budget smart pruning leaves unused from move to move.
- alphazero (stoppers/alphazero.cc): a fixed share (alphazero-time-pct 12) of the remaining time.
- simple (stoppers/simple.cc): a share of the remaining time that grows with the ply and with the
  increment/time ratio, plus what the previous move left unused.

The smooth manager also watches each search through a `SmoothStopper` (search/stoppers.py), which
the search's `Stopper` asks first, as lc0 puts the time manager's stopper first in its chain.

One lc0 quirk matters for the budgets: in lc0 v0.32 the "game ply" a time manager sees is the FEN's
fullmove number plus the moves played since (src/chess/board.cc: ChessBoard::SetFromFen stores the
fullmove number into Position's ply counter), so `startpos` is ply 1 there. `lc0_game_ply` gives
that number; pass it as `ply` to reproduce lc0's budgets exactly.
"""

from __future__ import annotations

import math
import threading
from typing import Optional, Union

from ..values import FALSE, TRUE, parse_bool
from .limits import NODE_LIMIT_MAX, SMART_PRUNING_TOLERANCE_MS, GoParams, SearchLimits, to_int64
from .stoppers import SmoothStopper

DEFAULT_MOVE_OVERHEAD_MS = 200
# Our own latency past a deadline (waking up, the GIL, the batch in flight, garbage collection, the
# output), kept back from every clock budget on top of MoveOverheadMs, where lc0 keeps its move
# overhead. Measured (docs/reliability.md): `go movetime 300` with MoveOverheadMs 0 on the loaded
# 2-core VM, bestmove 75 ms past the deadline at the median, 145 ms at p90, 184 ms at most (lc0: 97,
# 244, 307 ms); with 200 ms alone lc0-rocm lost 3 of 8 games on time at 1+0, lc0 none.
ENGINE_LATENCY_MS = 150
DEFAULT_TIME_MANAGER = "legacy"
TIME_MANAGER_NAMES = ("legacy", "smooth", "alphazero", "simple")


def estimated_moves_to_go(ply: int, midpoint: float = 51.5, steepness: float = 7.0) -> float:
    """Median remaining moves of a game at `ply`, log-logistic model (lc0's legacy.cc:
    ComputeEstimatedMovesToGo)."""
    move = ply / 2.0
    return midpoint * math.pow(1 + 2 * math.pow(move / midpoint, steepness), 1 / steepness) - move


def lc0_game_ply(start_fullmove_number: int, moves_played: int) -> int:
    """The game ply lc0 v0.32's time managers see: the start FEN's fullmove number plus the moves
    played from it (src/chess/position.cc: Position::FromFen keeps the fullmove number as ply)."""
    return int(start_fullmove_number) + int(moves_played)


def _side_clock(go: GoParams, black: bool) -> tuple[Optional[int], int]:
    """(time left, increment >= 0) of the side to move; time None when there is no clock."""
    time = go.btime if black else go.wtime
    inc = go.binc if black else go.winc
    return time, (max(0, int(inc)) if inc is not None else 0)


def _cap_by_movestogo(moves: float, go: GoParams) -> float:
    """lc0 uses movestogo when it is positive and below the estimate (0 or less is ignored)."""
    if go.movestogo is not None and 0 < go.movestogo < moves:
        return float(go.movestogo)
    return moves


# --------------------------------------------------------------------------------------------
# The spec string: lc0's OptionsDict config syntax


class _Config:
    """One level of a parsed spec: key=value entries and named sub-sections. A key not found here
    is looked up in the enclosing level, as lc0's OptionsDict::GetOrDefault does."""

    def __init__(self, path: str, parent: Optional["_Config"] = None):
        self.path = path
        self.parent = parent
        self.values: dict[str, Union[int, float, str, bool]] = {}
        self.subs: dict[str, _Config] = {}
        self.read: set[str] = set()
        self.used = False  # a section some manager reads (the manager's own, smooth's mle-legacy)

    def _lookup(self, key: str):
        cfg: Optional[_Config] = self
        while cfg is not None:
            if key in cfg.values:
                cfg.read.add(key)
                return cfg, cfg.values[key]
            cfg = cfg.parent
        return None, None

    def get_float(self, key: str, default: float, lo: Optional[float] = None, hi: Optional[float] = None,
                  lo_open: bool = False) -> float:
        cfg, v = self._lookup(key)
        if cfg is None:
            return float(default)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{cfg._name(key)} wants a number, got {v!r}")
        v = float(v)
        if not math.isfinite(v):
            raise ValueError(f"{cfg._name(key)} wants a finite number, got {v!r}")
        _check_range(cfg._name(key), v, lo, hi, lo_open)
        return v

    def get_int(self, key: str, default: int, lo: Optional[int] = None) -> int:
        cfg, v = self._lookup(key)
        if cfg is None:
            return int(default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
            raise ValueError(f"{cfg._name(key)} wants an integer, got {v!r}")
        v = int(v)
        _check_range(cfg._name(key), v, lo, None, False)
        return v

    def _name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def check_all_read(self) -> None:
        """Like lc0's OptionsDict::CheckAllOptionsRead, but an unknown empty section is an error too."""
        for key in self.values:
            if key not in self.read:
                raise ValueError(f"unknown parameter {self._name(key)!r}")
        for sub in self.subs.values():
            if not sub.used:
                raise ValueError(f"unknown section {sub.path!r}")
            sub.check_all_read()


def _check_range(name: str, v: float, lo, hi, lo_open: bool) -> None:
    bad = (lo is not None and (v <= lo if lo_open else v < lo)) or (hi is not None and v > hi)
    if bad:
        lo_s = "" if lo is None else (f"({lo}" if lo_open else f"[{lo}")
        hi_s = "" if hi is None else f"{hi}]"
        if lo is not None and hi is not None:
            want = f"in {lo_s}, {hi_s}"
        elif lo is not None:
            want = f"> {lo}" if lo_open else f">= {lo}"
        else:
            want = f"<= {hi}"
        raise ValueError(f"{name} must be {want}, got {v:g}")


class _SpecParser:
    """Tokenizer and recursive-descent parser of lc0's config strings (src/utils/optionsdict.cc:
    Lexer and Parser): a comma-separated list of `key=value` or `name` / `name(list)` entries;
    values are numbers (a '.', 'e' or 'E' makes a float), quoted strings, booleans (the words
    `lc0_rocm/values.py` reads as booleans, by its rules) or bare words."""

    _PUNCT = {",": "comma", "(": "lparen", ")": "rparen", "=": "equal"}

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.tok_start = 0
        self.kind = ""
        self.val: Union[int, float, str, None] = None
        self._next()

    def _error(self, what: str) -> ValueError:
        return ValueError(f"cannot parse {self.text!r} at offset {self.tok_start}: {what}")

    def _next(self) -> None:
        s, i = self.text, self.pos
        while i < len(s) and s[i].isspace():
            i += 1
        self.tok_start = i
        if i == len(s):
            self.kind, self.val, self.pos = "eof", None, i
            return
        c = s[i]
        if c in self._PUNCT:
            self.kind, self.val, self.pos = self._PUNCT[c], c, i + 1
            return
        if c in "0123456789-.":
            j = i
            while j < len(s) and s[j] in "+-0123456789.eExX":
                j += 1
            word = s[i:j]
            try:
                if any(ch in word for ch in ".eE"):
                    self.kind, self.val = "float", float(word)
                else:
                    self.kind, self.val = "int", int(word)
            except ValueError:
                raise self._error(f"bad number {word!r}") from None
            self.pos = j
            return
        if c in "'\"":
            j = s.find(c, i + 1)
            if j < 0:
                raise self._error("string not closed")
            self.kind, self.val, self.pos = "string", s[i + 1:j], j + 1
            return
        if c.isalnum() or c == "/":
            j = i
            while j < len(s) and (s[j].isalnum() or s[j] in "_-./"):
                j += 1
            self.kind, self.val, self.pos = "ident", s[i:j], j
            return
        raise self._error(f"unexpected character {c!r}")

    def parse(self) -> _Config:
        root = _Config("")
        self._list(root)
        if self.kind != "eof":
            raise self._error(f"unexpected {self.val!r}")
        return root

    def _list(self, cfg: _Config) -> None:
        while True:
            if self.kind in ("ident", "string"):
                name = str(self.val)
                self._next()
            elif self.kind == "lparen":
                raise self._error("a section needs a name")
            else:
                return
            if self.kind == "equal":
                self._next()
                if self.kind in ("int", "float", "string"):
                    cfg.values[name] = self.val
                elif self.kind == "ident":
                    word = str(self.val)  # a boolean by the one value parser's rules, else the word
                    cfg.values[name] = parse_bool(word) if word.lower() in TRUE + FALSE else word
                else:
                    raise self._error(f"{name}= needs a value")
                self._next()
            else:
                if name in cfg.subs:
                    raise self._error(f"{name!r} given twice")
                sub = cfg.subs[name] = _Config(f"{cfg.path}.{name}" if cfg.path else name, cfg)
                if self.kind == "lparen":
                    self._next()
                    self._list(sub)
                    if self.kind != "rparen":
                        raise self._error("')' expected")
                    self._next()
            if self.kind != "comma":
                return
            self._next()


def parse_time_manager_spec(spec: str) -> tuple[str, _Config]:
    """(manager name, its config section) of a TimeManager string; ValueError when malformed."""
    root = _SpecParser(spec).parse()
    if len(root.subs) != 1:
        got = ", ".join(root.subs) or "none"
        raise ValueError(f"give exactly one time manager ({', '.join(TIME_MANAGER_NAMES)}), "
                         f"got {len(root.subs)} ({got}) in {spec!r}")
    name, cfg = next(iter(root.subs.items()))
    if name not in TIME_MANAGER_NAMES:
        raise ValueError(f"unknown time manager {name!r} "
                         f"(known: {', '.join(TIME_MANAGER_NAMES)})")
    cfg.used = True
    return name, cfg


def engine_move_overhead_ms(move_overhead_ms: int) -> int:
    """What the engine's time managers keep back per move: MoveOverheadMs plus ENGINE_LATENCY_MS (the
    managers themselves are lc0's and take any overhead; lc0 equivalence tests pass MoveOverheadMs)."""
    return int(move_overhead_ms) + ENGINE_LATENCY_MS


def make_time_manager(spec: str = DEFAULT_TIME_MANAGER, move_overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS,
                      slowmover: Optional[float] = None) -> "TimeManagerBase":
    """The time manager a TimeManager option value names, configured (lc0's factory.cc:
    MakeTimeManager). Raises ValueError (one line) for a malformed string, an unknown manager,
    an unknown parameter or a value out of range.

    `slowmover` is lc0's separate Slowmover option: when given and not 1.0 it sets the legacy
    manager's slowmover, and is refused together with a TimeManager other than plain `legacy`."""
    name, cfg = parse_time_manager_spec(spec)
    if slowmover is not None and float(slowmover) != 1.0:
        if spec.strip() != DEFAULT_TIME_MANAGER:
            raise ValueError("Slowmover can only be set with TimeManager 'legacy' "
                             "(give slowmover inside legacy(...) instead)")
        cfg.values["slowmover"] = float(slowmover)
    cls = {"legacy": LegacyTimeManager, "smooth": SmoothTimeManager,
           "alphazero": AlphazeroTimeManager, "simple": SimpleTimeManager}[name]
    manager = cls.from_config(cfg, move_overhead_ms)
    cfg.check_all_read()
    return manager


# --------------------------------------------------------------------------------------------
# The managers


class TimeManagerBase:
    """What every manager shares: the non-clock limits (lc0's common.cc, PopulateCommonUciStoppers)
    and the per-game reset. Subclasses give `_clock(go, ply, black, tree_nodes)`."""

    name = ""

    def __init__(self, move_overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS):
        self.move_overhead_ms = move_overhead_ms

    def new_game(self) -> None:
        """Forget everything learned in the game (lc0 builds a new manager for each game)."""

    def limits(self, go: GoParams, ply: int, black_to_move: bool, tree_nodes: int = 0) -> SearchLimits:
        """The limits of the search this `go` starts. `ply`: the game ply (see `lc0_game_ply` for the
        one lc0 uses); `tree_nodes`: visits the root already has from earlier searches (only the
        smooth manager uses it)."""
        infinite = go.infinite or go.ponder or go.mate is not None
        lim = SearchLimits(infinite=infinite, hold_bestmove=go.infinite or go.ponder, mate=go.mate)
        if go.nodes is not None:
            # `go nodes 0` (or below) still evaluates the root and answers, as lc0 does: one visit
            lim.nodes = max(1, min(int(go.nodes), NODE_LIMIT_MAX))
        if go.depth is not None:
            lim.depth = int(go.depth)
        if go.movetime is not None and not infinite:
            lim.deadline_ms = float(go.movetime - self.move_overhead_ms)
        if not (go.infinite or go.ponder) and _side_clock(go, black_to_move)[0] is not None:
            self._clock(go, ply, black_to_move, int(tree_nodes), lim)
            hard = lim.clock_ms + lim.clock_extra_ms
            if lim.deadline_ms is None or hard < lim.deadline_ms:
                lim.deadline_ms = hard
                lim.from_clock = True
        return lim

    def _clock(self, go: GoParams, ply: int, black: bool, tree_nodes: int, lim: SearchLimits) -> None:
        raise NotImplementedError

    def search_done(self, limits: SearchLimits, elapsed_ms: float, total_nodes: Optional[int] = None) -> None:
        """The search that ran under `limits` ended after `elapsed_ms` (since it started) with
        `total_nodes` visits at the root (smooth only; default: the last count it saw)."""


class LegacyTimeManager(TimeManagerBase):
    """lc0's default manager (src/search/classic/stoppers/legacy.cc: LegacyTimeManager::GetStopper),
    with its per-game state: the first-move flag and the bank of unused time."""

    name = "legacy"

    def __init__(self, move_overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS, *, slowmover: float = 1.0,
                 midpoint_move: float = 51.5, steepness: float = 7.0, immediate_use: float = 1.0,
                 first_move_bonus: float = 1.8, book_ply_bonus: float = 0.25):
        super().__init__(move_overhead_ms)
        self.slowmover = slowmover
        self.midpoint_move = midpoint_move
        self.steepness = steepness
        self.spend_saved_time = immediate_use
        self.first_move_bonus = first_move_bonus
        self.book_ply_bonus = book_ply_bonus
        self.new_game()

    @classmethod
    def from_config(cls, cfg: _Config, move_overhead_ms: int) -> "LegacyTimeManager":
        return cls(move_overhead_ms,
                   slowmover=cfg.get_float("slowmover", 1.0, lo=0.0),
                   midpoint_move=cfg.get_float("midpoint-move", 51.5, lo=0.0, lo_open=True),
                   steepness=cfg.get_float("steepness", 7.0, lo=0.0, lo_open=True),
                   immediate_use=cfg.get_float("immediate-use", 1.0, lo=0.0),
                   first_move_bonus=cfg.get_float("first-move-bonus", 1.8),
                   book_ply_bonus=cfg.get_float("book-ply-bonus", 0.25))

    def new_game(self) -> None:
        self.first_move_of_game = True
        self.time_spared_ms = 0  # an int64 in lc0; may go negative (searches overrun their budget)

    def _clock(self, go: GoParams, ply: int, black: bool, tree_nodes: int, lim: SearchLimits) -> None:
        time, increment = _side_clock(go, black)
        movestogo = _cap_by_movestogo(estimated_moves_to_go(ply, self.midpoint_move, self.steepness), go)
        total = max(0.0, time + increment * (movestogo - 1) - self.move_overhead_ms)
        squander = 0
        if self.time_spared_ms > 0:
            total = max(0.0, total - self.time_spared_ms)
            squander = to_int64(self.time_spared_ms * self.spend_saved_time)
            self.time_spared_ms -= squander
        this_move = total / movestogo
        if self.first_move_of_game:
            this_move *= 1.0 + self.first_move_bonus + self.book_ply_bonus * min(12, ply)
            self.first_move_of_game = False
        # slowmover only stretches budgets that smart pruning could still shorten
        if self.slowmover < 1.0 or this_move * self.slowmover > SMART_PRUNING_TOLERANCE_MS:
            self.time_spared_ms = to_int64(self.time_spared_ms - this_move * (self.slowmover - 1))
            this_move *= self.slowmover
        this_move += squander
        lim.clock_ms = float(min(to_int64(this_move), time - self.move_overhead_ms))

    def search_done(self, limits: SearchLimits, elapsed_ms: float, total_nodes: Optional[int] = None) -> None:
        """Bank the unused part of the clock budget for the next move (lc0's LegacyStopper::
        OnSearchDone; negative when the search overran it)."""
        if limits.clock_ms is not None:
            self.time_spared_ms += to_int64(limits.clock_ms) - to_int64(elapsed_ms)


TimeManager = LegacyTimeManager  # the name lc0_rocm.uci and older code use


class AlphazeroTimeManager(TimeManagerBase):
    """A fixed share of the remaining time (src/search/classic/stoppers/alphazero.cc)."""

    name = "alphazero"

    def __init__(self, move_overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS, *, alphazero_time_pct: float = 12.0):
        super().__init__(move_overhead_ms)
        self.alphazero_time_pct = alphazero_time_pct

    @classmethod
    def from_config(cls, cfg: _Config, move_overhead_ms: int) -> "AlphazeroTimeManager":
        return cls(move_overhead_ms, alphazero_time_pct=cfg.get_float("alphazero-time-pct", 12.0, lo=0.0, hi=100.0))

    def _clock(self, go: GoParams, ply: int, black: bool, tree_nodes: int, lim: SearchLimits) -> None:
        time, _ = _side_clock(go, black)
        lim.clock_ms = float(to_int64((time - self.move_overhead_ms) * (self.alphazero_time_pct / 100.0)))


class SimpleTimeManager(TimeManagerBase):
    """A share of the remaining time growing with the ply and the increment/time ratio, plus the
    previous move's unused budget (src/search/classic/stoppers/simple.cc: SimpleTimeManager)."""

    name = "simple"

    def __init__(self, move_overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS, *, base_pct: float = 1.4,
                 ply_pct: float = 0.049, time_factor: float = 1.5, opening_bonus_pct: float = 0.0):
        super().__init__(move_overhead_ms)
        self.base_pct = base_pct
        self.ply_pct = ply_pct
        self.time_factor = time_factor
        self.opening_bonus_pct = opening_bonus_pct
        self.new_game()

    @classmethod
    def from_config(cls, cfg: _Config, move_overhead_ms: int) -> "SimpleTimeManager":
        return cls(move_overhead_ms,
                   base_pct=cfg.get_float("base-pct", 1.4, lo=0.0, hi=100.0, lo_open=True),
                   ply_pct=cfg.get_float("ply-pct", 0.049, lo=0.0, hi=1.0),
                   time_factor=cfg.get_float("time-factor", 1.5, lo=0.0, hi=100.0),
                   opening_bonus_pct=cfg.get_float("opening-bonus-pct", 0.0, lo=0.0, hi=1000.0))

    def new_game(self) -> None:
        self.prev_time_budgeted = 0.0
        self.prev_time_available = 0.0
        self.bonus_applied = False

    def _clock(self, go: GoParams, ply: int, black: bool, tree_nodes: int, lim: SearchLimits) -> None:
        time, increment = _side_clock(go, black)
        available = float(time) - float(self.move_overhead_ms)
        ratio = increment / time if time > 0 else 0.0
        pct = (self.base_pct + ply * self.ply_pct) * 0.01 + ratio * self.time_factor
        budget = available * pct
        if not self.bonus_applied:
            budget += budget * self.opening_bonus_pct * 0.01
            self.bonus_applied = True
        if self.prev_time_budgeted > 0.0:
            # what the previous move did not use: its budget less the clock it actually took
            saved = self.prev_time_budgeted - (self.prev_time_available - (available - increment))
            budget += max(saved, 0.0)
        budget = min(budget, available)
        self.prev_time_budgeted = budget
        self.prev_time_available = available
        lim.clock_ms = float(to_int64(budget))


# --------------------------------------------------------------------------------------------
# smooth


def _exponential_decay(start: float, target: float, half_step: float, amount: float) -> float:
    """Move `start` toward `target` by one half of the gap per `half_step` of `amount`
    (smooth.cc: ExponentialDecay)."""
    return target - (target - start) * math.pow(0.5, amount / half_step)


def _linear_interpolate(a: float, b: float, theta: float) -> float:
    if theta <= 0:
        return a
    if theta >= 1:
        return b
    return a + (b - a) * theta


def _linear_decay(current: float, target: float, since_reliable_ms: float, since_update_ms: float,
                  window_ms: float) -> float:
    """Smoothed nps (smooth.cc: LinearDecay): a rise is taken at once; a fall is reached linearly
    over `window_ms` counted from the last reliable measurement."""
    if current <= target:
        return target
    if since_update_ms <= 0:
        return current
    if since_reliable_ms >= window_ms:
        return target
    since_update_ms = min(since_update_ms, since_reliable_ms)
    prev_frac = (since_reliable_ms - since_update_ms) / window_ms
    reliable_value = (prev_frac * target - current) / (prev_frac - 1)
    return _linear_interpolate(reliable_value, target, since_reliable_ms / window_ms)


class SmoothTimeManager(TimeManagerBase):
    """lc0's smooth manager (src/search/classic/stoppers/smooth.cc: SmoothTimeManager).

    Per move it plans in nodes: the remaining time (less the piggy bank) at the estimated nps,
    spread over the expected remaining moves (mle-legacy: midpoint 45.2, steepness 5.93), raised
    for the expected tree reuse, less the visits the tree already has; a share of that goes to the
    piggy bank, and the rest is divided by the share of its budget a search usually uses (smart
    pruning stops early). A search may add most of the piggy bank when its best move may be
    overtaken, when the search asks for more time, or in its first second. After each move it
    learns nps, tree reuse and time use."""

    name = "smooth"
    # (option name, attribute, default, kind, lower bound, lower bound excluded, upper bound excluded).
    # lc0 checks none of these ranges; ours only refuse values that would divide by zero or let an
    # estimate run away (a tree reuse of 1 or more, a time use of 0).
    _PARAMS = (
        ("init-tree-reuse", "init_tree_reuse", 0.52, "f", None, False, 1.0),
        ("max-tree-reuse", "max_tree_reuse", 0.73, "f", None, False, 1.0),
        ("tree-reuse-update-rate", "tree_reuse_update_rate", 3.39, "f", 0.0, True, None),
        ("nps-update-period", "nps_update_period", 20.0, "f", 0.0, False, None),
        ("init-timeuse", "init_timeuse", 0.7, "f", 0.0, True, None),
        ("min-timeuse", "min_timeuse", 0.34, "f", 0.0, True, None),
        ("timeuse-update-rate", "timeuse_update_rate", 5.51, "f", 0.0, True, None),
        ("max-move-budget", "max_move_budget", 0.42, "f", 0.0, False, None),
        ("init-piggybank", "init_piggybank", 0.09, "f", 0.0, False, None),
        ("per-move-piggybank", "per_move_piggybank", 0.12, "f", 0.0, False, None),
        ("max-piggybank-use", "max_piggybank_use", 0.94, "f", 0.0, False, None),
        ("max-piggybank-moves", "max_piggybank_moves", 36.5, "f", 0.0, False, None),
        ("trend-nps-update-period-ms", "trend_nps_update_period_ms", 3000, "i", 0, False, None),
        ("bestmove-optimism", "bestmove_optimism", 0.2, "f", None, False, None),
        ("overtaker-optimism", "overtaker_optimism", 4.0, "f", None, False, None),
        ("force-piggybank-ms", "force_piggybank_ms", 1000, "i", 0, False, None),
    )

    def __init__(self, move_overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS, *, midpoint: float = 45.2,
                 steepness: float = 5.93, **params: float):
        super().__init__(move_overhead_ms)
        known = {p[1]: p[2] for p in self._PARAMS}
        unknown = set(params) - set(known)
        if unknown:
            raise TypeError(f"unknown smooth parameter(s): {', '.join(sorted(unknown))}")
        for attr, default in known.items():
            setattr(self, attr, params.get(attr, default))
        self.midpoint = midpoint
        self.steepness = steepness
        self.lock = threading.RLock()  # the UCI thread plans, the search thread reports (lc0: a mutex)
        self.game = 0
        self.new_game()

    @classmethod
    def from_config(cls, cfg: _Config, move_overhead_ms: int) -> "SmoothTimeManager":
        values = {}
        for key, attr, default, kind, lo, lo_open, below in cls._PARAMS:
            if kind == "i":
                values[attr] = cfg.get_int(key, default, lo=lo)
                continue
            v = values[attr] = cfg.get_float(key, default, lo=lo, lo_open=lo_open)
            if below is not None and v >= below:
                raise ValueError(f"{cfg._name(key)} must be below {below:g}, got {v:g}")
        mle = cfg.subs.get("mle-legacy")
        if mle is not None:
            mle.used = True
        src = mle if mle is not None else cfg
        midpoint = src.get_float("midpoint", 45.2, lo=0.0, lo_open=True)
        steepness = src.get_float("steepness", 5.93, lo=0.0, lo_open=True)
        return cls(move_overhead_ms, midpoint=midpoint, steepness=steepness, **values)

    def new_game(self) -> None:
        with self.lock:
            self._reset()

    def _reset(self) -> None:
        self.game += 1  # stoppers of an earlier game no longer report (lc0 drops the whole manager)
        self.tree_reuse = self.init_tree_reuse
        self.nps = 20000.0
        self.nps_is_reliable = False
        self.timeuse = self.init_timeuse
        self.avg_ms_per_move = 0.0
        self.move_allocated_time_ms = 0.0
        self.last_move_final_nodes = 0
        self.last_time = 0
        self.piggybank_time = 0  # an int64 in lc0
        self.is_first_move = True

    def _clock(self, go: GoParams, ply: int, black: bool, tree_nodes: int, lim: SearchLimits) -> None:
        with self.lock:
            self._plan(go, ply, black, tree_nodes, lim)

    def _plan(self, go: GoParams, ply: int, black: bool, tree_nodes: int, lim: SearchLimits) -> None:
        time, increment = _side_clock(go, black)
        overhead = self.move_overhead_ms
        if self.is_first_move:
            self.piggybank_time = to_int64(time * self.init_piggybank)
            self.is_first_move = False
        if self.last_move_final_nodes and self.last_time and self.avg_ms_per_move >= 0.0:
            self._update_tree_reuse(tree_nodes)
        self.last_time = 0
        moves = _cap_by_movestogo(estimated_moves_to_go(ply, self.midpoint, self.steepness), go)
        max_piggybank = self.max_piggybank_moves * max(0.0, time + increment * (moves - 1) - overhead) / moves
        if self.piggybank_time > max_piggybank:
            self.piggybank_time = to_int64(max_piggybank)
        remaining_ms = max(0.0, time - self.piggybank_time + increment * (moves - 1) - overhead)
        nps = self.nps if self.nps > 0 else 1e-9
        game_nodes = remaining_ms * nps / 1000.0
        avg_nodes = game_nodes / moves
        self.avg_ms_per_move = remaining_ms / moves
        nodes_with_reuse = avg_nodes / (1.0 - self.tree_reuse)
        new_nodes = max(0.0, nodes_with_reuse - tree_nodes)
        brutto_ms = new_nodes / nps * 1000.0
        to_piggybank = min(max_piggybank - self.piggybank_time, brutto_ms * self.per_move_piggybank)
        netto_ms = brutto_ms - to_piggybank
        allowed_piggybank = to_int64(self.piggybank_time * self.max_piggybank_use)
        allocated = netto_ms / self.timeuse
        if allocated > time * self.max_move_budget:
            allocated = time * self.max_move_budget
        if allocated > time - overhead:
            allocated = float(max(0, time - overhead))
        if allowed_piggybank > time - overhead - allocated:
            allowed_piggybank = to_int64(time - overhead - allocated)
        self.move_allocated_time_ms = allocated
        self.piggybank_time = to_int64(self.piggybank_time + to_piggybank)
        stopper = SmoothStopper(self, to_int64(allocated), allowed_piggybank)
        lim.clock_ms = float(stopper.deadline_ms)
        lim.clock_extra_ms = float(max(0, allowed_piggybank))
        lim.clock_stopper = stopper

    def _update_tree_reuse(self, new_move_nodes: int) -> None:
        frac = 0.0 if self.avg_ms_per_move <= 0.0 else self.last_time / self.avg_ms_per_move
        this_reuse = new_move_nodes / self.last_move_final_nodes
        self.tree_reuse = min(self.max_tree_reuse, _exponential_decay(
            self.tree_reuse, this_reuse, self.tree_reuse_update_rate, frac))

    def update_nps(self, since_first_batch_ms: int, playouts: int) -> float:
        """Fold one measurement into the nps estimate (smooth.cc: SmoothTimeManager::UpdateNps)."""
        with self.lock:
            return self._update_nps(since_first_batch_ms, playouts)

    def _update_nps(self, since_first_batch_ms: int, playouts: int) -> float:
        if since_first_batch_ms <= 0:
            return self.nps
        measured = 1000.0 * playouts / since_first_batch_ms
        if self.nps_is_reliable and since_first_batch_ms > self.last_time:
            self.nps = _linear_decay(self.nps, measured, since_first_batch_ms,
                                     since_first_batch_ms - self.last_time, self.nps_update_period * 1000.0)
        else:
            self.nps = measured
        self.last_time = since_first_batch_ms
        return self.nps

    def update_end_of_move(self, move_time_ms: int, used_piggybank: bool, deadline_ms: int,
                           total_nodes: int) -> None:
        """Learn from the finished move (smooth.cc: SmoothTimeManager::UpdateEndOfMoveStats)."""
        with self.lock:
            self._learn(move_time_ms, used_piggybank, deadline_ms, total_nodes)

    def _learn(self, move_time_ms: int, used_piggybank: bool, deadline_ms: int, total_nodes: int) -> None:
        self.nps_is_reliable = True
        frac = 0.0 if self.avg_ms_per_move <= 0.0 else move_time_ms / self.avg_ms_per_move
        use = 1.0 if self.move_allocated_time_ms <= 0.0 else move_time_ms / self.move_allocated_time_ms
        if used_piggybank:
            self.piggybank_time -= max(0, move_time_ms - deadline_ms)
        self.timeuse = max(self.min_timeuse, _exponential_decay(
            self.timeuse, 1.0 if used_piggybank else use, self.timeuse_update_rate, frac))
        self.last_move_final_nodes = total_nodes

    def search_done(self, limits: SearchLimits, elapsed_ms: float, total_nodes: Optional[int] = None) -> None:
        st = limits.clock_stopper
        if st is not None and st.manager is self and st.game == self.game:
            st.done(elapsed_ms, total_nodes)
