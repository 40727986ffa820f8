"""The multi-GPU network's start (`gpu.nn.multi.MultiGpuNetwork`, `parallel_start`, `early_start`): the
runners are built side by side, one thread each, in device order; one that fails closes the others and
its error is raised. With `early_start` the network is usable once the first runner is ready: batches
go to the ready runners (the split and the small batches' round robin still right), a late runner joins
with the piece sizes in use run first, a late start failure is raised by the next batch, and `close`
during a start never hangs. Host logic only: a stand-in runner (this machine has no GPU) that takes a
while to build and answers each row with its own index, so that the joined outputs show the order."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from lc0_rocm.encoding.outputs import NetOutputs
from lc0_rocm.encoding.packed import NUM_PLANES, PackedPlanes
from lc0_rocm.errors import GpuError
from lc0_rocm.gpu.nn import multi


class _Runner:
    built: list = []
    closed: list = []
    start_s: dict = {}  # device -> seconds its start takes (default 0.4)

    def __init__(self, net, device, dtype, max_batch, **options):
        time.sleep(_Runner.start_s.get(device, 0.4))  # a GPU's start: weights converted and uploaded, kernels compiled
        if device.startswith("bad"):
            raise RuntimeError(f"device {device} failed")
        self.device, self.max_batch = device, max_batch
        self.pieces: list = []  # sizes of the batches submitted here
        self.warmed: list = []  # (size, with_mlh) run by warm_up
        _Runner.built.append((device, threading.current_thread().name, time.monotonic()))

    def submit(self, planes, with_mlh=True, timed=False):
        assert 1 <= len(planes) <= self.max_batch
        self.pieces.append(len(planes))
        return planes

    def collect(self, planes, timed=False):
        n = len(planes)
        rows = planes.values[:, 0].copy()  # the test's row index: order is checked through it
        out = NetOutputs(np.zeros((n, 1858), np.float32), None, rows, np.zeros(n, np.float32), None)
        return (out, 0.01 * n) if timed else out

    def warm_up(self, sizes, with_mlh=True):
        self.warmed.extend((s, with_mlh) for s in sizes)

    def close(self):
        _Runner.closed.append(self.device)


def _planes(n: int) -> PackedPlanes:
    values = np.zeros((n, NUM_PLANES), np.float32)
    values[:, 0] = np.arange(n)
    return PackedPlanes(np.zeros((n, NUM_PLANES), np.uint64), values, np.zeros(n, np.int32))


def _run(m, n: int) -> None:
    """A batch of n through submit/collect, its rows back in order."""
    out = m.collect(m.submit(_planes(n)))
    assert out.q.tolist() == list(range(n))


@pytest.fixture
def runner(monkeypatch):
    _Runner.built, _Runner.closed, _Runner.start_s = [], [], {}
    monkeypatch.setattr(multi, "GpuNetwork", _Runner)
    return _Runner


def test_runners_start_side_by_side(runner):
    t = time.monotonic()
    m = multi.MultiGpuNetwork(None, ["d0", "d1", "d2"], max_batch=8)
    took = time.monotonic() - t
    assert [r.device for r in m.runners] == ["d0", "d1", "d2"] and m.max_batch == 24
    assert took < 1.0  # not 3 x 0.4 s
    assert len({name for _, name, _ in runner.built}) == 3


def test_one_after_the_other_without_parallel_start(runner):
    t = time.monotonic()
    m = multi.MultiGpuNetwork(None, ["d0", "d1"], max_batch=8, parallel_start=False)
    assert time.monotonic() - t >= 0.8 and [r.device for r in m.runners] == ["d0", "d1"]


def test_a_runner_that_fails_closes_the_others(runner):
    with pytest.raises(RuntimeError, match="device bad failed"):
        multi.MultiGpuNetwork(None, ["d0", "bad", "d2"], max_batch=8)
    assert sorted(runner.closed) == ["d0", "d2"]


def test_without_early_start_the_devices_order_holds_whatever_starts_first(runner):
    runner.start_s = {"d0": 0.5, "d1": 0.05}
    m = multi.MultiGpuNetwork(None, ["d0", "d1"], max_batch=8)
    assert [r.device for r in m.runners] == ["d0", "d1"]
    _run(m, 16)
    assert [r.pieces for r in m.runners] == [[8], [8]]


def test_piece_count():
    assert multi.piece_count(16, 2, 8) == 2  # one per runner
    assert multi.piece_count(3, 4, 8) == 3  # a small batch: one runner a position
    assert multi.piece_count(16, 1, 8) == 2  # one runner ready of two: two pieces on it
    assert multi.piece_count(17, 2, 8) == 3 and multi.piece_count(1, 1, 8) == 1


def test_early_start_first_batch_on_the_first_ready_runner_then_both(runner):
    runner.start_s = {"fast": 0.05, "slow": 0.8}
    t = time.monotonic()
    m = multi.MultiGpuNetwork(None, ["slow", "fast"], max_batch=8, early_start=True)
    assert time.monotonic() - t < 0.6  # the slow one is still starting
    assert [r.device for r in m.runners] == ["fast"] and m.max_batch == 16  # the full capacity from the start
    fast = m.runners[0]
    _run(m, 16)  # the batch the run uses: two device batches, both on the one runner ready
    _run(m, 5)
    assert fast.pieces == [8, 8, 5]
    m.wait_all()
    slow = m.runners[1]
    assert slow.device == "slow"
    # the slow one ran the pieces the two runners cut those batches into before joining
    assert sorted(slow.warmed) == [(2, True), (3, True), (8, True)] and slow.pieces == []
    _run(m, 16)
    _run(m, 5)
    assert fast.pieces[3:] == [8, 3] and slow.pieces == [8, 2]
    # small batches still go round robin over the runners ready
    for n in (1, 1, 1):
        _run(m, n)
    assert fast.pieces[5:] + slow.pieces[2:] == [1, 1, 1] and len(fast.pieces[5:]) in (1, 2)
    m.close()
    assert sorted(runner.closed) == ["fast", "slow"]
    with pytest.raises(GpuError, match="closed"):
        m.submit(_planes(4))


def test_early_start_timed_counts_a_runners_pieces_one_after_the_other(runner):
    runner.start_s = {"fast": 0.05, "slow": 1.5}
    m = multi.MultiGpuNetwork(None, ["fast", "slow"], max_batch=8, early_start=True)
    _, seconds = m.collect(m.submit(_planes(12), timed=True), timed=True)
    assert seconds == pytest.approx(0.12)  # 6 + 6 rows on one device
    t = time.monotonic()
    m.close()  # waits for the slow start, then closes it: nothing left running on a device
    assert time.monotonic() - t > 1.0 and sorted(runner.closed) == ["fast", "slow"]


def test_early_start_late_failure_raised_by_the_next_batch_and_wait_all(runner):
    runner.start_s = {"d0": 0.05, "bad1": 0.4}
    m = multi.MultiGpuNetwork(None, ["d0", "bad1"], max_batch=8, early_start=True)
    _run(m, 16)  # before the failure: the run goes on
    time.sleep(0.6)
    assert m.start_failure is not None and m.start_failure[0] == 1
    for _ in range(2):  # every later batch: the user asked for that GPU
        with pytest.raises(RuntimeError, match="device bad1 failed"):
            m.submit(_planes(4))
    with pytest.raises(RuntimeError, match="device bad1 failed"):
        m.wait_all()
    m.close()
    assert runner.closed == ["d0"]


def test_early_start_failure_known_before_the_first_ready_is_raised_at_once(runner):
    runner.start_s = {"bad0": 0.05, "d1": 0.3}
    with pytest.raises(RuntimeError, match="device bad0 failed"):
        multi.MultiGpuNetwork(None, ["bad0", "d1"], max_batch=8, early_start=True)
    assert runner.closed == ["d1"]


def test_early_start_every_runner_failing_raises_the_first_by_device_order(runner):
    runner.start_s = {"bad0": 0.3, "bad1": 0.05}
    with pytest.raises(RuntimeError, match="device bad0 failed"):
        multi.MultiGpuNetwork(None, ["bad0", "bad1"], max_batch=8, early_start=True)
    assert runner.closed == []


def test_prepare_waits_for_every_runner(runner, monkeypatch):
    runner.start_s = {"d0": 0.05, "d1": 0.5}
    prepared = []
    monkeypatch.setattr(_Runner, "prepare", lambda self, piece, with_mlh=True: prepared.append((self.device, piece)),
                        raising=False)
    m = multi.MultiGpuNetwork(None, ["d0", "d1"], max_batch=8, early_start=True)
    m.prepare(16)
    assert sorted(prepared) == [("d0", 8), ("d1", 8)]
    m.close()


def _backend_over(m):
    """The rocm backend's shell over a network of stand-in runners (its constructor needs a GPU)."""
    from types import SimpleNamespace

    from lc0_rocm.backends.rocm import RocmBackend

    b = RocmBackend.__new__(RocmBackend)
    b.network, b.mlh, b._late_error, b._lanes, b._lane_runners = m, True, None, {}, {}
    b._devices = [SimpleNamespace(index=i) for i in (0, 3)]
    b._lock = threading.Lock()
    return b


