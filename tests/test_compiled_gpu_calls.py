"""The compiled GPU batch cycle's host side, without a GPU: the C-call intrinsic against libc (the same
`inttoptr` + call that reaches the HIP runtime), a batch whose run size has no graphs (nothing queued),
and a failed call's status turned into the runtime's typed error (tests/gpu/test_compiled_lanes_gpu.py
runs the round trip itself on the device)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from numba import njit

from lc0_rocm.backends import gpu_round_trip as cb
from lc0_rocm.ccall import ccall


@njit(nogil=True)
def _three(fn, a, b, n):
    return ccall(fn, a, b, n)


@njit(nogil=True)
def _one_int(fn, x):
    return ccall(fn, np.int32(x))


def _libc(name: str) -> int:
    return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value


def test_ccall_calls_the_c_function_at_an_address():
    a = np.frombuffer(b"search thread", np.uint8).copy()
    b = np.frombuffer(b"search threat", np.uint8).copy()
    memcmp = _libc("memcmp")
    assert _three(memcmp, a.ctypes.data, b.ctypes.data, np.int64(12)) == 0
    assert _three(memcmp, a.ctypes.data, b.ctypes.data, np.int64(13)) == ord("d") - ord("t")
    assert _one_int(_libc("abs"), -41) == 41  # an int32 argument goes as a C int


def _lane(max_batch: int) -> np.ndarray:
    lane = np.zeros(cb.lane_size(max_batch), np.int64)
    lane[cb.L_MAX_BATCH] = max_batch
    for n in range(1, max_batch + 1):
        lane[cb.L_RUN_SIZE + n] = n
    return lane


def test_a_run_size_without_graphs_queues_nothing():
    lane = _lane(8)  # every entry point 0: any call would crash, so none may happen
    pin_in = np.full(8 * cb.IN_WORDS, 7, np.uint64)
    pin_out = np.full(8 * (1858 + cb.HEADS), 3, np.float32)
    masks = np.ones((8, 112), np.uint64)
    values = np.ones((8, 112), np.float32)
    q, d, m = (np.full(8, 5, np.float32) for _ in range(3))
    assert cb.round_trip(lane, pin_in, pin_out, masks, values, 3, q, d, m) == cb.NO_GRAPH
    assert (pin_in == 7).all() and (pin_out == 3).all() and (q == 5).all()
    at = cb.graphs_at(lane)
    lane[at + 2 * 3] = 1  # graph A alone is not enough
    assert cb.round_trip(lane, pin_in, pin_out, masks, values, 3, q, d, m) == cb.NO_GRAPH


def test_a_failed_call_is_the_runtimes_typed_error():
    pytest.importorskip("hip", reason="hip-python (lc0-rocm[rocm]) names the statuses")
    from lc0_rocm.errors import GpuError, GpuOutOfMemoryError
    from lc0_rocm.backends.gpu_lanes import call_error

    oom = call_error(2, cb.C_H2D)  # hipErrorOutOfMemory
    assert type(oom) is GpuOutOfMemoryError and "hipMemcpyHtoDAsync" in str(oom)
    bad = call_error(400, cb.C_RECORD)  # hipErrorInvalidHandle
    assert type(bad) is GpuError and "hipEventRecord" in str(bad) and "400" in str(bad)
    assert type(call_error(123456, 99)) is GpuError  # a status hip-python has no name for


def test_the_policy_is_gathered_in_the_cycles_compact_form():
    rng = np.random.default_rng(3)
    rows = rng.standard_normal(4 * 1858).astype(np.float32)  # a batch of 4 run at size 4, as the GPU leaves it
    want = rng.integers(0, 1858, size=(4, 30)).astype(np.int32)
    nwant = np.array([30, 0, 7, -1], np.int32)
    policy = np.full((4, 1858), 9.0, np.float32)
    cb.gather_policy(rows, 4, want, nwant, policy)
    full = rows.reshape(4, 1858)
    assert np.array_equal(policy[0, :30], full[0, want[0]]) and (policy[0, 30:] == 9).all()
    assert (policy[1] == 9).all()
    assert np.array_equal(policy[2, :7], full[2, want[2, :7]]) and (policy[2, 7:] == 9).all()
    assert np.array_equal(policy[3], full[3])  # every index where nwant < 0
