"""Run a test's independent slow steps (an lc0 search beside ours, two CLI runs) at once, each in a
thread: the test waits for the slower alone. Most such steps wait on a child process, so two of
them use both cores."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable


def side_by_side(*steps: Callable[[], object]) -> list:
    """The results of the zero-argument `steps`, run at once, in order; when one raised, its error
    after every step has ended."""
    with ThreadPoolExecutor(len(steps)) as pool:
        futures = [pool.submit(step) for step in steps]
    return [f.result() for f in futures]
