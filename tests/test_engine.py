"""The engine controller without the protocol: its GPU fault policy (out of memory at open, while
preparing batch sizes and during a search; `auto`'s CPU fallback), its answers through a responder,
and a clock-less `go` that waits for the first start's compile without holding the caller.

No stdin and no GPU: the "GPU" is the replay backend (lc0_rocm/backends/replay.py) answering with a
recording of the real cpu backend, named as the GPU backend and failing the way the GPU layers fail
(`GpuOutOfMemoryError`, the type the runtime's status checker raises for HIP's out-of-memory
status, as tests/test_fault_policy.py checks); tests/gpu/test_engine_faults.py makes a real GPU run out of memory."""

from __future__ import annotations

import threading

import chess
import pytest

from netpaths import WEIGHTS_DIR

from lc0_rocm.api import Evaluator
from lc0_rocm.backends.replay import RecordingBackend, ReplayBackend
from lc0_rocm.backends.rocm import DEFAULT_MAX_BATCH
from lc0_rocm.engine import MIN_GPU_BATCH, Engine, EngineError
from lc0_rocm.errors import BackendError, GpuOutOfMemoryError
from lc0_rocm.search.limits import GoParams
from lc0_rocm.searchers.first_start import DeferredSearch

NET = WEIGHTS_DIR / "se-classical-small.pb.gz"
OOM = "GPU evaluation failed: hipMalloc failed: hipErrorOutOfMemory (2)"


class Said:
    """A responder that keeps what the engine says."""

    def __init__(self):
        self.events: list = []
        self.done = threading.Event()

    def infos(self, lines):
        self.events.append(("infos", lines))

    def instamove_info(self, result):
        self.events.append(("instamove_info", result))

    def policy_move(self, best, cp, ms):
        self.events.append(("policy_move", best))

    def bestmove(self, best, ponder):
        self.events.append(("bestmove", best))
        self.done.set()

    def info_string(self, text):
        self.events.append(("info_string", text))

    def error(self, text):
        self.events.append(("error", text))

    def note(self, text):
        self.events.append(("note", text))

    def of(self, kind):
        return [x for k, x in self.events if k == kind]


@pytest.fixture(scope="module")
def recording():
    """The cpu backend's outputs for a batch of one (the start position), replayed for any batch."""
    from lc0_rocm.api import open_backend

    with open_backend(str(NET), backend="cpu") as ev:
        rec = RecordingBackend(ev.backend)
        Evaluator(ev.net, rec).evaluate(chess.Board())
        return ev.net, rec.batches


class FakeGpu:
    """open_backend for the engine: a "GPU" that runs out of memory above `room` positions per batch
    (at open, at prepare, or at its `fail_at`-th batch), or fails otherwise (`broken`)."""

    def __init__(self, recording, room: int = DEFAULT_MAX_BATCH, broken: bool = False, fail_at: int = 0,
                 fail_prepare: bool = False):
        self.net, self.batches = recording
        self.room, self.broken, self.fail_at, self.fail_prepare = room, broken, fail_at, fail_prepare
        self.opened: list = []  # (backend name, max_batch) of each open that succeeded

    def __call__(self, path, backend="auto", options="", max_batch=None):
        from lc0_rocm.backends.options import int_option, parse_backend_options

        if backend == "cpu":
            be = ReplayBackend(self.net, self.batches, 16)
            be.name = "cpu"
        else:
            if self.broken:
                raise BackendError("hipModuleLaunchKernel failed: hipErrorLaunchFailure (719)")
            max_batch = max_batch or int_option(parse_backend_options(options), "max_batch", DEFAULT_MAX_BATCH)
            if max_batch > self.room and not self.fail_prepare:
                raise GpuOutOfMemoryError(f"cannot open the GPU backend: {OOM}")
            be = _Gpu(self, max_batch)
        self.opened.append((be.name, be.max_batch))
        return Evaluator(self.net, be)


