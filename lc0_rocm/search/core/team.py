"""A search thread's task workers (lc0's TaskWorkers): helper threads that share its batch's row-wise work.

lc0 gives each search worker task workers that take parts of its gathering (`src/search/classic/
search.cc`: `SearchWorker::RunTasks`, picking in subtrees and extending the picked nodes). Here one
search thread (the leader, search/core/cycle.py's `run_lane`) still picks alone, without another
thread's visits in flight to collide with, and hands the work that is one row's own to its helpers:
each pick's first visits (`shared_worker.extend_range`: position, legal moves, cache probe, planes) and
the batch's rows (policy indices, the backend's compiled kernel, expansion). A helper (`cycle.run_helper`)
takes part in every job the leader posts until the leader's `quit`.

The team word `tm` (int64, TM_SIZE, its fields a cache line apart so that spinning helpers, claims and
finishes do not take each other's lines), its contract:

| field | written by | guard |
|---|---|---|
| `TM_HELPERS` | Python, before the threads start | constant while a round runs |
| `TM_JOB`, `TM_TOTAL`, `TM_ARG` | the leader in `post`, while no helper works (after `finish`) | published by the atomic increment of `TM_EPOCH` that follows them |
| `TM_EPOCH` | the leader (`post`) | atomic; helpers spin on it (`wait_job`) |
| `TM_NEXT` | every member (`claim`: the next CHUNK items of the job) | atomic `fetch_add`; reset by `post` |
| `TM_DONE` | each helper once a job (`done`) | atomic; the leader's `finish` waits for TM_HELPERS of them |

Every helper takes part in every job (it spins between them), so a job is over when every helper has
said `done` and the leader's own claims are finished: items are claimed in chunks from one counter, and
each item's writes (a batch row, a pick entry's extension) are its own. The leader posts the next job
only after `finish`, so no helper can read one job's arguments for another's. Nothing here allocates or
raises (lc0_rocm/jit.py), so no member can leave another waiting for a `done` that never comes.
"""

from __future__ import annotations

import numpy as np

from ...jit import jit
from .spinlock import fetch_add, load_word, pause, store_word

LINE = 8  # int64 words a cache line
TM_HELPERS, TM_EPOCH, TM_NEXT, TM_DONE, TM_JOB = 0, LINE, 2 * LINE, 3 * LINE, 4 * LINE
TM_TOTAL, TM_ARG = TM_JOB + 1, TM_JOB + 2  # the job's items, its argument (same line as TM_JOB)
TM_SIZE = 5 * LINE
J_QUIT, J_EXTEND, J_ROWS, J_EXPAND = 0, 1, 2, 3  # jobs (cycle.run_helper does them)


def new_team(helpers: int) -> np.ndarray:
    """A team word for a leader with `helpers` helper threads (0: a thread alone, nothing posted)."""
    tm = np.zeros(TM_SIZE, np.int64)
    tm[TM_HELPERS] = helpers
    return tm


@jit
def post(tm, job, total, arg):
    """The leader: job `job` of `total` items (argument `arg`) for every helper."""
    tm[TM_JOB] = job
    tm[TM_TOTAL] = total
    tm[TM_ARG] = arg
    store_word(tm, TM_NEXT, 0)
    store_word(tm, TM_DONE, 0)
    fetch_add(tm, TM_EPOCH, 1)


@jit
def claim(tm, chunk):
    """The first of the next `chunk` items of the current job (>= TM_TOTAL: none left)."""
    return fetch_add(tm, TM_NEXT, chunk)


@jit
def done(tm):
    """A helper has finished its claims of the current job."""
    fetch_add(tm, TM_DONE, 1)


@jit
def finish(tm):
    """The leader, after its own claims: waits until every helper is done with the job."""
    helpers = tm[TM_HELPERS]
    rounds = 0
    while load_word(tm, TM_DONE) < helpers:
        rounds = pause(rounds, False)


@jit
def wait_job(tm, seen):
    """A helper: waits for the job after epoch `seen`; returns its epoch."""
    rounds = 0
    while True:
        e = load_word(tm, TM_EPOCH)
        if e != seen:
            return e
        rounds = pause(rounds, False)


@jit
def quit_team(tm):
    """The leader, leaving its compiled call: its helpers return too."""
    if tm[TM_HELPERS] > 0:
        post(tm, J_QUIT, 0, 0)


@jit
def stand_in(tm, seen):
    """A member whose own call failed: done to every job after epoch `seen`, claiming no item (the
    others claim them all), until the leader's quit."""
    while True:
        seen = wait_job(tm, seen)
        if tm[TM_JOB] == J_QUIT:
            return
        done(tm)


def epoch(tm: np.ndarray) -> int:
    """The epoch a helper starts from (read before the leader's call that posts the next job)."""
    return int(tm[TM_EPOCH])
