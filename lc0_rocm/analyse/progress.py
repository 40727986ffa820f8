"""The progress line of `lc0-rocm analyse` on the terminal: positions, positions/s, games, ETA.

Drawn on stderr (redrawn in place at most every 0.2 s) only when stderr is a terminal, or when asked;
`note(text)` prints a line above it (a skipped game). The ETA comes from the input bytes read against
the input's size (unknown on stdin).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Optional, TextIO

STEADY_AFTER_S = 1.0  # seconds of output before the rate leaves out the start-up


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    def __init__(self, total_bytes: Optional[int] = None, stream: Optional[TextIO] = None,
                 enabled: Optional[bool] = None, interval: float = 0.2):
        self.stream = stream or sys.stderr
        self.enabled = enabled if enabled is not None else bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = total_bytes
        self.interval = interval
        self.positions = 0
        self.games = 0
        self.skipped = 0
        self.done_bytes = 0
        self.start = time.monotonic()
        self._first: Optional[float] = None  # when the first output arrived (compile/warm-up excluded)
        self._first_positions = 0
        self._last_draw = 0.0
        self._drawn = False
        self._lock = threading.Lock()

    def rate(self) -> float:
        """Positions per second: over the run so far until a second of output has been seen, then
        from the first output on (net load and first compile excluded). The first output's own
        positions are not counted in the second rate: they were computed before its clock began."""
        now = time.monotonic()
        if self._first is None or now - self._first < STEADY_AFTER_S:
            dt = now - self.start
            return self.positions / dt if dt > 0 else 0.0
        return (self.positions - self._first_positions) / (now - self._first)

    def update(self, positions: int = 0, games: int = 0, done_bytes: Optional[int] = None, skipped: int = 0) -> None:
        with self._lock:
            self.positions += positions
            if self._first is None:
                self._first = time.monotonic()
                self._first_positions = self.positions
            self.games += games
            self.skipped += skipped
            if done_bytes is not None:
                self.done_bytes = done_bytes
            now = time.monotonic()
            if self.enabled and now - self._last_draw >= self.interval:
                self._draw(now)

    def line(self) -> str:
        rate = self.rate()
        text = f"analyse: {self.positions} positions, {rate:,.0f} pos/s, {self.games} games"
        if self.skipped:
            text += f" ({self.skipped} skipped)"
        if self.total:
            frac = min(1.0, self.done_bytes / self.total)
            text += f", {100 * frac:.0f}%"
            elapsed = time.monotonic() - self.start
            if 0 < frac < 1:
                text += f", ETA {_clock(elapsed * (1 - frac) / frac)}"
        text += f", {_clock(time.monotonic() - self.start)} elapsed"
        return text

    def _draw(self, now: float) -> None:
        self._last_draw = now
        self.stream.write("\r" + self.line() + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def note(self, text: str) -> None:
        """A line of its own (above the progress line)."""
        with self._lock:
            if self._drawn:
                self.stream.write("\r\x1b[K")
            self.stream.write(text + "\n")
            self.stream.flush()
            if self.enabled and self._drawn:
                self._draw(time.monotonic())

    def close(self) -> None:
        with self._lock:
            if self.enabled:
                self._draw(time.monotonic())
                self.stream.write("\n")
                self.stream.flush()
