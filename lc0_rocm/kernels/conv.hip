// conv.hip — the classical residual tower's non-GEMM pieces: Winograd F(4x4, 3x3) transforms for the 8x8
// board (Lavin & Gray's construction on the points 0, 1, -1, 1/2, -2 and infinity, which round about 1.5x
// less than 0, +-1, +-2 in fp16 and fp32; B^T and A^T are lc0_rocm/gpu/nn/conv.py's WINO_BT, WINO_AT) and the
// SE/residual output.
//
// Activations are square-major ([n*64, C], row b*64 + s, s = rank*8 + file). With zero padding 1, a board
// is 2x2 tiles of 4x4 outputs, each read from a 6x6 input patch: tile t = tr*2 + tf covers ranks
// 4tr..4tr+3 and files 4tf..4tf+3 and reads ranks 4tr-1..4tr+4, files 4tf-1..4tf+4 (0 off the board).
// A 3x3 convolution is then 36 independent GEMMs, one per point xi = i*6 + j of the 6x6 transform:
//   V [36, 4n, Kp]: V[xi, b*4+t, c] = (B^T d B)[i, j], d the tile's 6x6 patch of channel c
//   U [36, Np, Kp]: U[xi, o, c]     = (G g G^T)[i, j], g the 3x3 filter o <- c (transformed on the host)
//   M [36, 4n, Np]: M[xi] = V[xi] . U[xi]^T  (hipBLASLt, strided-batched)
//   y = A^T M A per tile (4x4 outputs), then bias, SE, residual and activation.
// Kp, Np are the channel counts rounded up to 8 (16-byte rows for hipBLASLt); pad channels of V are 0.
// act below is CONV_ACT, an LC0_ACT_* code fixed at compile time (-DCONV_ACT=<code>; the runtime builds one
// module per activation it needs: none, relu, mish), so the unrolled per-square loops carry no switch.
//
// winograd_in_{f32,f16}(x, ldx, V, n, C, Kp)
//   V <- the input transform of x [n*64, ldx] (channels 0..C-1; channels C..Kp-1 of V get 0).
//   One thread per (b, c < Kp): reads its channel's 64 squares once, writes 4 tiles x 36 points.
//   Launch: 1-D, block 256, grid ceil(n*Kp / 256).
//
// winograd_out_{f32,f16}(M, ldm, bias, skip, y, ldy, pooled, Vn, n, C)
//   z = A^T M A + bias[c] (bias may be null); pooled [n, C] (may be null) <- mean of z over the board;
//   v = act(z + skip) (skip [n*64, C] may be null; act applies after the skip); y [n*64, ldy] <- v (y
//   may be null, may alias skip); Vn [36, 4n, C] (may be null) <- the input transform of v for the next
//   convolution (C must then be a multiple of 8: Vn's rows are C long, no pad channels).
//   One thread per (b, c < C). Launch: 1-D, block 256, grid ceil(n*C / 256).
//
// winograd_in32_f16(x, ldx, V, n, C, Kp), winograd_out32_f16(M, ldm, bias, skip, y, ldy, pooled, Vn, n, C)
//   As winograd_in_f16 / winograd_out_f16 with V resp. M in fp32 (x, bias, skip, y, pooled, Vn fp16): the
//   input convolution of an fp16 network runs its transforms and its GEMM in fp32. Its U and M rounded
//   to fp16 moved a tanh value head's Q more than the fp16 transforms of all the tower's other
//   convolutions together (the float64 twin, tests/test_fp16_twin.py); its error passes through every block.
//
// winograd_out_se_{f32,f16}(M, ldm, bias, skip, y, Vn, w1, b1, w2t, b2, C, H)
//   The SE residual block's end in one pass: z = A^T M A + bias; s = mean_board(z);
//   h = act(w1 [H, C] . s + b1 [H]); t = w2t^T [2C, H] . h + b2 [2C] (w2t is fc2's weight transposed,
//   [H, 2C], so that threads read it along c); v = act(sigmoid(t[c]) * z + t[C + c] + skip);
//   y [n*64, C] <- v (may alias skip); Vn (may be null) <- its input transform as above.
//   One block per board, one thread per channel: blockDim.x = C rounded up to a multiple of 64,
//   C <= 256; dynamic shared memory (C + H) floats. Launch: grid n.
//
// winograd_in_se_{f32,f16}(z, skip, se, y, V, n, C, Kp)
//   The SE residual block's end for big batches, fused into the next convolution's input transform (the
//   "split" SE path: conv2's winograd_out wrote z = A^T M A + bias and pooled it, the two SE dense layers
//   ran as GEMMs over all boards into se): v = act(sigmoid(se[b, c]) * z + se[b, C + c] + skip), or
//   act(z + skip) for a null se; y [n*64, C] <- v (y may be null, may alias skip: each thread reads its own
//   elements before it writes them); V [36, 4n, Kp] <- the input transform of v (channels C..Kp-1 get 0).
//   z, skip [n*64, C]; se [n, 2C]. One thread per (b, c < Kp). Launch: 1-D, block 256, grid
//   ceil(n*Kp / 256).
//
// residual_{f32,f16}(z, skip, se, out, n, C)
//   out = act(gamma * z + beta + skip) with gamma = sigmoid(se[b, c]), beta = se[b, C + c] when se
//   ([n, 2C], the SE unit's second dense output, bias included) is non-null, else act(z + skip).
//   `out` may alias `z` or `skip`. One thread per element (the SE path for C > 256).
#include "common.h"