class _Gpu(ReplayBackend):
    def __init__(self, gpu: FakeGpu, max_batch: int):
        super().__init__(gpu.net, gpu.batches, max_batch)
        self.name = "rocm-fp16"
        self.gpu = gpu
        self.count = 0

    def prepare(self, max_batch: int) -> None:
        if self.gpu.fail_prepare and self.max_batch > self.gpu.room:
            raise GpuOutOfMemoryError(OOM)

    def submit(self, planes):
        self.count += 1
        if self.count == self.gpu.fail_at:
            raise GpuOutOfMemoryError(OOM)
        return super().submit(planes)


def _engine(gpu, backend="rocm-fp16", **options) -> tuple[Engine, Said]:
    said = Said()
    e = Engine(said, algorithm="policyhead", opener=gpu)  # one evaluation per go: no search to compile
    e.configure([("WeightsFile", str(NET)), ("Backend", backend), *options.items()])
    return e, said


def _go(e: Engine, said: Said, go: GoParams = None):
    said.done.clear()
    e.go(go or GoParams(nodes=1))
    assert said.done.wait(60)
    best = said.of("bestmove")[-1]
    assert best in chess.Board().legal_moves
    return best


def test_out_of_memory_at_open_halves_the_device_batch(recording):
    gpu = FakeGpu(recording, room=100)
    e, said = _engine(gpu)
    assert e.ensure_net()
    assert e.backend.name == "rocm-fp16" and e.backend.max_batch == 64  # 1024 → 512 → 256 → 128 → 64
    assert said.of("info_string") == [f"GPU out of memory with max_batch {b}; trying max_batch {b // 2}"
                                      for b in (1024, 512, 256, 128)]
    assert not said.of("error")
    _go(e, said)
    assert gpu.opened == [("rocm-fp16", 64)]  # the loaded net is kept


def test_out_of_memory_while_preparing_batches_halves_the_device_batch(recording):
    gpu = FakeGpu(recording, room=300, fail_prepare=True)
    e, said = _engine(gpu)
    assert e.ensure_net()
    assert [b for _, b in gpu.opened] == [1024, 512, 256]
    assert e.backend.max_batch == 256 and e.max_batch_cap == 256


def test_out_of_memory_below_the_smallest_batch_is_an_error(recording):
    gpu = FakeGpu(recording, room=MIN_GPU_BATCH - 1)
    e, said = _engine(gpu)
    assert not e.ensure_net()
    assert len(said.of("error")) == 1 and said.of("error")[0].startswith("cannot load network")
    assert "hipErrorOutOfMemory" in said.of("error")[0]
    e.go(GoParams(nodes=1))  # still answered: the first legal move
    assert said.of("bestmove")[-1] in chess.Board().legal_moves


def test_auto_falls_back_to_the_cpu_until_the_net_settings_change(recording):
    gpu = FakeGpu(recording, broken=True)
    e, said = _engine(gpu, backend="auto")
    assert e.ensure_net()
    assert e.backend.name == "cpu" and e.on_cpu_fallback
    assert said.of("info_string") == ["the GPU backend failed (hipModuleLaunchKernel failed: "
                                      "hipErrorLaunchFailure (719)); using the cpu backend"]
    gpu.broken = False
    e.set_option("NNCacheSize", 1000)  # not a net setting: the cpu stays
    assert e.ensure_net() and e.backend.name == "cpu"
    e.set_option("BackendOptions", "max_batch=256")  # new net settings: the GPU gets another chance
    assert e.ensure_net() and e.backend.name == "rocm-fp16" and e.backend.max_batch == 256
    assert not e.on_cpu_fallback


def test_a_named_gpu_backend_does_not_fall_back(recording):
    gpu = FakeGpu(recording, broken=True)
    e, said = _engine(gpu, backend="rocm-fp16")
    assert not e.ensure_net()
    assert e.backend is None and not said.of("info_string")
    assert said.of("error") == [f"cannot load network {NET}: hipModuleLaunchKernel failed: "
                                "hipErrorLaunchFailure (719)"]


