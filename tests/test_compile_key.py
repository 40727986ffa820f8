"""The compile cache's key (lc0_rocm/jit.py) follows the compiled code only: an edit of a comment or a
docstring anywhere, or of the search's Python control code at all, keeps the compiled search; an edit
of the code of a compiled module, or of a module whose constants it freezes, compiles it anew.

Each case edits a copy of the package and computes the key of the copy's sources (jit.sources_key's
`pkg`), as a fresh process on those sources would.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lc0_rocm import jit


@pytest.fixture()
def pkg(tmp_path) -> Path:
    dst = tmp_path / "lc0_rocm"
    shutil.copytree(jit.PKG, dst, ignore=shutil.ignore_patterns("__pycache__", "*.hip", "*.h"))
    return dst


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def _docstring_and_comment_edit(path: Path) -> None:
    """The module docstring gets a word more, a comment line and blank lines are added above the
    first function, and a function's docstring changes."""
    text = path.read_text()
    first = text.index('"""') + 3
    text = text[:first] + "Edited. " + text[first:]
    at = text.index("\ndef ")
    text = text[:at] + "\n# a comment that moves every line below\n\n" + text[at:]
    at = text.index('"""', text.index("\ndef ")) + 3
    path.write_text(text[:at] + "Edited too. " + text[at:])


def test_the_copy_has_the_same_key(pkg):
    assert jit.sources_key(pkg) == jit.sources_key()


@pytest.mark.parametrize("module", ["search/search.py", "search/timemgr.py", "search/core/pick.py",
                                    "search/core/tree.py", "encoding/planes.py"])
def test_a_docstring_or_comment_edit_keeps_the_key(pkg, module):
    before = jit.sources_key(pkg)
    _docstring_and_comment_edit(pkg / module)
    assert jit.sources_key(pkg) == before


def test_a_code_edit_of_the_control_code_keeps_the_key(pkg):
    before = jit.sources_key(pkg)
    _edit(pkg / "search" / "search.py", "INFO_MIN_INTERVAL_S = 1.0", "INFO_MIN_INTERVAL_S = 2.0")
    _edit(pkg / "search" / "timemgr.py", "import math\n", "import math\nimport os\n")
    assert jit.sources_key(pkg) == before


@pytest.mark.parametrize("module, old, new", [
    ("search/core/pick.py", "import math\n", "import math\nimport os\n"),
    ("search/core/spinlock.py", "SPINS_BEFORE_YIELD = 64", "SPINS_BEFORE_YIELD = 65"),
    ("encoding/packed.py", "NUM_PLANES = 112", "NUM_PLANES = 113"),  # a constant the compiled encoder freezes
])
def test_a_code_edit_of_compiled_code_changes_the_key(pkg, module, old, new):
    before = jit.sources_key(pkg)
    _edit(pkg / module, old, new)
    assert jit.sources_key(pkg) != before


def test_the_control_code_is_outside_the_key():
    """The search's control modules and the time manager are not among the modules hashed."""
    hashed = {f.relative_to(jit.PKG).as_posix() for f in jit.closure(sorted(jit.SEARCH_CORE.glob("*.py")))}
    control = {f.relative_to(jit.PKG).as_posix() for f in (jit.PKG / "search").glob("*.py")}
    assert "search/core/pick.py" in hashed and "encoding/packed.py" in hashed
    assert not hashed & control, sorted(hashed & control)
