"""The one place the search's compiled code gets its compiler: numba's `njit`, cached on disk.

Every compiled function of the search is declared with `@jit` from here: `njit(cache=True,
nogil=True, _nrt=False)`, so compiled code runs without the GIL (the backend's thread keeps
working), is compiled once per machine, and keeps no reference counts: arrays are passed by value,
never allocated, so a call that takes the tree (a namedtuple of 25 arrays) costs nothing, where
numba's reference counting made every such call cost ~260 ns (measured). The few functions that
allocate use `@jit_alloc` (reference counting on). The cache goes to the user's cache folder (`$LC0_ROCM_CACHE/numba/<key>`,
default `~/.cache/lc0-rocm/numba/<key>`; an explicit NUMBA_CACHE_DIR wins), never next to the
sources, so a read-only site-packages works. `<key>` is a hash of the search's sources: numba
checks only a function's own file, so a cached function that inlined code from another module
changed since would otherwise be reused stale. Importing this module imports numba (about 0.3 s):
modules that must answer fast (the UCI loop before `isready`) import the search lazily.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def sources_key() -> str:
    """Hash of the compiled search's sources (every module of this package folder)."""
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """Where numba keeps the compiled search (created on first compile)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    base = os.environ.get("LC0_ROCM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lc0-rocm")
    return Path(base) / "numba" / sources_key()


def is_compiled() -> bool:
    """Whether a compiled search is already cached for this copy of the sources (a first start
    compiles for about a minute). numba files its cache under a folder named after the sources'
    folder and a SHA-1 of its absolute path (`numba.core.caching._CacheLocator.
    get_suitable_cache_subpath`), so another installed copy's cache does not count."""
    here = os.path.dirname(os.path.abspath(__file__))
    d = cache_dir() / f"{os.path.basename(here)}_{hashlib.sha1(here.encode()).hexdigest()}"
    return d.is_dir() and any(d.glob("worker*.nbc"))


os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir()))

import numba  # noqa: E402  (after NUMBA_CACHE_DIR is set)


def jit(fn):
    """Compile `fn` with numba: no Python objects, GIL released, cached on disk, no allocation."""
    return numba.njit(cache=True, nogil=True, _nrt=False)(fn)


def jit_alloc(fn):
    """`jit` for a function that allocates arrays."""
    return numba.njit(cache=True, nogil=True)(fn)