#ifndef CONV_ACT
#define CONV_ACT LC0_ACT_NONE
#endif
#define WINOGRAD_SE_MAX_C 256

// (B^T d) for one 6-vector: the input transform's rows.
__device__ __forceinline__ void wino_bt(const float d[6], float r[6]) {
    r[0] = d[0] - 1.5f * d[1] - 2.0f * d[2] + 1.5f * d[3] + d[4];
    r[1] = -d[1] + 0.5f * d[2] + 2.5f * d[3] + d[4];
    r[2] = d[1] - 2.5f * d[2] + 0.5f * d[3] + d[4];
    r[3] = -2.0f * d[1] - d[2] + 2.0f * d[3] + d[4];
    r[4] = 0.5f * d[1] - d[2] - 0.5f * d[3] + d[4];
    r[5] = d[1] - 1.5f * d[2] - 2.0f * d[3] + 1.5f * d[4] + d[5];
}

// (A^T m) for one 6-vector: the output transform's rows.
__device__ __forceinline__ void wino_at(const float m[6], float o[4]) {
    const float a = m[1] + m[2], b = m[1] - m[2];
    o[0] = m[0] + a + m[3] + m[4];
    o[1] = b + 0.5f * m[3] - 2.0f * m[4];
    o[2] = a + 0.25f * m[3] + 4.0f * m[4];
    o[3] = b + 0.125f * m[3] - 8.0f * m[4] + m[5];
}

// The input transform of one channel's board v[64] (square-major) into V: point xi of tile t goes to
// V[xi * xi_stride + t * tile_stride].
template <typename T>
__device__ __forceinline__ void wino_in_board(const float v[64], T* V, long long xi_stride, long long tile_stride) {
#pragma unroll
    for (int t = 0; t < 4; ++t) {
        const int r0 = (t >> 1) * 4 - 1, f0 = (t & 1) * 4 - 1;
        float tmp[6][6];
#pragma unroll
        for (int j = 0; j < 6; ++j) {  // columns: B^T along ranks
            float d[6];
#pragma unroll
            for (int i = 0; i < 6; ++i) {
                const int r = r0 + i, f = f0 + j;
                d[i] = (r >= 0 && r < 8 && f >= 0 && f < 8) ? v[r * 8 + f] : 0.0f;
            }
            float col[6];
            wino_bt(d, col);
#pragma unroll
            for (int i = 0; i < 6; ++i) tmp[i][j] = col[i];
        }
#pragma unroll
        for (int i = 0; i < 6; ++i) {  // rows: B along files
            float row[6];
            wino_bt(tmp[i], row);
#pragma unroll
            for (int j = 0; j < 6; ++j) lc0_store(V + ((i * 6 + j) * xi_stride + t * tile_stride), row[j]);
        }
    }
}

// z[64] (square-major) <- A^T M A of one channel's 4 tiles; M point xi of tile t at M[xi * xi_stride +
// t * tile_stride]; plus `bias`.
template <typename T>
__device__ __forceinline__ void wino_out_board(const T* M, long long xi_stride, long long tile_stride, float bias,
                                               float z[64]) {
#pragma unroll
    for (int t = 0; t < 4; ++t) {
        float tmp[4][6];
#pragma unroll
        for (int j = 0; j < 6; ++j) {  // columns: A^T along ranks
            float m[6];
#pragma unroll
            for (int i = 0; i < 6; ++i) m[i] = lc0_load(M + ((i * 6 + j) * xi_stride + t * tile_stride));
            float o[4];
            wino_at(m, o);
#pragma unroll
            for (int i = 0; i < 4; ++i) tmp[i][j] = o[i];
        }
        const int r0 = (t >> 1) * 4, f0 = (t & 1) * 4;
#pragma unroll
        for (int i = 0; i < 4; ++i) {  // rows: A along files
            float o[4];
            wino_at(tmp[i], o);
#pragma unroll
            for (int j = 0; j < 4; ++j) z[(r0 + i) * 8 + f0 + j] = o[j] + bias;
        }
        __threadfence_block();  // one tile's loads in flight at a time: bounds the registers
    }
}

