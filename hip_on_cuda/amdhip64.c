/* libamdhip64.so on NVIDIA: the HIP runtime functions lc0-rocm uses, forwarded to the CUDA runtime
 * (memory, streams, events, device queries) and the CUDA driver (modules and launches).
 *
 * Only the HIP API that lc0_rocm/gpu calls through hip-python is provided (see README.md for the list);
 * hip-python resolves each symbol lazily, so anything else fails loudly with "failed to dlsym".
 * Handles pass through unchanged (hipStream_t = cudaStream_t, hipModule_t = CUmodule, ...); enum
 * values and error codes are translated through hip_abi.h, which is generated from hip-python.
 * The driver library (libcuda.so.1) is opened at run time, so this file builds without it.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "hip_abi.h"
#include "hoc_common.h"

typedef void* hipStream_t;
typedef void* hipEvent_t;
typedef void* hipModule_t;
typedef void* hipFunction_t;
typedef void* hipGraph_t;
typedef void* hipGraphExec_t;
typedef void* hipGraphNode_t;

/* ---------------------------------------------------------------- error codes */

/* A CUDA runtime/driver code as a HIP code. HIP kept CUDA's numbering for the codes both have, so a
 * number that names a HIP error maps to itself; the few CUDA-only codes map to their nearest HIP kin. */
static hipError_t hoc_err(int cuda_code, const char* what) {
    if (cuda_code == 0) return hipSuccess;
    hipError_t h;
    switch (cuda_code) {
    case 222: /* unsupported PTX version */
    case 224: /* invalid graph/JIT device */
        h = hipErrorInvalidKernelFile;
        break;
    case 714: /* hardware stack error */
    case 715: /* illegal instruction */
    case 716: /* misaligned address */
    case 717: /* invalid address space */
    case 718: /* invalid program counter */
        h = hipErrorLaunchFailure;
        break;
    default:
        h = strcmp(hoc_hip_error_name(cuda_code), "unknown") ? (hipError_t)cuda_code : hipErrorUnknown;
    }
    if (h != hipSuccess) HOC_TRACE("%s: CUDA error %d -> %s", what, cuda_code, hoc_hip_error_name(h));
    return h;
}

#define RT(call) return hoc_err((int)(call), #call)

/* ---------------------------------------------------------------- driver API, opened at run time */

