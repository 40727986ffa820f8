"""Statistics of one batch size from its per-batch times, with the definitions of lc0 master's table.

For batch size `i` and the measured per-batch times t_1..t_n (seconds; the first batch of the size
is NOT among them, it is kept apart as `first`):

- mean nps   = i·n / Σt            - mean ms = 1000·Σt / n
- sdev (ms)  = 1000 · sample standard deviation of t (n − 1 in the denominator; NaN when n < 2)
- cv         = sdev / mean ms      - max nps = i / min t,  min nps = i / max t
- median nps = i / median t (the mean of the two middle times when n is even)
- first max, first mean (ms): lc0's cold-start columns. With one benchmarking thread (the only
  mode here) both equal the time of the first, excluded, batch.

A size may also carry a second timing of the same batches (`with_extra`): e.g. the device time a GPU
backend measures next to the wall clock the table is computed from. Only its mean ms is shown (the
extra column); its per-batch times are kept for the JSON file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class SizeStats:
    size: int
    times: tuple[float, ...]  # seconds per measured batch, in measuring order (first batch excluded)
    first: float  # seconds of the first (excluded) batch
    mean_nps: float
    mean_ms: float
    sdev_ms: float
    cv: float
    max_nps: float
    median_nps: float
    min_nps: float
    first_max_ms: float
    first_mean_ms: float
    extra_kind: str = ""  # name of the second timing ("device" or "wall"), "" without one
    extra_first: float = math.nan  # seconds of the first batch by the second timing
    extra_times: tuple[float, ...] = ()  # seconds per measured batch by the second timing

    @property
    def extra_mean_ms(self) -> float:
        """Mean ms per measured batch by the second timing (NaN without one)."""
        return math.fsum(self.extra_times) / len(self.extra_times) * 1000.0 if self.extra_times else math.nan

    def as_dict(self, with_times: bool = True) -> dict:
        d = {
            "size": self.size,
            "mean_nps": self.mean_nps,
            "mean_ms": self.mean_ms,
            "sdev_ms": _json_float(self.sdev_ms),
            "cv": _json_float(self.cv),
            "max_nps": self.max_nps,
            "median_nps": self.median_nps,
            "min_nps": self.min_nps,
            "first_max_ms": self.first_max_ms,
            "first_mean_ms": self.first_mean_ms,
        }
        if self.extra_kind:
            d[f"{self.extra_kind}_mean_ms"] = self.extra_mean_ms
        if with_times:
            d["first_ms"] = self.first * 1000.0
            d["times_ms"] = [t * 1000.0 for t in self.times]
            if self.extra_kind:
                d[f"{self.extra_kind}_first_ms"] = self.extra_first * 1000.0
                d[f"{self.extra_kind}_times_ms"] = [t * 1000.0 for t in self.extra_times]
        return d


def _json_float(x: float):
    return None if math.isnan(x) else x


def size_stats(size: int, first: float, times) -> SizeStats:
    """Statistics of batch size `size` from its first batch time and the measured per-batch times (s)."""
    ts = tuple(float(t) for t in times)
    n = len(ts)
    if n < 1:
        raise ValueError("at least one measured batch (besides the first) is needed")
    if size < 1:
        raise ValueError(f"batch size must be >= 1, got {size}")
    if min(ts) <= 0.0:
        raise ValueError("per-batch times must be positive")
    total = math.fsum(ts)
    mean = total / n
    if n >= 2:
        sdev = math.sqrt(math.fsum((t - mean) ** 2 for t in ts) / (n - 1))
    else:
        sdev = math.nan
    srt = sorted(ts)
    mid = n // 2
    median_t = srt[mid] if n % 2 else (srt[mid - 1] + srt[mid]) / 2.0
    first_ms = float(first) * 1000.0
    return SizeStats(
        size=size,
        times=ts,
        first=float(first),
        mean_nps=size * n / total,
        mean_ms=mean * 1000.0,
        sdev_ms=sdev * 1000.0,
        cv=sdev / mean,
        max_nps=size / srt[0],
        median_nps=size / median_t,
        min_nps=size / srt[-1],
        first_max_ms=first_ms,
        first_mean_ms=first_ms,
    )


def with_extra(s: SizeStats, kind: str, first: float, times) -> SizeStats:
    """`s` carrying a second timing `kind` of the same batches: its first batch and measured batches (s)."""
    ts = tuple(float(t) for t in times)
    if len(ts) != len(s.times):
        raise ValueError(f"the {kind} timing has {len(ts)} measured batches, the table's {len(s.times)}")
    return replace(s, extra_kind=kind, extra_first=float(first), extra_times=ts)