def test_a_search_that_runs_out_of_memory_is_answered_and_the_next_go_retries_smaller(recording):
    gpu = FakeGpu(recording, fail_at=1)  # the first batch of the first search fails
    e, said = _engine(gpu)
    assert e.ensure_net()
    _go(e, said)  # answered all the same (the first legal move)
    assert said.of("error") == [f"search failed: GpuOutOfMemoryError: {OOM}"]
    assert e.backend_fault is not None
    gpu.fail_at = 0
    _go(e, said)
    assert "retrying on the GPU with max_batch 512 after the last search's fault" in said.of("info_string")
    assert gpu.opened == [("rocm-fp16", 1024), ("rocm-fp16", 512)] and e.backend_fault is None
    assert said.of("instamove_info")  # this time the network's move, with its info line


def test_an_aborted_go_owes_no_bestmove(recording):
    """A `go infinite` holds its bestmove; a second `go` aborts it (lc0's Search::Abort): one bestmove."""
    gpu = FakeGpu(recording)
    e, said = _engine(gpu)
    e.go(GoParams(infinite=True))
    assert e.searching and not said.of("bestmove")
    e.go(GoParams(nodes=1))
    assert len(said.of("bestmove")) == 1 and not e.searching
    e.go(GoParams(infinite=True))
    e.stop()  # a stopped search still answers
    assert len(said.of("bestmove")) == 2


class _Compile:
    """The first start's background compile as the engine sees it (search/precompile.Background): a
    `ready` event that the test sets."""

    def __init__(self):
        self.ready = threading.Event()


@pytest.mark.parametrize("ending", ["stop", "ponderhit"])
def test_a_clockless_go_during_the_compile_does_not_hold_the_caller(recording, ending):
    """`go nodes` / `go infinite` / `go ponder` while the compile runs: `go` returns at once (the UCI
    loop goes on reading), `stop` or `ponderhit` is answered with the network's policy move."""
    said = Said()
    e = Engine(said, opener=FakeGpu(recording))
    e.configure([("WeightsFile", str(NET)), ("Backend", "rocm-fp16")])
    e.searcher.compile = _Compile()
    assert e.ensure_net()
    go = GoParams(infinite=True) if ending == "stop" else GoParams(ponder=True, wtime=60000, btime=60000)
    e.go(go)
    assert isinstance(e.search, DeferredSearch) and e.searching and not said.of("bestmove")
    e.stop() if ending == "stop" else e.ponderhit()
    assert said.done.wait(60)
    e.stop_and_wait()
    assert not e.searching
    # the waiting go's info lines (the policy move, one node) came first; the answer is the last one
    assert len(said.of("bestmove")) == 1 and said.of("policy_move")[-1:] == said.of("bestmove")
    assert said.of("bestmove")[0] in chess.Board().legal_moves


def test_an_aborted_go_during_the_compile_owes_nothing(recording):
    said = Said()
    e = Engine(said, opener=FakeGpu(recording))
    e.configure([("WeightsFile", str(NET)), ("Backend", "rocm-fp16")])
    e.searcher.compile = _Compile()
    assert e.ensure_net()
    e.go(GoParams(nodes=100))
    first = e.search
    e.go(GoParams(movetime=1000))  # aborts the waiting go; a clock: the policy move at once
    assert not first.running
    assert len(said.of("bestmove")) == 1 and said.of("policy_move")[-1:] == said.of("bestmove")


