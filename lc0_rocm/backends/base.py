"""The one interface every backend implements.

Search and tools see only this: `evaluate(PackedPlanes) -> NetOutputs` (both types live in
`lc0_rocm.encoding`: `packed.PackedPlanes`, `outputs.NetOutputs`), and the asynchronous pair
`submit(planes) -> handle` / `collect(handle) -> NetOutputs` (the default pair evaluates inside
`submit`; a backend that can work while its caller does something else, such as a GPU, overrides
both, and `is_async` tells which kind a backend is). Outputs are per position,
from the side to move's point of view, exactly lc0's backend contract: raw policy logits (not
softmaxed, not masked), Q = W - L (or tanh value), D, and moves-left (0 without an MLH head).

The batch contract (the one statement of it): `evaluate` and `submit` take a batch of any size. A
backend that runs at most so many positions in one pass (a GPU's device batch `max_batch`, the CPU's
chunk) cuts a larger batch into passes itself, with `PackedPlanes.chunks` (the one splitter); callers
never split for a backend's sake. `max_batch` is for callers that choose batch sizes: the search caps
its minibatch at it, the API encodes and evaluates a long list in pieces of it (so that memory stays
bounded), validate evaluates in the user's --batch; whoever cuts work for such a reason of its own
uses the same splitter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..encoding.outputs import NetOutputs
from ..encoding.packed import PackedPlanes
from ..net.description import NetDescription

__all__ = ["Backend", "NetOutputs"]  # NetOutputs: re-exported, it is what every backend returns


class Backend(ABC):
    """Evaluates batches of packed positions with one network."""

    name: str = "?"
    # evaluate() may run on several threads at once and needs no core of its own (each search thread
    # then evaluates its batches itself: lc0's random and trivial backends)
    concurrent: bool = False

    def __init__(self, net: NetDescription):
        self.net = net

    @property
    def max_batch(self) -> int:
        """Positions per pass (see the batch contract above)."""
        return 1024

    @abstractmethod
    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        """Evaluate a batch of any size (passes of at most max_batch are the backend's business)."""

    def submit(self, planes: PackedPlanes):
        """Start evaluating a batch of any size and return a handle for `collect` (each handle is
        collected once).

        Default: evaluates at once (synchronous); asynchronous backends override submit and collect."""
        return self.evaluate(planes)

    def collect(self, handle) -> NetOutputs:
        """The outputs of a submitted batch (waits for them if needed)."""
        return handle

    def compiled_eval(self):
        """A `backends.compiled_eval.CompiledEval` when the evaluation can run inside compiled code (the
        search's threads then never leave it: lc0's random and trivial), else None (the default)."""
        return None

    def compiled_lanes(self, count: int, rows: int):
        """One `CompiledEval` per search thread (`count` of them, batches of up to `rows` positions) when
        every thread's evaluation can run inside compiled code, else None. Default: `compiled_eval()`
        shared by all (a stateless kernel); a GPU backend gives each thread a network runner of its own (backends/rocm.py)."""
        entry = self.compiled_eval()
        return None if entry is None else [entry] * count

    def prepare(self, max_batch: int) -> None:
        """Get ready for batches of up to `max_batch` positions before a search needs them (a GPU
        backend plans, tunes and captures its batch sizes); the default does nothing."""

    @property
    def is_async(self) -> bool:
        """True when `submit` returns before the evaluation is done (the backend overrides submit)."""
        return type(self).submit is not Backend.submit

    def close(self) -> None:
        """Release device resources (no-op for the CPU)."""
