"""Host-side logic of the GPU backend that needs no GPU: the multi-GPU split, the gpus option, and the
backend's option validation (one-line BackendError for bad values)."""

from __future__ import annotations

import pytest

from lc0_rocm.backends import rocm
from lc0_rocm.errors import BackendError
from lc0_rocm.gpu.nn.multi import split_sizes


@pytest.mark.parametrize("n,parts,want", [
    (1, 2, [1]), (2, 2, [1, 1]), (3, 2, [2, 1]), (1024, 2, [512, 512]), (7, 3, [3, 2, 2]), (2, 4, [1, 1]),
])
def test_split_sizes_is_near_equal_and_complete(n, parts, want):
    got = split_sizes(n, parts)
    assert got == want and sum(got) == n and max(got) - min(got) <= 1


def test_gpus_option():
    assert rocm._gpu_list({}) == [0]
    assert rocm._gpu_list({"gpu": "1"}) == [1]
    assert rocm._gpu_list({"gpus": "0:1"}) == [0, 1]
    assert rocm._gpu_list({"gpus": "0,1"}) == [0, 1]  # where the option string is not split on commas
    assert rocm._gpu_list({"gpus": "0:0"}) == [0, 0]
    for bad in ("", "x", "-1", "0:a"):
        with pytest.raises(BackendError, match="gpus"):
            rocm._gpu_list({"gpus": bad})


def test_launch_observer_sees_and_replays_launches(monkeypatch):
    """The runtime's profiling hook: observers see each launch inside `observe` (and only there), and a
    launch's replay issues the same work on another stream without being reported again."""
    import numpy as np

    from lc0_rocm.gpu.runtime import kernel, observe

    issued = []
    monkeypatch.setattr(kernel.Kernel, "_launch",
                        lambda self, grid, block, packed, shared, s: issued.append((self.name, grid, block, s)))
    k = kernel.Kernel(None, "fake_f16", None)
    seen = []
    with observe.observe(seen.append):
        k.launch(2, 64, (np.int32(3), kernel.ptr(16)), stream="s1")
    k.launch(1, 32, (), stream="s2")
    assert observe.OBSERVERS == []
    assert [(op.kind, op.name, op.grid, op.block) for op in seen] == [("kernel", "fake_f16", (2, 1, 1), (64, 1, 1))]
    assert seen[0].args[0] == 3 and seen[0].target is k
    seen[0].replay("s3")
    assert issued == [("fake_f16", (2, 1, 1), (64, 1, 1), "s1"), ("fake_f16", (1, 1, 1), (32, 1, 1), "s2"),
                      ("fake_f16", (2, 1, 1), (64, 1, 1), "s3")]
    assert len(seen) == 1


def test_one_activation_vocabulary():
    """The net description's activation names, the numpy twins and the kernels' codes are one set, and
    the codes are common.h's LC0_ACT_* values."""
    import re

    from lc0_rocm.activations import ACTIVATION_FUNCTIONS
    from lc0_rocm.gpu.nn.kernels import ACT_CODES
    from lc0_rocm.gpu.runtime.compiler import KERNEL_DIR
    from lc0_rocm.net.description import ACTIVATIONS

    assert set(ACT_CODES) == set(ACTIVATIONS) == set(ACTIVATION_FUNCTIONS)
    defines = dict(re.findall(r"#define LC0_ACT_(\w+) (\d+)", (KERNEL_DIR / "common.h").read_text()))
    assert {name.upper(): str(code) for name, code in ACT_CODES.items()} == defines
