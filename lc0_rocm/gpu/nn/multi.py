"""Several GPUs behind one network, lc0's demux style: a batch is split across the devices.

`MultiGpuNetwork(net, devices, dtype, max_batch, **options)` builds one `GpuNetwork` per device (a
device may appear twice: two runners on one GPU, each with its own weights, workspace and streams),
each on its own thread (`parallel_start`, default on: the GPUs start side by side).
`submit(planes)` cuts the batch into near-equal contiguous pieces, one per runner (a batch smaller
than the number of runners uses as many runners as it has positions, starting where the previous
small batch stopped), queues each piece on its runner and returns at once; the runners compute
concurrently. `collect` waits for every piece and joins the outputs in order. `evaluate_timed`
reports the longest piece's device time (the pieces run at the same time on different devices).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ...encoding.outputs import NetOutputs
from ...encoding.packed import PackedPlanes
from .network import GpuNetwork, Pending


def split_sizes(n: int, parts: int) -> list[int]:
    """n positions into `parts` near-equal sizes (the first ones one larger), zeros dropped."""
    base, extra = divmod(n, parts)
    return [base + (i < extra) for i in range(parts) if base + (i < extra) > 0]


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
                 **options):
        if not devices:
            raise ValueError("MultiGpuNetwork needs at least one device")
        self.net, self.devices = net, list(devices)
        self.runners: list[GpuNetwork] = []
        if parallel_start and len(self.devices) > 1:
            self._start_in_parallel(dtype, max_batch, options)
        else:
            try:
                for dev in self.devices:
                    self.runners.append(GpuNetwork(net, dev, dtype, max_batch, **options))
            except Exception:
                self.close()
                raise
        self.max_batch = max_batch * len(self.runners)
        self._next = 0

    def _start_in_parallel(self, dtype: str, max_batch: int, options: dict) -> None:
        """One thread per runner builds it (weights converted and uploaded, kernels compiled, buffers
        allocated): each GPU's start runs beside the others' instead of after them. A runner makes its
        device current on its thread and before each enqueue, so building it on another thread is safe;
        the first failure is raised once every thread is done, the runners built closed."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(self.devices), thread_name_prefix="gpu-start") as pool:
            futures = [pool.submit(GpuNetwork, self.net, dev, dtype, max_batch, **options) for dev in self.devices]
        error = None
        for f in futures:
            if f.exception() is None:
                self.runners.append(f.result())
            elif error is None:
                error = f.exception()
        if error is not None:
            self.close()
            raise error

    def submit(self, planes: PackedPlanes, with_mlh: bool = True, timed: bool = False) -> MultiPending:
        n = len(planes)
        k = len(self.runners)
        if not 1 <= n <= self.max_batch:
            raise ValueError(f"submit: batch of {n} positions, expected 1..{self.max_batch}")
        sizes = split_sizes(n, k)
        first = self._next if len(sizes) < k else 0
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
        return NetOutputs.concat([o for o, _ in res]), max(s for _, s in res)

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
        piece = -(-min(up_to, self.max_batch) // len(self.runners))
        for r in self.runners:
            r.prepare(piece, with_mlh)

    def warm_up(self, sizes, with_mlh: bool = True) -> None:
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
        for r in self.runners:
            r.close()
        self.runners = []


__all__ = ["MultiGpuNetwork", "MultiPending", "Pending", "Piece", "split_sizes"]
