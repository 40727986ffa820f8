"""tools/amd_compile_gate.sh once per test run, started in the background at the lowest CPU priority
(nice 19) as soon as the run's tests are collected, so that its compiles (about four CPU minutes)
use what the other tests leave of the cores instead of running after them. tests/conftest.py
starts it and puts its test last; tests/test_compile_gate.py waits for it and reads its output. The
gate is the same script with the same output whether it ran beside the other tests or alone."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GATE = ROOT / "tools" / "amd_compile_gate.sh"
TEST = "test_compile_gate.py::test_every_kernel_compiles_for_amd_and_through_the_nvrtc_prelude"  # node id's end
COMPILERS = ("hipcc", "nvcc", "clang++-19")

_run: tuple | None = None  # (Popen, stdout file, stderr file)


def start() -> None:
    """Start the gate (once)."""
    global _run
    if _run is None:
        out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
        # a process group of its own (stop() kills it whole) in the test run's session: with the
        # kernel's autogroup scheduling each session shares the CPU equally whatever its nice value,
        # so a session of its own took a third of two cores from the tests and the search's compile
        p = subprocess.Popen(["nice", "-n", "19", "bash", str(GATE)], cwd=ROOT, stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err, text=True, process_group=0)
        _run = (p, out, err)


def result(timeout: float) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of the gate, started now if it was not; the gate is killed
    (and the wait fails) after `timeout` seconds more."""
    start()
    p, out, err = _run
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        stop()
        raise
    out.seek(0)
    err.seek(0)
    return p.returncode, out.read(), err.read()


def stop() -> None:
    """Kill a gate still running (the run ended before its test, or its test timed out)."""
    if _run is not None and _run[0].poll() is None:
        try:
            os.killpg(_run[0].pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        _run[0].wait()