static struct {
    CUresult (*moduleLoadData)(CUmodule*, const void*);
    CUresult (*moduleUnload)(CUmodule);
    CUresult (*moduleGetFunction)(CUfunction*, CUmodule, const char*);
    CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
    CUresult (*funcGetAttribute)(int*, CUfunction_attribute, CUfunction);
    CUresult (*funcSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*memsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    int ok;
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static void drv_load(void) {
    static const char* const names[] = {"libcuda.so.1", "libcuda.so", NULL};
    void* h = hoc_open_first("HIP_ON_CUDA_LIBCUDA", names);
    if (!h) return;
    int ok = 1;
#define SYM(field, name)                              \
    do {                                              \
        *(void**)&drv.field = dlsym(h, name);         \
        if (!drv.field) {                             \
            HOC_TRACE("libcuda has no %s", name);     \
            ok = 0;                                   \
        }                                             \
    } while (0)
    SYM(moduleLoadData, "cuModuleLoadData");
    SYM(moduleUnload, "cuModuleUnload");
    SYM(moduleGetFunction, "cuModuleGetFunction");
    SYM(launchKernel, "cuLaunchKernel");
    SYM(funcGetAttribute, "cuFuncGetAttribute");
    SYM(funcSetAttribute, "cuFuncSetAttribute");
    SYM(memsetD32Async, "cuMemsetD32Async");
#undef SYM
    drv.ok = ok;
}

/* Driver calls need a current context: the runtime makes the primary context current on its first call. */
static hipError_t drv_ready(void) {
    pthread_once(&drv_once, drv_load);
    if (!drv.ok) return hipErrorInsufficientDriver;
    return hoc_err((int)cudaFree(0), "cudaFree(0)");
}

/* ---------------------------------------------------------------- init, versions, errors */

HOC_EXPORT hipError_t hipInit(unsigned int flags) {
    if (flags != 0) return hipErrorInvalidValue;
    RT(cudaFree(0));
}
HOC_EXPORT hipError_t hipDriverGetVersion(int* v) { RT(cudaDriverGetVersion(v)); }
HOC_EXPORT hipError_t hipRuntimeGetVersion(int* v) { RT(cudaRuntimeGetVersion(v)); }
HOC_EXPORT hipError_t hipGetLastError(void) { RT(cudaGetLastError()); }
HOC_EXPORT hipError_t hipPeekAtLastError(void) { RT(cudaPeekAtLastError()); }
HOC_EXPORT const char* hipGetErrorName(hipError_t e) { return hoc_hip_error_name((int)e); }
HOC_EXPORT const char* hipGetErrorString(hipError_t e) { return hoc_hip_error_name((int)e); }

/* ---------------------------------------------------------------- devices */

HOC_EXPORT hipError_t hipGetDeviceCount(int* n) { RT(cudaGetDeviceCount(n)); }
HOC_EXPORT hipError_t hipSetDevice(int d) { RT(cudaSetDevice(d)); }
HOC_EXPORT hipError_t hipGetDevice(int* d) { RT(cudaGetDevice(d)); }
HOC_EXPORT hipError_t hipDeviceSynchronize(void) { RT(cudaDeviceSynchronize()); }
HOC_EXPORT hipError_t hipDeviceReset(void) { RT(cudaDeviceReset()); }

HOC_EXPORT hipError_t hipDeviceGetName(char* name, int len, int device) {
    struct cudaDeviceProp p;
    hipError_t e = hoc_err((int)cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    if (e != hipSuccess) return e;
    if (!name || len <= 0) return hipErrorInvalidValue;
    snprintf(name, (size_t)len, "%s", p.name);
    return hipSuccess;
}

HOC_EXPORT hipError_t hipDeviceTotalMem(size_t* bytes, int device) {
    struct cudaDeviceProp p;
    hipError_t e = hoc_err((int)cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    if (e == hipSuccess) *bytes = p.totalGlobalMem;
    return e;
}

HOC_EXPORT hipError_t hipMemGetInfo(size_t* free_bytes, size_t* total) { RT(cudaMemGetInfo(free_bytes, total)); }

/* HIP attribute -> CUDA attribute, for the attributes both have (values differ, names mostly agree). */
static int hoc_cuda_attr(hipDeviceAttribute_t a) {
    switch (a) {
#define A(h, c) \
    case hipDeviceAttribute##h: return cudaDevAttr##c;
        A(ClockRate, ClockRate)
        A(ComputeCapabilityMajor, ComputeCapabilityMajor)
        A(ComputeCapabilityMinor, ComputeCapabilityMinor)
        A(MultiprocessorCount, MultiProcessorCount)
        A(WarpSize, WarpSize)
        A(MaxThreadsPerBlock, MaxThreadsPerBlock)
        A(MaxThreadsPerMultiProcessor, MaxThreadsPerMultiProcessor)
        A(MaxBlockDimX, MaxBlockDimX)
        A(MaxBlockDimY, MaxBlockDimY)
        A(MaxBlockDimZ, MaxBlockDimZ)
        A(MaxGridDimX, MaxGridDimX)
        A(MaxGridDimY, MaxGridDimY)
        A(MaxGridDimZ, MaxGridDimZ)
        A(MaxSharedMemoryPerBlock, MaxSharedMemoryPerBlock)
        A(SharedMemPerBlockOptin, MaxSharedMemoryPerBlockOptin)
        A(MaxSharedMemoryPerMultiprocessor, MaxSharedMemoryPerMultiprocessor)
        A(SharedMemPerMultiprocessor, MaxSharedMemoryPerMultiprocessor)
        A(ReservedSharedMemPerBlock, ReservedSharedMemoryPerBlock)
        A(MaxRegistersPerBlock, MaxRegistersPerBlock)
        A(MaxRegistersPerMultiprocessor, MaxRegistersPerMultiprocessor)
        A(MaxBlocksPerMultiProcessor, MaxBlocksPerMultiprocessor)
        A(L2CacheSize, L2CacheSize)
        A(PersistingL2CacheMaxSize, MaxPersistingL2CacheSize)
        A(MemoryClockRate, MemoryClockRate)
        A(MemoryBusWidth, GlobalMemoryBusWidth)
        A(TotalConstantMemory, TotalConstantMemory)
        A(PciBusId, PciBusId)
        A(PciDeviceId, PciDeviceId)
        A(PciDomainId, PciDomainId)
        A(Integrated, Integrated)
        A(ConcurrentKernels, ConcurrentKernels)
        A(CooperativeLaunch, CooperativeLaunch)
        A(AsyncEngineCount, AsyncEngineCount)
        A(CanMapHostMemory, CanMapHostMemory)
        A(UnifiedAddressing, UnifiedAddressing)
        A(ManagedMemory, ManagedMemory)
        A(ComputeMode, ComputeMode)
        A(KernelExecTimeout, KernelExecTimeout)
        A(StreamPrioritiesSupported, StreamPrioritiesSupported)
        A(MemoryPoolsSupported, MemoryPoolsSupported)
        A(HostNativeAtomicSupported, HostNativeAtomicSupported)
        A(PageableMemoryAccess, PageableMemoryAccess)
        A(ConcurrentManagedAccess, ConcurrentManagedAccess)
        A(IsMultiGpuBoard, IsMultiGpuBoard)
        A(TextureAlignment, TextureAlignment)
#undef A
    default:
        return -1;
    }
}

HOC_EXPORT hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attr, int device) {
    if (!value) return hipErrorInvalidValue;
    if (attr == hipDeviceAttributePhysicalMultiProcessorCount) attr = hipDeviceAttributeMultiprocessorCount;
    int c = hoc_cuda_attr(attr);
    if (c < 0) {
        HOC_TRACE("hipDeviceGetAttribute: attribute %d has no CUDA counterpart", (int)attr);
        return hipErrorNotSupported;  /* e.g. TotalGlobalMem (overflows int; use hipDeviceTotalMem) */
    }
    RT(cudaDeviceGetAttribute(value, (enum cudaDeviceAttr)c, device));
}

#define PUT(field, type, val) (*(type*)((char*)prop + HIP_PROP_OFF_##field) = (type)(val))

/* hipDeviceProp_t (R0600, hip-python's layout) filled from the CUDA device; gcnArchName = "sm_<cc>". */
HOC_EXPORT hipError_t hipGetDevicePropertiesR0600(void* prop, int device) {
    struct cudaDeviceProp p;
    hipError_t e = hoc_err((int)cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    if (e != hipSuccess) return e;
    memset(prop, 0, HIP_DEVICE_PROP_SIZE);
    snprintf((char*)prop + HIP_PROP_OFF_name, 256, "%.255s", p.name);
    snprintf((char*)prop + HIP_PROP_OFF_gcnArchName, 256, "sm_%d%d", p.major, p.minor);
    PUT(totalGlobalMem, size_t, p.totalGlobalMem);
    PUT(sharedMemPerBlock, size_t, p.sharedMemPerBlock);
    PUT(regsPerBlock, int, p.regsPerBlock);
    PUT(warpSize, int, p.warpSize);
    PUT(memPitch, size_t, p.memPitch);
    PUT(maxThreadsPerBlock, int, p.maxThreadsPerBlock);
    for (int i = 0; i < 3; ++i) {
        ((int*)((char*)prop + HIP_PROP_OFF_maxThreadsDim))[i] = p.maxThreadsDim[i];
        ((int*)((char*)prop + HIP_PROP_OFF_maxGridSize))[i] = p.maxGridSize[i];
    }
    PUT(totalConstMem, size_t, p.totalConstMem);
    PUT(major, int, p.major);
    PUT(minor, int, p.minor);
    PUT(textureAlignment, size_t, p.textureAlignment);
    PUT(multiProcessorCount, int, p.multiProcessorCount);
    PUT(integrated, int, p.integrated);
    PUT(canMapHostMemory, int, p.canMapHostMemory);
    PUT(concurrentKernels, int, p.concurrentKernels);
    PUT(ECCEnabled, int, p.ECCEnabled);
    PUT(pciBusID, int, p.pciBusID);
    PUT(pciDeviceID, int, p.pciDeviceID);
    PUT(pciDomainID, int, p.pciDomainID);
    PUT(asyncEngineCount, int, p.asyncEngineCount);
    PUT(unifiedAddressing, int, p.unifiedAddressing);
    PUT(memoryBusWidth, int, p.memoryBusWidth);
    PUT(l2CacheSize, int, p.l2CacheSize);
    PUT(persistingL2CacheMaxSize, int, p.persistingL2CacheMaxSize);
    PUT(maxThreadsPerMultiProcessor, int, p.maxThreadsPerMultiProcessor);
    PUT(sharedMemPerMultiprocessor, size_t, p.sharedMemPerMultiprocessor);
    PUT(regsPerMultiprocessor, int, p.regsPerMultiprocessor);
    PUT(managedMemory, int, p.managedMemory);
    PUT(cooperativeLaunch, int, p.cooperativeLaunch);
    PUT(sharedMemPerBlockOptin, size_t, p.sharedMemPerBlockOptin);
    PUT(maxBlocksPerMultiProcessor, int, p.maxBlocksPerMultiProcessor);
    PUT(reservedSharedMemPerBlock, size_t, p.reservedSharedMemPerBlock);
    PUT(maxSharedMemoryPerMultiProcessor, size_t, p.sharedMemPerMultiprocessor);
    int khz = 0;  /* clock rates left cudaDeviceProp in CUDA 13; the attributes still have them */
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) == cudaSuccess) {
        PUT(clockRate, int, khz);
        PUT(clockInstructionRate, int, khz);
    }
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess)
        PUT(memoryClockRate, int, khz);
    return hipSuccess;
}
#undef PUT

/* ---------------------------------------------------------------- memory */

HOC_EXPORT hipError_t hipMalloc(void** p, size_t n) { RT(cudaMalloc(p, n)); }
HOC_EXPORT hipError_t hipFree(void* p) { RT(cudaFree(p)); }

/* hipHostMallocPortable/Mapped/WriteCombined share CUDA's bits 1/2/4; HIP's coherence and NUMA bits
 * (bit 29 and up) have no CUDA meaning and are dropped. */
HOC_EXPORT hipError_t hipHostMalloc(void** p, size_t n, unsigned int flags) { RT(cudaHostAlloc(p, n, flags & 0x7u)); }
HOC_EXPORT hipError_t hipMallocHost(void** p, size_t n) { RT(cudaMallocHost(p, n)); }
HOC_EXPORT hipError_t hipHostFree(void* p) { RT(cudaFreeHost(p)); }
HOC_EXPORT hipError_t hipFreeHost(void* p) { RT(cudaFreeHost(p)); }

/* hipMemcpyKind 0..4 equal cudaMemcpyKind 0..4; DeviceToDeviceNoCU is a plain device copy here. */
static enum cudaMemcpyKind hoc_kind(hipMemcpyKind k) {
    return k == hipMemcpyDeviceToDeviceNoCU ? cudaMemcpyDeviceToDevice : (enum cudaMemcpyKind)k;
}
HOC_EXPORT hipError_t hipMemcpy(void* d, const void* s, size_t n, hipMemcpyKind k) { RT(cudaMemcpy(d, s, n, hoc_kind(k))); }
HOC_EXPORT hipError_t hipMemcpyAsync(void* d, const void* s, size_t n, hipMemcpyKind k, hipStream_t st) {
    RT(cudaMemcpyAsync(d, s, n, hoc_kind(k), (cudaStream_t)st));
}
HOC_EXPORT hipError_t hipMemcpyHtoDAsync(void* d, const void* s, size_t n, hipStream_t st) {
    RT(cudaMemcpyAsync(d, s, n, cudaMemcpyHostToDevice, (cudaStream_t)st));
}
HOC_EXPORT hipError_t hipMemcpyDtoHAsync(void* d, const void* s, size_t n, hipStream_t st) {
    RT(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToHost, (cudaStream_t)st));
}
HOC_EXPORT hipError_t hipMemcpyDtoDAsync(void* d, const void* s, size_t n, hipStream_t st) {
    RT(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, (cudaStream_t)st));
}
HOC_EXPORT hipError_t hipMemsetAsync(void* d, int v, size_t n, hipStream_t st) { RT(cudaMemsetAsync(d, v, n, (cudaStream_t)st)); }
HOC_EXPORT hipError_t hipMemsetD8Async(void* d, unsigned char v, size_t n, hipStream_t st) {
    RT(cudaMemsetAsync(d, v, n, (cudaStream_t)st));
}
HOC_EXPORT hipError_t hipMemsetD32Async(void* d, int v, size_t n, hipStream_t st) {
    hipError_t e = drv_ready();
    if (e != hipSuccess) return e;
    return hoc_err((int)drv.memsetD32Async((CUdeviceptr)(uintptr_t)d, (unsigned)v, n, (CUstream)st), "cuMemsetD32Async");
}

