"""A UCI engine (ours or lc0) on raw pipes for tests: a reader thread, so that every read can time
out and a missing answer fails a test instead of hanging it."""

from __future__ import annotations

import queue
import subprocess
import threading
import time


class UciPipe:
    """An engine process `cmd` on pipes; `until(prefix)` reads up to the first line starting with it."""

    def __init__(self, cmd: list[str], env: dict | None = None, cwd=None, stderr=subprocess.PIPE):
        """`stderr`: PIPE to read it after the engine exits (keep it short), DEVNULL for a chatty one."""
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=stderr, text=True, bufsize=1, env=env, cwd=cwd)
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put((time.monotonic(), line.rstrip("\n")))
        self.lines.put((time.monotonic(), None))

    def send(self, line: str) -> float:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return time.monotonic()

    def until(self, prefix: str, timeout: float = 30.0) -> tuple[float, str, list[str]]:
        """(arrival time, the first line starting with prefix, the lines before it)."""
        before = []
        end = time.monotonic() + timeout
        while True:
            try:
                t, line = self.lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {prefix!r} in {timeout} s; got {before}") from None
            if line is None:
                raise AssertionError(f"engine exited waiting for {prefix!r}; got {before}")
            self.seen.append(line)
            if line.startswith(prefix):
                return t, line, before
            before.append(line)

    def answer(self, go: str, timeout: float = 60.0) -> list[str]:
        """Send `go` and return every line up to and including its bestmove."""
        self.send(go)
        _, line, before = self.until("bestmove", timeout)
        return before + [line]

    def no_line(self, prefix: str, wait: float) -> bool:
        end = time.monotonic() + wait
        while time.monotonic() < end:
            try:
                _, line = self.lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                return True
            if line is None or line.startswith(prefix):
                return False
            self.seen.append(line)
        return True

    def close(self):
        if self.p.poll() is None:
            try:
                self.send("quit")
                self.p.wait(timeout=10)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                self.p.kill()
