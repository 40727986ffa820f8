"""How search results become numbers a GUI shows: lc0's fast math, policy softmax, UCI scores, WDL.

Everything here follows lc0's classic search (facts §7.1–7.2) in float32, because the printed
integers (centipawns, the `wdl` triplet) are truncations of float32 expressions and a double
evaluation would sometimes land one unit off:

- `fast_exp`, `fast_log`, `fast_logistic`: lc0's polynomial approximations (utils/fastmath.h).
- `softmax_policy(logits, temperature)`: the priors of the legal moves, FastExp with 1/T.
- `compress_prior(p)`: the 16-bit form lc0 stores a prior in (11-bit mantissa, rounded); search
  compares priors only in that form, which decides ties such as the move played at `go nodes 1`.
- `uci_score(score_type, wl, d, has_wdl)`: the `score cp` of every ScoreType; `WDL_mu` (default)
  first maps (wl, d) through lc0's WDL rescale with approximate math, exactly as lc0 prints it.
- `wdl_triplet(wl, d)`: the `wdl W D L` per mille numbers; `mate_score(m, wl)`: `score mate`.
"""

from __future__ import annotations

import math
import struct

import numpy as np

F32 = np.float32

SCORE_TYPES = (
    "centipawn",
    "centipawn_with_drawscore",
    "centipawn_2019",
    "centipawn_2018",
    "win_percentage",
    "Q",
    "W-L",
    "WDL_mu",
)
DEFAULT_SCORE_TYPE = "WDL_mu"
WDL_MAX_S = 1.4  # lc0's WDLMaxS default
_CP_FALLBACK_THRESHOLD = F32(0.996)


# --------------------------------------------------------------------------------------------
# lc0's fast approximate math, float32 bit for bit


def _f32_bits(x: np.float32) -> int:
    return struct.unpack("<I", struct.pack("<f", float(x)))[0]


def _bits_f32(u: int) -> np.float32:
    return F32(struct.unpack("<f", struct.pack("<I", u & 0xFFFFFFFF))[0])


def fast_log2(a: float) -> np.float32:
    """Approximate log2 (no range check): mantissa polynomial plus the exponent."""
    bits = _f32_bits(F32(a))
    expb = bits >> 23
    out = _bits_f32((bits & 0x7FFFFF) | (0x7F << 23)) - F32(1.0)
    return out * (F32(1.3465552) - F32(0.34655523) * out) - F32(127) + F32(expb)


def fast_log_f64(a: float) -> float:
    """`fast_log` in double precision via frexp (same approximation, ~10x faster in Python)."""
    mant, e = math.frexp(a)  # a = mant * 2**e, mant in [0.5, 1)
    f = 2.0 * mant - 1.0
    return 0.6931471805599453 * (f * (1.3465552 - 0.34655523 * f) + (e - 1))


def fast_exp2(a: float) -> np.float32:
    """Approximate 2**a; 0 below -126."""
    a = F32(a)
    if a < 0:
        if a < -126:
            return F32(0.0)
        e = int(a - F32(1))  # truncation of a-1: floor except at integers (corrected below)
    else:
        e = int(a)
    f = a - F32(e)
    out = F32(1.0) + f * (F32(0.6602339) + F32(0.33976606) * f)
    return _bits_f32(_f32_bits(out) + ((e << 23) & 0xFFFFFFFF))


def fast_log(a: float) -> np.float32:
    return F32(0.6931471805599453) * fast_log2(a)


def fast_exp(a: float) -> np.float32:
    return fast_exp2(F32(1.442695040) * F32(a))


def fast_logistic(a: float) -> np.float32:
    a = F32(a)
    if a > 20:
        return F32(1.0)
    if a < -20:
        return F32(0.0)
    return F32(1.0) / (F32(1.0) + fast_exp(-a))


def fast_exp_array(x: np.ndarray) -> np.ndarray:
    """`fast_exp` over a float32 array (vectorised, same bits)."""
    a = np.asarray(x, dtype=np.float32) * F32(1.442695040)
    e = np.where(a < 0, (a - F32(1)).astype(np.int32), a.astype(np.int32))
    f = a - e.astype(np.float32)
    out = F32(1.0) + f * (F32(0.6602339) + F32(0.33976606) * f)
    bits = out.view(np.int32) + (e << 23)
    res = bits.view(np.float32)
    return np.where(a < -126, F32(0.0), res).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Policy


def softmax_policy(logits: np.ndarray, temperature: float) -> np.ndarray:
    """Priors of the legal moves from their raw logits, as lc0's backend wrapper computes them.

    p_i = FastExp((x_i - max x) / T) / sum (float32, sequential sum); an empty input gives [].
    """
    x = np.asarray(logits, dtype=np.float32)
    if x.size == 0:
        return x.copy()
    inv_t = F32(1.0) / F32(temperature)
    e = fast_exp_array((x - x.max()) * inv_t)
    total = np.cumsum(e, dtype=np.float32)[-1]
    scale = F32(1.0) / total if total > 0 else F32(1.0)
    return (e * scale).astype(np.float32)