def test_the_uci_loop_answers_while_a_clockless_go_waits_for_the_compile(recording):
    """Through the protocol: `go infinite` during the compile, then `isready` is answered, `stop`
    gives the owed bestmove (the policy move), and `quit` ends the loop."""
    import io
    import queue

    from lc0_rocm.uci import UciEngine

    class Lines:
        def __init__(self):
            self.q = queue.Queue()

        def readline(self):
            return self.q.get()

    inp, out = Lines(), io.StringIO()
    uci = UciEngine(inp=inp, out=out, overrides={"WeightsFile": str(NET), "Backend": "rocm-fp16"})
    uci.engine.opener = FakeGpu(recording)
    uci.engine.searcher.compile = _Compile()
    loop = threading.Thread(target=uci.run, daemon=True)
    loop.start()
    for line in ("isready", "position startpos moves e2e4", "go infinite", "isready"):
        inp.q.put(line + "\n")
    for _ in range(1200):  # 60 s at most: the net loads at the first isready
        if out.getvalue().count("readyok") == 2:
            break
        threading.Event().wait(0.05)
    assert "bestmove" not in out.getvalue() and uci.engine.searching  # the go still waits
    inp.q.put("stop\n")
    inp.q.put("quit\n")
    loop.join(60)
    assert not loop.is_alive()
    lines = out.getvalue().splitlines()
    # both isready answered while the go waited (its `info` lines, sent at once, may come between)
    assert lines[0] == "readyok" and lines.count("readyok") == 2, lines
    assert lines[-1].startswith("bestmove ") and lines[-2].startswith("info depth 1 seldepth 1 time ")
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(lines[-1].split()[1]) in board.legal_moves


@pytest.mark.parametrize("algorithm", ["policyhead", "valuehead"])
def test_the_instamove_modes_never_start_the_search_compile(recording, monkeypatch, algorithm):
    """lc0's policyhead / valuehead evaluate once per go: a first start (no compiled search) loads
    the net and answers without starting the background compile of the MCTS."""
    from lc0_rocm import jit

    monkeypatch.setattr(jit, "is_compiled", lambda: False)  # a first start, whatever this machine's cache
    said = Said()
    e = Engine(said, algorithm=algorithm, opener=FakeGpu(recording))
    e.configure([("WeightsFile", str(NET)), ("Backend", "rocm-fp16")])
    assert e.ensure_net()
    assert getattr(e.searcher, "compile", None) is None and not any("compiling" in x for x in said.of("note"))
    _go(e, said, GoParams(wtime=1000, btime=1000))
    assert said.of("instamove_info") and not said.of("policy_move")


def test_a_clockless_go_searches_once_the_compile_is_done(recording):
    """The owed bestmove of a `go nodes` that waited for the compile comes from the real search."""
    said = Said()
    e = Engine(said, opener=FakeGpu(recording))
    e.configure([("WeightsFile", str(NET)), ("Backend", "rocm-fp16"), ("Threads", 1)])
    e.searcher.compile = _Compile()
    assert e.ensure_net()
    e.go(GoParams(nodes=8))
    assert isinstance(e.search, DeferredSearch) and not said.of("bestmove")
    e.searcher.compile.ready.set()
    assert said.done.wait(300)  # the search's compiled code loads from the cache (or compiles)
    e.stop_and_wait()
    # the waiting info lines (policy move, one node) before the real search's, none after them
    kinds = [k for k, _ in said.events if k in ("infos", "policy_move", "bestmove")]
    assert kinds[-1] == "bestmove" and kinds[-2] == "infos" and len(said.of("bestmove")) == 1
    assert "policy_move" not in kinds[kinds.index("infos"):]
    assert max(x.nodes for lines in said.of("infos") for x in lines if not x.comment) == 8
    assert said.of("bestmove")[0] in chess.Board().legal_moves


def test_the_searchers_come_from_the_registry():
    """Each algorithm is a registry entry whose searcher has the whole seam (searchers.base.Searcher);
    a name not registered is one line, not a default."""
    import inspect

    from lc0_rocm.searchers import SEARCHERS
    from lc0_rocm.searchers.base import Searcher

    seam = {name for name, _ in inspect.getmembers(Searcher) if not name.startswith("_")} | {"options", "search"}
    assert {"start", "ponderhit", "new_game", "prepare", "backend_changed"} <= seam
    for name in SEARCHERS:
        e = Engine(Said(), algorithm=name)
        assert not [m for m in seam if not hasattr(e.searcher, m)], name
        assert e.search is None and not e.searching
    assert len(Engine(Said(), algorithm="policyhead").option_declarations()) < len(Engine(Said()).option_declarations())
    with pytest.raises(EngineError, match="unknown search algorithm 'alphabeta'"):
        Engine(Said(), algorithm="alphabeta")
