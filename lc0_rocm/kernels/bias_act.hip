// bias_act.hip — y = act(x + bias), elementwise, for every activation lc0 uses.
//
// Layout: x and y hold `total` elements; the bias index of element i is (i / inner) % channels:
//   inner = 1        -> row-major [rows, channels] (bias per last-dim column: FC / attention layers)
//   inner = H*W (64) -> NCHW [N, channels, 8, 8]   (bias per channel: conv layers)
// bias may be null (activation only). y may alias x (in place).
// Storage fp16 (__half) or fp32 per kernel name, math in fp32.
// Kernels: bias_act_<act>_<f16|f32>(T* y, const T* x, const T* bias, int total, int channels, int inner)
//   act in none relu relu2 mish swish selu tanh sigmoid.
// Launch: 1-D, block 256, grid min(ceil(total / 256), 65535); grid-stride loop, any total >= 0.
//
// act8_<act>_<f16|f32>(T* y, const T* x, int n8): y = act(x) over 8 * n8 elements, 8 per thread with
//   16-byte loads/stores (x and y 16-byte aligned; y may alias x). Launch: 1-D, block 256,
//   grid min(ceil(n8 / 256), 65535), grid-stride.
//
// widen_f16(float* y, const __half* x, int total): y = x as float32 (an fp16 network's tower output for
//   heads that run in fp32, lc0_rocm/gpu/nn/heads.py). Launch: 1-D, block 256, grid min(ceil(total / 256),
//   65535), grid-stride.
#include "common.h"

template <typename T, int ACT>
__device__ __forceinline__ void bias_act_body(T* y, const T* x, const T* bias, int total, int channels, int inner) {
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        float v = lc0_load(x + i);
        if (bias) v += lc0_load(bias + (i / inner) % channels);
        lc0_store(y + i, lc0_activate<ACT>(v));
    }
}

template <typename T, int ACT>
__device__ __forceinline__ void act8_body(T* y, const T* x, int n8) {
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
        float v[8];
        lc0_load8(x + (long long)i * 8, v);
#pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = lc0_activate<ACT>(v[k]);
        lc0_store8(y + (long long)i * 8, v);
    }
}

#define LC0_BIAS_ACT(NAME, ACT)                                                                          \
    extern "C" __global__ void __launch_bounds__(256) bias_act_##NAME##_f32(                              \
        float* y, const float* x, const float* bias, int total, int channels, int inner) {              \
        bias_act_body<float, ACT>(y, x, bias, total, channels, inner);                                   \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) bias_act_##NAME##_f16(                              \
        __half* y, const __half* x, const __half* bias, int total, int channels, int inner) {           \
        bias_act_body<__half, ACT>(y, x, bias, total, channels, inner);                                  \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) act8_##NAME##_f32(float* y, const float* x, int n8) { \
        act8_body<float, ACT>(y, x, n8);                                                                 \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) act8_##NAME##_f16(__half* y, const __half* x, int n8) { \
        act8_body<__half, ACT>(y, x, n8);                                                                \
    }

LC0_BIAS_ACT(none, LC0_ACT_NONE)
LC0_BIAS_ACT(relu, LC0_ACT_RELU)
LC0_BIAS_ACT(relu2, LC0_ACT_RELU2)
LC0_BIAS_ACT(mish, LC0_ACT_MISH)
LC0_BIAS_ACT(swish, LC0_ACT_SWISH)
LC0_BIAS_ACT(selu, LC0_ACT_SELU)
LC0_BIAS_ACT(tanh, LC0_ACT_TANH)
LC0_BIAS_ACT(sigmoid, LC0_ACT_SIGMOID)

extern "C" __global__ void __launch_bounds__(256) widen_f16(float* y, const __half* x, int total) {
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) y[i] = lc0_load(x + i);
}
