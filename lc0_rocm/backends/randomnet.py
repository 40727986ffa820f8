"""lc0's `random` backend: outputs that are a hash of the input planes, with no network at all
(`src/neural/backends/network_random.cc: RandomNetworkComputation`), bit for bit.

It exists to measure the search alone, on any machine, beside `lc0 --backend=random`: the same
inputs give the same Q, D and policy logits as lc0's. Per position the 112 planes (mask, then the
float bits of the value) are chained into a hash with lc0's `HashCat` (`src/utils/hashcat.h`), seeded
with `seed`; Q = (hash mod 200000 - 100000) / 100000, D = (1 - |Q|) * (HashCat(hash, 1234) mod
10000) / 10000, the logit of policy index i = (HashCat(hash, i) mod 10000) * 3 / 10000. Options as
lc0's: `seed` (0), `uniform` (false: true gives Q = D = 0 and equal logits), `delay` (ms slept per
batch, 0), `input_mode` (the input format, default 1 = classical 112 planes, whatever the net's).
The outputs are WDL without moves-left, as lc0's network declares. The hashing is compiled (backends/compiled_eval.py,
GIL released): here all 1858 logits of every position, some 3-4 µs a position on one core; the search
threads' compiled cycle asks only for the legal moves' logits, as lc0's search does.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..encoding.outputs import POLICY_SIZE, NetOutputs
from ..encoding.packed import PackedPlanes
from ..encoding.planes import INPUT_FORMATS
from ..errors import BackendError
from ..net.description import NetDescription
from .base import Backend
from .compiled_eval import KIND_RANDOM, CompiledEval, every_index, policy_hashes, random_fill
from .options import bool_option, int_option


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
        self._hm = policy_hashes()

    def compiled_eval(self):
        """The compiled kernel for the search's threads; none with a `delay` (a sleep is Python's)."""
        if self.delay_ms:
            return None
        ints = np.array([self.seed, int(self.uniform)], np.int64)
        row = np.ones(POLICY_SIZE, np.float32) if self.uniform else None
        return CompiledEval(KIND_RANDOM, ints, self._hm, np.zeros(0, np.float32), row)

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
            want, nwant = every_index(n)
            random_fill(np.ascontiguousarray(planes.masks, np.uint64), np.ascontiguousarray(planes.values, np.float32),
                        0, n, np.uint64(self.seed), self._hm, want, nwant, policy, q, d)
        wdl = np.stack([(1 + q - d) / 2, d, (1 - q - d) / 2], axis=1).astype(np.float32)
        return NetOutputs(policy=policy, wdl=wdl, q=q, d=d, mlh=None)
