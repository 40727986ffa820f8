"""lc0's `random` backend: outputs that are a hash of the input planes, with no network at all
(`src/neural/backends/network_random.cc: RandomNetworkComputation`), bit for bit.

It exists to measure the search alone, on any machine, beside `lc0 --backend=random`: the same
inputs give the same Q, D and policy logits as lc0's. Per position the 112 planes (mask, then the
float bits of the value) are chained into a hash with lc0's `HashCat` (`src/utils/hashcat.h`), seeded
with `seed`; Q = (hash mod 200000 - 100000) / 100000, D = (1 - |Q|) * (HashCat(hash, 1234) mod
10000) / 10000, the logit of policy index i = (HashCat(hash, i) mod 10000) * 3 / 10000. Options as
lc0's: `seed` (0), `uniform` (false: true gives Q = D = 0 and equal logits), `delay` (ms slept per
batch, 0), `input_mode` (the input format, default 1 = classical 112 planes, whatever the net's).
The outputs are WDL without moves-left, as lc0's network declares. The hashing is compiled (lc0_rocm/jit.py,
GIL released): all 1858 logits of every position, some 3-4 µs a position on one core (lc0 hashes only
the legal moves' logits, when its search asks for them).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..encoding.outputs import POLICY_SIZE, NetOutputs
from ..encoding.packed import PackedPlanes
from ..encoding.planes import INPUT_FORMATS
from ..errors import BackendError
from ..jit import jit, jit_alloc
from ..net.description import NetDescription
from .base import Backend
from .options import bool_option, int_option

_K = np.uint64(0x299799ADF0D95DEF)
_M1, _A1 = np.uint64(0xFAD0D7F2FBB059F1), np.uint64(0xBAAD41CDCB839961)
_M2, _A2 = np.uint64(0x7ACEC0050BF82F43), np.uint64(0xD571B3A92B1B2755)


@jit
def _hash(v):
    """lc0's Hash (utils/hashcat.h)."""
    return _M1 * (v + _A1) + _M2 * ((v >> np.uint64(31)) + _A2)


@jit
def _pair(a, b):
    """lc0's HashCat({a, b}) = HashCat(HashCat(0, a), b)."""
    h = _K + _hash(a)
    return h ^ (_K + _hash(b) + (h << np.uint64(6)) + (h >> np.uint64(2)))


_LOW32, _S32 = np.uint64(0xFFFFFFFF), np.uint64(32)
_DIV10000 = np.uint64(0x346DC5D63886594B)  # x // 10000 = mulhi(x, this) >> 11, for every uint64 x


@jit(inline="always")
def _mod10000(x):
    """x % 10000 by a multiply-high (numba's 64-bit modulo costs a division, ~1.3x slower here)."""
    a_lo, a_hi = x & _LOW32, x >> _S32
    b_lo, b_hi = _DIV10000 & _LOW32, _DIV10000 >> _S32
    p1, p2 = a_lo * b_hi, a_hi * b_lo
    mid = ((a_lo * b_lo) >> _S32) + (p1 & _LOW32) + (p2 & _LOW32)
    hi = a_hi * b_hi + (p1 >> _S32) + (p2 >> _S32) + (mid >> _S32)
    return x - (hi >> np.uint64(11)) * np.uint64(10000)


@jit_alloc
def random_outputs(masks, values, seed, policy, q, d):
    """Fill policy [n, 1858], q [n], d [n] (float32) for the planes masks/values [n, 112]."""
    bits = values.view(np.uint32)
    a = np.float32(3.0) / np.float32(10000.0)
    hm = np.empty(POLICY_SIZE, np.uint64)
    for i in range(POLICY_SIZE):
        hm[i] = _K + _hash(np.uint64(i))
    for j in range(masks.shape[0]):
        h = np.uint64(seed)
        for p in range(masks.shape[1]):
            h = _pair(h, masks[j, p])
            h = _pair(h, np.uint64(bits[j, p]))
        qj = np.float32((np.int64(h % np.uint64(200000)) - 100000) / 100000.0)
        q[j] = qj
        max_d = np.float32(1.0) - abs(qj)
        x = _pair(h, np.uint64(1234)) % np.uint64(10000)
        d[j] = np.float32(np.float64(max_d * np.float32(x)) / 10000.0)
        g = _K + _hash(h)
        c = (g << np.uint64(6)) + (g >> np.uint64(2))
        for i in range(POLICY_SIZE):
            policy[j, i] = np.float32(np.int32(_mod10000(g ^ (hm[i] + c)))) * a


def output_net(net: NetDescription, input_format: int, wdl: bool) -> NetDescription:
    """`net` as these backends present it to the search: lc0's network capabilities (the input format
    of `input_mode`, WDL or a plain value, no moves-left), whatever the weights file was."""
    return dataclasses.replace(net, input_format=input_format, value=dataclasses.replace(net.value, wdl=wdl),
                               moves_left=None)


def input_mode(opts: dict[str, str]) -> int:
    """The `input_mode` option (lc0's InputFormat number), default 1."""
    fmt = int_option(opts, "input_mode", 1)
    if fmt not in INPUT_FORMATS:
        raise BackendError(f"backend option input_mode={fmt}: expected one of {', '.join(map(str, INPUT_FORMATS))}")
    return fmt


class RandomBackend(Backend):
    """lc0's `random` backend (see the module docstring); `net` gives only what the engine reports."""

    concurrent = True  # compiled, GIL released, no state: each search thread evaluates its own batches

    name = "random"

    def __init__(self, net: NetDescription, opts: dict[str, str]):
        super().__init__(output_net(net, input_mode(opts), wdl=True))
        self.seed = int_option(opts, "seed", 0, minimum=0)
        self.uniform = bool_option(opts, "uniform", False)
        self.delay_ms = int_option(opts, "delay", 0, minimum=0)

    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        n = len(planes)
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000.0)
        policy = np.empty((n, POLICY_SIZE), np.float32)
        q = np.empty(n, np.float32)
        d = np.empty(n, np.float32)
        if self.uniform:
            policy.fill(1.0)
            q.fill(0.0)
            d.fill(0.0)
        elif n:
            random_outputs(np.ascontiguousarray(planes.masks, np.uint64),
                           np.ascontiguousarray(planes.values, np.float32), self.seed, policy, q, d)
        wdl = np.stack([(1 + q - d) / 2, d, (1 - q - d) / 2], axis=1).astype(np.float32)
        return NetOutputs(policy=policy, wdl=wdl, q=q, d=d, mlh=None)
