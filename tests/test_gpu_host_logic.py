"""The GPU layers' host-side logic, checked without a GPU: the runtime's status checker (out of memory
is a type), the rocm backend's precision choice by arch, its options (the gpus list, one-line
BackendErrors for bad values), its error mapping, a clean one-line BackendError where no GPU is usable,
the multi-GPU split, the launch observer and the one activation vocabulary."""

from __future__ import annotations

import pytest

from lc0_rocm.backends import rocm
from lc0_rocm.backends.options import bool_option, choice_option, gpu_list, int_option
from lc0_rocm.errors import BackendError, CompileError, GpuError, GpuOutOfMemoryError, NetFormatError
from lc0_rocm.gpu.nn.multi import split_sizes
from lc0_rocm.net.loader import load_net

from netpaths import WEIGHTS_DIR


def test_the_status_checker_types_out_of_memory():
    """hip-python's own status members (no GPU needed) through the runtime's one checker: running out of
    memory is GpuOutOfMemoryError (a BackendError), any other failure a plain GpuError."""
    pytest.importorskip("hip")
    from lc0_rocm.gpu.runtime.hiperr import check, hip_module

    hip, lt = hip_module("hip"), hip_module("hipblaslt")
    with pytest.raises(GpuOutOfMemoryError, match=r"^hipMalloc failed: hipErrorOutOfMemory \(2\)$") as e:
        check(hip.hipError_t.hipErrorOutOfMemory, "hipMalloc")
    assert isinstance(e.value, BackendError)
    with pytest.raises(GpuOutOfMemoryError, match="hipblasLtMatmul failed: HIPBLAS_STATUS_ALLOC_FAILED"):
        check(lt.hipblasStatus_t.HIPBLAS_STATUS_ALLOC_FAILED, "hipblasLtMatmul")
    for status in (hip.hipError_t.hipErrorLaunchFailure, lt.hipblasStatus_t.HIPBLAS_STATUS_EXECUTION_FAILED,
                   int(hip.hipError_t.hipErrorOutOfMemory)):  # a bare int names no library: not typed
        with pytest.raises(GpuError) as e:
            check(status, "call")
        assert type(e.value) is GpuError
    check(hip.hipError_t.hipSuccess, "hipMalloc")  # success raises nothing


def test_gpu_failures_keep_their_type_in_one_line():
    """The backend's wrapping says what failed and keeps the runtime's type (and attributes)."""
    oom = GpuOutOfMemoryError("out of GPU memory: cannot allocate 9.0 MiB (1.2 MiB free of 80.0 GiB)")
    got = rocm._failure("GPU evaluation failed", oom)
    assert got is oom and str(got) == ("GPU evaluation failed: out of GPU memory: cannot allocate 9.0 MiB "
                                       "(1.2 MiB free of 80.0 GiB)")
    compile_error = CompileError("hiprtcCompileProgram failed for mha.hip", log="line 1: error\nline 2")
    got = rocm._failure("cannot start the GPU backend", compile_error)
    assert type(got) is CompileError and got.log == "line 1: error\nline 2"
    assert str(got) == "cannot start the GPU backend: hiprtcCompileProgram failed for mha.hip"
    host = rocm._failure("GPU evaluation failed", MemoryError())
    assert type(host) is GpuOutOfMemoryError and "host memory ran out" in str(host)
    other = rocm._failure("GPU evaluation failed", NetFormatError("bad\nnet"))
    assert type(other) is BackendError and str(other) == "GPU evaluation failed: bad"


@pytest.mark.parametrize("arch,fast", [
    ("gfx90a", True), ("gfx942", True), ("gfx1030", True), ("gfx1100", True), ("gfx906", True),
    ("gfx803", False), ("gfx701", False),
    ("sm_90", True), ("sm_90a", True), ("sm_70", True), ("sm_62", True), ("sm_61", False), ("sm_53", True),
    ("sm_52", False), ("weird", False),
])
def test_fp16_choice_follows_lc0s_rule(arch, fast):
    assert rocm.fp16_is_fast(arch) is fast


def test_options_are_validated():
    assert int_option({"max_batch": "64"}, "max_batch", 1024) == 64
    assert int_option({}, "max_batch", 1024) == 1024
    for bad in ("0", "-3", "many"):
        with pytest.raises(BackendError, match="max_batch"):
            int_option({"max_batch": bad}, "max_batch", 1024)
    assert int_option({"gpu": "0"}, "gpu", 1, minimum=0) == 0
    assert bool_option({"mlh": "False"}, "mlh", True) is False
    with pytest.raises(BackendError, match="true or false"):
        bool_option({"mlh": "maybe"}, "mlh", True)
    assert choice_option({"attention": "T128"}, "attention", rocm.MHA_VARIANTS, "auto") == "t128"
    for gone in ("tiled", "warp"):  # removed experiments are refused by name, not ignored
        with pytest.raises(BackendError, match="attention="):
            choice_option({"attention": gone}, "attention", rocm.MHA_VARIANTS, "auto")


def test_no_gpu_is_a_one_line_backend_error():
    if rocm.gpu_available():
        pytest.skip("a GPU is usable here")
    net = load_net(WEIGHTS_DIR / "se-classical-small.pb.gz")
    with pytest.raises(BackendError) as e:
        rocm.RocmBackend(net, "fp32")
    assert str(e.value).startswith("cannot start the GPU backend") and "\n" not in str(e.value)
    with pytest.raises(BackendError, match="unknown precision"):
        rocm.RocmBackend(net, "fp8")


def test_conv_plan_option_is_checked_before_the_gpu_starts():
    net = load_net(WEIGHTS_DIR / "se-classical-small.pb.gz")
    with pytest.raises(BackendError, match="conv_plan='sideways': expected one of auto, fused, split, direct"):
        rocm.RocmBackend(net, "fp16", {"conv_plan": "sideways"})


@pytest.mark.parametrize("n,parts,want", [
    (1, 2, [1]), (2, 2, [1, 1]), (3, 2, [2, 1]), (1024, 2, [512, 512]), (7, 3, [3, 2, 2]), (2, 4, [1, 1]),
])
def test_split_sizes_is_near_equal_and_complete(n, parts, want):
    got = split_sizes(n, parts)
    assert got == want and sum(got) == n and max(got) - min(got) <= 1


def test_gpus_option():
    assert gpu_list({}) == [0]
    assert gpu_list({"gpu": "1"}) == [1]
    assert gpu_list({"gpus": "0:1"}) == [0, 1]
    assert gpu_list({"gpus": "0,1"}) == [0, 1]  # where the option string is not split on commas
    assert gpu_list({"gpus": "0:0"}) == [0, 0]
    for bad in ("", "x", "-1", "0:a"):
        with pytest.raises(BackendError, match="gpus"):
            gpu_list({"gpus": bad})


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
