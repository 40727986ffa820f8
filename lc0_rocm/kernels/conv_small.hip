// conv_small.hip — small batches of a classical residual tower: a 3x3 convolution computed directly, in one
// kernel per convolution, with the previous residual block's end (SE unit, residual add, activation) fused
// into its prologue. At a few boards Winograd's four ops per convolution (transform, 36-way GEMM, output
// transform, SE end) are launch-bound; here a residual block is two kernels and the whole board's input
// channels sit in shared memory, so the convolution reads each activation from LDS nine times.
//
// Activations are square-major ([n*64, ld], row b*64 + s, s = rank*8 + file), as in conv.hip.
// W is the filter bank reordered on the host (lc0_rocm/gpu/nn/conv_small.py: direct_filter), fp32:
//   W[g, c, tap, r] = w[g*4 + r, c, tap / 3, tap % 3]   (g < ceil(O / 4), c < C, tap < 9, r < 4; pad 0)
// so that a thread's 4 output channels read 36 consecutive floats per input channel (9 float4 loads, the
// same address across a warp: a broadcast).
//
// conv_small_{f32,f16}(x, ldx, C, z, skip, xout, w1, b1, w2t, b2, H, W, bias, y, ldy, O, out_act, Q, CK, wsz)
//   The board's input u [64, C] is, by mode:
//     plain (z null):           u = x[b*64 + s, c]
//     block end (z non-null):   u = act(gamma[c] * z + beta[c] + skip) with z, skip [n*64, C] and, when w1
//                               is non-null, the SE unit of z (pooled = mean_board(z); h = act(w1 [H, C] .
//                               pooled + b1); t = w2t [H, 2C]^T . h + b2; gamma = sigmoid(t[c]),
//                               beta = t[C + c]), else gamma = 1, beta = 0. Channels 8k..8k+7 of u go to
//                               xout [n*64, C] from the block with blockIdx.y = k % gridDim.y (xout may be
//                               null; it must not alias z or skip unless O == 0: other blocks still read them).
//   then, for O > 0: y[b*64 + s, o] = act?(bias[o] + sum_{c, tap} W . u[neighbour(s, tap), c]) (0 off the
//   board), act applied when out_act != 0. O == 0 runs the block end alone (the tower's last block; xout
//   may then alias skip: each element is read and written by one thread).
//   u is rounded to the storage type where it is kept (T), as the Winograd path stores it.
//   Launch: grid (n, ceil(ceil(O/4) / G)) (O == 0: any), block 256 = 64 squares x G output groups x Q
//   input-channel splits (thread t: square t % 64, split (t / 64) % Q, group blockIdx.y * G + t / (64 Q));
//   each thread sums channels [q CK/Q, (q+1) CK/Q) of every chunk of CK channels (the chunk's weights for
//   the block's groups staged in LDS first) and the splits are added in order. Dynamic LDS (4 C + wsz)
//   floats + C * 65 T, wsz >= max(36 G CK, 1024, H C / 8) (lc0_rocm/gpu/nn/kernels.py: conv_small_shape).
//   C, ldx and H*C multiples of 8 (16-byte loads of 8 channels); act is CONV_ACT (compiled per activation,
//   as conv.hip).
#include "common.h"

#ifndef CONV_ACT
#define CONV_ACT LC0_ACT_NONE
#endif
#define CONV_SMALL_R 4  // output channels per thread
#define CONV_SMALL_PREFETCH 5  // float4s of weights a thread holds in registers (a slice of 64 x 64: 2.25)
#define XS_LD 65        // a channel's 64 squares and one 0: off-board taps read slot 64

