"""Launch observers: the runtime's hook for profilers, so that no tool patches the runtime.

    with observe(launches.append):   # every kernel launch and hipBLASLt matmul issued inside the block
        network.evaluate(planes)     # is still issued, and also reported as a `Launch` (a graph's replay
                                     # issues no launch: observe a network built with graphs=False)

A `Launch` names the work (`kind` 'kernel' or 'gemm', `name`, the `target` Kernel or GEMM plan, its
arguments) and can issue it again on any stream with `replay(stream)`, which reports nothing (a
profiler times each recorded launch alone). With no observer the launch paths pay one truth test of
`OBSERVERS`.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

OBSERVERS: list[Callable[["Launch"], None]] = []


@dataclass(frozen=True)
class Launch:
    kind: str  # 'kernel' or 'gemm'
    name: str  # the kernel's function name, or 'gemm m x n x k dtype act'
    target: object  # the Kernel, or the GEMM plan (m, n, k, dtype, act, has_bias attributes)
    args: tuple  # kernel: the kernel arguments; gemm: (x, w, y, bias) buffers
    grid: tuple = ()  # kernel only
    block: tuple = ()  # kernel only
    shared: int = 0  # kernel only: dynamic shared bytes
    replay: Callable[[object], None] = field(default=None, repr=False, compare=False)  # replay(stream)


def notify(launch: Launch) -> None:
    for fn in list(OBSERVERS):
        fn(launch)


@contextmanager
def observe(fn: Callable[[Launch], None]) -> Iterator[None]:
    """Call fn(launch) for every launch issued in this block (in this process, on any thread)."""
    OBSERVERS.append(fn)
    try:
        yield
    finally:
        OBSERVERS.remove(fn)
