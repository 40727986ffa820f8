"""The engine when the GPU really runs out of memory: this process takes the device's free memory
with hipMalloc (the engine runs in this process, so both draw on one pool) and the engine must answer
every `go` with a legal bestmove, retry on the GPU with a smaller device batch, and fall back to the
CPU only with Backend `auto`.

Nothing is simulated: the failures are hipMalloc's own out-of-memory statuses.
"""

from __future__ import annotations

import gc
import queue
import sys
import threading
from pathlib import Path

import chess
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ helpers

pytestmark = pytest.mark.gpu

MIB = 1 << 20


class _Hog:
    """Device memory held by this process, taken in chunks down to `leave` free bytes."""

    def __init__(self):
        from hip import hip

        self.hip = hip
        self.ptrs = []

    def free_bytes(self) -> int:
        err, free, _total = self.hip.hipMemGetInfo()
        assert err == self.hip.hipError_t.hipSuccess, err
        return int(free)

    def take(self, leave: int = 0) -> None:
        chunk = 1 << 32
        while chunk >= 2 * MIB:
            if self.free_bytes() - chunk < leave:
                chunk //= 2
                continue
            err, ptr = self.hip.hipMalloc(chunk)
            if err != self.hip.hipError_t.hipSuccess:
                chunk //= 2
                continue
            self.ptrs.append(ptr)

    def release(self) -> None:
        while self.ptrs:
            self.hip.hipFree(self.ptrs.pop())


class _Engine:
    """Our UCI engine in this process, on queues: `send(line)`, `until(prefix)` -> (line, lines before)."""

    def __init__(self, **options):
        from lc0_rocm.uci import UciEngine

        self.inq: queue.Queue = queue.Queue()
        self.outq: queue.Queue = queue.Queue()
        self.engine = UciEngine(inp=_Reader(self.inq), out=_Writer(self.outq), overrides=options)
        self.thread = threading.Thread(target=self.engine.run, daemon=True)
        self.thread.start()

    def send(self, line: str) -> None:
        self.inq.put(line + "\n")

    def until(self, prefix: str, timeout: float = 120.0) -> tuple[str, list[str]]:
        before = []
        while True:
            line = self.outq.get(timeout=timeout)
            if line.startswith(prefix):
                return line, before
            before.append(line)

    def ready(self, timeout: float = 600.0) -> list[str]:  # the first start compiles the search
        self.send("isready")
        return self.until("readyok", timeout)[1]

    def go(self, args: str = "nodes 64") -> tuple[str, list[str]]:
        self.send("position startpos")
        self.send(f"go {args}")
        return self.until("bestmove")

    def close(self) -> None:
        self.send("quit")
        self.thread.join(timeout=30)


class _Reader:
    def __init__(self, q):
        self.q = q

    def readline(self) -> str:
        return self.q.get()


class _Writer:
    def __init__(self, q):
        self.q = q

    def write(self, text: str) -> None:
        for line in text.splitlines():
            self.q.put(line)

    def flush(self) -> None:
        pass


def _legal_at_start(bestmove_line: str) -> bool:
    return chess.Move.from_uci(bestmove_line.split()[1]) in chess.Board().legal_moves


def _nodes(lines: list[str]) -> int:
    n = 0
    for line in lines:
        parts = line.split()
        if parts[:1] == ["info"] and "nodes" in parts:
            n = max(n, int(parts[parts.index("nodes") + 1]))
    return n


@pytest.fixture()
def hog(gpu):
    h = _Hog()
    yield h
    h.release()