/* ---------------------------------------------------------------- streams and events */

HOC_EXPORT hipError_t hipStreamCreate(hipStream_t* s) { RT(cudaStreamCreate((cudaStream_t*)s)); }
HOC_EXPORT hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned int f) {
    RT(cudaStreamCreateWithFlags((cudaStream_t*)s, f & cudaStreamNonBlocking));
}
HOC_EXPORT hipError_t hipStreamDestroy(hipStream_t s) { RT(cudaStreamDestroy((cudaStream_t)s)); }
HOC_EXPORT hipError_t hipStreamSynchronize(hipStream_t s) { RT(cudaStreamSynchronize((cudaStream_t)s)); }
HOC_EXPORT hipError_t hipStreamQuery(hipStream_t s) { RT(cudaStreamQuery((cudaStream_t)s)); }
HOC_EXPORT hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned int f) {
    RT(cudaStreamWaitEvent((cudaStream_t)s, (cudaEvent_t)e, f));
}
HOC_EXPORT hipError_t hipEventCreate(hipEvent_t* e) { RT(cudaEventCreate((cudaEvent_t*)e)); }
/* hipEventDefault/BlockingSync/DisableTiming/Interprocess are CUDA's 0/1/2/4. */
HOC_EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned int f) {
    RT(cudaEventCreateWithFlags((cudaEvent_t*)e, f & 0x7u));
}
HOC_EXPORT hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) { RT(cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s)); }
HOC_EXPORT hipError_t hipEventSynchronize(hipEvent_t e) { RT(cudaEventSynchronize((cudaEvent_t)e)); }
HOC_EXPORT hipError_t hipEventQuery(hipEvent_t e) { RT(cudaEventQuery((cudaEvent_t)e)); }
HOC_EXPORT hipError_t hipEventDestroy(hipEvent_t e) { RT(cudaEventDestroy((cudaEvent_t)e)); }
HOC_EXPORT hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) {
    RT(cudaEventElapsedTime(ms, (cudaEvent_t)a, (cudaEvent_t)b));
}

