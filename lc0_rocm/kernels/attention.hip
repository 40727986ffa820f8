// attention.hip — fused multi-head self-attention over the 64 square tokens (flash-style: the 64x64
// logits never leave on-chip memory).
//
// Two kernels with one contract, mha_{f32,f16} and mha_t128_{f32,f16}:
//   (qkv, ld_qkv, dm, heads, bias, out, ld_out, scale)
//   qkv  T [n*64, ld_qkv]: row b*64+s holds Q (columns 0..dm), K (dm..2dm), V (2dm..3dm) of token s,
//        as one fused Q|K|V GEMM writes them; head h owns columns h*D..h*D+D of each part.
//   bias T [n, heads, 64, 64] or null: the smolgen attention bias (query-major, key fastest).
//   out  T [n*64, ld_out]: heads concatenated in head order (column h*D + d).
//   For each (b, h): logits[i][j] = scale * Q_i . K_j + bias[i][j]; P = softmax over j (float);
//   out_i = sum_j P[i][j] V_j.
//   D = MHA_DEPTH (compile-time define; the host compiles one module per head depth).
//
// mha (any D <= 64): grid (heads, n), block 64 threads (thread i = query i; any wave size), static
//   shared memory 2*64*D*4 + 64*64*4 bytes (48 KiB at D = 64).
// mha_t128 (D % 8 == 0, D <= 32; the default where it applies): grid (heads, n), block 128 threads.
//   Needs qkv 16-byte aligned with ld_qkv % 8 == 0, out and bias 16-byte aligned, ld_out % 4 == 0
//   (16-byte loads of 8 elements, 4-element bias loads and output stores). Staging: D/8 consecutive
//   threads load one token row's D columns of Q, K and V (16 bytes each); Q (pre-scaled) and K are
//   stored transposed, qt[d][i ^ sw] and kt[d][j ^ sw] with sw = ((d/8) * 32/(D/8)) & 28 (conflict-free
//   transposed stores; float4 groups stay whole), V row-major. Thread t computes the logits of queries
//   4qi..+3 x keys {4kj..+3, 32+4kj..+3}, kj = (t/2)%8, qi = 2(t/16) + t%2 (32 FMAs per three 16-byte
//   shared loads; lanes t, t^1 share K and t, t^2 share Q addresses, which NVIDIA serves in half the
//   wavefronts), adds the bias from registers, reduces softmax rows across the 8 threads of a qi
//   (__shfl_xor 8, 4, 2: warpSize a multiple of 16), writes the probabilities over Q/K in shared
//   memory, and then computes D/8 query rows (rg + k*512/D, rg = 2(t/(D/2)) + t%2) x 4 columns
//   (4 * ((t/2) % (D/4))) of P.V (16 FMAs per two 16-byte shared loads per query row and key group,
//   the same pairing; at D = 24, items e = t + 128k of (row, column group) (e/6, e%6) instead). Static shared memory
//   (max(2*D, 64)*68 + 64*(D+4)) * 4 bytes (26.6 KiB at D = 32). Its 256-thread predecessor with 4x4
//   logit tiles (mha_tiled) tied it at batches 1-16 and lost at 256 on the H200 (docs/perf.md) and was
//   removed.
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

// ---------------------------------------------------------------------------------- t128 kernel

#define MHA_LD 68  // row stride (floats) of the 64-wide shared tiles: 16-byte aligned rows

#if MHA_DEPTH % 8 == 0 && MHA_DEPTH <= 32
#define MHA_T128 128

