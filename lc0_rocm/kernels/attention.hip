// attention.hip — fused multi-head self-attention over the 64 square tokens (flash-style: the 64x64
// logits never leave on-chip memory).
//
// mha_{f32,f16}(qkv, ld_qkv, dm, heads, bias, out, ld_out, scale)
//   qkv  T [n*64, ld_qkv]: row b*64+s holds Q (columns 0..dm), K (dm..2dm), V (2dm..3dm) of token s,
//        as one fused Q|K|V GEMM writes them; head h owns columns h*D..h*D+D of each part.
//   bias T [n, heads, 64, 64] or null: the smolgen attention bias (query-major, key fastest).
//   out  T [n*64, ld_out]: heads concatenated in head order (column h*D + d).
//   For each (b, h): logits[i][j] = scale * Q_i . K_j + bias[i][j]; P = softmax over j (float);
//   out_i = sum_j P[i][j] V_j.
//   D = MHA_DEPTH (compile-time define, <= 64; the host compiles one module per head depth).
//   Launch: grid (heads, n), block 64 threads (thread i = query i; any wave size), static shared
//   memory 2*64*D*4 + 64*64*4 bytes (48 KiB at D = 64).
#include "nn.h"

#ifndef MHA_DEPTH
#define MHA_DEPTH 32
#endif
static_assert(MHA_DEPTH >= 1 && MHA_DEPTH <= 64, "MHA_DEPTH must be 1..64");

template <typename T>
__device__ void mha_impl(const T* qkv, int ld_qkv, int dm, int heads, const T* bias, T* out, int ld_out,
                         float scale) {
    constexpr int D = MHA_DEPTH;
    __shared__ float ks[64 * D];
    __shared__ float vs[64 * D];
    __shared__ float lg[64 * 64];  // row i stored rotated by i: column j at i*64 + ((j + i) & 63)
    const int h = blockIdx.x;
    const long long b = blockIdx.y;
    const int i = threadIdx.x;
    const T* tok = qkv + b * 64 * (long long)ld_qkv;

    for (int e = i; e < 64 * D; e += 64) {
        const int r = e / D, d = e % D;
        const T* row = tok + (long long)r * ld_qkv + h * D + d;
        ks[e] = lc0_load(row + dm);
        vs[e] = lc0_load(row + (2 * dm));
    }
    if (bias != nullptr) {
        const T* bt = bias + (b * heads + h) * 4096;
        for (int e = i; e < 4096; e += 64) {
            const int r = e >> 6, c = e & 63;
            lg[r * 64 + ((c + r) & 63)] = lc0_load(bt + e);
        }
    } else {
        for (int e = i; e < 4096; e += 64) lg[e] = 0.0f;
    }
    float q[D];
    const T* qrow = tok + (long long)i * ld_qkv + h * D;
#pragma unroll
    for (int d = 0; d < D; ++d) q[d] = lc0_load(qrow + d) * scale;
    __syncthreads();

    float mx = -3.0e38f;
    for (int j = 0; j < 64; ++j) {
        float s = 0.0f;
#pragma unroll
        for (int d = 0; d < D; ++d) s += q[d] * ks[j * D + d];
        const int slot = i * 64 + ((j + i) & 63);
        s += lg[slot];
        lg[slot] = s;  // only thread i touches row i
        mx = fmaxf(mx, s);
    }
    float acc[D];
#pragma unroll
    for (int d = 0; d < D; ++d) acc[d] = 0.0f;
    float sum = 0.0f;
    for (int j = 0; j < 64; ++j) {
        const float p = expf(lg[i * 64 + ((j + i) & 63)] - mx);
        sum += p;
#pragma unroll
        for (int d = 0; d < D; ++d) acc[d] += p * vs[j * D + d];
    }
    const float inv = 1.0f / sum;
    __syncthreads();  // everyone is done with ks: reuse it to stage the output for coalesced stores
#pragma unroll
    for (int d = 0; d < D; ++d) ks[i * D + d] = acc[d] * inv;
    __syncthreads();
    T* o = out + b * 64 * (long long)ld_out + h * D;
    for (int e = i; e < 64 * D; e += 64) {
        const int r = e / D, d = e % D;
        lc0_store(o + ((long long)r * ld_out + d), ks[e]);
    }
}

#define ENTRY(T, sfx)                                                                                     \
    extern "C" __global__ void __launch_bounds__(64)                                                      \
        mha##sfx(const T* qkv, int ld_qkv, int dm, int heads, const T* bias, T* out, int ld_out, float scale) { \
        mha_impl<T>(qkv, ld_qkv, dm, heads, bias, out, ld_out, scale);                                    \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
