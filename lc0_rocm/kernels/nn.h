// nn.h — device helpers shared by the network kernels (expand_planes, layernorm, attention, conv,
// policy, heads): storage-type conversion, lc0's activations by code, block-wide float sums.
//
// Storage type T is `float` or `__half`: each kernel file writes its body once as a template and
// instantiates it for both with a file-local ENTRY(T, suffix) macro (names `<kernel>_f32` and
// `<kernel>_f16`), so one source serves both precisions.
// Arithmetic is always float. Wave size: never assumed; reductions use warpSize and __shfl_xor
// (HIP semantics: whole wave, no mask) plus shared memory across waves.
#pragma once
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

// ---------------------------------------------------------------------------------------------
// storage <-> float

__device__ __forceinline__ float nn_f(float x) { return x; }
__device__ __forceinline__ float nn_f(__half x) { return __half2float(x); }

template <typename T>
__device__ __forceinline__ T nn_t(float x);
template <>
__device__ __forceinline__ float nn_t<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half nn_t<__half>(float x) { return __float2half(x); }

// ---------------------------------------------------------------------------------------------
// activations; codes match lc0_rocm/gpu/nn_kernels.py ACT_CODES

#define NN_ACT_NONE 0
#define NN_ACT_RELU 1
#define NN_ACT_RELU2 2
#define NN_ACT_MISH 3
#define NN_ACT_SWISH 4
#define NN_ACT_SELU 5
#define NN_ACT_TANH 6
#define NN_ACT_SIGMOID 7

__device__ __forceinline__ float nn_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float nn_act(float x, int act) {
    switch (act) {
        case NN_ACT_RELU:
            return fmaxf(x, 0.0f);
        case NN_ACT_RELU2: {
            float r = fmaxf(x, 0.0f);
            return r * r;
        }
        case NN_ACT_MISH: {  // lc0's form x * n / (n + 2), n = e^x (e^x + 2); exact enough past 20
            float e = expf(fminf(x, 20.0f));
            float n = e * (e + 2.0f);
            return x * (n / (n + 2.0f));
        }
        case NN_ACT_SWISH:
            return x * nn_sigmoid(x);
        case NN_ACT_SELU:
            return 1.05070098f * (x > 0.0f ? x : 1.67326324f * expm1f(x));
        case NN_ACT_TANH:
            return tanhf(x);
        case NN_ACT_SIGMOID:
            return nn_sigmoid(x);
        default:
            return x;
    }
}

// ---------------------------------------------------------------------------------------------
// block-wide sum of one float per thread; `scratch` holds >= blockDim.x / warpSize floats + 1.
// Every thread of the block must call it; every thread gets the total.

__device__ __forceinline__ float nn_wave_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
    return v;
}

__device__ __forceinline__ float nn_block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % warpSize;
    const int wave = threadIdx.x / warpSize;
    const int waves = (blockDim.x + warpSize - 1) / warpSize;
    v = nn_wave_sum(v);
    __syncthreads();  // scratch may still be read by a previous call
    if (lane == 0) scratch[wave] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < waves; ++w) total += scratch[w];
    return total;
}