template <typename T>
__device__ void mha_t128_impl(const T* qkv, int ld_qkv, int dm, int heads, const T* bias, T* out, int ld_out,
                              float scale) {
    constexpr int D = MHA_DEPTH;
    constexpr int VLD = D + 4;
    constexpr int QK = 2 * D * MHA_LD;
    constexpr int PF = 64 * MHA_LD;
    constexpr int U = QK > PF ? QK : PF;
    constexpr int G = D / 8;                // 8-column groups per token row of Q, K and V
    constexpr int SWM = 32 / G;             // qt/kt row d is swizzled by ((d/8) * SWM) & 28
    __shared__ float4 sm4[(U + 64 * VLD) / 4];
    float* sm = reinterpret_cast<float*>(sm4);
    float* qt = sm;               // [D][MHA_LD]: qt[d][i ^ sw(d)] = scale * Q[i][d]
    float* kt = sm + D * MHA_LD;  // [D][MHA_LD]: kt[d][j ^ sw(d)] = K[j][d]
    float* pm = sm;               // [64][MHA_LD]: probabilities, once qt/kt are consumed
    float* vs = sm + U;           // [64][VLD]
    const int t = threadIdx.x;
    const int h = blockIdx.x;
    const long long b = blockIdx.y;
    // queries 4qi..4qi+3; keys 4kj..4kj+3 (c < 4), 32+4kj.. (c >= 4). Lanes t and t^1 share kj, t and t^2
    // share qi: the shared loads of K and Q are then pairwise uniform (half the wavefronts on NVIDIA).
    const int kj = (t >> 1) & 7, qi = ((t >> 4) << 1) | (t & 1);
    float s[4][8];
    if (bias != nullptr) {
        const T* bt = bias + ((b * heads + h) * 4096 + (4 * qi) * 64 + 4 * kj);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            lc0_load4(bt + r * 64, s[r]);
            lc0_load4(bt + (r * 64 + 32), s[r] + 4);
        }
    } else {
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int c = 0; c < 8; ++c) s[r][c] = 0.0f;
    }
    const T* tok = qkv + b * 64 * (long long)ld_qkv + h * D;
    for (int e = t; e < 8 * D; e += MHA_T128) {
        const int r = e / G, c = e % G, d0 = c * 8;  // G consecutive threads read one row's D columns
        const T* row = tok + ((long long)r * ld_qkv + d0);
        float q[8], k[8], v[8];
        lc0_load8(row, q);
        lc0_load8(row + dm, k);
        lc0_load8(row + 2 * dm, v);
        const int rs = r ^ ((c * SWM) & 28);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            qt[(d0 + i) * MHA_LD + rs] = q[i] * scale;
            kt[(d0 + i) * MHA_LD + rs] = k[i];
        }
        *reinterpret_cast<float4*>(vs + (r * VLD + d0)) = make_float4(v[0], v[1], v[2], v[3]);
        *reinterpret_cast<float4*>(vs + (r * VLD + d0 + 4)) = make_float4(v[4], v[5], v[6], v[7]);
    }
    __syncthreads();
    for (int c = 0; c < G; ++c) {
        const int sw = (c * SWM) & 28;  // a multiple of 4 below 32: float4 groups stay whole and in order
        const float* qa = qt + (8 * c * MHA_LD + ((4 * qi) ^ sw));
        const float* kb = kt + (8 * c * MHA_LD + ((4 * kj) ^ sw));
#pragma unroll 4
        for (int dd = 0; dd < 8; ++dd) {
            const float4 a = *reinterpret_cast<const float4*>(qa + dd * MHA_LD);
            const float4 k0 = *reinterpret_cast<const float4*>(kb + dd * MHA_LD);
            const float4 k1 = *reinterpret_cast<const float4*>(kb + (dd * MHA_LD + 32));
            const float av[4] = {a.x, a.y, a.z, a.w};
            const float kv[8] = {k0.x, k0.y, k0.z, k0.w, k1.x, k1.y, k1.z, k1.w};
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int cc = 0; cc < 8; ++cc) s[r][cc] += av[r] * kv[cc];
        }
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        float m = s[r][0];
#pragma unroll
        for (int c = 1; c < 8; ++c) m = fmaxf(m, s[r][c]);
#pragma unroll
        for (int off = 8; off > 1; off >>= 1) m = fmaxf(m, __shfl_xor(m, off));
        float sum = 0.0f;
#pragma unroll
        for (int c = 0; c < 8; ++c) {
            s[r][c] = expf(s[r][c] - m);
            sum += s[r][c];
        }
#pragma unroll
        for (int off = 8; off > 1; off >>= 1) sum += __shfl_xor(sum, off);
        const float inv = 1.0f / sum;
