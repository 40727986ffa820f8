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
    ("board/rules.py", "U1, U8 = np.uint64(1), np.uint64(8)", "U1, U8 = np.uint64(1), np.uint64(9)"),  # below the search
    ("board/move_codes.py", "NUM_CODES = 6 * 4096", "NUM_CODES = 7 * 4096"),
    ("fastmath.py", "eps = np.float32(0.0001)", "eps = np.float32(0.001)"),
])
def test_a_code_edit_of_compiled_code_changes_the_key(pkg, module, old, new):
    before = jit.sources_key(pkg)
    _edit(pkg / module, old, new)
    assert jit.sources_key(pkg) != before


def test_the_control_code_is_outside_the_key():
    """The search's control modules and the time manager are not among the modules hashed."""
    hashed = {f.relative_to(jit.PKG).as_posix() for f in jit.closure(jit.search_sources())}
    control = {f.relative_to(jit.PKG).as_posix() for f in (jit.PKG / "search").glob("*.py")}
    assert {"search/core/pick.py", "encoding/packed.py", "board/rules.py", "board/encode.py", "fastmath.py"} <= hashed
    assert not hashed & control, sorted(hashed & control)


def test_the_code_below_the_search_is_cached_with_it():
    """The compiled board and lc0's fast math, which the search inlines, are cached in the search's
    folder (one folder holds all a first start compiles); a compiled function elsewhere, in its own."""
    from lc0_rocm import fastmath
    from lc0_rocm.analyse import game_arrays
    from lc0_rocm.board import encode, rules
    from lc0_rocm.search.core import pick

    def folder(d):
        return jit._CodeLocator.from_function(d.py_func, d.py_func.__code__.co_filename).get_cache_path()

    for d in (pick.pick_nodes, rules.legal_moves, encode.encode, fastmath.wdl_rescale):
        assert folder(d) == str(jit.cache_dir()), d.py_func.__qualname__
    assert folder(game_arrays._fen) != str(jit.cache_dir())


def test_the_key_is_remembered_per_package_fingerprint(pkg, tmp_path, monkeypatch):
    """A process whose sources were seen before reads the key from the cache folder (no syntax tree is
    parsed: `_code_key` is not called), and an edit of the code, a new fingerprint, computes it anew."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("LC0_ROCM_CACHE", str(tmp_path / "cache"))
    key = jit.sources_key(pkg)
    assert key == jit._code_key(jit.search_sources(pkg), pkg)
    assert list((tmp_path / "cache" / "numba" / "keys").glob(f"{jit.package_fingerprint(pkg)}.json"))

    def parse_again(files, pkg):
        raise AssertionError("the key was computed again")
    monkeypatch.setattr(jit, "_code_key", parse_again)
    assert jit.sources_key(pkg) == key
    _edit(pkg / "encoding" / "packed.py", "NUM_PLANES = 112", "NUM_PLANES = 113")
    with pytest.raises(AssertionError, match="computed again"):
        jit.sources_key(pkg)
