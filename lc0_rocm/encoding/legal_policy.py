"""Turn raw policy logits into move probabilities over the legal moves of a board.

lc0 (`src/neural/wrapper.cc: NetworkAsBackend::SoftmaxPolicy`): x_m = logit[index(m, transform)] for each legal
move, p_m = exp((x_m - max x) / T) / sum, with T = PolicyTemperature (UCI default 1.359) and exp
replaced by the approximate FastExp, all in float32 with the sum accumulated in move order. The
Python bindings' `Output.p_softmax` is the same with T = 1.
"""

from __future__ import annotations

import chess
import numpy as np

from .outputs import POLICY_SIZE
from .policy_map import legal_move_indices

DEFAULT_POLICY_TEMPERATURE = 1.359


def fast_exp2(a: np.ndarray) -> np.ndarray:
    """lc0's FastExp2 on a float32 array: 2^N * (1 + f*(0.6602339 + 0.33976606*f)), 0 below -126."""
    a = np.asarray(a, dtype=np.float32)
    # Integer part as lc0 takes it: truncation of a (a >= 0) or of a - 1 (a < 0).
    shifted = np.where(a < 0, a - np.float32(1.0), a).astype(np.float32)
    e = np.trunc(shifted).astype(np.int32)
    f = (a - e.astype(np.float32)).astype(np.float32)
    out = (np.float32(1.0) + f * (np.float32(0.6602339) + np.float32(0.33976606) * f)).astype(np.float32)
    bits = out.view(np.int32) + (e.astype(np.uint32) << np.uint32(23)).astype(np.int32)
    res = bits.view(np.float32).copy()
    res[a < np.float32(-126.0)] = 0.0
    return res


def fast_exp(a: np.ndarray) -> np.ndarray:
    """lc0's FastExp(a) = FastExp2(1.442695040 * a) in float32."""
    return fast_exp2(np.asarray(a, dtype=np.float32) * np.float32(1.442695040))


def softmax_logits(logits: np.ndarray, temperature: float = 1.0, use_fast_exp: bool = True) -> np.ndarray:
    """lc0-style softmax of a 1-D array of selected logits (float32, sum in order)."""
    x = np.asarray(logits, dtype=np.float32)
    if x.size == 0:
        return x.copy()
    inv_t = np.float32(1.0) / np.float32(temperature)
    z = ((x - x.max()) * inv_t).astype(np.float32)
    e = fast_exp(z) if use_fast_exp else np.exp(z.astype(np.float64)).astype(np.float32)
    total = np.cumsum(e, dtype=np.float32)[-1]
    scale = np.float32(1.0) / total if total > 0 else np.float32(1.0)
    return (e * scale).astype(np.float32)


def legal_policy(board: chess.Board, logits: np.ndarray, transform: int = 0,
                 temperature: float = DEFAULT_POLICY_TEMPERATURE, use_fast_exp: bool = True,
                 bug_compatible_v032: bool = False) -> dict[chess.Move, float]:
    """{legal move: probability} from the 1858 raw logits of `board`'s position.

    `transform` is the canonical transform the position was encoded with (PackedPlanes.transforms).
    With use_fast_exp=True this is lc0's computation bit for bit (float32); otherwise exact exp.
    """
    logits = np.asarray(logits, dtype=np.float32).reshape(-1)
    if logits.shape[0] != POLICY_SIZE:
        raise ValueError(f"expected {POLICY_SIZE} policy logits, got {logits.shape[0]}")
    moves, idx = legal_move_indices(board, transform, bug_compatible_v032)
    probs = softmax_logits(logits[idx], temperature, use_fast_exp)
    return {m: float(p) for m, p in zip(moves, probs)}
