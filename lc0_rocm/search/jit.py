"""The one place the search's compiled code gets its compiler: numba's `njit`, cached on disk.

Every compiled function of the search is declared with `@jit` from here: `njit(cache=True,
nogil=True, _nrt=False)`, so compiled code runs without the GIL (the backend's thread keeps
working), is compiled once per machine, and keeps no reference counts: arrays are passed by value,
never allocated, so a call that takes the tree (a namedtuple of 25 arrays) costs nothing, where
numba's reference counting made every such call cost ~260 ns (measured). The few functions that
allocate use `@jit_alloc` (reference counting on). Both add the function to `COMPILED`.

The cache: `$LC0_ROCM_CACHE/numba/<key>` (default `~/.cache/lc0-rocm/numba/<key>`; an explicit
NUMBA_CACHE_DIR replaces `$LC0_ROCM_CACHE/numba`), never next to the sources, so a read-only
site-packages works. `<key>` is a hash of the search's sources: numba checks only a function's own
file, so a cached function that inlined code from another module changed since would otherwise be
reused stale. Unlike numba's own NUMBA_CACHE_DIR locator, the folder does not depend on where the
sources are installed: every copy of the same sources (an editable checkout, a wheel in a venv, a
reinstall) shares one compiled search. numba keys each entry by the signature, the CPU (LLVM
triple, CPU name and features: `CPUCodegen.magic_tuple`), the function's bytecode, the Python
version (the file name) and its own version (the index), so another CPU or numba recompiles.

`ready_file()` marks a cache that holds the whole search for this CPU: search/precompile.py writes
it after compiling, with the entry points a search calls from Python, which `load_compiled()` then
loads (about a second) instead of letting the first search load them one call at a time.
Importing this module imports numba (about 0.3 s): modules that must answer fast (the UCI loop
before `isready`) import the search lazily.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import pickle
import sys
from pathlib import Path

import numba
from numba.core import caching

HERE = Path(__file__).resolve().parent
# the folders whose modules the compiled search is made of: this one, and the encoding package whose
# constants (planes, transforms, the policy map) it imports
SOURCE_DIRS = (HERE, HERE.parent / "encoding")
COMPILED: list = []  # every @jit / @jit_alloc function of the search, in import order


@functools.lru_cache(maxsize=None)
def sources_key() -> str:
    """Hash of the compiled search's sources: every module of this package folder, and of
    `SOURCE_DIRS` (compiled code freezes the constants it imports from there)."""
    h = hashlib.sha256()
    for f in sorted(f for d in SOURCE_DIRS for f in d.glob("*.py")):
        h.update(str(f.relative_to(HERE.parent)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def cache_dir() -> Path:
    """Where numba keeps the compiled search (created on first compile). Read once: the compiled
    functions' cache folders are fixed when they are declared, at import."""
    base = os.environ.get("NUMBA_CACHE_DIR")
    if not base:
        root = os.environ.get("LC0_ROCM_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lc0-rocm")
        base = os.path.join(root, "numba")
    return Path(base) / sources_key()


@functools.lru_cache(maxsize=None)
def target_key() -> str:
    """What numba's cache keys the machine code by, hashed: this Python, this numba and the CPU
    (`magic_tuple`: LLVM triple, CPU name, CPU features)."""
    from numba.core.registry import cpu_target

    magic = cpu_target.target_context.codegen().magic_tuple()
    text = repr((sys.version_info[:2], numba.__version__, magic))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ready_file() -> Path:
    """The marker of a cache that holds the whole search for this Python, numba and CPU; it lists
    the entry points (module, name, signature) to load."""
    return cache_dir() / f"ready-{target_key()}.pkl"


def is_compiled() -> bool:
    """Whether the compiled search is cached for these sources on this machine (a first start
    compiles it: see search/precompile.py)."""
    return ready_file().is_file()


def write_ready(entry_points: list) -> None:
    """Mark the cache complete: `entry_points` = [(module, function name, argument types)]."""
    path = ready_file()
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_bytes(pickle.dumps(entry_points))
    os.replace(tmp, path)  # readers never see half a file


def load_compiled() -> int:
    """Load every entry point listed by the ready marker from the cache (numba compiles any that is
    missing). Returns how many were loaded; 0 without a marker."""
    try:
        entries = pickle.loads(ready_file().read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return 0
    for module, name, args in entries:
        getattr(importlib.import_module(module), name).compile(args)
    return len(entries)


class _SourcesLocator(caching._CacheLocator):
    """numba's cache locator for this folder's functions: files in `cache_dir()` (keyed by the
    sources' hash, not by their install path) and the sources' hash as the freshness stamp."""

    def __init__(self, py_func, py_file):
        self._lineno = py_func.__code__.co_firstlineno
        self._path = str(cache_dir())

    def get_cache_path(self):
        return self._path

    def get_source_stamp(self):
        return sources_key()

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != HERE:
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:  # an unwritable cache: numba tries its other locators
            return None
        return self


_impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
if _SourcesLocator not in _impl._locator_classes:
    _impl._locator_classes = [_SourcesLocator, *_impl._locator_classes]


def jit(fn):
    """Compile `fn` with numba: no Python objects, GIL released, cached on disk, no allocation."""
    d = numba.njit(cache=True, nogil=True, _nrt=False)(fn)
    COMPILED.append(d)
    return d


def jit_alloc(fn):
    """`jit` for a function that allocates arrays."""
    d = numba.njit(cache=True, nogil=True)(fn)
    COMPILED.append(d)
    return d
