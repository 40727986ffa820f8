"""Atomic operations and a readers/writer spin lock for compiled code, for several search threads on one tree.

lc0's search threads pick under a shared lock on the nodes and back up under the exclusive one
(`src/search/classic/search.cc`: `nodes_mutex_`), with visits in flight changed atomically. numba has
no atomics on the CPU, so `cas` and `fetch_add` emit LLVM's `cmpxchg` and `atomicrmw` on an element of
an int32/int64 array themselves (numba `@intrinsic`; cached like any compiled function). The lock is
one int64 word: a count of readers (`lock_shared`), a writer bit (`lock`) and a bit by which a waiting
writer keeps new readers out. A waiting thread spins, then yields its core (libc's `sched_yield`) so
that a holder sharing the core gets to run, and a waiting reader after a while sleeps (libc's `usleep`;
`pause`).
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

from ...jit import jit

SPINS_BEFORE_YIELD = 64
YIELDS_BEFORE_SLEEP = 16  # a legitimate wait (a pick, a batch's backup) is over well before: < 10 µs
SLEEP_US = 20


def element_pointer(context, builder, signature, args):
    """Pointer to args[0][args[1]] (the index cast to intp), for an intrinsic's codegen (also
    search/core/prefetch.py's)."""
    aryty = signature.args[0]
    array = make_array(aryty)(context, builder, args[0])
    idx = context.cast(builder, args[1], signature.args[1], types.intp)
    return cgutils.get_item_pointer(context, builder, aryty, array, [idx], wraparound=False)


def _int_array(arr):
    return isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype in (types.int32, types.int64)


@intrinsic
def cas(typingctx, arr, idx, expected, new):
    """Atomically: old = arr[idx]; if old == expected: arr[idx] = new. Returns old (int32/int64 arrays)."""
    if not _int_array(arr):
        return None
    dt = arr.dtype
    sig = dt(arr, idx, expected, new)

    def codegen(context, builder, signature, args):
        ptr = element_pointer(context, builder, signature, args)
        exp = context.cast(builder, args[2], signature.args[2], dt)
        val = context.cast(builder, args[3], signature.args[3], dt)
        pair = builder.cmpxchg(ptr, exp, val, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 0)

    return sig, codegen


@intrinsic
def fetch_add(typingctx, arr, idx, value):
    """Atomically arr[idx] += value; returns the value before (int32/int64 arrays)."""
    if not _int_array(arr):
        return None
    dt = arr.dtype
    sig = dt(arr, idx, value)

    def codegen(context, builder, signature, args):
        ptr = element_pointer(context, builder, signature, args)
        val = context.cast(builder, args[2], signature.args[2], dt)
        return builder.atomic_rmw("add", ptr, val, "seq_cst")

    return sig, codegen


@intrinsic
def store_word(typingctx, arr, idx, value):
    """Atomically arr[idx] = value, ordered after every earlier write (int64 arrays)."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64 and arr.ndim == 1):
        return None
    sig = types.void(arr, idx, value)

    def codegen(context, builder, signature, args):
        ptr = element_pointer(context, builder, signature, args)
        val = context.cast(builder, args[2], signature.args[2], types.int64)
        builder.atomic_rmw("xchg", ptr, val, "seq_cst")
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def load_word(typingctx, arr, idx):
    """arr[idx] read atomically (int64 arrays): a spinning reader sees the holder's release. A plain
    load (x86: a mov), so that spinning does not take the word's line from its holder."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64 and arr.ndim == 1):
        return None
    sig = types.int64(arr, idx)

    def codegen(context, builder, signature, args):
        ptr = element_pointer(context, builder, signature, args)
        return builder.load_atomic(ptr, "seq_cst", 8)

    return sig, codegen


@intrinsic
def _sleep_us(typingctx, us):
    """libc's usleep(us): off the core for a while (a lock holder that lost its core gets one)."""
    if not isinstance(us, types.Integer):
        return None
    sig = types.int32(us)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "usleep")
        return builder.call(fn, [context.cast(builder, args[0], signature.args[0], types.uint32)])

    return sig, codegen


_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


@intrinsic
def _cpu_relax(typingctx):
    """x86's `pause` (LLVM's llvm.x86.sse2.pause) in a spin: the loop leaves the sibling hyperthread
    its share and each round lasts tens of cycles, not one; nothing elsewhere."""
    sig = types.void()

    def codegen(context, builder, signature, args):
        if _X86:
            fnty = ir.FunctionType(ir.VoidType(), [])
            builder.call(cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse2.pause"), [])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _yield_core(typingctx):
    """libc's sched_yield(): give the core to another runnable thread."""
    sig = types.int32()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(32), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "sched_yield")
        return builder.call(fn, [])

    return sig, codegen


_WRITER = 1 << 40  # held by a writer
_WAITING = 1 << 41  # a writer waits: no new reader enters
_READERS = _WRITER - 1


@jit
def pause(rounds, may_sleep):
    """Round `rounds` of one wait (from 0); returns the next. Every SPINS_BEFORE_YIELD rounds the core
    goes to another thread; once the wait has lasted YIELDS_BEFORE_SLEEP such yields, a waiter that
    `may_sleep` sleeps SLEEP_US instead: a holder preempted on a busy host (other processes, or more
    threads than cores) gets a core sooner from an idle one than from a spinner's yields (docs/perf.md:
    such waits took ~1.5 ms each on the loaded 2-core VM, a fifth of two threads' time). Only readers
    sleep: a waiting writer keeps every new reader out (_WAITING), so it must take the lock the moment it
    is free (writers that slept too made 8 threads on a 32-core host wait 230k cycles a wait, 62 % of
    their time, docs/perf.md)."""
    rounds += 1
    _cpu_relax()
    if rounds % SPINS_BEFORE_YIELD == 0:
        if may_sleep and rounds >= SPINS_BEFORE_YIELD * YIELDS_BEFORE_SLEEP:
            _sleep_us(SLEEP_US)
        else:
            _yield_core()
    return rounds


@jit
def lock(word):
    """Take `word[0]` exclusively (lc0's exclusive nodes lock: backups): waits for the readers inside
    and keeps new ones out meanwhile. Returns the rounds it waited (search/core/counters.py)."""
    rounds = 0
    while True:
        v = load_word(word, 0)
        if v & _WRITER:
            rounds = pause(rounds, False)
        elif v & _READERS:
            if not v & _WAITING:
                cas(word, 0, v, v | _WAITING)
            rounds = pause(rounds, False)
        elif cas(word, 0, v, _WRITER) == v:  # no reader: free, or only a writer waiting (maybe this one)
            return rounds


@jit
def unlock(word):
    store_word(word, 0, 0)


@jit
def lock_shared(word):
    """Take `word[0]` shared (lc0's shared nodes lock; here Python's readers of the tree: picks take
    none, search/core/shared_worker.py), once no writer holds or waits for it.
    Returns the rounds it waited."""
    rounds = 0
    while True:
        v = load_word(word, 0)
        if v & (_WRITER | _WAITING):
            rounds = pause(rounds, True)
        elif cas(word, 0, v, v + 1) == v:
            return rounds


@jit
def unlock_shared(word):
    fetch_add(word, 0, -1)


@jit
def yield_core():
    """Give the core to another thread (a search thread that found nothing to pick)."""
    _yield_core()


def new_lock() -> np.ndarray:
    """A free lock word."""
    return np.zeros(1, dtype=np.int64)
