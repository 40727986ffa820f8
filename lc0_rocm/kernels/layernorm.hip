// layernorm.hip — LayerNorm fused with what precedes and follows it in an Lc0 net.
//
// layernorm_{f32,f16}(x, bias, skip, out, gamma, beta, gate_mul, gate_add, C, alpha, eps, act)
//   Per row r of [rows, C] (all tensors row-major, row stride C):
//     v   = act(x[r] + bias)            bias [C] or null (the previous GEMM's bias), act by code
//     v   = alpha * v + skip[r]         only when skip is non-null (the residual connection)
//     y   = (v - mean(v)) / sqrt(var(v) + eps) * gamma + beta      population variance, float math
//     y   = y * gate_mul[r % 64] + gate_add[r % 64]                only when gate_mul is non-null
//                                                                  (gates are [64, C] square-major)
//     out[r] = y
//   `out` may alias `x` or `skip` (each row is read completely before it is written).
//   Launch: grid = rows, block = a multiple of warpSize (<= 1024), dynamic shared = C * 4 bytes.
//
// layernorm8_{f32,f16}: the same contract for C % 8 == 0 and C <= 8 * 1024 with every pointer 16-byte
//   aligned: thread k owns columns 8k..8k+7 and keeps them in registers (16-byte loads and stores, one
//   pass over memory). Launch: grid = rows, block = ceil(C / 8) rounded up to a multiple of warpSize,
//   no dynamic shared memory.
#include "nn.h"

extern __shared__ float ln_row[];

template <typename T>
__device__ void layernorm_impl(const T* x, const T* bias, const T* skip, T* out, const T* gamma, const T* beta,
                               const T* gate_mul, const T* gate_add, int C, float alpha, float eps, int act) {
    __shared__ float scratch[64];
    const long long row = blockIdx.x;
    const T* xr = x + row * C;
    float sum = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float v = lc0_load(xr + c);
        if (bias != nullptr) v += lc0_load(bias + c);
        v = nn_act(v, act);
        if (skip != nullptr) v = alpha * v + lc0_load(skip + (row * C + c));
        ln_row[c] = v;
        sum += v;
    }
    const float mean = lc0_block_sum(sum, scratch) / (float)C;
    float sq = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {  // each thread reads back only what it wrote
        float d = ln_row[c] - mean;
        sq += d * d;
    }
    const float var = lc0_block_sum(sq, scratch) / (float)C;
    const float rstd = 1.0f / sqrtf(var + eps);
    const int s = (int)(row & 63);
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float y = (ln_row[c] - mean) * rstd * lc0_load(gamma + c) + lc0_load(beta + c);
        if (gate_mul != nullptr) y = y * lc0_load(gate_mul + (s * C + c)) + lc0_load(gate_add + (s * C + c));
        lc0_store(out + (row * C + c), y);
    }
}

template <typename T>
__device__ void layernorm8_impl(const T* x, const T* bias, const T* skip, T* out, const T* gamma, const T* beta,
                                const T* gate_mul, const T* gate_add, int C, float alpha, float eps, int act) {
    __shared__ float scratch[64];
    const long long row = blockIdx.x;
    const int c = threadIdx.x * 8;
    const bool on = c < C;
    const int s = (int)(row & 63);
    // every load but the (embedding-only) gates is issued before the first reduction: at small batches
    // the kernel is latency-bound
    float v[8], bb[8], sk[8], g[8], be[8];
    float sum = 0.0f;
    if (on) {
        lc0_load8(x + (row * C + c), v);
        if (bias != nullptr) lc0_load8(bias + c, bb);
        if (skip != nullptr) lc0_load8(skip + (row * C + c), sk);
        lc0_load8(gamma + c, g);
        lc0_load8(beta + c, be);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            float u = bias != nullptr ? v[i] + bb[i] : v[i];
            u = nn_act(u, act);
            v[i] = skip != nullptr ? alpha * u + sk[i] : u;
            sum += v[i];
        }
    }
    const float mean = lc0_block_sum(sum, scratch) / (float)C;
    float sq = 0.0f;
    if (on) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const float d = v[i] - mean;
            sq += d * d;
        }
    }
    const float rstd = 1.0f / sqrtf(lc0_block_sum(sq, scratch) / (float)C + eps);
    if (!on) return;
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = (v[i] - mean) * rstd * g[i] + be[i];
    if (gate_mul != nullptr) {
        lc0_load8(gate_mul + (s * C + c), bb);
        lc0_load8(gate_add + (s * C + c), sk);
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = v[i] * bb[i] + sk[i];
    }
    lc0_store8(out + (row * C + c), v);
}

#define ENTRY(T, sfx)                                                                                    \
    extern "C" __global__ void layernorm##sfx(const T* x, const T* bias, const T* skip, T* out,          \
                                              const T* gamma, const T* beta, const T* gate_mul,          \
                                              const T* gate_add, int C, float alpha, float eps, int act) { \
        layernorm_impl<T>(x, bias, skip, out, gamma, beta, gate_mul, gate_add, C, alpha, eps, act);      \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(1024)                                                   \
        layernorm8##sfx(const T* x, const T* bias, const T* skip, T* out, const T* gamma, const T* beta,   \
                        const T* gate_mul, const T* gate_add, int C, float alpha, float eps, int act) {  \
        layernorm8_impl<T>(x, bias, skip, out, gamma, beta, gate_mul, gate_add, C, alpha, eps, act);     \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
