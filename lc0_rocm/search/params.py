"""Search parameters: lc0's search options (`src/search/classic/params.cc`), their defaults read from
engine_options' table (the one home of lc0's defaults).

`SearchParams` is what the UCI layer fills from its options; `packed()` lays the numbers out in
one float64 array for the compiled worker (indices `P_*`, search/core/packed_params.py). `suggested_minibatch`
is lc0's choice of the batch size (its other rule around a gathering, CalculateCollisionsLeft, is
compiled: search/core/cycle.py's `collision_budget`). `contempt_value` and
`wdl_rescale_params` turn lc0's contempt options into the (ratio, diff) of its WDL rescaling
(`src/search/classic/params.cc: GetContempt, AccurateWDLRescaleParams, SimplifiedWDLRescaleParams`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..encoding.planes import FILL_CODES
from ..engine_options import Options
from ..engine_options import default as _d
from .core.packed_params import (P_CACHE_HISTORY, P_CONTEMPT_BLACK, P_CPUCT, P_CPUCT_BASE, P_CPUCT_FACTOR, P_CV_END,
                                 P_CV_MAX, P_CV_POWER, P_CV_START, P_DRAW_SCORE, P_EXACT_LIMIT, P_FILL, P_FPU,
                                 P_FPU_ABSOLUTE, P_FPU_ABSOLUTE_ROOT, P_FPU_ROOT, P_INPUT_FORMAT, P_ML_CONSTANT,
                                 P_ML_MAX, P_ML_QUADRATIC, P_ML_SCALED, P_ML_SLOPE, P_ML_THRESHOLD, P_MLH,
                                 P_OUT_OF_ORDER, P_SIZE, P_STICKY, P_TB_PIECES, P_TEMPERATURE, P_TWO_FOLD, P_WDL_DIFF,
                                 P_WDL_MAX_S, P_WDL_RATIO)
from .limits import GoParams

GPU_MINIBATCH = 256  # lc0's default MinibatchSize for a GPU backend (its backend's preferred batch)
CPU_MINIBATCH = 16


@dataclass
class SearchParams:
    """Search constants, named as lc0's UCI options, their defaults read from the one table of
    them (engine_options)."""

    cpuct: float = _d("CPuct")
    cpuct_base: float = _d("CPuctBase")
    cpuct_factor: float = _d("CPuctFactor")
    fpu_value: float = _d("FpuValue")  # FpuStrategy "reduction"
    fpu_absolute: bool = False
    fpu_value_at_root: float | None = None  # None: FpuStrategyAtRoot "same"
    fpu_absolute_at_root: bool | None = None
    policy_temperature: float = _d("PolicyTemperature")
    minibatch_size: int = _d("MinibatchSize")  # 0: the backend's suggestion (see `suggested_minibatch`)
    max_collision_visits: int = _d("MaxCollisionVisits")  # lc0's MaxCollisionVisits and its scaling with the root's visits
    max_collision_visits_scaling_start: int = _d("MaxCollisionVisitsScalingStart")
    max_collision_visits_scaling_end: int = _d("MaxCollisionVisitsScalingEnd")
    max_collision_visits_scaling_power: float = _d("MaxCollisionVisitsScalingPower")
    exact_node_limit: bool = True  # never gather past `go nodes` (lc0 may overshoot by up to a batch)
    smart_pruning_factor: float = _d("SmartPruningFactor")
    two_fold_draws: bool = _d("TwoFoldDraws")
    sticky_endgames: bool = _d("StickyEndgames")
    pipeline: bool = True  # gather the next batch while the backend evaluates this one
    threads: int = _d("Threads")  # lc0's Threads: search threads (0: automatic, see search_threads)
    task_workers: int = _d("TaskWorkers")  # helpers per search thread (-1: automatic, see task_workers)
    multipv: int = _d("MultiPV")
    moves_left_max_effect: float = _d("MovesLeftMaxEffect")
    moves_left_threshold: float = _d("MovesLeftThreshold")
    moves_left_slope: float = _d("MovesLeftSlope")
    moves_left_constant_factor: float = _d("MovesLeftConstantFactor")
    moves_left_scaled_factor: float = _d("MovesLeftScaledFactor")
    moves_left_quadratic_factor: float = _d("MovesLeftQuadraticFactor")
    max_out_of_order_factor: float = _d("MaxOutOfOrderEvalsFactor")
    out_of_order_eval: bool = _d("OutOfOrderEval")
    smart_pruning_minimum_batches: int = _d("SmartPruningMinimumBatches")
    per_pv_counters: bool = _d("PerPVCounters")
    draw_score: float = _d("DrawScore")  # DrawScore: a draw's value for White (Black gets its negation)
    wdl_rescale_ratio: float = 1.0  # from `wdl_rescale_params`
    wdl_rescale_diff: float = 0.0
    wdl_max_s: float = _d("WDLMaxS")
    wdl_eval_objectivity: float = _d("WDLEvalObjectivity")
    contempt_mode: str = "none"  # the side contempt favours in this search: none, white, black
    syzygy_fast_play: bool = _d("SyzygyFastPlay")
    nps_limit: float = _d("NodesPerSecondLimit")
    ram_limit_mb: int = _d("RamLimitMb")
    solid_tree_threshold: int = _d("SolidTreeThreshold")

    @property
    def rescales_nn_values(self) -> bool:
        """Whether network values go through the WDL rescaling (lc0's condition in
        `SearchWorker::FetchSingleNodeResult`)."""
        return self.wdl_rescale_ratio != 1.0 or (self.wdl_rescale_diff != 0.0 and self.contempt_mode != "none")

    def packed(self, mlh: bool, input_format: int, fill: str, cache_history_length: int) -> np.ndarray:
        p = np.zeros(P_SIZE, dtype=np.float64)
        p[P_CPUCT], p[P_CPUCT_BASE], p[P_CPUCT_FACTOR] = self.cpuct, self.cpuct_base, self.cpuct_factor
        p[P_FPU], p[P_FPU_ABSOLUTE] = self.fpu_value, float(self.fpu_absolute)
        same = self.fpu_value_at_root is None
        p[P_FPU_ROOT] = self.fpu_value if same else self.fpu_value_at_root
        p[P_FPU_ABSOLUTE_ROOT] = float(self.fpu_absolute if self.fpu_absolute_at_root is None
                                       else self.fpu_absolute_at_root)
        p[P_TWO_FOLD], p[P_STICKY], p[P_MLH] = float(self.two_fold_draws), float(self.sticky_endgames), float(mlh)
        p[P_ML_MAX], p[P_ML_THRESHOLD], p[P_ML_SLOPE] = (self.moves_left_max_effect, self.moves_left_threshold,
                                                         self.moves_left_slope)
        p[P_ML_CONSTANT], p[P_ML_SCALED], p[P_ML_QUADRATIC] = (self.moves_left_constant_factor,
                                                               self.moves_left_scaled_factor,
                                                               self.moves_left_quadratic_factor)
        p[P_TEMPERATURE] = self.policy_temperature
        p[P_INPUT_FORMAT], p[P_FILL], p[P_CACHE_HISTORY] = input_format, FILL_CODES[fill], cache_history_length
        p[P_EXACT_LIMIT] = float(self.exact_node_limit)
        p[P_DRAW_SCORE] = self.draw_score
        if self.rescales_nn_values:
            p[P_WDL_RATIO] = self.wdl_rescale_ratio
            p[P_WDL_DIFF] = 0.0 if self.contempt_mode == "none" else self.wdl_rescale_diff
        else:
            p[P_WDL_RATIO], p[P_WDL_DIFF] = 1.0, 0.0
        p[P_WDL_MAX_S] = self.wdl_max_s
        p[P_CONTEMPT_BLACK] = 1.0 if self.contempt_mode == "black" else 0.0
        p[P_TB_PIECES] = 0.0  # set by the search when tablebases are open
        p[P_OUT_OF_ORDER] = float(self.out_of_order_eval)
        p[P_CV_MAX], p[P_CV_START] = self.max_collision_visits, self.max_collision_visits_scaling_start
        p[P_CV_END], p[P_CV_POWER] = self.max_collision_visits_scaling_end, self.max_collision_visits_scaling_power
        return p


AUTO_THREADS = 2  # batches in flight of the one search thread (Threads 0 where it stays one thread)
AUTO_LANES = 3  # lc0's Threads 0 on a host with more than two cores: search threads (measured: docs/perf.md)
# ... with a backend whose kernel runs on the search threads themselves (random, trivial): the search
# alone on the 32-core H200 host, 2026-11-28 (docs/perf.md): 196k / 237k / 285k / 283k / 259k nps at
# 1 / 2 / 4 / 8 / 12 threads, and beside lc0 in one call 0.95x at 4 against 0.86x at 8 (past four the
# threads waited on the tree's lock); with picks that take no lock (16-core host), four threads with a
# task worker each 486-490k, eight without 489k: four keep half the cores for the same nps
AUTO_KERNEL_LANES = 4


def search_threads(params: SearchParams, backend, cores: Optional[int] = None) -> int:
    """Search threads sharing the tree (lc0's Threads). Threads 1 is one thread with one batch in
    flight (lc0's tree, visit for visit); N > 1 is N threads, each with a batch of its own. Threads 0
    (automatic) is one thread with two batches in flight with a backend that computes on the host (the
    cpu backend) or a GPU on a host of two cores; with one that evaluates inside each search thread
    (`concurrent`: random, trivial, compiled) one thread a core on a host of up to two cores (on the
    2-core VM two threads kept 1.07x lc0's random against one thread's 0.81x, medians of four calls
    each: docs/perf.md) and AUTO_KERNEL_LANES on a bigger one; else AUTO_LANES threads (at least two a
    GPU on a backend with several: each thread owns a runner, so an even spread keeps every card fed),
    leaving a core free."""
    if not params.pipeline:
        return 1
    if params.threads >= 1:
        return params.threads
    cores = cores or os.cpu_count() or 1
    concurrent = getattr(backend, "concurrent", False)
    if not (backend.is_async or concurrent):
        return 1
    if cores <= 2:
        return cores if concurrent else 1
    if concurrent:
        return min(AUTO_KERNEL_LANES, cores - 1)
    gpus = int(getattr(backend, "device_count", 1))
    return max(1, min(max(AUTO_LANES, 2 * gpus), cores - 1))


# TaskWorkers -1: helpers a search thread at most. The search alone on the 16-core H200 host, 2026-11-28
# (docs/perf.md), four threads: 311k nps without helpers, 322k with one each (medians of eight runs in two
# calls), no better with two; one thread: 159-217k alone, 238-246k with three helpers, no better with
# five or seven (the thread's own pick stays its own)
AUTO_TASK_WORKERS = 1


def task_workers(params: SearchParams, backend, lanes: int, cores: Optional[int] = None) -> int:
    """Helper threads per search thread (lc0's TaskWorkers; search/core/team.py): they take its batch's
    row-wise work while it picks. -1 (automatic): with a backend whose evaluation runs on the search
    threads themselves (`concurrent`: random, trivial), AUTO_TASK_WORKERS each where the host has cores
    to spare beside the search threads and one for the rest of the process; else none."""
    if params.task_workers >= 0:
        return params.task_workers
    cores = cores or os.cpu_count() or 1
    if not getattr(backend, "concurrent", False):
        return 0
    return max(0, min(AUTO_TASK_WORKERS, (cores - 1 - lanes) // max(1, lanes)))


def batches_in_flight(params: SearchParams) -> int:
    """Batches the one search thread keeps in flight: 1 without pipelining (Threads 1), else 2."""
    if not params.pipeline or params.threads == 1:
        return 1
    return AUTO_THREADS


def suggested_minibatch(backend) -> int:
    """Batch size used when MinibatchSize is 0: lc0's choice per backend kind (16 on the CPU, the
    backend's preferred batch or 256 on a GPU), capped by max_batch."""
    preferred = getattr(backend, "preferred_batch", None)
    if not preferred:
        preferred = CPU_MINIBATCH if getattr(backend, "name", "") == "cpu" else GPU_MINIBATCH
    return max(1, min(int(preferred), backend.max_batch))


def contempt_value(opponent: str, contempt: str, rating_adv: float) -> float:
    """lc0's contempt in Elo: UCI_RatingAdv, overridden by a bare number in Contempt, or by the
    value of the first `name=value` entry whose name occurs in UCI_Opponent (case-insensitive).
    ValueError for an entry that is not a number or has more than one `=`."""
    value = float(rating_adv)
    for entry in (contempt or "").split(","):
        if not entry:
            continue
        parts = entry.split("=")
        if len(parts) == 1:
            try:
                value = float(parts[0])
            except ValueError:
                raise ValueError(f"invalid default contempt: {entry}") from None
        elif len(parts) == 2:
            if parts[0].lower() in (opponent or "").lower():
                try:
                    value = float(parts[1])
                except ValueError:
                    raise ValueError(f"invalid contempt entry: {entry}") from None
                break
        else:
            raise ValueError(f"invalid contempt entry: {entry}")
    return value


def _f(x) -> np.float32:
    return np.float32(x)


def wdl_rescale_params(contempt: float, draw_rate_target: float = 0.0, draw_rate_reference: float = 0.5,
                       book_exit_bias: float = 0.65, contempt_max: float = 420.0, attenuation: float = 1.0,
                       calibration_elo: float = 0.0) -> tuple[float, float]:
    """(ratio, diff) of lc0's WDL rescaling, in float32 as lc0 computes them: the accurate model
    (draw rate target and book-exit bias) when WDLCalibrationElo is 0, else the simplified one
    (draw rate and accuracy from the Elo of both sides)."""
    c = _f(min(max(contempt, -contempt_max), contempt_max))
    ref = _f(draw_rate_reference)
    scale_reference = _f(1) / _f(math.log(_f((_f(1) + ref) / (_f(1) - ref))))
    ln10_200 = _f(math.log(10)) / _f(200)
    if calibration_elo == 0:
        target = _f(draw_rate_target)
        if 0 < target < 0.001:
            target = _f(0.001)
        scale_target = scale_reference if target == 0 else _f(1) / _f(math.log(_f((_f(1) + target) / (_f(1) - target))))
        ratio = scale_target / scale_reference
        bias = _f(book_exit_bias)
        den = (_f(1) / _f(math.cosh(_f(0.5) * (_f(1) - bias) / scale_target)) ** 2
               + _f(1) / _f(math.cosh(_f(0.5) * (_f(1) + bias) / scale_target)) ** 2)
        diff = scale_target / (scale_reference * scale_reference) / _f(den) * ln10_200 * c * _f(attenuation)
        return float(ratio), float(diff)
    scale_zero, elo_slope, offset = _f(15), _f(425), _f(6.75)

    def pair_elo(elo):
        sharp, mid = _f(250), _f(2737)
        return _f(elo + _f(0.5) * sharp * _f(math.log(_f(1) + _f(math.exp((mid - elo) / sharp)))))

    elo_active = _f(calibration_elo)
    elo_opp = _f(elo_active - c)
    elo_active, elo_opp = pair_elo(elo_active), pair_elo(elo_opp)
    scale_active = _f(1) / (_f(1) / scale_zero + _f(math.exp(elo_active / elo_slope - offset)))
    scale_opp = _f(1) / (_f(1) / scale_zero + _f(math.exp(elo_opp / elo_slope - offset)))
    scale_target = _f(math.sqrt((scale_active * scale_active + scale_opp * scale_opp) / _f(2)))
    ratio = scale_target / scale_reference
    mu_active = -ln10_200 * scale_zero * elo_slope * _f(math.log(_f(1) + _f(math.exp(-elo_active / elo_slope + offset)) / scale_zero))
    mu_opp = -ln10_200 * scale_zero * elo_slope * _f(math.log(_f(1) + _f(math.exp(-elo_opp / elo_slope + offset)) / scale_zero))
    diff = _f(1) / (scale_reference * scale_reference) * (mu_active - mu_opp) * _f(attenuation)
    return float(ratio), float(diff)


def params_from_options(options: Options, go: Optional[GoParams] = None, black_to_move: bool = False) -> SearchParams:
    """SearchParams from the engine's options (lc0's `SearchParams` constructor reads its OptionsDict):
    lc0's BaseSearchParams, the contempt (WDL rescaling) and the side it favours in this `go`."""
    go = go if go is not None else GoParams()
    o = options.__getitem__
    contempt = contempt_value(o("UCI_Opponent"), o("Contempt"), o("UCI_RatingAdv"))
    ratio, diff = wdl_rescale_params(
        contempt, draw_rate_target=o("WDLDrawRateTarget"), draw_rate_reference=o("WDLDrawRateReference"),
        book_exit_bias=o("WDLBookExitBias"), contempt_max=o("ContemptMaxValue"),
        attenuation=o("WDLContemptAttenuation"), calibration_elo=o("WDLCalibrationElo"))
    at_root = o("FpuStrategyAtRoot")
    return SearchParams(
        cpuct=o("CPuct"), cpuct_base=o("CPuctBase"), cpuct_factor=o("CPuctFactor"),
        fpu_value=o("FpuValue"), fpu_absolute=o("FpuStrategy") == "absolute",
        fpu_value_at_root=None if at_root == "same" else o("FpuValueAtRoot"),
        fpu_absolute_at_root=None if at_root == "same" else at_root == "absolute",
        policy_temperature=o("PolicyTemperature"), minibatch_size=o("MinibatchSize"),
        max_collision_visits=o("MaxCollisionVisits"),
        max_collision_visits_scaling_start=o("MaxCollisionVisitsScalingStart"),
        max_collision_visits_scaling_end=o("MaxCollisionVisitsScalingEnd"),
        max_collision_visits_scaling_power=o("MaxCollisionVisitsScalingPower"),
        max_out_of_order_factor=o("MaxOutOfOrderEvalsFactor"), out_of_order_eval=o("OutOfOrderEval"),
        smart_pruning_factor=o("SmartPruningFactor"),
        smart_pruning_minimum_batches=o("SmartPruningMinimumBatches"),
        two_fold_draws=o("TwoFoldDraws"), sticky_endgames=o("StickyEndgames"),
        pipeline=o("Threads") != 1, threads=o("Threads"), task_workers=o("TaskWorkers"), multipv=o("MultiPV"),
        per_pv_counters=o("PerPVCounters"),
        moves_left_max_effect=o("MovesLeftMaxEffect"), moves_left_threshold=o("MovesLeftThreshold"),
        moves_left_slope=o("MovesLeftSlope"), moves_left_constant_factor=o("MovesLeftConstantFactor"),
        moves_left_scaled_factor=o("MovesLeftScaledFactor"),
        moves_left_quadratic_factor=o("MovesLeftQuadraticFactor"),
        draw_score=o("DrawScore"), wdl_rescale_ratio=ratio, wdl_rescale_diff=diff, wdl_max_s=o("WDLMaxS"),
        wdl_eval_objectivity=o("WDLEvalObjectivity"),
        contempt_mode=contempt_mode(o("ContemptMode"), go, black_to_move),
        syzygy_fast_play=o("SyzygyFastPlay"), nps_limit=o("NodesPerSecondLimit"),
        ram_limit_mb=o("RamLimitMb"), solid_tree_threshold=o("SolidTreeThreshold"),
    )


def params_from_settings(settings: dict, go: Optional[GoParams] = None, black_to_move: bool = False) -> SearchParams:
    """SearchParams of the engine's defaults with `settings` ({option name: value}, engine_options'
    names and parser) applied: how tools and analyse build their searches, e.g.
    `{"MinibatchSize": 32, "SmartPruningFactor": 0, "Threads": 1}`. OptionError on a bad one."""
    options = Options()
    for name, value in settings.items():
        options.set(name, value)
    return params_from_options(options, go, black_to_move)


def contempt_mode(mode: str, go: GoParams, black_to_move: bool) -> str:
    """The side contempt favours in this search: "white", "black" or "none" (lc0's Search
    constructor: "play" means the side to move, the other side when pondering, none when infinite)."""
    if mode == "disable":
        return "none"
    if mode == "white_side_analysis":
        return "white"
    if mode == "black_side_analysis":
        return "black"
    if go.infinite:
        return "none"
    return "black" if black_to_move != bool(go.ponder) else "white"
