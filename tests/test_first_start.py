"""A machine's first start: the search compiles in a background process while the engine answers.

Each engine test copies the run's compiled cache (conftest's `compiled_search`) into a temporary
folder without its ready marker, so the engine takes the first-start path and its background
compile finds every function cached (seconds, not a minute). Holding the compile lock plays
"another process is still compiling" for as long as a test needs, without timing anything.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lc0_rocm
from lc0_rocm import jit
from netpaths import REPO, WEIGHTS_DIR
from uci_pipe import UciPipe


def _cold_cache(tmp: Path) -> tuple[dict, Path]:
    """(an environment whose LC0_ROCM_CACHE is a copy of the compiled cache without its ready
    marker, the copy's folder)."""
    folder = tmp / "numba" / jit.cache_dir().name
    shutil.copytree(jit.cache_dir(), folder,
                    ignore=shutil.ignore_patterns("ready-*", "compile.*", "*.tmp.*"))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["LC0_ROCM_CACHE"] = str(tmp)
    return env, folder


def _nodes(lines: list[str]) -> list[int]:
    return [int(x.split(" nodes ")[1].split()[0]) for x in lines if x.startswith("info depth")]


def test_isready_at_once_and_a_timed_go_plays_the_policy_move_until_the_search_is_compiled(tmp_path):
    env, folder = _cold_cache(tmp_path)
    ready = folder / jit.ready_file().name
    lock = open(folder / "compile.lock", "a")
    fcntl.flock(lock, fcntl.LOCK_EX)  # another process is compiling the search
    e = UciPipe([sys.executable, "-m", "lc0_rocm.cli", "--backend=cpu"], env=env)
    try:
        e.send("uci")
        e.until("uciok")
        e.send("isready")
        e.until("readyok", 120)  # without the compile
        e.send("position startpos moves e2e4")
        e.send("go wtime 10000 btime 10000")
        _, best, before = e.until("bestmove", 120)
        with lc0_rocm.open_backend(None, backend="cpu") as ev:
            policy_move = ev.evaluate((None, ["e2e4"])).best_move.uci()
        assert best == f"bestmove {policy_move}", before
        assert any("policy move" in x for x in before) and _nodes(before) == [1], before
        assert not ready.exists()

        # no clock: waits for the compile, sending the policy move and the compile's progress each second
        sent = e.send("go nodes 40")
        t1, first, _ = e.until("info depth 1 ", 30)
        t2, second, between = e.until("info depth 1 ", 30)
        assert t1 - sent < 3 and 0.5 < t2 - t1 < 3, (t1 - sent, t2 - t1)
        for line in (first, second):
            assert " nodes 1 score cp " in line and line.endswith(f" pv {policy_move}"), line
        assert any(x.startswith("info string the search is being compiled for this machine (first start only): ")
                   and x.endswith(" functions so far; the search starts when it is done") for x in between), between
        e.send("stop")  # before the compile ends: the policy move
        _, best, _ = e.until("bestmove", 60)
        assert best == f"bestmove {policy_move}"

        e.send("go nodes 40")
        e.until("info depth 1 ", 30)
        lock.close()  # that process ended without a compiled search: the engine compiles it itself
        _, best, before = e.until("bestmove", 600)  # the real search, once the compile is done
        assert max(_nodes(before)) == 40 and not any("policy move" in x for x in before), before
        assert ready.exists()
        e.send("go wtime 10000 btime 10000")  # compiled and loaded: a real search
        _, best, before = e.until("bestmove", 120)
        assert max(_nodes(before)) > 1 and not any("policy move" in x for x in before), before
    finally:
        lock.close()
        e.close()


def _end_compiles_of(cache: Path) -> None:
    """End the background compiles (and their children) that use the cache under `cache`: each is
    a session of its own, found by the NUMBA_CACHE_DIR the engine gave it."""
    import signal

    mark = f"NUMBA_CACHE_DIR={cache / 'numba'}".encode()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mark in (proc / "environ").read_bytes().split(b"\0"):
                os.killpg(int(proc.name), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def test_an_empty_cache_answers_a_go_nodes_at_once_while_it_compiles(tmp_path):
    """A fresh install (an empty cache): `go nodes 800` is answered at once and every second with
    the policy move and the compile's progress, and `stop` plays the policy move."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("finding the background compile needs /proc")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["LC0_ROCM_CACHE"] = str(tmp_path)
    e = UciPipe([sys.executable, "-m", "lc0_rocm.cli", "--backend=cpu"], env=env)
    try:
        e.send("isready")
        e.until("readyok", 120)
        sent = e.send("go nodes 800")
        t1, first, _ = e.until("info depth 1 ", 30)
        t2, _, between = e.until("info depth 1 ", 30)
        assert t1 - sent < 3 and 0.5 < t2 - t1 < 3, (t1 - sent, t2 - t1)
        progress = [x for x in between if x.startswith("info string the search is being compiled")]
        assert progress and " nodes 1 score cp " in first, (first, between)
        e.send("stop")
        _, best, _ = e.until("bestmove", 60)
        with lc0_rocm.open_backend(None, backend="cpu") as ev:
            assert best == f"bestmove {ev.evaluate('startpos').best_move.uci()}" == f"bestmove {first.split()[-1]}"
    finally:
        e.close()
        _end_compiles_of(tmp_path)


def test_an_engine_that_quits_at_once_leaves_the_compile_running_for_the_next_start(tmp_path):
    """`quit` ends the engine, not its background compile, which marks the cache ready: the next
    start loads the search at `isready`."""
    env, folder = _cold_cache(tmp_path)
    r = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "--backend=cpu"], input="uci\nisready\nquit\n",
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "readyok", r.stderr
    assert "compiling the search for this machine in the background" in r.stderr
    ready = folder / jit.ready_file().name
    for _ in range(1200):  # the background process, still running, marks the cache ready
        if ready.exists():
            break
        time.sleep(0.5)
    assert ready.exists(), (folder / "compile.log").read_text()
    r = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "--backend=cpu"], input="uci\nisready\nquit\n",
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.stdout.splitlines()[-1] == "readyok", r.stderr
    assert "compiling" not in r.stderr and "compiled search loaded" in r.stderr, r.stderr


def test_the_marked_entry_points_serve_a_search_on_another_net_without_compiling(tmp_path):
    """The entry points the background compile records (on the bundled attention net and the CPU
    backend) are all a search on another net needs: loading them, the engine's search compiles
    nothing, and every compiled function has one signature."""
    code = f"""
import io, sys
from numba.core import event
from lc0_rocm import jit
from lc0_rocm.uci import UciEngine
compiles = []
class Compiles(event.Listener):
    def on_start(self, ev): compiles.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev): pass
event.register("numba:compile", Compiles())
assert jit.load_compiled() > 0
out = io.StringIO()
cmds = "setoption name MultiPV value 2\\nsetoption name VerboseMoveStats value true\\nisready\\n"
cmds += "position startpos moves e2e4 e7e5\\ngo nodes 200\\nposition startpos moves e2e4 e7e5 g1f3\\ngo nodes 300\\n"
UciEngine(io.StringIO(cmds), out, overrides={{"WeightsFile": {str(WEIGHTS_DIR / "t82-small-pemap.pb.gz")!r},
                                            "Backend": "cpu"}}).run()
assert "bestmove" in out.getvalue(), out.getvalue()
print(compiles, [d.py_func.__qualname__ for d in jit.COMPILED if len(d.signatures) > 1])
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "[] []", r.stdout


def test_another_cpu_target_does_not_see_the_ready_marker():
    """numba keys cached code by the CPU (name and features); so does the ready marker: a process
    compiling for a generic CPU must not take this machine's marker (nor its code) for its own."""
    code = "from lc0_rocm import jit; print(jit.ready_file())"
    here = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    generic = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True,
                             env=dict(os.environ, NUMBA_CPU_NAME="generic"))
    assert Path(here.stdout.strip()).parent == Path(generic.stdout.strip()).parent  # the same sources
    assert here.stdout != generic.stdout
    assert here.stdout.strip() == str(jit.ready_file())


@pytest.mark.parametrize("task_workers", [0, 1])
def test_the_warm_up_loads_the_task_workers_entry_only_where_the_settings_run_them(task_workers):
    """warm_up loads (or compiles) what a search with the engine's Threads and TaskWorkers calls:
    the task workers' entry (core/cycle.run_helper) with TaskWorkers 1, not with 0, so a first start
    whose searches run no task workers (automatic on a GPU, or on two cores) does not compile it."""
    code = f"""
from lc0_rocm.backends.trivial import TrivialBackend
from lc0_rocm.default_net import default_net_path
from lc0_rocm.net.loader import load_net
from lc0_rocm.search.core import cycle
from lc0_rocm.search.leaf_evaluator import LeafEvaluator
from lc0_rocm.search.warmup import warm_up
backend = TrivialBackend(load_net(default_net_path()), {{}})
ev = LeafEvaluator(backend, backend.net.input_format, 1024, 1.0)
warm_up(ev, backend.net.has_wdl, backend.net.has_moves_left, 0, threads=2, task_workers={task_workers})
print(len(cycle.run_helper.signatures), len(cycle.run_lane.signatures))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == [str(task_workers), "1"], r.stdout
