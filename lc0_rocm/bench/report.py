"""Backendbench output: lc0 v0.32.1's lines or lc0 master's CSV table on stdout, and --csv / --json /
--plot files.

lc0 v0.32.1 prints one line per batch size (`src/tools/backendbench.cc`), its numbers over every
batch of the size (the first included) in C++'s default format (6 significant digits):

    Benchmark batch size 64 with inference average time 4.32ms - throughput 14814.8 nps.

lc0 master's table (--table) is lc0's, column for column and width for width:

    size, mean nps, mean ms,   sdev,     cv, max nps,  median, min nps, first max, first mean

(size %4d; nps columns rounded to integers, mean ms with 4 significant digits, sdev/cv/first-*
with 4 decimals). When the sizes carry a second timing (`SizeStats.extra_kind`: the device time of a
GPU backend next to lc0's wall clock, or the wall clock under --device-time) one column is appended,
its mean ms per batch (`, device ms` / `,   wall ms`, %10.4f); without one the table is lc0's exactly.
The header is printed before the first size and again every 32 sizes, or only once with
--header-only-once. The --csv file holds the same columns, comma-separated, unpadded and
at full precision; --json also keeps the per-batch times; --plot draws nps and ms per batch (and
the second timing's ms) against batch size with matplotlib (the optional `lc0-rocm[plot]` extra,
imported only when asked for).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Iterable, Optional

from ..errors import Lc0RocmError
from .stats import SizeStats

HEADER = "size, mean nps, mean ms,   sdev,     cv, max nps,  median, min nps, first max, first mean"
COLUMNS = [c.strip() for c in HEADER.split(",")]
HEADER_EVERY = 32
EXTRA_WIDTH = 10


def v032_line(s: SizeStats) -> str:
    """lc0 v0.32.1's line for one batch size: mean time and throughput over all its batches."""
    n = len(s.times) + 1
    total = s.first + math.fsum(s.times)
    return (f"Benchmark batch size {s.size} with inference average time {total / n * 1000:g}ms - "
            f"throughput {s.size * n / total:g} nps.")


def v032_nps(s: SizeStats) -> float:
    """The throughput of `v032_line`."""
    return s.size * (len(s.times) + 1) / (s.first + math.fsum(s.times))


def header(extra_kind: str = "") -> str:
    """lc0's header line, plus the second timing's column when there is one."""
    return HEADER + (f",{extra_kind + ' ms':>{EXTRA_WIDTH}}" if extra_kind else "")


def columns(extra_kind: str = "") -> list[str]:
    """The CSV / JSON column names."""
    return COLUMNS + ([f"{extra_kind} ms"] if extra_kind else [])


def header_due(size: int, start: int, step: int, header_only_once: bool) -> bool:
    """Whether lc0 prints the header line before this size's row."""
    if header_only_once:
        return size == start
    return ((size - start) // step) % HEADER_EVERY == 0


def format_row(s: SizeStats) -> str:
    """One table row, formatted as lc0 master prints it."""
    row = (
        f"{s.size:4d},{s.mean_nps:9.0f},{s.mean_ms:8.4g},{s.sdev_ms:7.4f},{s.cv:7.4f},"
        f"{s.max_nps:8.0f},{s.median_nps:8.0f},{s.min_nps:8.0f},{s.first_max_ms:10.4f},{s.first_mean_ms:11.4f}"
    )
    return row + (f",{s.extra_mean_ms:{EXTRA_WIDTH}.4f}" if s.extra_kind else "")


def format_table(stats: Iterable[SizeStats], start: int, step: int, header_only_once: bool = False) -> str:
    lines = []
    for s in stats:
        if header_due(s.size, start, step, header_only_once):
            lines.append(header(s.extra_kind))
        lines.append(format_row(s))
    return "\n".join(lines)


def _row_values(s: SizeStats) -> list:
    return [
        s.size, s.mean_nps, s.mean_ms, s.sdev_ms, s.cv, s.max_nps, s.median_nps, s.min_nps, s.first_max_ms,
        s.first_mean_ms,
    ] + ([s.extra_mean_ms] if s.extra_kind else [])


def write_csv(path, stats: Iterable[SizeStats]) -> None:
    """The table's columns as a plain CSV file (one header line, full precision)."""
    stats = list(stats)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns(stats[0].extra_kind if stats else ""))
        for s in stats:
            w.writerow([repr(v) if isinstance(v, float) else v for v in _row_values(s)])


def write_json(path, info: dict, warmup: list[float], stats: Iterable[SizeStats], clippy: Optional[dict]) -> None:
    """Everything measured: run info, warm-up times, per size the table's values and every batch time."""
    stats = list(stats)
    doc = {
        **info,
        "columns": columns(stats[0].extra_kind if stats else ""),
        "warmup_ms": [t * 1000.0 for t in warmup],
        "sizes": [s.as_dict() for s in stats],
        "clippy": clippy,
    }
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


def require_matplotlib():
    """The pyplot module (Agg backend), or a one-line error naming the extra to install."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise Lc0RocmError("--plot needs matplotlib: pip install 'lc0-rocm[plot]'") from None
    return plt


def write_plot(path, stats: list[SizeStats], title: str = "") -> None:
    """PNG with two panels against batch size: nps (mean, median, min–max band) and ms per batch."""
    plt = require_matplotlib()
    sizes = [s.size for s in stats]
    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(8, 7), constrained_layout=True)
    ax1.fill_between(sizes, [s.min_nps for s in stats], [s.max_nps for s in stats], alpha=0.25, label="min–max")
    ax1.plot(sizes, [s.mean_nps for s in stats], marker=".", label="mean")
    ax1.plot(sizes, [s.median_nps for s in stats], marker=".", linestyle="--", label="median")
    ax1.set_ylabel("positions per second (nps)")
    ax1.set_ylim(bottom=0)
    ax1.grid(True, alpha=0.3)
    ax1.legend(loc="best")
    ms = [s.mean_ms for s in stats]
    sd = [0.0 if s.sdev_ms != s.sdev_ms else s.sdev_ms for s in stats]  # NaN (one batch) → no bar
    ax2.errorbar(sizes, ms, yerr=sd, marker=".", capsize=2, label="mean ± sdev")
    ax2.plot(sizes, [s.size / s.median_nps * 1000.0 for s in stats], linestyle="--", label="median")
    if stats and stats[0].extra_kind:
        ax2.plot(sizes, [s.extra_mean_ms for s in stats], linestyle=":", label=f"{stats[0].extra_kind} time (mean)")
    ax2.set_xlabel("batch size")
    ax2.set_ylabel("ms per batch")
    ax2.set_ylim(bottom=0)
    ax2.grid(True, alpha=0.3)
    ax2.legend(loc="best")
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
