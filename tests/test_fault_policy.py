"""The engine's GPU fault policy, the parts that need no GPU: what counts as running out of memory and
how the device batch is capped (tests/gpu/test_engine_faults.py makes the GPU really run out)."""

from __future__ import annotations

import numpy as np
import pytest

from lc0_rocm.errors import BackendError, GpuError, NetFormatError, is_out_of_memory
from lc0_rocm.backends.rocm import DEFAULT_MAX_BATCH
from lc0_rocm.engine import max_batch_option as _max_batch_option, with_max_batch as _with_max_batch


def test_out_of_memory_is_recognised_from_real_errors():
    with pytest.raises(MemoryError) as host:
        np.empty(1 << 62, dtype=np.uint8)  # numpy's own MemoryError
    assert is_out_of_memory(host.value)
    # the messages the GPU layers write (hip-python's status name; the runtime's allocation failure;
    # the backend's wrapper around both; hipBLASLt's status)
    assert is_out_of_memory(GpuError("hipMalloc failed: hipErrorOutOfMemory (2)"))
    assert is_out_of_memory(BackendError("GPU evaluation failed: out of GPU memory: cannot allocate 9.0 MiB "
                                         "(1.2 MiB free of 80.0 GiB)"))
    assert is_out_of_memory(GpuError("hipblasLtMatmul failed: HIPBLAS_STATUS_ALLOC_FAILED (3)"))
    assert not is_out_of_memory(GpuError("hipModuleLaunchKernel failed: hipErrorLaunchFailure (719)"))
    assert not is_out_of_memory(NetFormatError("out of memory"))  # not a backend failure
    assert not is_out_of_memory(ValueError("hipErrorOutOfMemory"))


def test_the_device_batch_cap_is_the_last_max_batch_option():
    from lc0_rocm.backends.factory import parse_backend_options

    assert _with_max_batch("", None) == ""
    assert _with_max_batch("gpus=0,1", None) == "gpus=0,1"
    capped = _with_max_batch("gpus=0,1,max_batch=2048", 512)
    assert parse_backend_options(capped) == {"gpus": "0,1", "max_batch": "512"}  # the parser's last key wins
    assert parse_backend_options(_with_max_batch("", 64)) == {"max_batch": "64"}
    assert _max_batch_option("") == DEFAULT_MAX_BATCH
    assert _max_batch_option("gpus=0,1,max_batch=300") == 300
    assert _max_batch_option("max_batch=0") == DEFAULT_MAX_BATCH  # invalid: the backend refuses it anyway