def test_out_of_memory_during_a_search_then_a_smaller_batch_on_the_gpu(hog):
    from lc0_rocm.default_net import default_net_path

    eng = _Engine(WeightsFile=str(default_net_path()), Backend="rocm-fp16", Threads=2)
    try:
        eng.ready()
        backend = eng.engine.backend
        assert backend.name == "rocm-fp16" and backend.max_batch == 1024
        # Free the spare input/output slots the warm-up left, then take all free device memory: the
        # search's first batch must allocate a slot, and hipMalloc fails.
        gc.collect()
        net = backend.network
        for runner in getattr(net, "runners", [net]):
            while runner.pool.free:
                runner.pool.free.pop().free()
        hog.take(leave=0)
        line, before = eng.go("nodes 64")
        assert _legal_at_start(line), line
        errors = [x for x in before if x.startswith("info string error: search failed")]
        assert errors and "memory" in errors[0].lower(), before
        # the next go reopens the backend on the GPU with half the device batch (its own memory,
        # freed by the reopen, is what it now runs in) and really searches
        line, before = eng.go("nodes 64")
        assert _legal_at_start(line), line
        assert "info string retrying on the GPU with max_batch 512 after the last search's fault" in before, before
        assert _nodes(before) >= 64, before
        assert eng.engine.backend.name == "rocm-fp16" and eng.engine.backend.max_batch == 512
    finally:
        hog.release()
        eng.close()


def test_out_of_memory_at_load_halves_the_device_batch_until_the_net_fits(hog):
    from lc0_rocm.default_net import default_net_path

    # one search thread: the network's own memory alone (with several, each thread's runner adds its own)
    eng = _Engine(WeightsFile=str(default_net_path()), Backend="rocm-fp16", Threads=1)
    try:
        # what the engine's backend takes at max_batch 1024 and at 32, measured
        base = hog.free_bytes()
        eng.ready()
        need_1024 = base - hog.free_bytes()
        eng.send("setoption name BackendOptions value max_batch=32")
        eng.ready()
        need_32 = base - hog.free_bytes()
        assert need_1024 > need_32 + 64 * MIB, (need_1024, need_32)  # the workspace scales with the batch
        # room for max_batch 32 and 30 % of the way to 1024 (the workspace grows linearly): 1024 and
        # 512 cannot fit, 256 can
        eng.send("setoption name BackendOptions value ")
        eng.send("setoption name Backend value cpu")  # frees the GPU backend
        eng.ready()
        hog.take(leave=need_32 + (need_1024 - need_32) * 3 // 10)
        eng.send("setoption name Backend value rocm-fp16")
        before = eng.ready()
        assert "info string GPU out of memory with max_batch 1024; trying max_batch 512" in before, before
        backend = eng.engine.backend
        assert backend is not None and backend.name == "rocm-fp16", before
        assert backend.max_batch <= 256, backend.max_batch
        line, before = eng.go("nodes 200")
        assert _legal_at_start(line) and _nodes(before) >= 200, before
    finally:
        hog.release()
        eng.close()


def test_no_memory_at_all_auto_falls_back_to_the_cpu_and_rocm_reports(hog):
    from lc0_rocm.default_net import default_net_path

    net = str(default_net_path())
    hog.take(leave=0)
    auto = _Engine(WeightsFile=net, Backend="auto")
    try:
        before = auto.ready()
        assert any(x.startswith("info string the GPU backend failed (") and x.endswith("using the cpu backend")
                   for x in before), before
        assert auto.engine.backend.name == "cpu"
        line, before = auto.go("nodes 32")
        assert _legal_at_start(line) and _nodes(before) >= 32, before
    finally:
        auto.close()
    gpu_only = _Engine(WeightsFile=net, Backend="rocm-fp16")
    try:
        before = gpu_only.ready()
        assert any(x.startswith("info string error: cannot load network") and "memory" in x.lower()
                   for x in before), before
        line, before = gpu_only.go("nodes 32")  # no net: an error line and still a legal move
        assert line == f"bestmove {next(iter(chess.Board().legal_moves)).uci()}", (line, before)
        hog.release()  # the memory comes back: the next go loads on the GPU and searches
        line, before = gpu_only.go("nodes 32")
        assert _legal_at_start(line) and _nodes(before) >= 32, before
        assert gpu_only.engine.backend.name == "rocm-fp16" and gpu_only.engine.backend.max_batch == 1024
    finally:
        gpu_only.close()
