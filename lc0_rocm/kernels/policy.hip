// policy.hip — policy heads written straight into lc0's 1858-move layout (float32 logits).
//
// attention_policy_{f32,f16}(qk, pdm, ppo, map, out, scale)
//   qk  T [n*64, 2*pdm]: row b*64+s = Qp (columns 0..pdm) and Kp (pdm..2pdm) of token s, as one
//       fused wq|wk GEMM writes them.  ppo T [4, pdm] (queen, rook, bishop, shared offset).
//   map int32 [4288]: raw index -> 1858 index or -1; raw = from*64 + to for the 64x64 logits,
//       4096 + 24*y + 3*w + c for the promotion of the pawn on from-file y to file w as piece c.
//   L[i][j] = scale * Qp_i . Kp_j; o[c][w] = ppo[c] . Kp[56+w] (not scaled);
//   promotion (y, w, c) = L[48+y][56+w] + o[c][w] + o[3][w].  out float [n, 1858].
//   Launch: grid n, block 256 threads (each owns a 4x4 set of (from, to) pairs), static shared
//   memory ~18 KiB; pdm is walked in tiles of 32 (any pdm).
//
// policy_gather_{f32,f16}(x, stride, idx, out, n)
//   out[b, m] = x[b*stride + idx[m]] as float, m < 1858 (conv policy: idx = square*80 + plane of the
//   [64, 80] head output; classical policy: the identity). One thread per output.
#include "nn.h"

template <typename T>
__device__ void attention_policy_impl(const T* qk, int pdm, const T* ppo, const int* map, float* out, float scale) {
    __shared__ float qs[64][33];
    __shared__ float ks[64][33];
    __shared__ float ps[4][33];
    __shared__ float promo_l[64];
    __shared__ float promo_o[32];
    const int t = threadIdx.x;
    const long long b = blockIdx.x;
    const long long ld = 2LL * pdm;
    const T* base = qk + b * 64 * ld;
    const int ti = t >> 4, tj = t & 15;  // rows ti + 16*ii, columns tj + 16*jj
    float acc[4][4];
#pragma unroll
    for (int ii = 0; ii < 4; ++ii)
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) acc[ii][jj] = 0.0f;
    float oacc = 0.0f;
    for (int k0 = 0; k0 < pdm; k0 += 32) {
        const int kw = pdm - k0 < 32 ? pdm - k0 : 32;
        __syncthreads();
        for (int e = t; e < 64 * 32; e += 256) {
            const int r = e >> 5, kk = e & 31;
            const T* row = base + r * ld + k0 + kk;
            qs[r][kk] = kk < kw ? lc0_load(row) : 0.0f;
            ks[r][kk] = kk < kw ? lc0_load(row + pdm) : 0.0f;
        }
        if (t < 128) {
            const int c = t >> 5, kk = t & 31;
            ps[c][kk] = kk < kw ? lc0_load(ppo + (c * pdm + k0 + kk)) : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int kk = 0; kk < 32; ++kk) {
            float a[4], bk[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                a[u] = qs[ti + 16 * u][kk];
                bk[u] = ks[tj + 16 * u][kk];
            }
#pragma unroll
            for (int ii = 0; ii < 4; ++ii)
#pragma unroll
                for (int jj = 0; jj < 4; ++jj) acc[ii][jj] += a[ii] * bk[jj];
        }
        if (t < 32) {
            const int c = t >> 3, w = t & 7;
            for (int kk = 0; kk < 32; ++kk) oacc += ps[c][kk] * ks[56 + w][kk];
        }
    }
    float* ob = out + b * 1858;
#pragma unroll
    for (int ii = 0; ii < 4; ++ii)
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            const int i = ti + 16 * ii, j = tj + 16 * jj;
            const float v = acc[ii][jj] * scale;
            const int m = map[i * 64 + j];
            if (m >= 0) ob[m] = v;
            if (i >= 48 && i < 56 && j >= 56) promo_l[(i - 48) * 8 + (j - 56)] = v;
        }
    if (t < 32) promo_o[t] = oacc;
    __syncthreads();
    if (t < 192) {
        const int y = t / 24, w = (t % 24) / 3, c = t % 3;
        const int m = map[4096 + t];
        if (m >= 0) ob[m] = promo_l[y * 8 + w] + promo_o[c * 8 + w] + promo_o[24 + w];
    }
}

template <typename T>
__device__ void policy_gather_impl(const T* x, int stride, const int* idx, float* out, int n) {
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (long long)n * 1858) return;
    const long long b = e / 1858;
    const int m = (int)(e % 1858);
    out[e] = lc0_load(x + (b * stride + idx[m]));
}

#define ENTRY(T, sfx)                                                                                      \
    extern "C" __global__ void __launch_bounds__(256)                                                      \
        attention_policy##sfx(const T* qk, int pdm, const T* ppo, const int* map, float* out, float scale) { \
        attention_policy_impl<T>(qk, pdm, ppo, map, out, scale);                                           \
    }                                                                                                      \
    extern "C" __global__ void policy_gather##sfx(const T* x, int stride, const int* idx, float* out, int n) { \
        policy_gather_impl<T>(x, stride, idx, out, n);                                                     \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
