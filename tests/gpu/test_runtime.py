"""Runtime on a real GPU: device attributes, memory and arena, pinned copies, streams/events ordering,
the hipRTC compile cache, kernel launches, and error naming."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def test_device_attributes(gpu):
    from lc0_rocm.gpu.runtime.hiperr import hip_call

    assert gpu.name.strip()
    assert re.fullmatch(r"gfx[0-9a-f]+|sm_\d+", gpu.arch), gpu.arch_full
    assert gpu.warp_size in (32, 64)
    props = hip_call("hipGetDeviceProperties", gpu.index)  # the same facts through the other API
    assert gpu.cu_count == props.multiProcessorCount > 0
    assert gpu.warp_size == props.warpSize
    assert gpu.total_memory == props.totalGlobalMem > 2**30
    assert 0 < gpu.free_memory() <= gpu.total_memory
    assert gpu.max_threads_per_block >= 256 and gpu.max_shared_per_block >= 32 * 1024
    assert gpu.l2_bytes > 0 and gpu.clock_khz > 0


def test_upload_download_views_and_fill(gpu):
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer

    rng = np.random.default_rng()
    host = rng.integers(0, 256, size=1 << 20, dtype=np.uint8)
    buf = DeviceBuffer.allocate(gpu, host.nbytes)
    buf.upload(host)
    assert np.array_equal(buf.to_numpy(np.uint8, host.shape), host)
    view = buf.view(4096, 1000)
    assert np.array_equal(view.to_numpy(np.uint8, 1000), host[4096:5096])
    view.fill_byte(0xFF)
    back = buf.to_numpy(np.uint8, host.shape)
    assert (back[4096:5096] == 0xFF).all()
    assert np.array_equal(back[:4096], host[:4096]) and np.array_equal(back[5096:], host[5096:])
    assert np.isnan(buf.view(4096, 800).to_numpy(np.float32, 200)).all()  # 0xFF bytes are NaN
    with pytest.raises(ValueError):
        buf.view(host.nbytes - 10, 11)
    with pytest.raises(ValueError):
        buf.upload(np.zeros(host.nbytes + 1, dtype=np.uint8))


def test_arena_alignment_exhaustion_and_reset(gpu):
    from lc0_rocm.gpu.runtime.hiperr import GpuError
    from lc0_rocm.gpu.runtime.memory import Arena

    arena = Arena(gpu, 1 << 20)
    a = arena.alloc(100)
    b = arena.alloc(1000)
    c = arena.alloc(10, align=4096)
    assert a.ptr % 256 == 0 and b.ptr % 256 == 0 and c.ptr % 4096 == 0
    assert b.ptr >= a.ptr + 100 and c.ptr >= b.ptr + 1000
    data = np.arange(250, dtype=np.float32)
    b.upload(data)
    a.upload(np.full(25, -1.0, dtype=np.float32))  # neighbours must not overlap
    assert np.array_equal(b.to_numpy(np.float32, 250), data)
    with pytest.raises(GpuError, match=r"arena exhausted: 1\.0 MiB requested"):
        arena.alloc(1 << 20)
    arena.reset()
    assert arena.alloc(1 << 20).ptr == a.ptr


def test_pinned_async_roundtrip_on_stream(gpu):
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer, PinnedBuffer
    from lc0_rocm.gpu.runtime.stream import Stream

    n = 1 << 18
    pin_in, pin_out = PinnedBuffer(n * 4), PinnedBuffer(n * 4)
    src = pin_in.array(np.float32, n)
    src[:] = np.random.default_rng().standard_normal(n, dtype=np.float32)
    dst = pin_out.array(np.float32, n)
    dst[:] = np.nan
    buf = DeviceBuffer.allocate(gpu, n * 4)
    s = Stream(gpu)
    buf.upload(src, stream=s)
    buf.download(dst, stream=s)
    s.synchronize()
    assert np.array_equal(dst, src)


def test_events_time_and_order_work_across_streams(gpu):
    """A long kernel on stream 1, an event, stream 2 waits for it and copies the result: the copy sees it."""
    from lc0_rocm.gpu.nn import kernels
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer
    from lc0_rocm.gpu.runtime.stream import Event, Stream

    n = 1 << 25  # 32 Mi floats: long enough that an unordered copy would read stale data
    x = DeviceBuffer.allocate(gpu, n * 4)
    y = DeviceBuffer.allocate(gpu, n * 4)
    out = DeviceBuffer.allocate(gpu, n * 4)
    x.upload(np.full(n, -3.0, dtype=np.float32))
    y.fill_byte(0)
    s1, s2 = Stream(gpu), Stream(gpu)
    start, done = Event(), Event()
    start.record(s1)
    for _ in range(4):
        kernels.bias_act(gpu, y, x, None, n, act="relu2", dtype="f32", stream=s1)  # relu2(-3) = 0 ...
    kernels.bias_act(gpu, y, x, None, n, act="selu", dtype="f32", stream=s1)  # ... then selu(-3) != 0
    done.record(s1)
    s2.wait(done)
    out.copy_from(y, stream=s2)
    s2.synchronize()
    assert done.query()
    ms = start.elapsed_ms(done)
    assert 0 < ms < 10_000
    got = out.to_numpy(np.float32, n)
    want = np.float32(1.05070098 * 1.67326324 * np.expm1(-3.0))
    assert np.allclose(got, want, rtol=1e-6), f"copy saw {np.unique(got)[:5]}, want {want}"


def test_compile_cache_second_start_compiles_nothing(gpu, tmp_path, monkeypatch):
    from lc0_rocm.gpu.runtime.compiler import Compiler

    monkeypatch.setenv("LC0_ROCM_CACHE", str(tmp_path))
    first = Compiler(gpu.arch)
    code = first.compile_file("bias_act.hip")
    assert (first.misses, first.hits) == (1, 0) and len(code) > 1000
    assert len(list((tmp_path / "kernels").glob("bias_act-*.co"))) == 1
    second = Compiler(gpu.arch)  # a new process start: fresh compiler, same disk cache
    assert second.compile_file("bias_act.hip") == code
    assert (second.misses, second.hits) == (0, 1)
    second.compile_file("bias_act.hip", options=("-DLC0_UNUSED_FLAG=1",))  # other options: other key
    assert second.misses == 1


def test_compile_error_names_file_and_carries_log(gpu, tmp_path, monkeypatch):
    from lc0_rocm.gpu.runtime.compiler import Compiler
    from lc0_rocm.gpu.runtime.hiperr import CompileError

    monkeypatch.setenv("LC0_ROCM_CACHE", str(tmp_path))
    src = '#include "common.h"\nextern "C" __global__ void broken(float* y) { y[0] = no_such_name; }\n'
    with pytest.raises(CompileError, match=r"broken\.hip") as info:
        Compiler(gpu.arch).compile_source(src, "broken.hip")
    assert "no_such_name" in info.value.log


def test_kernel_launch_checks_argument_types(gpu):
    from lc0_rocm.gpu.runtime.kernel import get_kernel

    k = get_kernel(gpu, "bias_act.hip", "bias_act_relu_f32")
    with pytest.raises(TypeError, match="no explicit type"):
        k.launch(1, 256, (0, 0, 0, 1, 1, 1))
    assert k.attribute("MAX_THREADS_PER_BLOCK") >= 256


def test_errors_name_the_call_and_the_hip_error(gpu):
    from lc0_rocm.gpu.runtime.hiperr import GpuError, GpuOutOfMemoryError, hip_call
    from lc0_rocm.gpu.runtime.kernel import Module
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer

    with pytest.raises(GpuError, match=r"hipSetDevice failed: hipErrorInvalidDevice \(101\)") as e:
        hip_call("hipSetDevice", 9999)
    assert not isinstance(e.value, GpuOutOfMemoryError)
    gpu.make_current()
    with pytest.raises(GpuOutOfMemoryError, match=r"hipMalloc failed: hipErrorOutOfMemory \(2\)"):
        hip_call("hipMalloc", 1 << 50)  # hip's own status, typed by the one checker
    with pytest.raises(GpuOutOfMemoryError, match=r"out of GPU memory: cannot allocate"):
        DeviceBuffer.allocate(gpu, 1 << 50)
    with pytest.raises(GpuError, match=r"hipModuleLoadData failed: hipError\w+"):
        Module(b"\x7fELF this is not a code object" + bytes(64), gpu)
    from lc0_rocm.gpu.runtime.kernel import get_module

    with pytest.raises(GpuError, match=r"hipModuleGetFunction failed: hipError\w+"):
        get_module(gpu, "bias_act.hip").function("no_such_kernel")
    from lc0_rocm.gpu.runtime.hiperr import hip_modules

    hip = hip_modules()["hip"]
    assert int(hip.hipGetLastError()[0].value) != 0  # the failures above are reported once ...
    assert int(hip.hipGetLastError()[0].value) == 0  # ... and then cleared


def test_launch_observer_records_kernels_and_gemms_and_replays_them(gpu):
    """runtime.observe (the profilers' hook): a bias_act launch and a hipBLASLt matmul are reported with
    their names and arguments, and each replay on another stream recomputes the same result."""
    from lc0_rocm.gpu.nn import kernels
    from lc0_rocm.gpu.runtime.gemm import Gemm
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer
    from lc0_rocm.gpu.runtime.observe import observe
    from lc0_rocm.gpu.runtime.stream import Stream

    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 32), dtype=np.float32)
    w = rng.standard_normal((16, 32), dtype=np.float32)
    bufs = {k: DeviceBuffer.allocate(gpu, 64 * 32 * 4) for k in ("x", "w", "y", "z")}
    bufs["x"].upload(x)
    bufs["w"].upload(w)
    g = Gemm(gpu)
    seen = []
    with observe(seen.append):
        g.linear(bufs["x"], bufs["w"], bufs["y"], 64, 16, 32, dtype="f32")
        kernels.bias_act(gpu, bufs["z"], bufs["y"], None, 64 * 16, act="relu", dtype="f32")
        gpu.stream.synchronize()
    assert [(op.kind, op.name) for op in seen] == [("gemm", "gemm 64x16x32 f32 none"), ("kernel", "act8_relu_f32")]
    want = bufs["z"].to_numpy(np.float32, (64, 16)).copy()
    assert np.allclose(want, np.maximum(x @ w.T, 0), rtol=1e-4, atol=1e-4)
    bufs["y"].fill_byte(0)
    bufs["z"].fill_byte(0xFF)
    s = Stream(gpu)
    for op in seen:
        op.replay(s)
    s.synchronize()
    np.testing.assert_array_equal(bufs["z"].to_numpy(np.float32, (64, 16)), want)
    g.close()


def test_devices_opened_early_and_analyse_through_them(gpu, tmp_path):
    """analyse opens the GPUs beside the net load (`backends.factory.open_devices_early`): in a fresh
    process every device of the options is open after the thread, and a real analyse run on the GPU
    gives the cpu backend's records (fp32: the same best moves, Q within 1e-4)."""
    import json
    import subprocess
    import sys

    from lc0_rocm.gpu.runtime.device import device_count

    gpus = "0:1" if device_count() >= 2 else "0"
    snippet = ("from lc0_rocm.backends.factory import open_devices_early\n"
               f"t = open_devices_early('rocm-fp16', 'gpus={gpus}'); t.join()\n"
               "from lc0_rocm.gpu.runtime.device import _DEVICES\nprint(*sorted(_DEVICES))")
    out = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == sorted(set(gpus.split(":")))
    pgn = tmp_path / "g.pgn"
    pgn.write_text('[Event "a"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 *\n\n[Event "b"]\n\n1. d4 d5 2. c4 *\n')
    records = {}
    for backend in ("cpu", "rocm"):
        jsonl = tmp_path / f"{backend}.jsonl"
        run = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "analyse", str(pgn), "-b", backend,
                              "--jsonl", str(jsonl), "--no-progress"], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        records[backend] = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(records["rocm"]) == len(records["cpu"]) == 11  # 8 + 3 plies
    for a, b in zip(records["cpu"], records["rocm"]):
        assert (a["game"], a["ply"], a["fen"], a["best"]) == (b["game"], b["ply"], b["fen"], b["best"])
        assert abs(a["q"] - b["q"]) < 1e-4
