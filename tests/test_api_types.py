"""The public API's types, checked by mypy: strict (pyproject.toml's [tool.mypy]) on lc0_rocm/api.py
finds nothing, and a typed caller sees `Evaluator.evaluate` give one Evaluation for one position, a
list for a list, and a type error for what is no position.

mypy is in the `test` extra: without it this module skips, except under CI=true, where it fails."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CALLER = '''\
import chess
from lc0_rocm.api import open_backend

with open_backend(backend="cpu") as ev:
    reveal_type(ev.evaluate(chess.Board()))
    reveal_type(ev.evaluate("startpos"))
    reveal_type(ev.evaluate((None, ["e2e4", chess.Move.from_uci("e7e5")])))
    reveal_type(ev.evaluate([chess.Board(), "startpos", (None, ["e2e4"])], logits=True))
    reveal_type(ev.evaluate(chess.Board()).wdl)
    ev.evaluate(42)
'''


def _mypy(*args: str, cache: Path) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mypy") is None:
        msg = "mypy is not installed (pip install 'lc0-rocm[test]')"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(cache), "--no-error-summary", "--hide-error-context", *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_api_is_strictly_typed(tmp_path):
    p = _mypy(cache=tmp_path / "cache")  # the files of [tool.mypy]: lc0_rocm/api.py
    assert p.returncode == 0 and not p.stdout.strip(), p.stdout + p.stderr


def test_evaluate_is_typed_for_one_position_and_for_many(tmp_path):
    caller = tmp_path / "caller.py"
    caller.write_text(CALLER)
    p = _mypy("lc0_rocm/api.py", str(caller), cache=tmp_path / "cache")
    first: dict[int, str] = {}  # caller line -> mypy's first message on it (mypy versions differ in
    for ln in p.stdout.splitlines():  # spelling builtins: "builtins." is dropped)
        if ln.startswith(str(caller)):
            number, message = ln[len(str(caller)) + 1:].split(": ", 1)
            first.setdefault(int(number), message.replace("builtins.", ""))
    one = 'note: Revealed type is "lc0_rocm.api.Evaluation"'
    assert {k: v for k, v in first.items() if k < 9} == {
        5: one, 6: one, 7: one, 8: 'note: Revealed type is "list[lc0_rocm.api.Evaluation]"'}, p.stdout + p.stderr
    assert first.get(9) in ('note: Revealed type is "tuple[float, float, float] | None"',
                            'note: Revealed type is "Union[Tuple[float, float, float], None]"'), p.stdout
    assert first.get(10, "").startswith('error: No overload variant of "evaluate"'), p.stdout
    assert not [ln for ln in p.stdout.splitlines() if ln.startswith("lc0_rocm")], p.stdout
