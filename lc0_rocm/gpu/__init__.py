"""The ROCm runtime on hip-python: device, memory, streams/events, hipRTC kernels, hipBLASLt GEMMs.

One runtime path: `from hip import hip, hiprtc, hipblaslt` (hip-python 10.0.0.0.1.2). On NVIDIA the three
libraries it loads come from `hip_on_cuda/` (a test layer); nothing here branches on the vendor.
Nothing in this package imports hip at import time; every module imports it lazily through `hiperr.hip_modules()`.

API (all sizes in bytes unless said; pointers are plain ints; every failure raises `GpuError`/`CompileError`):

    from lc0_rocm.gpu import device, memory, stream, compiler, kernel, gemm, ops

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
    ops.bias_act(dev, y, x, bias, total, channels=1, inner=1, act="mish", dtype="f16", stream=None)
                                      #   y = act(x + bias[(i // inner) % channels]); bias may be None, y may be x

The network runner (`network.GpuNetwork`, one device; `multi.MultiGpuNetwork`, several):

    net = network.GpuNetwork(desc, dev, "f16", max_batch=1024, graphs=True)
    p = net.submit(planes)            # pinned slot, upload/compute/download streams, graphs per batch size
    out = net.collect(p)              # NetOutputs (policy is a view of the slot's pinned memory)
    out = net.evaluate(planes); out, seconds = net.evaluate_timed(planes)

Kernels live in lc0_rocm/kernels/*.hip (conventions in lc0_rocm/kernels/README.md); they may
`#include "common.h"` (warp reductions, 64-bit ballot, fp16 helpers); all .h files of that folder are given
to hipRTC as headers.
"""