def compress_prior(p: np.ndarray) -> np.ndarray:
    """lc0's 16-bit prior storage (Edge::SetP/GetP) applied to float32 priors in [0, 1].

    Keeps 11 mantissa bits with round-half-up and the exponents 2^-32 .. 2^0; anything smaller
    becomes 0. Returned as float32 values equal to what lc0's GetP() gives back.
    """
    bits = np.asarray(p, dtype=np.float32).view(np.int32).astype(np.int64)
    tmp = bits + ((1 << 11) - (3 << 28))
    packed = np.where(tmp < 0, 0, tmp >> 12) & 0xFFFF
    back = ((packed << 12) | (3 << 28)).astype(np.uint32)
    return back.view(np.float32).copy()


# --------------------------------------------------------------------------------------------
# Scores


def wdl_rescale_display(wl: float, d: float, max_s: float = WDL_MAX_S) -> tuple[np.float32, np.float32, float]:
    """lc0's WDLRescale with invert=true and no contempt, as applied before printing.

    Returns (wl', d', mu). With ratio 1 and diff 0 the model is the identity, but the round trip
    through FastLog/FastLogistic shifts wl and d slightly; mu is 0 when W, D or L is within 1e-4
    of 0 or 1 (then wl and d are returned unchanged).
    """
    v = F32(wl)
    d = F32(d)
    w = (F32(1) + v - d) / F32(2)
    l = (F32(1) - v - d) / F32(2)
    eps = F32(0.0001)
    if not (w > eps and d > eps and l > eps and w < F32(1) - eps and d < F32(1) - eps and l < F32(1) - eps):
        return v, d, 0.0
    a = fast_log(F32(1) / l - F32(1))
    b = fast_log(F32(1) / w - F32(1))
    s = F32(2) / (a + b)
    mu = (a - b) / (a + b)
    s_new = s  # ratio 1; the invert swap then leaves the unclipped s as the scale
    w_new = fast_logistic((F32(-1) + mu) / s_new)
    l_new = fast_logistic((F32(-1) - mu) / s_new)
    v2 = w_new - l_new
    d2 = max(F32(0), F32(1) - w_new - l_new)
    return F32(v2), F32(d2), float(mu)


def _trunc(x: float) -> int:
    """C++ float/double -> int conversion (toward zero); huge values saturate to int32."""
    if math.isnan(x):
        return 0
    return int(max(-2147483648.0, min(2147483647.0, x)))


def uci_score(score_type: str, wl: float, d: float, has_wdl: bool = True, draw_score: float = 0.0) -> int:
    """The `score cp` integer lc0 prints for an edge with (wl, d) from the mover's point of view."""
    wl32, d32 = F32(wl), F32(d)
    mu = 0.0
    if score_type == "WDL_mu":
        wl32, d32, mu = wdl_rescale_display(wl32, d32)
    wlf = float(wl32)
    q = float(wl32 + F32(draw_score) * d32)
    if score_type == "centipawn_with_drawscore":
        return _trunc(90 * math.tan(1.5637541897 * q))
    if score_type == "centipawn":
        return _trunc(90 * math.tan(1.5637541897 * wlf))
    if score_type == "centipawn_2019":
        return _trunc(295 * wlf / (1 - 0.976953126 * wlf**14))
    if score_type == "centipawn_2018":
        return _trunc(290.680623072 * math.tan(1.548090806 * wlf))
    if score_type == "win_percentage":
        return _trunc(float(wl32 * F32(5000) + F32(5000)))
    if score_type == "Q":
        return _trunc(float(F32(q) * F32(10000)))
    if score_type == "W-L":
        return _trunc(float(wl32 * F32(10000)))
    if score_type == "WDL_mu":
        cp = float(F32(45 * math.tan(1.56728071628 * wlf)))
        mu32 = F32(mu)
        use_mu = (
            has_wdl
            and mu32 != 0
            and abs(wl32) + d32 < _CP_FALLBACK_THRESHOLD
            and (abs(mu32) < 1 or abs(cp) < abs(float(F32(100) * mu32)))
        )
        return _trunc(float(F32(100) * mu32)) if use_mu else _trunc(cp)
    raise ValueError(f"unknown ScoreType {score_type!r} (choose from {', '.join(SCORE_TYPES)})")


def mate_score(m: float, wl: float) -> int:
    """`score mate N` of a proven edge: moves to mate from plies-left m, signed by the winner."""
    moves = _round_half_away(float(F32(m))) / 2 + 1
    return _trunc(math.copysign(moves, wl))


def wdl_triplet(wl: float, d: float, score_type: str = DEFAULT_SCORE_TYPE) -> tuple[int, int, int]:
    """The `wdl W D L` per mille triplet lc0 prints (after the WDL_mu display rescale if chosen)."""
    wl32, d32 = F32(wl), F32(d)
    if score_type == "WDL_mu":
        wl32, d32, _ = wdl_rescale_display(wl32, d32)
    wlf, df = float(wl32), float(d32)
    w = max(0, _round_half_away(500.0 * (1.0 + wlf - df)))
    l = max(0, _round_half_away(500.0 * (1.0 - wlf - df)))
    dd = 1000 - w - l
    if dd < 0:
        w = min(1000, max(0, w + int(dd / 2)))  # C++ integer division truncates toward zero
        l = 1000 - w
        dd = 0
    return w, dd, l


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))
