"""The layout of the search parameters the compiled search reads: one float64 array, `P_*` its indices
(`SearchParams.packed()` in search/params.py fills it)."""

(P_CPUCT, P_CPUCT_BASE, P_CPUCT_FACTOR, P_FPU, P_FPU_ABSOLUTE, P_FPU_ROOT, P_FPU_ABSOLUTE_ROOT,
 P_TWO_FOLD, P_STICKY, P_MLH, P_ML_MAX, P_ML_THRESHOLD, P_ML_SLOPE, P_ML_CONSTANT, P_ML_SCALED,
 P_ML_QUADRATIC, P_TEMPERATURE, P_INPUT_FORMAT, P_FILL, P_CACHE_HISTORY, P_EXACT_LIMIT,
 P_DRAW_SCORE, P_WDL_RATIO, P_WDL_DIFF, P_WDL_MAX_S, P_CONTEMPT_BLACK, P_TB_PIECES, P_OUT_OF_ORDER) = range(28)
P_SIZE = 32