/* ---------------------------------------------------------------- graphs (stream capture) */

/* hipStreamCaptureMode Global/ThreadLocal/Relaxed and hipStreamCaptureStatus None/Active/Invalidated
 * have CUDA's values (checked against hip_abi.h at compile time below). */
_Static_assert((int)hipStreamCaptureModeGlobal == (int)cudaStreamCaptureModeGlobal &&
                   (int)hipStreamCaptureModeThreadLocal == (int)cudaStreamCaptureModeThreadLocal &&
                   (int)hipStreamCaptureModeRelaxed == (int)cudaStreamCaptureModeRelaxed,
               "capture modes differ");
_Static_assert((int)hipStreamCaptureStatusNone == (int)cudaStreamCaptureStatusNone &&
                   (int)hipStreamCaptureStatusActive == (int)cudaStreamCaptureStatusActive &&
                   (int)hipStreamCaptureStatusInvalidated == (int)cudaStreamCaptureStatusInvalidated,
               "capture statuses differ");

HOC_EXPORT hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode) {
    RT(cudaStreamBeginCapture((cudaStream_t)s, (enum cudaStreamCaptureMode)mode));
}
HOC_EXPORT hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* g) {
    RT(cudaStreamEndCapture((cudaStream_t)s, (cudaGraph_t*)g));
}
HOC_EXPORT hipError_t hipStreamIsCapturing(hipStream_t s, hipStreamCaptureStatus* status) {
    enum cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
    hipError_t e = hoc_err((int)cudaStreamIsCapturing((cudaStream_t)s, &c), "cudaStreamIsCapturing");
    if (status) *status = (hipStreamCaptureStatus)c;
    return e;
}
/* HIP keeps CUDA 11's signature (error node and log buffer); CUDA 12+ takes flags instead. */
HOC_EXPORT hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t g, hipGraphNode_t* err_node, char* log,
                                          size_t log_size) {
    if (err_node) *err_node = NULL;
    if (log && log_size) log[0] = 0;
    RT(cudaGraphInstantiate((cudaGraphExec_t*)exec, (cudaGraph_t)g, 0));
}
HOC_EXPORT hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* exec, hipGraph_t g, unsigned long long flags) {
    RT(cudaGraphInstantiateWithFlags((cudaGraphExec_t*)exec, (cudaGraph_t)g, flags));
}
HOC_EXPORT hipError_t hipGraphUpload(hipGraphExec_t exec, hipStream_t s) {
    RT(cudaGraphUpload((cudaGraphExec_t)exec, (cudaStream_t)s));
}
HOC_EXPORT hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t s) {
    RT(cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)s));
}
HOC_EXPORT hipError_t hipGraphExecDestroy(hipGraphExec_t exec) { RT(cudaGraphExecDestroy((cudaGraphExec_t)exec)); }
HOC_EXPORT hipError_t hipGraphDestroy(hipGraph_t g) { RT(cudaGraphDestroy((cudaGraph_t)g)); }