template <typename T, typename TV>
__device__ void winograd_in_impl(const T* x, int ldx, TV* V, int n, int C, int Kp) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)n * Kp) return;
    const int b = (int)(idx / Kp), c = (int)(idx % Kp);
    float v[64];
    const T* xb = x + (long long)b * 64 * ldx + c;
#pragma unroll
    for (int s = 0; s < 64; ++s) v[s] = c < C ? lc0_load(xb + (long long)s * ldx) : 0.0f;
    const long long tiles = 4LL * n;
    wino_in_board(v, V + ((long long)b * 4 * Kp + c), tiles * Kp, (long long)Kp);
}

template <typename T, typename TM>
__device__ void winograd_out_impl(const TM* M, int ldm, const T* bias, const T* skip, T* y, int ldy, T* pooled,
                                  T* Vn, int n, int C) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)n * C) return;
    const int b = (int)(idx / C), c = (int)(idx % C);
    const long long tiles = 4LL * n;
    float z[64];
    wino_out_board(M + ((long long)b * 4 * ldm + c), tiles * ldm, (long long)ldm,
                   bias != nullptr ? lc0_load(bias + c) : 0.0f, z);
    if (pooled != nullptr) {
        float sum = 0.0f;
#pragma unroll
        for (int s = 0; s < 64; ++s) sum += z[s];
        lc0_store(pooled + idx, sum * (1.0f / 64.0f));
    }
    const long long row0 = (long long)b * 64;
#pragma unroll
    for (int s = 0; s < 64; ++s) {
        float v = z[s];
        if (skip != nullptr) v += lc0_load(skip + ((row0 + s) * C + c));
        z[s] = lc0_activate<CONV_ACT>(v);
    }
    if (y != nullptr) {
#pragma unroll
        for (int s = 0; s < 64; ++s) lc0_store(y + ((row0 + s) * ldy + c), z[s]);
    }
    if (Vn != nullptr) wino_in_board(z, Vn + ((long long)b * 4 * C + c), tiles * C, (long long)C);
}

template <typename T>
__device__ void winograd_out_se_impl(const T* M, int ldm, const T* bias, const T* skip, T* y, T* Vn, const T* w1,
                                     const T* b1, const T* w2t, const T* b2, int C, int H) {
    extern __shared__ float se_shared[];
    float* pooled = se_shared;  // [C]
    float* hidden = se_shared + C;  // [H]
    const int b = blockIdx.x, c = threadIdx.x, n = gridDim.x;
    const bool active = c < C;
    const long long tiles = 4LL * n;
    float z[64];
    if (active) {
        wino_out_board(M + ((long long)b * 4 * ldm + c), tiles * ldm, (long long)ldm, lc0_load(bias + c), z);
        float sum = 0.0f;
#pragma unroll
        for (int s = 0; s < 64; ++s) sum += z[s];
        pooled[c] = sum * (1.0f / 64.0f);
    }
    __syncthreads();
    const int lane = lc0_lane(), warp = threadIdx.x / warpSize, nwarps = blockDim.x / warpSize;
    for (int j = warp; j < H; j += nwarps) {
        float sum = 0.0f;
        for (int k = lane; k < C; k += warpSize) sum += lc0_load(w1 + ((long long)j * C + k)) * pooled[k];
        sum = lc0_warp_sum(sum);
        if (lane == 0) hidden[j] = lc0_activate<CONV_ACT>(sum + lc0_load(b1 + j));
    }
    __syncthreads();
    if (!active) return;
    float g = lc0_load(b2 + c), beta = lc0_load(b2 + C + c);
    for (int j = 0; j < H; ++j) {
        const float h = hidden[j];
        g += lc0_load(w2t + ((long long)j * 2 * C + c)) * h;
        beta += lc0_load(w2t + ((long long)j * 2 * C + C + c)) * h;
    }
    const float gamma = lc0_activate<LC0_ACT_SIGMOID>(g);
    const long long row0 = (long long)b * 64;
#pragma unroll
    for (int s = 0; s < 64; ++s) {
        const long long at = (row0 + s) * C + c;
        z[s] = lc0_activate<CONV_ACT>(gamma * z[s] + beta + lc0_load(skip + at));
        lc0_store(y + at, z[s]);
    }
    if (Vn != nullptr) wino_in_board(z, Vn + ((long long)b * 4 * C + c), tiles * C, (long long)C);
}

