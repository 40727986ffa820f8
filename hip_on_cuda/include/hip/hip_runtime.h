/* HIP-on-CUDA prelude: the HIP device-side names lc0-rocm kernels use, on top of CUDA.
 *
 * Given to NVRTC as the header <hip/hip_runtime.h> (and force-included) by libhiprtc.so, and to nvcc by
 * tools/amd_compile_gate.sh. Semantics follow HIP, not CUDA, where they differ:
 *   - __shfl/__shfl_up/__shfl_down/__shfl_xor take no mask and act on the whole warp, width defaults to
 *     warpSize (HIP's non-_sync forms);
 *   - __ballot returns a 64-bit mask (HIP's type; the upper 32 bits are zero on a 32-lane warp);
 *   - __any/__all take and return int;
 *   - hipThreadIdx_x-style names, __lane_id(), HIP_DYNAMIC_SHARED.
 * CUDA's own non-_sync intrinsics are deprecated, so the HIP names are macros onto hoc_* functions,
 * defined after every CUDA header this file pulls in.
 */
#pragma once
#ifndef HIP_ON_CUDA_PRELUDE_RUNTIME
#define HIP_ON_CUDA_PRELUDE_RUNTIME

#include <cuda_fp16.h>

#define __HIP_PLATFORM_NVIDIA__ 1
#define __HIP_ON_CUDA__ 1

#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z

#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE

#define HOC_FULL_MASK 0xffffffffu

template <typename T>
__device__ __forceinline__ T hoc_shfl(T v, int src, int width = warpSize) {
    return __shfl_sync(HOC_FULL_MASK, v, src, width);
}
template <typename T>
__device__ __forceinline__ T hoc_shfl_up(T v, unsigned int delta, int width = warpSize) {
    return __shfl_up_sync(HOC_FULL_MASK, v, delta, width);
}
template <typename T>
__device__ __forceinline__ T hoc_shfl_down(T v, unsigned int delta, int width = warpSize) {
    return __shfl_down_sync(HOC_FULL_MASK, v, delta, width);
}
template <typename T>
__device__ __forceinline__ T hoc_shfl_xor(T v, int lane_mask, int width = warpSize) {
    return __shfl_xor_sync(HOC_FULL_MASK, v, lane_mask, width);
}
__device__ __forceinline__ unsigned long long hoc_ballot(int pred) {
    return (unsigned long long)__ballot_sync(HOC_FULL_MASK, pred);
}
__device__ __forceinline__ int hoc_any(int pred) { return __any_sync(HOC_FULL_MASK, pred); }
__device__ __forceinline__ int hoc_all(int pred) { return __all_sync(HOC_FULL_MASK, pred); }
__device__ __forceinline__ unsigned int __lane_id(void) {
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

#define __shfl hoc_shfl
#define __shfl_up hoc_shfl_up
#define __shfl_down hoc_shfl_down
#define __shfl_xor hoc_shfl_xor
#define __ballot hoc_ballot
#define __any hoc_any
#define __all hoc_all

#endif