#pragma unroll
        for (int c = 0; c < 8; ++c) s[r][c] *= inv;
    }
    __syncthreads();  // qt and kt are consumed: the probabilities take their place
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        float* prow = pm + (4 * qi + r) * MHA_LD;
        *reinterpret_cast<float4*>(prow + 4 * kj) = make_float4(s[r][0], s[r][1], s[r][2], s[r][3]);
        *reinterpret_cast<float4*>(prow + 32 + 4 * kj) = make_float4(s[r][4], s[r][5], s[r][6], s[r][7]);
    }
    __syncthreads();
    constexpr int CG = D / 4;  // column groups of 4
    if (MHA_T128 % CG == 0) {  // D = 8, 16, 32
        constexpr int RPT = D / 8;       // query rows per thread: rg, rg + RSTEP, ...
        constexpr int RSTEP = 64 / RPT;
        // lanes t and t^1 share cg (V loads), t and t^2 share rg (P loads): pairwise uniform, as above
        const int cg = (t >> 1) % CG, rg = ((t >> 1) / CG) * 2 + (t & 1);
        float o[RPT][4];
#pragma unroll
        for (int r = 0; r < RPT; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) o[r][c] = 0.0f;
#pragma unroll 2
        for (int j = 0; j < 64; j += 4) {
            float vv[4][4];
#pragma unroll
            for (int jj = 0; jj < 4; ++jj) {
                const float4 v = *reinterpret_cast<const float4*>(vs + ((j + jj) * VLD + 4 * cg));
                vv[jj][0] = v.x; vv[jj][1] = v.y; vv[jj][2] = v.z; vv[jj][3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < RPT; ++r) {
                const float4 p = *reinterpret_cast<const float4*>(pm + ((rg + r * RSTEP) * MHA_LD + j));
                const float pv[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
                for (int jj = 0; jj < 4; ++jj)
#pragma unroll
                    for (int c = 0; c < 4; ++c) o[r][c] += pv[jj] * vv[jj][c];
            }
        }
#pragma unroll
        for (int r = 0; r < RPT; ++r)
            lc0_store4(out + ((b * 64 + rg + r * RSTEP) * (long long)ld_out + h * D + 4 * cg), o[r]);
    } else {  // D = 24: 64 x 6 (row, column group) items, item e = t + 128k is row e/6, group e%6
        constexpr int NI = 64 * CG / MHA_T128;
        float o[NI][4];
#pragma unroll
        for (int r = 0; r < NI; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) o[r][c] = 0.0f;
        for (int j = 0; j < 64; j += 4) {
#pragma unroll
            for (int r = 0; r < NI; ++r) {
                const int e = t + r * MHA_T128, row = e / CG, cg = e % CG;
                const float4 p = *reinterpret_cast<const float4*>(pm + (row * MHA_LD + j));
                const float pv[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
                for (int jj = 0; jj < 4; ++jj) {
                    const float4 v = *reinterpret_cast<const float4*>(vs + ((j + jj) * VLD + 4 * cg));
                    o[r][0] += pv[jj] * v.x;
                    o[r][1] += pv[jj] * v.y;
                    o[r][2] += pv[jj] * v.z;
                    o[r][3] += pv[jj] * v.w;
                }
            }
        }
#pragma unroll
        for (int r = 0; r < NI; ++r) {
            const int e = t + r * MHA_T128;
            lc0_store4(out + ((b * 64 + e / CG) * (long long)ld_out + h * D + 4 * (e % CG)), o[r]);
        }
    }
}

#define ENTRY_T128(T, sfx)                                                                                \
    extern "C" __global__ void __launch_bounds__(MHA_T128)                                                \
        mha_t128##sfx(const T* qkv, int ld_qkv, int dm, int heads, const T* bias, T* out, int ld_out,    \
                      float scale) {                                                                      \
        mha_t128_impl<T>(qkv, ld_qkv, dm, heads, bias, out, ld_out, scale);                               \
    }
ENTRY_T128(float, _f32)
ENTRY_T128(__half, _f16)
#endif

#define ENTRY(T, sfx)                                                                                     \
    extern "C" __global__ void __launch_bounds__(64)                                                      \
        mha##sfx(const T* qkv, int ld_qkv, int dm, int heads, const T* bias, T* out, int ld_out, float scale) { \
        mha_impl<T>(qkv, ld_qkv, dm, heads, bias, out, ld_out, scale);                                    \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