template <typename T>
__device__ void winograd_in_se_impl(const T* z, const T* skip, const T* se, T* y, T* V, int n, int C, int Kp) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)n * Kp) return;
    const int b = (int)(idx / Kp), c = (int)(idx % Kp);
    float v[64];
    if (c < C) {
        float gamma = 1.0f, beta = 0.0f;
        if (se != nullptr) {
            gamma = lc0_activate<LC0_ACT_SIGMOID>(lc0_load(se + ((long long)b * 2 * C + c)));
            beta = lc0_load(se + ((long long)b * 2 * C + C + c));
        }
        const long long at0 = (long long)b * 64 * C + c;
#pragma unroll
        for (int s = 0; s < 64; ++s) {
            const long long at = at0 + (long long)s * C;
            v[s] = lc0_activate<CONV_ACT>(gamma * lc0_load(z + at) + beta + lc0_load(skip + at));
        }
        if (y != nullptr) {
#pragma unroll
            for (int s = 0; s < 64; ++s) lc0_store(y + (at0 + (long long)s * C), v[s]);
        }
    } else {
#pragma unroll
        for (int s = 0; s < 64; ++s) v[s] = 0.0f;
    }
    wino_in_board(v, V + ((long long)b * 4 * Kp + c), 4LL * n * Kp, (long long)Kp);
}

template <typename T>
__device__ void residual_impl(const T* z, const T* skip, const T* se, T* out, int n, int C) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)n * 64 * C) return;
    float v = lc0_load(z + idx);
    if (se != nullptr) {
        const long long b = idx / (64LL * C);
        const int c = (int)(idx % C);
        v = lc0_activate<LC0_ACT_SIGMOID>(lc0_load(se + (b * 2 * C + c))) * v + lc0_load(se + (b * 2 * C + C + c));
    }
    lc0_store(out + idx, lc0_activate<CONV_ACT>(v + lc0_load(skip + idx)));
}

#define ENTRY(T, sfx)                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) winograd_in##sfx(const T* x, int ldx, T* V, int n, int C, \
                                                                       int Kp) {                             \
        winograd_in_impl<T, T>(x, ldx, V, n, C, Kp);                                                         \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) winograd_out##sfx(                                     \
        const T* M, int ldm, const T* bias, const T* skip, T* y, int ldy, T* pooled, T* Vn, int n, int C) {  \
        winograd_out_impl<T, T>(M, ldm, bias, skip, y, ldy, pooled, Vn, n, C);                               \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(WINOGRAD_SE_MAX_C) winograd_out_se##sfx(                    \
        const T* M, int ldm, const T* bias, const T* skip, T* y, T* Vn, const T* w1, const T* b1, const T* w2t, \
        const T* b2, int C, int H) {                                                                         \
        winograd_out_se_impl<T>(M, ldm, bias, skip, y, Vn, w1, b1, w2t, b2, C, H);                           \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) winograd_in_se##sfx(                                   \
        const T* z, const T* skip, const T* se, T* y, T* V, int n, int C, int Kp) {                          \
        winograd_in_se_impl<T>(z, skip, se, y, V, n, C, Kp);                                                 \
    }                                                                                                        \
    extern "C" __global__ void residual##sfx(const T* z, const T* skip, const T* se, T* out, int n, int C) { \
        residual_impl<T>(z, skip, se, out, n, C);                                                            \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)

// fp16 activations, fp32 transforms: the input convolution of an fp16 network (V and M in fp32, the
// product an fp32 GEMM; see winograd_in32 / winograd_out32 in the header).
extern "C" __global__ void __launch_bounds__(256) winograd_in32_f16(const __half* x, int ldx, float* V, int n, int C,
                                                                    int Kp) {
    winograd_in_impl<__half, float>(x, ldx, V, n, C, Kp);
}
extern "C" __global__ void __launch_bounds__(256) winograd_out32_f16(const float* M, int ldm, const __half* bias,
                                                                     const __half* skip, __half* y, int ldy,
                                                                     __half* pooled, __half* Vn, int n, int C) {
    winograd_out_impl<__half, float>(M, ldm, bias, skip, y, ldy, pooled, Vn, n, C);
}
