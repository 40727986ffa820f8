"""Best-effort control of the thread count of the OpenBLAS that numpy uses (no extra dependency).

Why: on small shared VMs (the project's 2-vCPU machines) a multi-threaded OpenBLAS measured 2–80×
slower than one thread (docs/perf.md), and lc0's own CPU backends also compute on one thread. The
library is found among the process's loaded objects (/proc/self/maps) and its
`*openblas_set_num_threads*` / `*get_num_threads*` entry points are called through ctypes. Where
that is impossible (another BLAS, another OS) every function here is a harmless no-op.
"""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager
from functools import lru_cache
from typing import Optional

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")
_lock = threading.Lock()


@lru_cache(maxsize=None)
def _openblas():
    """(setter, getter) ctypes functions of the loaded OpenBLAS, or None."""
    import numpy  # noqa: F401  (make sure numpy's BLAS is loaded)

    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            getter.argtypes, getter.restype = [], ctypes.c_int
            return setter, getter
    return None


def available() -> bool:
    return _openblas() is not None


def get_threads() -> Optional[int]:
    """OpenBLAS's current thread count, or None when it cannot be controlled."""
    fns = _openblas()
    return None if fns is None else int(fns[1]())


@contextmanager
def limit(threads: Optional[int]):
    """Run the body with OpenBLAS using `threads` threads (None: leave as is), then restore."""
    fns = _openblas() if threads else None
    if fns is None:
        yield
        return
    setter, getter = fns
    with _lock:
        before = int(getter())
        setter(int(threads))
        try:
            yield
        finally:
            setter(before)
