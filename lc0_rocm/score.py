"""How values become numbers a GUI shows: lc0's fast math, policy softmax, UCI scores, WDL.

Below the search: the search's reports, the first-start policy move (searchers/first_start.py) and
analyse's records (raw mode too, which imports nothing of the search) print their scores with it.

Everything here follows lc0's classic search (`src/search/classic/search.cc: Search::SendUciInfo`;
the policy softmax of `src/neural/wrapper.cc: NetworkAsBackend::SoftmaxPolicy`) in float32, because the printed
integers (centipawns, the `wdl` triplet) are truncations of float32 expressions and a double
evaluation would sometimes land one unit off:

- `fast_exp`, `fast_log`, `fast_logistic`: lc0's polynomial approximations (utils/fastmath.h); the
  compiled search's own (FastLog, the WDL rescale) are in fastmath.py.
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
from dataclasses import dataclass

import numpy as np

from .engine_options import SCORE_TYPES
from .fastmath import wdl_rescale

F32 = np.float32

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


@dataclass(frozen=True)
class Display:
    """How values are turned into what `info` shows (lc0's `Search::SendUciInfo`): the inverse WDL
    rescaling, applied for ScoreType WDL_mu or when contempt is `active` (a non-zero rescale diff
    and a contempt side), with `ratio`, `diff` (x WDLEvalObjectivity, 0 without a contempt side)
    and `sign` (+1 when the root's side to move is the favoured one); and the root side's
    DrawScore for the Q-based score types."""

    active: bool = False
    ratio: float = 1.0
    diff: float = 0.0
    sign: float = 1.0
    max_s: float = WDL_MAX_S
    draw_score: float = 0.0

    def rescale(self, wl: float, d: float, score_type: str) -> tuple[np.float32, np.float32, float]:
        """(wl', d', mu) as lc0's SendUciInfo computes them for an edge seen from the root's side."""
        if score_type == "WDL_mu" or self.active:
            v2, d2, mu = wdl_rescale(F32(wl), F32(d), self.ratio, self.diff, self.sign, True, self.max_s)
            return F32(v2), F32(d2), float(mu)
        return F32(wl), F32(d), 0.0


PLAIN = Display()


def _trunc(x: float) -> int:
    """C++ float/double -> int conversion (toward zero); huge values saturate to int32."""
    if math.isnan(x):
        return 0
    return int(max(-2147483648.0, min(2147483647.0, x)))


def uci_score(score_type: str, wl: float, d: float, has_wdl: bool = True, display: Display = PLAIN) -> int:
    """The `score cp` integer lc0 prints for an edge with (wl, d) from the mover's point of view.
    Q-based types add the DrawScore (lc0: the edge's Q is taken before the display rescaling)."""
    q = float(F32(wl) + F32(display.draw_score) * F32(d))
    wl32, d32, mu = display.rescale(wl, d, score_type)
    wlf = float(wl32)
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


def mate_score(m: float, wl: float, tablebase: bool = False) -> int:
    """`score mate N` of a proven edge: moves to mate from plies-left m, signed by the winner; a
    result proven by the tablebases shows 100 more (lc0's convention)."""
    moves = _round_half_away(float(F32(m))) / 2 + (101 if tablebase else 1)
    return _trunc(math.copysign(moves, wl))


def wdl_triplet(wl: float, d: float, score_type: str = DEFAULT_SCORE_TYPE, display: Display = PLAIN) -> tuple[int, int, int]:
    """The `wdl W D L` per mille triplet lc0 prints (after the display rescaling if chosen)."""
    wl32, d32, _ = display.rescale(wl, d, score_type)
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