template <typename T>
__device__ void conv_small_impl(const T* x, int ldx, int C, const T* z, const T* skip, T* xout, const float* w1,
                                const float* b1, const float* w2t, const float* b2, int H, const float* W,
                                const float* bias, T* y, int ldy, int O, int out_act, int Q, int CK, int wsz) {
    extern __shared__ float small_shared[];
    float* gamma = small_shared;           // [C]  (pooled means first, then the SE scale)
    float* beta = small_shared + C;        // [C]
    float* hidden = small_shared + 2 * C;  // [H <= 2C]
    float* wbuf = small_shared + 4 * C;    // [wsz]: SE partial sums, then weight chunks, then split sums
    T* xs = reinterpret_cast<T*>(wbuf + wsz);  // [C, XS_LD]
    const int b = blockIdx.x, tid = threadIdx.x, nt = blockDim.x, G = nt / (64 * Q), C8 = C / 8;
    const long long row0 = (long long)b * 64;
    const int ngrp = (O + CONV_SMALL_R - 1) / CONV_SMALL_R, grp0 = blockIdx.y * G;

    // weights first: with one chunk (a few boards) the block's whole slice goes to registers before the
    // prologue, so its global latency overlaps the staging and the SE unit's instead of following them
    const int nw4 = G * CK * 9;
    const bool prefetch = CK == C && nw4 <= CONV_SMALL_PREFETCH * nt && grp0 < ngrp;
    float4 pre[CONV_SMALL_PREFETCH];
    if (prefetch) {
#pragma unroll
        for (int k = 0; k < CONV_SMALL_PREFETCH; ++k) {
            const int i = tid + k * nt, gg = i / (CK * 9), r = i - gg * (CK * 9);
            pre[k] = i < nw4 && grp0 + gg < ngrp
                         ? reinterpret_cast<const float4*>(W)[((long long)(grp0 + gg) * C) * 9 + r]
                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }

    // the board's input channels into LDS, channel-major; 16-byte loads of 8 channels of one square
    const T* src = z != nullptr ? z : x;
    const int lds = z != nullptr ? C : ldx;
#pragma unroll 4
    for (int i = tid; i < C8 * 64; i += nt) {
        const int s = i & 63, c8 = i >> 6;
        float v[8];
        lc0_load8(src + ((row0 + s) * lds + c8 * 8), v);
#pragma unroll
        for (int k = 0; k < 8; ++k) lc0_store(xs + ((c8 * 8 + k) * XS_LD + s), v[k]);
    }
    for (int c = tid; c < C; c += nt) xs[c * XS_LD + 64] = T(0.0f);
    __syncthreads();

    if (z != nullptr) {
        if (w1 != nullptr) {
            for (int c = tid; c < C; c += nt) {
                float sum = 0.0f;
#pragma unroll 8
                for (int s = 0; s < 64; ++s) sum += lc0_load(xs + c * XS_LD + s);
                gamma[c] = sum * (1.0f / 64.0f);
            }
            __syncthreads();
            for (int i = tid; i < H * C8; i += nt) {  // fc1 partial sums over 8 channels each
                const int j = i / C8, c8 = i - j * C8;
                float w[8];
                lc0_load8(w1 + ((long long)j * C + c8 * 8), w);
                float sum = 0.0f;
#pragma unroll
                for (int k = 0; k < 8; ++k) sum += w[k] * gamma[c8 * 8 + k];
                wbuf[i] = sum;
            }
            __syncthreads();
            for (int j = tid; j < H; j += nt) {
                float sum = b1[j];
                for (int c8 = 0; c8 < C8; ++c8) sum += wbuf[j * C8 + c8];
                hidden[j] = lc0_activate<CONV_ACT>(sum);
            }
            __syncthreads();
            for (int c = tid; c < C; c += nt) {
                float g = b2[c], t = b2[C + c];
#pragma unroll 8
                for (int j = 0; j < H; ++j) {
                    g += w2t[(long long)j * 2 * C + c] * hidden[j];
                    t += w2t[(long long)j * 2 * C + C + c] * hidden[j];
                }
                gamma[c] = lc0_activate<LC0_ACT_SIGMOID>(g);
                beta[c] = t;
            }
        } else {
            for (int c = tid; c < C; c += nt) {
                gamma[c] = 1.0f;
                beta[c] = 0.0f;
            }
        }
        __syncthreads();
#pragma unroll 2
        for (int i = tid; i < C8 * 64; i += nt) {  // the block end; this block writes every gridDim.y-th 8 channels
            const int s = i & 63, c8 = i >> 6;
            const long long at = (row0 + s) * C + c8 * 8;
            float v[8];
            lc0_load8(skip + at, v);
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                const int c = c8 * 8 + k;
                T* p = xs + (c * XS_LD + s);
                lc0_store(p, lc0_activate<CONV_ACT>(gamma[c] * lc0_load(p) + beta[c] + v[k]));
                v[k] = lc0_load(p);
            }
            if (xout != nullptr && c8 % gridDim.y == blockIdx.y) lc0_store8(xout + at, v);
        }
    }

    // the convolution: thread (square s, split q, group g) sums channels of its split for 4 outputs
    const int s = tid & 63, q = (tid >> 6) % Q, g = (tid >> 6) / Q, grp = grp0 + g;
    const int rank = s >> 3, file = s & 7;
    int off[9];
#pragma unroll
    for (int tap = 0; tap < 9; ++tap) {
        const int r = rank + tap / 3 - 1, f = file + tap % 3 - 1;
        off[tap] = (r >= 0 && r < 8 && f >= 0 && f < 8) ? r * 8 + f : 64;
    }
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4* w4 = reinterpret_cast<float4*>(wbuf);
    const int per = CK / Q;
    for (int c0 = 0; c0 < C && grp0 < ngrp; c0 += CK) {
        __syncthreads();  // wbuf free (the SE partials, the previous chunk)
        if (prefetch) {
#pragma unroll
            for (int k = 0; k < CONV_SMALL_PREFETCH; ++k)
                if (tid + k * nt < nw4) w4[tid + k * nt] = pre[k];
        } else {
            for (int i = tid; i < nw4; i += nt) {
                const int gg = i / (CK * 9), r = i - gg * (CK * 9);
                w4[i] = grp0 + gg < ngrp
                            ? reinterpret_cast<const float4*>(W)[((long long)(grp0 + gg) * C + c0) * 9 + r]
                            : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
        }
        __syncthreads();
        const float4* wg = w4 + g * CK * 9;
        for (int cc = q * per; cc < (q + 1) * per; ++cc) {
            const T* xc = xs + (c0 + cc) * XS_LD;
#pragma unroll
            for (int tap = 0; tap < 9; ++tap) {
                const float v = lc0_load(xc + off[tap]);
                const float4 w = wg[cc * 9 + tap];
                acc.x += w.x * v;
                acc.y += w.y * v;
                acc.z += w.z * v;
                acc.w += w.w * v;
            }
        }
    }
    if (grp0 >= ngrp) return;  // a block-end-only launch (O == 0) or a block past the last group
    if (Q > 1) {  // the splits' sums, added in split order (deterministic)
        __syncthreads();
        w4[tid] = acc;
        __syncthreads();
        if (q != 0) return;
        acc = w4[(g * Q) * 64 + s];
        for (int k = 1; k < Q; ++k) {
            const float4 a = w4[(g * Q + k) * 64 + s];
            acc.x += a.x;
            acc.y += a.y;
            acc.z += a.z;
            acc.w += a.w;
        }
    }
    if (grp >= ngrp) return;
    float v[4] = {acc.x, acc.y, acc.z, acc.w};
#pragma unroll
    for (int r = 0; r < CONV_SMALL_R; ++r) {
        const int o = grp * CONV_SMALL_R + r;
        if (o < O) {
            const float u = v[r] + bias[o];
            lc0_store(y + ((row0 + s) * ldy + o), out_act ? lc0_activate<CONV_ACT>(u) : u);
        }
    }
}

#define ENTRY(T, sfx)                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) conv_small##sfx(                                         \
        const T* x, int ldx, int C, const T* z, const T* skip, T* xout, const float* w1, const float* b1,      \
        const float* w2t, const float* b2, int H, const float* W, const float* bias, T* y, int ldy, int O,     \
        int out_act, int Q, int CK, int wsz) {                                                                 \
        conv_small_impl<T>(x, ldx, C, z, skip, xout, w1, b1, w2t, b2, H, W, bias, y, ldy, O, out_act, Q, CK,   \
                           wsz);                                                                               \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