/* ---------------------------------------------------------------- modules and launches */

HOC_EXPORT hipError_t hipModuleLoadData(hipModule_t* m, const void* image) {
    hipError_t e = drv_ready();
    if (e != hipSuccess) return e;
    return hoc_err((int)drv.moduleLoadData((CUmodule*)m, image), "cuModuleLoadData");
}
HOC_EXPORT hipError_t hipModuleUnload(hipModule_t m) {
    hipError_t e = drv_ready();
    if (e != hipSuccess) return e;
    return hoc_err((int)drv.moduleUnload((CUmodule)m), "cuModuleUnload");
}
HOC_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* f, hipModule_t m, const char* name) {
    hipError_t e = drv_ready();
    if (e != hipSuccess) return e;
    return hoc_err((int)drv.moduleGetFunction((CUfunction*)f, (CUmodule)m, name), "cuModuleGetFunction");
}
/* hipFunction_attribute 0..9 are CUfunction_attribute 0..9 in the same order. */
HOC_EXPORT hipError_t hipFuncGetAttribute(int* v, hipFunction_attribute a, hipFunction_t f) {
    hipError_t e = drv_ready();
    if (e != hipSuccess) return e;
    if ((int)a < 0 || (int)a > 9) return hipErrorNotSupported;
    return hoc_err((int)drv.funcGetAttribute(v, (CUfunction_attribute)a, (CUfunction)f), "cuFuncGetAttribute");
}