def test_the_backend_reports_a_late_start_failure_in_one_line_naming_the_gpu(runner):
    from lc0_rocm.errors import BackendError, GpuOutOfMemoryError

    runner.start_s = {"d0": 0.05, "bad1": 0.3}
    b = _backend_over(multi.MultiGpuNetwork(None, ["d0", "bad1"], max_batch=8, early_start=True))
    b.collect(b.submit(_planes(16)))  # the first batches go while the second GPU starts
    time.sleep(0.5)
    for _ in range(2):  # the same line every time (the message is not wrapped twice)
        with pytest.raises(BackendError) as e:
            b.submit(_planes(4))
        assert str(e.value) == "cannot start the GPU backend on GPU 3: RuntimeError: device bad1 failed"
    with pytest.raises(BackendError, match="on GPU 3"):
        b.prepare(16)
    b.close()

    class _OomRunner(_Runner):
        def __init__(self, net, device, *args, **options):
            if device == "oom":
                time.sleep(0.3)
                raise GpuOutOfMemoryError("hipMalloc: out of memory")
            super().__init__(net, device, *args, **options)

    multi.GpuNetwork = _OomRunner  # the fixture's monkeypatch restores the real one
    runner.start_s = {"d0": 0.05}
    b = _backend_over(multi.MultiGpuNetwork(None, ["d0", "oom"], max_batch=8, early_start=True))
    for _ in range(2):  # preferred_batch waits for every GPU: the failure, its type kept, then each batch's
        with pytest.raises(GpuOutOfMemoryError) as e:
            b.preferred_batch if _ == 0 else b.submit(_planes(4))
        assert str(e.value) == "cannot start the GPU backend on GPU 3: hipMalloc: out of memory"
    b.close()
