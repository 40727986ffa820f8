"""Search parameters: lc0's search options with their defaults (`src/search/classic/params.cc`).

`SearchParams` is what the UCI layer fills from its options; `packed()` lays the numbers out in
one float64 array for the compiled worker (indices `P_*`). `collision_budget` and
`suggested_minibatch` are the two rules lc0 applies around a gathering.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_OUT_OF_ORDER_FACTOR = 2.4  # lc0's MaxOutOfOrderEvalsFactor
GPU_MINIBATCH = 256  # lc0's default MinibatchSize for a GPU backend (its backend's preferred batch)
CPU_MINIBATCH = 16

(P_CPUCT, P_CPUCT_BASE, P_CPUCT_FACTOR, P_FPU, P_FPU_ABSOLUTE, P_FPU_ROOT, P_FPU_ABSOLUTE_ROOT,
 P_TWO_FOLD, P_STICKY, P_MLH, P_ML_MAX, P_ML_THRESHOLD, P_ML_SLOPE, P_ML_CONSTANT, P_ML_SCALED,
 P_ML_QUADRATIC, P_TEMPERATURE, P_INPUT_FORMAT, P_FILL, P_CACHE_HISTORY, P_EXACT_LIMIT) = range(21)
P_SIZE = 24
FILL_CODES = {"no": 0, "fen_only": 1, "always": 2}


@dataclass
class SearchParams:
    """Search constants, named and defaulted as lc0's UCI options."""

    cpuct: float = 1.745
    cpuct_base: float = 38739.0
    cpuct_factor: float = 3.894
    fpu_value: float = 0.330  # FpuStrategy "reduction"
    fpu_absolute: bool = False
    fpu_value_at_root: float | None = None  # None: FpuStrategyAtRoot "same"
    fpu_absolute_at_root: bool | None = None
    policy_temperature: float = 1.359
    minibatch_size: int = 0  # 0: the backend's suggestion (see `suggested_minibatch`)
    max_collision_visits: int = 80000  # lc0's MaxCollisionVisits and its scaling with the root's visits
    max_collision_visits_scaling_start: int = 28
    max_collision_visits_scaling_end: int = 145000
    max_collision_visits_scaling_power: float = 1.25
    exact_node_limit: bool = True  # never gather past `go nodes` (lc0 may overshoot by up to a batch)
    smart_pruning_factor: float = 1.33
    two_fold_draws: bool = True
    sticky_endgames: bool = True
    pipeline: bool = True  # gather the next batch while the backend evaluates this one
    multipv: int = 1
    moves_left_max_effect: float = 0.0345
    moves_left_threshold: float = 0.8
    moves_left_slope: float = 0.0027
    moves_left_constant_factor: float = 0.0
    moves_left_scaled_factor: float = 1.6521
    moves_left_quadratic_factor: float = -0.6521

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
        return p


def suggested_minibatch(backend) -> int:
    """Batch size used when MinibatchSize is 0: lc0's choice per backend kind (16 on the CPU, the
    backend's preferred batch or 256 on a GPU), capped by max_batch."""
    preferred = getattr(backend, "preferred_batch", None)
    if not preferred:
        preferred = CPU_MINIBATCH if getattr(backend, "name", "") == "cpu" else GPU_MINIBATCH
    return max(1, min(int(preferred), backend.max_batch))


def collision_budget(nodes: float, params: SearchParams) -> int:
    """lc0's CalculateCollisionsLeft: visits a gathering may lose to collisions, growing with the
    root's visits (`nodes`) from 1 (up to ScalingStart) to MaxCollisionVisits (from ScalingEnd)."""
    start, end = params.max_collision_visits_scaling_start, params.max_collision_visits_scaling_end
    if nodes >= end:
        return params.max_collision_visits
    if nodes <= start:
        return 1
    ratio = ((nodes - start) / (end - start)) ** params.max_collision_visits_scaling_power
    return int(math.floor(1 + (params.max_collision_visits - 1) * ratio + 0.5))
