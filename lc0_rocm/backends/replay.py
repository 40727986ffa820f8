"""Recording and replaying network outputs: `RecordingBackend` wraps a real backend and keeps every
batch's outputs by its input; `ReplayBackend` answers each batch with its recording, so that a
deterministic search (which asks for exactly the recorded batches) runs with no network work at all.
tools/search_bench.py measures the search's own cost this way; tests drive searches with it.

A recording is a dict {batch digest: NetOutputs}; `save_recording` / `load_recording` keep it in an
.npz file.
"""

from __future__ import annotations

import time

import numpy as np

from ..encoding.outputs import FIELDS, NetOutputs
from ..encoding.packed import PackedPlanes
from .base import Backend


def digest(planes: PackedPlanes) -> bytes:
    """The key of a batch: its inputs, byte for byte."""
    return planes.masks.tobytes() + planes.values.tobytes() + planes.transforms.tobytes()


class RecordingBackend(Backend):
    """The real backend (synchronous evaluate), keeping every batch's planes and outputs."""

    def __init__(self, inner: Backend):
        super().__init__(inner.net)
        self.inner = inner
        self.name = inner.name
        self.batches: dict[bytes, NetOutputs] = {}

    @property
    def max_batch(self) -> int:
        return self.inner.max_batch

    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        out = self.inner.evaluate(planes).astype(np.float32, copy=True)
        self.batches[digest(planes)] = out
        return out


class ReplayBackend(Backend):
    """Answers each batch with its recorded outputs, asynchronously like a GPU backend (submit looks the
    batch up on the caller's thread, collect returns it): the search does all its own work and nothing
    else. An unknown batch (never expected) gets the first recorded rows and is counted in `misses`;
    `seconds` sums the time spent looking batches up."""

    name = "replay"

    def __init__(self, net, batches: dict[bytes, NetOutputs], max_batch: int):
        super().__init__(net)
        self.batches = batches
        self._max_batch = max_batch
        self.misses = 0
        self.seconds = 0.0
        self._any = next(iter(batches.values()))

    @property
    def max_batch(self) -> int:
        return self._max_batch

    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        return self.collect(self.submit(planes))

    def submit(self, planes: PackedPlanes):
        t0 = time.perf_counter()
        out = self.batches.get(digest(planes))
        if out is None or len(out) != len(planes):
            self.misses += 1
            out = self._any.take(np.arange(len(planes)) % len(self._any))
        self.seconds += time.perf_counter() - t0
        return out

    def collect(self, handle) -> NetOutputs:
        return handle


def save_recording(path: str, batches: dict[bytes, NetOutputs]) -> None:
    arrays = {}
    for i, (key, out) in enumerate(batches.items()):
        arrays[f"k{i}"] = np.frombuffer(key, dtype=np.uint8)
        for field in FIELDS:
            v = getattr(out, field)
            if v is not None:
                arrays[f"{field}{i}"] = v
    np.savez_compressed(path, count=np.array(len(batches)), **arrays)


def load_recording(path: str) -> dict[bytes, NetOutputs]:
    z = np.load(path)
    out = {}
    for i in range(int(z["count"])):
        get = lambda f: z[f"{f}{i}"] if f"{f}{i}" in z.files else None  # noqa: E731
        out[z[f"k{i}"].tobytes()] = NetOutputs(**{f: get(f) for f in FIELDS})
    return out
