"""The CLI dispatcher: no sub-command (bare, or lc0-style flags as GUIs pass them) speaks UCI."""

import subprocess
import sys
from pathlib import Path

WEIGHTS = Path(__file__).resolve().parent.parent / "weights" / "t82-small-pemap.pb.gz"


def _run(args, stdin):
    return subprocess.run([sys.executable, "-m", "lc0_rocm.cli", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_bare_and_flag_only_invocations_speak_uci():
    for args in ([], ["-w", str(WEIGHTS)], ["--weights", str(WEIGHTS)]):
        proc = _run(args, "uci\nquit\n")
        assert proc.returncode == 0, proc.stderr
        assert "uciok" in proc.stdout.splitlines()
    proc = _run(["-w", str(WEIGHTS)], "isready\n")
    assert f"info string Loading weights file from: {WEIGHTS}" in proc.stdout.splitlines()
    assert proc.stdout.splitlines()[-1] == "readyok"


def test_unknown_flag_is_reported_not_crashed():
    proc = _run(["--no-such-flag"], "")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
