"""Several GPUs behind one network, lc0's demux style: a batch is split across the devices.

`MultiGpuNetwork(net, devices, dtype, max_batch, **options)` builds one `GpuNetwork` per device (a
device may appear twice: two runners on one GPU, each with its own weights, workspace and streams),
each on its own thread (`parallel_start`, default on: the GPUs start side by side). With `early_start`
the constructor returns as soon as the first runner is ready: batches go to the runners ready so far
and the others join as they come up (each one first runs the piece sizes already in use, on its own
thread, so that it joins with its graphs captured); `wait_all()` waits for every runner (`prepare`,
`warm_up` and callers that give each search thread a runner call it). A runner that fails to start
after the first is ready makes the next `submit` (and `wait_all`) raise its error, as the whole network
failing at its start would: the user asked for every device.
`submit(planes)` cuts the batch into near-equal contiguous pieces, one per ready runner (a batch smaller
than the number of runners uses as many runners as it has positions, starting where the previous
small batch stopped; a batch larger than the ready runners' device batches takes several pieces per
runner), queues each piece on its runner and returns at once; the runners compute concurrently.
`collect` waits for every piece and joins the outputs in order. `evaluate_timed` reports the busiest
runner's device time (the runners run at the same time on different devices). `max_batch` is the
device batch times the devices, every runner counted from the start.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import NamedTuple

from ...encoding.outputs import NetOutputs
from ...encoding.packed import PackedPlanes
from ..runtime.hiperr import GpuError
from .network import GpuNetwork, Pending


def split_sizes(n: int, parts: int) -> list[int]:
    """n positions into `parts` near-equal sizes (the first ones one larger), zeros dropped."""
    base, extra = divmod(n, parts)
    return [base + (i < extra) for i in range(parts) if base + (i < extra) > 0]


def piece_count(n: int, runners: int, per_runner: int) -> int:
    """Pieces a batch of n is cut into over `runners` runners of `per_runner` positions each: one per
    runner (fewer for a smaller batch), more where the batch does not fit the runners in one piece each
    (fewer runners ready than the network's max_batch counts)."""
    return max(min(n, runners), -(-n // per_runner))


class Piece(NamedTuple):
    """One runner's part of a submitted batch."""

    runner: int  # index into MultiGpuNetwork.runners
    pending: Pending


@dataclass
class MultiPending:
    """A batch submitted to several runners: collect it with `MultiGpuNetwork.collect`."""

    pieces: list[Piece]  # in the batch's order


class MultiGpuNetwork:
    """One network on several devices (or several runners on one device)."""

    def __init__(self, net, devices, dtype: str = "f16", max_batch: int = 1024, parallel_start: bool = True,
                 early_start: bool = False, **options):
        if not devices:
            raise ValueError("MultiGpuNetwork needs at least one device")
        self.net, self.devices = net, list(devices)
        self.runners: list[GpuNetwork] = []  # ready ones, in the order they became ready; only grows
        self.per_runner = max_batch
        self.max_batch = max_batch * len(self.devices)
        self._next = 0
        self._state = threading.Condition()  # guards runners, _starting, _failure, _closed, _sizes
        self._starting = 0  # runners still being built
        self._failure: BaseException | None = None  # the first start failure, by device order
        self._failed_at = len(self.devices)
        self._closed = False
        self._sizes: set = set()  # (piece size, with_mlh) submitted so far: what a late runner runs first
        self._threads: list[threading.Thread] = []
        if parallel_start and len(self.devices) > 1:
            self._start_in_parallel(dtype, max_batch, options, early_start)
        else:
            try:
                for dev in self.devices:
                    self.runners.append(GpuNetwork(net, dev, dtype, max_batch, **options))
            except Exception:
                self.close()
                raise

    def _start_in_parallel(self, dtype: str, max_batch: int, options: dict, early_start: bool) -> None:
        """One thread per runner builds it (weights converted and uploaded, kernels compiled, buffers
        allocated): each GPU's start runs beside the others' instead of after them. A runner makes its
        device current on its thread and before each enqueue, so building it on another thread is safe.
        Without `early_start` the runners are kept in device order once all are built, and a failure
        (the first by device order) is raised once every thread is done, the runners built closed; with
        it, this returns when the first runner is ready, raising a failure already known then (every one
        failed, or one failed before the first was ready)."""
        built: dict = {}
        self._starting = len(self.devices)
        for i, dev in enumerate(self.devices):
            t = threading.Thread(target=self._start_one, args=(i, dev, dtype, max_batch, options,
                                                                None if early_start else built),
                                 name=f"gpu-start-{i}", daemon=True)
            self._threads.append(t)
            t.start()
        with self._state:
            while self._starting and not (early_start and self.runners):
                self._state.wait()
            if not early_start:
                self.runners.extend(built[i] for i in sorted(built))
            failed = self._failure
        if failed is not None:
            self.close()
            raise failed

    def _start_one(self, i: int, dev, dtype: str, max_batch: int, options: dict, built) -> None:
        """Thread i: build its runner; with `early_start` (built is None) run the piece sizes in use so
        far and join the ready runners; a runner finished after `close` is closed here."""
        runner = None
        try:
            runner = GpuNetwork(self.net, dev, dtype, max_batch, **options)
            if built is None:
                done: set = set()
                while True:  # sizes first used while this one warmed up are run too
                    with self._state:
                        todo = sorted(self._sizes - done)
                        if not todo or self._closed:
                            if not self._closed:
                                self.runners.append(runner)
                                runner = None
                            break
                    for size, mlh in todo:
                        runner.warm_up([size], mlh)
                    done.update(todo)
            else:
                with self._state:
                    built[i] = runner
                    runner = None
        except BaseException as e:  # noqa: BLE001 - raised by the constructor, submit or wait_all
            with self._state:
                if i < self._failed_at:
                    self._failure, self._failed_at = e, i
        finally:
            with self._state:
                self._starting -= 1
                self._state.notify_all()
            if runner is not None:  # closed meanwhile, or failed in its warm-up
                try:
                    runner.close()
                except Exception:  # noqa: BLE001 - a failure is already reported
                    pass

    @property
    def start_failure(self) -> tuple | None:
        """(device index, error) of the first runner that failed to start (by device order), or None."""
        with self._state:
            return None if self._failure is None else (self._failed_at, self._failure)

    def wait_all(self) -> None:
        """Wait for the runners still starting; raise the first start failure (the runners stay open:
        `close` closes them)."""
        with self._state:
            while self._starting:
                self._state.wait()
            if self._failure is not None:
                raise self._failure

    def submit(self, planes: PackedPlanes, with_mlh: bool = True, timed: bool = False) -> MultiPending:
        n = len(planes)
        if not 1 <= n <= self.max_batch:
            raise ValueError(f"submit: batch of {n} positions, expected 1..{self.max_batch}")
        with self._state:
            if self._failure is not None:
                raise self._failure
            k = len(self.runners)
            if not k:
                raise GpuError("the GPU network is closed")
            sizes = split_sizes(n, piece_count(n, k, self.per_runner))
            if self._starting:
                self._sizes.update((s, with_mlh) for s in split_sizes(n, min(n, len(self.devices))))
        first = self._next % k if len(sizes) < k else 0
        self._next = (first + len(sizes)) % k
        pieces = []
        try:
            for i, part in enumerate(planes.split(sizes)):
                r = (first + i) % k
                pieces.append(Piece(r, self.runners[r].submit(part, with_mlh, timed)))
        except BaseException:
            for r, p in pieces:
                try:
                    self.runners[r].collect(p)
                except Exception:
                    pass
            raise
        return MultiPending(pieces)

    def collect(self, pending: MultiPending, timed: bool = False):
        res = [self.runners[r].collect(p, timed=timed) for r, p in pending.pieces]
        if not timed:
            return NetOutputs.concat(res)
        busy: dict = {}  # a runner's pieces run one after the other
        for (r, _), (_, s) in zip(pending.pieces, res):
            busy[r] = busy.get(r, 0.0) + s
        return NetOutputs.concat([o for o, _ in res]), max(busy.values())

    def evaluate(self, planes: PackedPlanes, with_mlh: bool = True) -> NetOutputs:
        return self._run(planes, with_mlh, False)

    def evaluate_timed(self, planes: PackedPlanes, with_mlh: bool = True) -> tuple[NetOutputs, float]:
        return self._run(planes, with_mlh, True)

    def _run(self, planes: PackedPlanes, with_mlh: bool, timed: bool):
        pend = [self.submit(part, with_mlh, timed) for part in planes.chunks(self.max_batch)]
        res = [self.collect(p, timed=timed) for p in pend]
        if not timed:
            return NetOutputs.concat(res)
        return NetOutputs.concat([o for o, _ in res]), sum(s for _, s in res)

    def prepare(self, up_to: int, with_mlh: bool = True) -> None:
        """Every run size of the pieces a batch of up to `up_to` positions is split into, on each device."""
        self.wait_all()
        piece = -(-min(up_to, self.max_batch) // len(self.runners))
        for r in self.runners:
            r.prepare(piece, with_mlh)

    def warm_up(self, sizes, with_mlh: bool = True) -> None:
        self.wait_all()
        for n in sizes:
            for size in set(split_sizes(n, len(self.runners))):
                for r in self.runners:
                    r.warm_up([size], with_mlh)

    @property
    def graph_captures(self) -> int:
        return sum(r.graph_captures for r in self.runners)

    @property
    def workspace_bytes(self) -> int:
        return sum(r.workspace_bytes for r in self.runners)

    def close(self) -> None:
        """Close the ready runners; one still starting is closed by its thread when its build ends, and
        this waits for that (a device's start is seconds; closing the runtime under it is not safe)."""
        with self._state:
            self._closed = True
            runners, self.runners = self.runners, []
        for r in runners:
            r.close()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join()


__all__ = ["MultiGpuNetwork", "MultiPending", "Pending", "Piece", "piece_count", "split_sizes"]
