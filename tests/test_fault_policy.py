"""The engine's GPU fault policy, the parts that need no GPU: running out of GPU memory is a type (the
runtime's status checker raises it for hip's own status), and the engine reopens the backend with half
the device batch, given as a number, not as text (tests/gpu/test_engine_faults.py makes the GPU really
run out)."""

from __future__ import annotations

import pytest

from lc0_rocm.backends.rocm import DEFAULT_MAX_BATCH
from lc0_rocm.errors import BackendError, GpuError, GpuOutOfMemoryError
from lc0_rocm.engine import MIN_GPU_BATCH, Engine, max_batch_option as _max_batch_option

pytest.importorskip("hip")  # hip-python (a test dependency): its status enums, no GPU needed
from lc0_rocm.gpu.runtime.hiperr import hip_module  # noqa: E402

hip = hip_module("hip")


def _raised(status) -> GpuError:
    """The error the runtime's one status checker raises for a real hip-python status."""
    from lc0_rocm.gpu.runtime.hiperr import check

    with pytest.raises(GpuError) as e:
        check(status, "hipMalloc")
    return e.value


class _Gpu:
    """open_backend as the engine calls it, over a GPU whose memory holds device batches up to `fits`
    (a larger one fails with hip's out-of-memory status, through the real checker); records each call."""

    def __init__(self, fits: int, other=None):
        self.fits, self.other, self.calls = fits, other, []

    def __call__(self, path, backend, options, max_batch=None):
        self.calls.append((backend, max_batch))
        if backend == "cpu":
            return "cpu"
        if self.other is not None:
            raise _raised(self.other)
        if (max_batch or _max_batch_option(options)) > self.fits:
            raise _raised(hip.hipError_t.hipErrorOutOfMemory)
        return "gpu"


class _Said:
    """A responder that keeps the engine's words as the UCI loop would print them."""

    def __init__(self):
        self.lines: list[str] = []

    def info_string(self, text):
        self.lines.append(f"info string {text}")

    def note(self, text):
        self.lines.append(text)

    def error(self, text):
        self.lines.append(f"info string error {text}")

    def getvalue(self) -> str:
        return "\n".join(self.lines)


def _engine(backend_options: str = "") -> tuple[Engine, _Said]:
    said = _Said()
    e = Engine(said)
    e.set_option("BackendOptions", backend_options)
    return e, said


def test_the_device_batch_starts_at_the_max_batch_option():
    assert _max_batch_option("") == DEFAULT_MAX_BATCH
    assert _max_batch_option("gpus=0,1,max_batch=300") == 300
    assert _max_batch_option("max_batch=0") == DEFAULT_MAX_BATCH  # invalid: the backend refuses it anyway


def test_out_of_memory_halves_the_device_batch_until_one_fits():
    eng, out = _engine("gpus=0,max_batch=2048")
    gpu = _Gpu(fits=300)
    assert eng._open_backend(gpu, "net.pb.gz", "rocm", "gpus=0,max_batch=2048") == "gpu"
    assert gpu.calls == [("rocm", None), ("rocm", 1024), ("rocm", 512), ("rocm", 256)]
    said = out.getvalue()
    assert "info string GPU out of memory with max_batch 2048; trying max_batch 1024" in said, said
    assert "info string GPU out of memory with max_batch 512; trying max_batch 256" in said, said


def test_out_of_memory_at_the_smallest_batch_fails_or_falls_back_to_the_cpu():
    eng, _ = _engine()
    gpu = _Gpu(fits=MIN_GPU_BATCH - 1)
    with pytest.raises(GpuOutOfMemoryError, match=r"hipMalloc failed: hipErrorOutOfMemory \(2\)"):
        eng._open_backend(gpu, "net.pb.gz", "rocm-fp16", "")
    assert [b for _, b in gpu.calls] == [None, 512, 256, 128, 64, 32, 16]
    eng, out = _engine()
    gpu = _Gpu(fits=MIN_GPU_BATCH - 1)
    assert eng._open_backend(gpu, "net.pb.gz", "auto", "") == "cpu"
    assert gpu.calls[-1] == ("cpu", None) and len(gpu.calls) == 8
    assert "using the cpu backend" in out.getvalue()


def test_another_gpu_failure_keeps_the_device_batch():
    eng, _ = _engine()
    gpu = _Gpu(fits=4096, other=hip.hipError_t.hipErrorLaunchFailure)
    with pytest.raises(GpuError) as e:
        eng._open_backend(gpu, "net.pb.gz", "rocm", "")
    assert not isinstance(e.value, GpuOutOfMemoryError) and isinstance(e.value, BackendError)
    assert gpu.calls == [("rocm", None)]
