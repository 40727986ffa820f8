// common.h — portable HIP helpers shared by every lc0-rocm kernel (included as "common.h").
//
// Rules these helpers encode (see README.md in this folder):
//   * never assume 32 lanes: loops run over warpSize, which is 64 on CDNA (gfx90a) and 32 on RDNA
//     (gfx1030) and on NVIDIA;
//   * ballot masks are 64-bit (unsigned long long), whatever the warp size;
//   * storage may be fp16 or fp32, math is always fp32 (load/store helpers below convert).
// Only HIP names are used; the HIP-on-CUDA prelude maps them on NVIDIA.
#pragma once
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

// ------------------------------------------------------------------ fp16 / fp32 storage

__device__ __forceinline__ float lc0_load(const float* p) { return *p; }
__device__ __forceinline__ float lc0_load(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ void lc0_store(float* p, float v) { *p = v; }
__device__ __forceinline__ void lc0_store(__half* p, float v) { *p = __float2half(v); }

// 8 consecutive elements at once (16 bytes of fp16, 32 of fp32); p must be 16-byte aligned.
__device__ __forceinline__ void lc0_load8(const float* p, float v[8]) {
    const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}
__device__ __forceinline__ void lc0_load8(const __half* p, float v[8]) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 f = __half22float2(h[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
    }
}
__device__ __forceinline__ void lc0_store8(float* p, const float v[8]) {
    reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}
__device__ __forceinline__ void lc0_store8(__half* p, const float v[8]) {
    uint4 u;
    __half2* h = reinterpret_cast<__half2*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4*>(p) = u;
}

// 4 consecutive elements (8 bytes of fp16, 16 of fp32); p must be aligned to that size.
__device__ __forceinline__ void lc0_load4(const float* p, float v[4]) {
    const float4 a = *reinterpret_cast<const float4*>(p);
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
}
__device__ __forceinline__ void lc0_load4(const __half* p, float v[4]) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    const __half2* h = reinterpret_cast<const __half2*>(&u);
    const float2 a = __half22float2(h[0]), b = __half22float2(h[1]);
    v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
}
__device__ __forceinline__ void lc0_store4(float* p, const float v[4]) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void lc0_store4(__half* p, const float v[4]) {
    uint2 u;
    __half2* h = reinterpret_cast<__half2*>(&u);
    h[0] = __floats2half2_rn(v[0], v[1]);
    h[1] = __floats2half2_rn(v[2], v[3]);
    *reinterpret_cast<uint2*>(p) = u;
}

// ------------------------------------------------------------------ warp-level

__device__ __forceinline__ float lc0_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

__device__ __forceinline__ float lc0_warp_max(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor(v, offset));
    return v;
}

// Bit i set iff lane i's predicate is true; 64-bit on every target.
__device__ __forceinline__ unsigned long long lc0_ballot(bool pred) { return __ballot(pred); }

__device__ __forceinline__ int lc0_lane() { return (int)(threadIdx.x % warpSize); }

// ------------------------------------------------------------------ block-level

// Sum over the whole block; `scratch` holds at least blockDim.x / warpSize floats (1024 / 32 = 32 is
// always enough). Every thread gets the result. Contains __syncthreads: call from all threads.
__device__ __forceinline__ float lc0_block_sum(float v, float* scratch) {
    const int lane = lc0_lane(), warp = threadIdx.x / warpSize, nwarps = (blockDim.x + warpSize - 1) / warpSize;
    v = lc0_warp_sum(v);
    __syncthreads();  // scratch may still be read by a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < nwarps; ++w) total += scratch[w];
    return total;
}

__device__ __forceinline__ float lc0_block_max(float v, float* scratch) {
    const int lane = lc0_lane(), warp = threadIdx.x / warpSize, nwarps = (blockDim.x + warpSize - 1) / warpSize;
    v = lc0_warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float m = scratch[0];
    for (int w = 1; w < nwarps; ++w) m = fmaxf(m, scratch[w]);
    return m;
}

// ------------------------------------------------------------------ activations (fp32, lc0's formulas)

#define LC0_ACT_NONE 0
#define LC0_ACT_RELU 1
#define LC0_ACT_RELU2 2
#define LC0_ACT_MISH 3
#define LC0_ACT_SWISH 4
#define LC0_ACT_SELU 5
#define LC0_ACT_TANH 6
#define LC0_ACT_SIGMOID 7

template <int ACT>
__device__ __forceinline__ float lc0_activate(float x) {
    if (ACT == LC0_ACT_RELU) return fmaxf(x, 0.0f);
    if (ACT == LC0_ACT_RELU2) return x > 0.0f ? x * x : 0.0f;
    if (ACT == LC0_ACT_MISH) {  // x * tanh(softplus(x)) = x * n / (n + 2), n = e^x (e^x + 2)
        const float e = expf(fminf(x, 20.0f));
        const float n = e * (e + 2.0f);
        return x * n / (n + 2.0f);
    }
    if (ACT == LC0_ACT_SWISH) return x / (1.0f + expf(-x));
    if (ACT == LC0_ACT_SELU) return 1.05070098f * (x > 0.0f ? x : 1.67326324f * expm1f(x));
    if (ACT == LC0_ACT_TANH) return tanhf(x);
    if (ACT == LC0_ACT_SIGMOID) return 1.0f / (1.0f + expf(-x));
    return x;
}
