"""lc0's fast approximate math as the compiled search uses it (utils/fastmath.h): `fast_log_f64`
(FastLog in double precision, for cpuct's growth; compiled by search/core/pick.py, called as is by the
reports) and `wdl_rescale`, lc0's WDL rescaling in float32 (score.py: the rest of the scores, which
display values through it). Below the search, so that score.py can use it without the search; its
compiled code is cached with the search's (lc0_rocm/jit.py).
"""

from __future__ import annotations

import math

import numpy as np

from .jit import jit


def fast_log_f64(a: float) -> float:
    """`fast_log` in double precision via frexp (same approximation, ~10x faster in Python)."""
    mant, e = math.frexp(a)  # a = mant * 2**e, mant in [0.5, 1)
    f = 2.0 * mant - 1.0
    return 0.6931471805599453 * (f * (1.3465552 - 0.34655523 * f) + (e - 1))


@jit
def _fast_log_f32(a):
    """lc0's FastLog in float32, written with frexp so that numba compiles it (same bits as
    `fast_log` for positive normal numbers)."""
    m, e = math.frexp(a)
    out = np.float32(2.0 * m - 1.0)
    log2 = out * (np.float32(1.3465552) - np.float32(0.34655523) * out) - np.float32(127.0) + np.float32(e + 126)
    return np.float32(0.6931471805599453) * log2


@jit
def _fast_logistic_f32(a):
    if a > np.float32(20.0):
        return np.float32(1.0)
    if a < np.float32(-20.0):
        return np.float32(0.0)
    x = np.float32(1.442695040) * (-a)
    if x < np.float32(0.0):
        if x < np.float32(-126.0):
            return np.float32(1.0)
        e = int(x - np.float32(1.0))
    else:
        e = int(x)
    f = x - np.float32(e)
    out = np.float32(1.0) + f * (np.float32(0.6602339) + np.float32(0.33976606) * f)
    return np.float32(1.0) / (np.float32(1.0) + out * np.float32(2.0 ** e))


@jit
def wdl_rescale(v, d, ratio, diff, sign, invert, max_s):
    """lc0's WDLRescale (`src/search/classic/search.cc`), float32 as lc0 computes it: the WDL seen
    as a logistic random walk with spread s and mean mu is sharpened by `ratio` and shifted by
    sign * s^2 * `diff`. Returns (v', d', mu'); W, D or L within 1e-4 of 0 or 1 leave (v, d)
    unchanged and mu' 0. `invert` undoes the rescaling (for display)."""
    v = np.float32(v)
    d = np.float32(d)
    ratio = np.float32(ratio)
    diff = np.float32(diff)
    max_s = np.float32(max_s)
    if invert:
        diff = -diff
        ratio = np.float32(1.0) / ratio
    w = (np.float32(1.0) + v - d) / np.float32(2.0)
    l = (np.float32(1.0) - v - d) / np.float32(2.0)
    eps = np.float32(0.0001)
    one = np.float32(1.0)
    if not (w > eps and d > eps and l > eps and w < one - eps and d < one - eps and l < one - eps):
        return v, d, 0.0
    a = _fast_log_f32(one / l - one)
    b = _fast_log_f32(one / w - one)
    s = np.float32(2.0) / (a + b)
    if not invert:
        s = min(max_s, s)
    mu = (a - b) / (a + b)
    s_new = s * ratio
    if invert:
        s, s_new = s_new, s
        s = min(max_s, s)
    mu_new = mu + np.float32(sign) * s * s * diff
    w_new = _fast_logistic_f32((np.float32(-1.0) + mu_new) / s_new)
    l_new = _fast_logistic_f32((np.float32(-1.0) - mu_new) / s_new)
    return w_new - l_new, max(np.float32(0.0), one - w_new - l_new), float(mu_new)
