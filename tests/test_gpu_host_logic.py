"""Host-side logic of the GPU backend that needs no GPU: the multi-GPU split, the gpus option, and the
backend's option validation (one-line BackendError for bad values)."""

from __future__ import annotations

import pytest

from lc0_rocm.backends import rocm
from lc0_rocm.errors import BackendError
from lc0_rocm.gpu.multi import split_sizes


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
