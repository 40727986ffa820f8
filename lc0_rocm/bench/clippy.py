"""Clippy: lc0 backendbench's minibatch-size recommendations for three time controls.

lc0 keeps three "best" batch sizes, for 3 min/move (tournament), 15 s/move (rapid) and 1 s/move
(bullet), all starting at size 1 with 0 nps. For each measured size i with mean throughput nps:

    nps_ingame_k = ((nps + best_nps_k) / 2) ** 1.085
    threshold_k  = 0.16947 · exp(−4.1695e−6 · nps_ingame_k · T_k) + 0.02,   T = 180, 15, 1 s

and a larger size replaces the tournament pick when nps > best_nps and
threshold·(i − best)·best_nps < (nps − best_nps)·best; only then is the same test made for the
rapid pick, and only when that one moves, for the bullet pick (the tests are nested). lc0 does this
in single precision for the stored best nps, the in-game nps and the thresholds (float) and in
double for the measured nps; `Clippy.update` reproduces those roundings so borderline decisions
match lc0's.

When a new best has been waiting for more than 10 s, lc0 shows an interim recommendation
(`interim_due`), and the final one at the end.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

TIME_CONTROLS = (("3min/move (Tournament)", 180.0), ("15s/move  (Rapid)", 15.0), ("1s/move   (Bullet)", 1.0))
INTERIM_AFTER_S = 10.0

_f32 = np.float32


def threshold(nps: float, best_nps: float, seconds_per_move: float) -> float:
    """lc0's acceptance threshold (as the float lc0 stores) for one time control."""
    ingame = _f32(math.pow((float(nps) + float(best_nps)) / 2.0, 1.085))
    return float(_f32(0.16947 * math.exp(-4.1695e-6 * float(ingame) * seconds_per_move) + 0.02))


def _accepts(size: int, nps: float, best: int, best_nps, seconds: float) -> bool:
    """threshold·(i − best)·best_nps < (nps − best_nps)·best, evaluated with lc0's types."""
    thr = _f32(threshold(nps, best_nps, seconds))
    lhs = _f32(_f32(thr * _f32(size - best)) * _f32(best_nps))  # float · int · float, in float
    rhs = (float(nps) - float(best_nps)) * best  # double
    return float(lhs) < rhs


@dataclass
class Clippy:
    """Running recommendation; feed every measured size in order with `update(size, nps)`."""

    best: list = field(default_factory=lambda: [1, 1, 1])  # tournament, rapid, bullet
    best_nps: list = field(default_factory=lambda: [_f32(0.0)] * 3)
    pending_since: Optional[float] = None

    def update(self, size: int, nps: float, now: Optional[float] = None) -> bool:
        """Take the mean nps of a size; True when the tournament pick moved to it."""
        if not (float(nps) > float(self.best_nps[0]) and _accepts(size, nps, self.best[0], self.best_nps[0], 180.0)):
            return False
        self.best[0], self.best_nps[0] = size, _f32(nps)
        if _accepts(size, nps, self.best[1], self.best_nps[1], 15.0):
            self.best[1], self.best_nps[1] = size, _f32(nps)
            if _accepts(size, nps, self.best[2], self.best_nps[2], 1.0):
                self.best[2], self.best_nps[2] = size, _f32(nps)
        if self.pending_since is None:
            self.pending_since = time.monotonic() if now is None else now
        return True

    def interim_due(self, now: Optional[float] = None) -> bool:
        """True (once) when a new best has been pending for more than 10 s, as lc0 checks after each size."""
        if self.pending_since is None:
            return False
        now = time.monotonic() if now is None else now
        if now - self.pending_since > INTERIM_AFTER_S:
            self.pending_since = None
            return True
        return False

    @property
    def recommendations(self) -> dict:
        """{"tournament": size, "rapid": size, "bullet": size}."""
        return {"tournament": self.best[0], "rapid": self.best[1], "bullet": self.best[2]}

    def box(self, final: bool = True) -> str:
        """The recommendation as a small ASCII-art box (Clippy points at it)."""
        title = "Recommended minibatch-size for this net" + (":" if final else " (so far):")
        rows = [f"{(label + ':'):<24}{size:>4}" for (label, _), size in zip(reversed(TIME_CONTROLS), reversed(self.best))]
        width = max(len(title), *(len(r) for r in rows)) + 2
        art = [r"  __   ", r" /  \  ", r" |  |  ", r" @  @  ", r" |  |  ", r" || |/ ", r" || || ", r" |\_/| ", r" \___/ "]
        body = ["+" + "-" * width + "+", "| " + title.ljust(width - 1) + "|"]
        body += ["|   " + r.ljust(width - 3) + "|" for r in rows]
        body += ["+" + "-" * width + "+"]
        lines = []
        for k in range(max(len(art), len(body) + 2)):
            left = art[k] if k < len(art) else " " * len(art[0])
            right = body[k - 2] if 2 <= k < len(body) + 2 else ""
            lines.append((left + ("<-" if k == 4 else "  ") + right).rstrip())
        return "\n".join(lines)
