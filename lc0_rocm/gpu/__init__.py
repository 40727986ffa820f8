"""The GPU package, in two layers that only look down:

    gpu/nn/       the network on the device: kernel launchers, layers, GpuNetwork, MultiGpuNetwork
       │          (imports gpu.runtime, lc0_rocm.net and lc0_rocm.encoding; reaches hip-python only through
       │          runtime.hiperr: the per-batch copies take hip's functions from `hip_module` and pass
       │          each status to `check`)
       ▼
    gpu/runtime/  the ROCm runtime on hip-python: device, memory, streams/events/graphs, hipRTC
                  kernels, hipBLASLt GEMMs (imports hip-python, lc0_rocm.errors and numpy only)

One runtime path: hip-python 10.0.0.0.1.2 (`hip.hip`, `hip.hiprtc`, `hip.hipblaslt`; `hip.hipblas` for
enums). On NVIDIA the libraries it loads come from `hip_on_cuda/` (a test layer); nothing here branches
on the vendor. Nothing in this package imports hip at import time: every module reaches hip-python
through `runtime.hiperr` (`hip_module`, `hip_call`, ...), and every status goes through its `check`.
Nothing outside `lc0_rocm.backends.rocm` and the tools imports this package (tests/test_layering.py).

Runtime API (all sizes in bytes unless said; pointers are plain ints; every failure raises
`GpuError`/`CompileError`, and `GpuOutOfMemoryError` where memory ran out):

    from lc0_rocm.gpu.runtime import device, memory, stream, compiler, kernel, gemm, observe

    dev = device.get_device(0)        # Device: .index .name .arch ('gfx90a', 'sm_90') .arch_full .warp_size
                                      #   .cu_count .total_memory .l2_bytes .max_shared_per_block .free_memory()
                                      #   .stream (default Stream) .synchronize(); raises GpuError if no GPU
    device.gpu_available()            # (ok: bool, reason: str); never raises
    s = stream.Stream(dev)            # .handle .synchronize() .wait(event); stream.Event(): .record(s) .synchronize()
                                      #   .elapsed_ms(later_event); stream.time_ms(fn, s, repeat=..) -> median ms
    g = stream.Graph.capture(s, fn)   # record what fn() queues on s (nothing runs), instantiate; g.launch(s2)
    arena = memory.Arena(dev, nbytes) # one hipMalloc sized once; arena.alloc(nbytes, align=256) -> DeviceBuffer;
                                      #   .reset() .used .capacity; over capacity -> GpuError naming both sizes
    buf = memory.DeviceBuffer.allocate(dev, nbytes)   # owns its memory; .ptr .nbytes .view(offset, nbytes)
    buf.upload(np_array, stream=None); buf.download(np_out, stream=None)  # synchronous unless stream given
    buf.fill_byte(0xFF, stream=None)  # hipMemsetAsync (NaN-poisoning: 0xFF bytes are NaN for f16/f32)
    pin = memory.PinnedBuffer(nbytes); pin.array(np.float16, shape) -> numpy view of pinned host memory
    code = compiler.compile_file(dev, "bias_act.hip", options=("-DFOO=1",))  # bytes; disk cache
                                      #   (~/.cache/lc0-rocm or $LC0_ROCM_CACHE) keyed by source+headers+arch+options
    mod = kernel.Module(code); k = mod.function("bias_act_f16")
    k.launch(grid=(gx, gy, gz), block=(bx, 1, 1), args=(buf, np.int32(n), np.float32(a)), shared=0, stream=s)
                                      #   args: DeviceBuffer / kernel.ptr(int) / numpy scalars / ctypes values
    k = kernel.get_kernel(dev, "bias_act.hip", "bias_act_f16", options=())   # compile+load+lookup, cached
    g = gemm.Gemm(dev)                # hipBLASLt handle + 32 MB workspace
    g.linear(x, w, y, m, n, k, bias=None, act="none"|"relu"|"gelu", dtype="f16"|"f32", stream=None,
             workspace=None)          #   row-major y[m,n] = x[m,k] @ w[n,k].T (+ bias[n]) (act); fp32 accumulate;
                                      #   algo autotuned once per shape for m >= 4096 (else the heuristic's first),
                                      #   cached on disk per device; `workspace` for a GEMM on a second stream
    with observe.observe(fn): ...      # fn(Launch) for every kernel launch and GEMM issued (profilers);
                                      #   launch.replay(stream) issues it again

Network API (`from lc0_rocm.gpu.nn import kernels, network, multi`):

    kernels.bias_act(dev, y, x, bias, total, channels=1, inner=1, act="mish", dtype="f16", stream=None)
                                      #   y = act(x + bias[(i // inner) % channels]); bias may be None, y may be x
    k = kernels.NnKernels(dev, "f16") #   every other network kernel's launcher (layernorm, mha, ...)
    net = network.GpuNetwork(desc, dev, "f16", max_batch=1024, graphs=True)
    p = net.submit(planes)            # pinned slot, upload/compute/download streams, graphs per batch size
    out = net.collect(p)              # NetOutputs (policy is a view of the slot's pinned memory)
    out = net.evaluate(planes); out, seconds = net.evaluate_timed(planes)
    net = multi.MultiGpuNetwork(desc, [dev0, dev1], "f16")   # the same API; each batch split across devices

Kernels live in lc0_rocm/kernels/*.hip (conventions in lc0_rocm/kernels/README.md); they may
`#include "common.h"` (warp reductions, 64-bit ballot, fp16 helpers); all .h files of that folder are given
to hipRTC as headers.
"""
