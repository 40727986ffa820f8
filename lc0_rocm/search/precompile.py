"""The first start's compile, in a background process, so that the engine is ready at once.

A machine's first start compiles the search (numba, about two minutes on two cores); lc0 is ready in a
second, and GUIs and python-chess give an engine about ten seconds to answer `isready`. So the
engine does not wait: `Background.begin()` starts this module as a process of its own, which
compiles every entry point (`warm_up` on the bundled net and the CPU backend: the argument types a
real search uses, whatever the net and backend), writes the cache's ready marker listing the entry
points (`jit.write_ready`), and exits. One process compiles per cache (a lock file
beside it); it runs in its own session and outlives an engine that quits early, so the next start
finds the search compiled. The engine loads the entry points from the cache in a thread
(`jit.load_compiled`, about a second) and until then answers a `go` with a clock with the
network's policy move (uci.py).

`python -m lc0_rocm.search.precompile` compiles in the foreground (for a container image or a
deployment script) and prints where the cache is.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from .. import jit

POLL_S = 0.2  # how often the engine looks for the ready marker while another process compiles


def compile_search() -> None:
    """Compile every entry point of the search into the cache (or load it from there): `warm_up`
    on the bundled net with the CPU backend, then with lc0's `trivial` one, whose compiled evaluation
    takes the search threads' compiled batch cycle (search/core/cycle.py, shared with `random`), with
    task workers where this machine's automatic TaskWorkers runs them (not on two cores)."""
    from ..backends.cpu import CpuBackend
    from ..backends.trivial import TrivialBackend
    from ..default_net import default_net_path
    from ..net.loader import load_net
    from .leaf_evaluator import LeafEvaluator
    from .warmup import warm_up

    net = load_net(default_net_path())
    for backend in (CpuBackend(net), TrivialBackend(net, {})):
        evaluator = LeafEvaluator(backend, backend.net.input_format, 1024, 1.0)
        try:
            warm_up(evaluator, backend.net.has_wdl, backend.net.has_moves_left, 0)
        finally:
            evaluator.close()


def entry_points() -> list:
    """The functions a search calls from Python, as (module, name, argument types): those holding a
    signature after `compile_search` in a fresh process that finds them all cached (a cached
    function carries the code of the functions it calls, so only the entry points are loaded)."""
    out = jit.cache_dir() / f"entry-points.{os.getpid()}.tmp"
    code = _run_here(f"from lc0_rocm.search.precompile import _write_entry_points; _write_entry_points({str(out)!r})")
    try:
        subprocess.run([sys.executable, "-c", code], stdin=subprocess.DEVNULL, env=_child_env(), check=True)
        return pickle.loads(out.read_bytes())
    finally:
        out.unlink(missing_ok=True)


def _write_entry_points(path: str) -> None:
    compile_search()
    found = [(d.py_func.__module__, d.py_func.__name__, sig) for d in jit.COMPILED for sig in d.signatures]
    Path(path).write_bytes(pickle.dumps(found))


def _run_here(code: str) -> str:
    """Python code that imports this very lc0_rocm package (wherever the process starts), then runs `code`."""
    root = str(Path(__file__).resolve().parents[2])
    return f"import sys; sys.path.insert(0, {root!r}); {code}"


def _child_env() -> dict:
    return dict(os.environ, NUMBA_CACHE_DIR=str(jit.cache_dir().parent))  # this process's cache folder


def _lock(path: Path, wait: bool = False):
    """An exclusive lock on `path` held by the returned open file; None when another process holds
    it (with wait=True: once it lets go). Without file locks here, nobody waits for one."""
    f = open(path, "a")
    try:
        import fcntl
    except ImportError:
        return f
    try:
        fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        f.close()
        return None
    return f


def ensure_compiled(wait: bool = False) -> bool:
    """Compile the search into the cache and mark it ready, unless it is marked already. When
    another process is compiling it: False at once, or with wait=True, wait for that process (and
    compile here should it have failed). True when the cache is marked ready."""
    if jit.is_compiled():
        return True
    jit.cache_dir().mkdir(parents=True, exist_ok=True)
    lock = _lock(jit.cache_dir() / "compile.lock", wait)
    if lock is None:
        return False
    try:
        if not jit.is_compiled():
            compile_search()
            jit.write_ready(entry_points())
    finally:
        lock.close()
    return True


def main(argv: Optional[list] = None) -> int:
    """Compile the search into the cache unless it is there or another process is compiling it."""
    quiet = "--quiet" in (sys.argv[1:] if argv is None else argv)
    t0 = time.monotonic()
    done = ensure_compiled()
    if not quiet:
        print(f"the search is compiled ({time.monotonic() - t0:.0f} s): {jit.cache_dir()}" if done
              else f"another process is compiling the search into {jit.cache_dir()}")
    return 0


def log_path() -> Path:
    """Where the background compile writes its output: beside the cache."""
    return jit.cache_dir() / "compile.log"


def start_process() -> subprocess.Popen:
    """`main` in a process of its own session (it outlives the engine), stdout and stderr appended
    to `log_path()` (the cache folder is made if needed)."""
    code = _run_here("from lc0_rocm.search.precompile import main; sys.exit(main(['--quiet']))")
    jit.cache_dir().mkdir(parents=True, exist_ok=True)
    with open(log_path(), "ab") as out:
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=out, env=_child_env(), start_new_session=True, close_fds=True)


class Background:
    """The engine's side of the first-start compile: `begin()` starts the compiling process (at
    once, so that it runs even if the engine quits right after) and a thread that waits for the
    ready marker and loads the compiled entry points, then sets `ready`. Should the compile fail,
    `ready` is set anyway and the search compiles where it is first run."""

    def __init__(self, note: Callable[[str], None] = lambda text: None):
        self.ready = threading.Event()
        self.note = note
        self._thread: Optional[threading.Thread] = None

    def begin(self) -> None:
        if self._thread is not None:
            return
        proc = None
        try:
            proc = start_process()
        except OSError as e:
            self.note(f"cannot start the background compile ({e}); the search compiles at the first go")
        self._thread = threading.Thread(target=self._run, args=(proc,), name="lc0-rocm-compile", daemon=True)
        self._thread.start()

    def _run(self, proc: Optional[subprocess.Popen]) -> None:
        log = log_path()
        try:
            while proc is not None and not jit.is_compiled():
                if proc.poll() is not None:  # done, or another process holds the lock
                    if proc.returncode != 0:
                        self.note(f"the background compile failed (exit {proc.returncode}; see {log}); "
                                  "the search compiles at the first go")
                        return
                    lock = None if jit.is_compiled() else _lock(jit.cache_dir() / "compile.lock")
                    if lock is not None:  # nobody compiles and there is no marker: once more, ours
                        lock.close()
                        proc = start_process()
                time.sleep(POLL_S)
            if proc is None:
                return
            t0 = time.monotonic()
            n = jit.load_compiled()
            self.note(f"the search is compiled ({n} entry points loaded in {time.monotonic() - t0:.2f}s)")
        except Exception as e:  # the engine goes on: the search compiles where it is first run
            self.note(f"the background compile failed ({type(e).__name__}: {e}); the search compiles at the first go")
        finally:
            self.ready.set()


if __name__ == "__main__":
    sys.exit(main())