/* HIP's launch-config markers in `extra` (1 buffer pointer, 2 buffer size, 3 end) differ from CUDA's
 * (1, 2, 0). AMD GPUs give a block up to 64 KiB of LDS without asking; CUDA needs an opt-in above 48 KiB,
 * which is made here so a launch that is valid on AMD is valid on NVIDIA too. */
HOC_EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                            unsigned by, unsigned bz, unsigned shared, hipStream_t st,
                                            void** params, void** extra) {
    hipError_t e = drv_ready();
    if (e != hipSuccess) return e;
    void* cfg[8];
    void** cuda_extra = NULL;
    if (extra) {
        int n = 0;
        for (int i = 0; n < 7; i += 2) {
            uintptr_t key = (uintptr_t)extra[i];
            if (key == 3) break;
            if (key == 1) cfg[n++] = CU_LAUNCH_PARAM_BUFFER_POINTER;
            else if (key == 2) cfg[n++] = CU_LAUNCH_PARAM_BUFFER_SIZE;
            else return hipErrorInvalidValue;
            cfg[n++] = extra[i + 1];
        }
        cfg[n] = CU_LAUNCH_PARAM_END;
        cuda_extra = cfg;
    }
    if (shared > 48 * 1024) {
        e = hoc_err((int)drv.funcSetAttribute((CUfunction)f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared),
                    "cuFuncSetAttribute");
        if (e != hipSuccess) return e;
    }
    return hoc_err((int)drv.launchKernel((CUfunction)f, gx, gy, gz, bx, by, bz, shared, (CUstream)st, params, cuda_extra),
                   "cuLaunchKernel");
}
