// policy.hip — policy heads written straight into lc0's 1858-move layout (float32 logits).
//
// attention_policy_{f32,f16}(qk, pdm, ppo, map, out, scale)
//   qk  T [n*64, 2*pdm]: row b*64+s = Qp (columns 0..pdm) and Kp (pdm..2pdm) of token s, as one
//       fused wq|wk GEMM writes them.  ppo T [4, pdm] (queen, rook, bishop, shared offset).
//   map int32 [4288]: raw index -> 1858 index or -1; raw = from*64 + to for the 64x64 logits,
//       4096 + 24*y + 3*w + c for the promotion of the pawn on from-file y to file w as piece c.
//   L[i][j] = scale * Qp_i . Kp_j; o[c][w] = ppo[c] . Kp[56+w] (not scaled);
//   promotion (y, w, c) = L[48+y][56+w] + o[c][w] + o[3][w].  out float [n, 1858].
//   attention_policy: grid n, block 256 threads (each owns a 4x4 set of (from, to) pairs), static
//   shared memory ~18 KiB; pdm is walked in tiles of 32 (any pdm). Efficient for large batches.
//   attention_policy_split (same arguments): grid (n, 16), block 256 threads: block (b, t) owns the
//   16x16 tile of from-squares 16*(t/4).., to-squares 16*(t%4).. (thread = one pair), so a batch of
//   one still fills 16 blocks; pdm is walked in chunks of 64 through ~8.5 KiB of static shared
//   memory; the tile t = 15 (from 48..63, to 48..63) also computes the promotion logits. For small
//   batches (it moves 4x the bytes of the other).
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
__device__ void attention_policy_split_impl(const T* qk, int pdm, const T* ppo, const int* map, float* out, float scale) {
    __shared__ float qs[16][65];
    __shared__ float ks[16][65];
    __shared__ float ps[4][65];
    __shared__ float promo_l[64];
    __shared__ float promo_o[32];
    const int t = threadIdx.x;
    const long long b = blockIdx.x;
    const int tile = blockIdx.y;
    const int f0 = 16 * (tile >> 2), t0 = 16 * (tile & 3);
    const bool promo = tile == 15;  // from 48..63, to 48..63: holds L[48+y][56+w] and the keys 56..63
    const long long ld = 2LL * pdm;
    const T* base = qk + b * 64 * ld;
    const int r = t >> 4, c = t & 15;
    float acc = 0.0f, oacc = 0.0f;
    for (int k0 = 0; k0 < pdm; k0 += 64) {
        const int kw = pdm - k0 < 64 ? pdm - k0 : 64;
        __syncthreads();
        for (int e = t; e < 16 * 64; e += 256) {
            const int rr = e >> 6, kk = e & 63;
            qs[rr][kk] = kk < kw ? lc0_load(base + ((f0 + rr) * ld + k0 + kk)) : 0.0f;
            ks[rr][kk] = kk < kw ? lc0_load(base + ((t0 + rr) * ld + pdm + k0 + kk)) : 0.0f;
        }
        if (promo) {
            const int pc = t >> 6, kk = t & 63;
            ps[pc][kk] = kk < kw ? lc0_load(ppo + (pc * pdm + k0 + kk)) : 0.0f;
        }
        __syncthreads();
#pragma unroll 16
        for (int kk = 0; kk < 64; ++kk) acc += qs[r][kk] * ks[c][kk];
        if (promo && t < 32) {
            const int pc = t >> 3, w = t & 7;
#pragma unroll 16
            for (int kk = 0; kk < 64; ++kk) oacc += ps[pc][kk] * ks[8 + w][kk];
        }
    }
    float* ob = out + b * 1858;
    const int i = f0 + r, j = t0 + c;
    const float v = acc * scale;
    const int m = map[i * 64 + j];
    if (m >= 0) ob[m] = v;
    if (!promo) return;
    if (i >= 48 && i < 56 && j >= 56) promo_l[(i - 48) * 8 + (j - 56)] = v;
    if (t < 32) promo_o[t] = oacc;
    __syncthreads();
    if (t < 192) {
        const int y = t / 24, w = (t % 24) / 3, pc = t % 3;
        const int mm = map[4096 + t];
        if (mm >= 0) ob[mm] = promo_l[y * 8 + w] + promo_o[pc * 8 + w] + promo_o[24 + w];
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
    extern "C" __global__ void __launch_bounds__(256)                                                      \
        attention_policy_split##sfx(const T* qk, int pdm, const T* ppo, const int* map, float* out,        \
                                    float scale) {                                                         \
        attention_policy_split_impl<T>(qk, pdm, ppo, map, out, scale);                                    \
    }                                                                                                      \
    extern "C" __global__ void policy_gather##sfx(const T* x, int stride, const int* idx, float* out, int n) { \
        policy_gather_impl<T>(x, stride, idx, out, n);                                                     \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
