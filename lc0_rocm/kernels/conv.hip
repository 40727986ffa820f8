// conv.hip — the classical residual tower's non-GEMM pieces. Activations are square-major
// ([n*64, C], row b*64 + s, s = rank*8 + file), so a 3x3 convolution is im2col + one GEMM and a
// 1x1 convolution is a plain GEMM.
//
// im2col3x3_{f32,f16}(x, cols, n, C)
//   cols [n*64, 9*C]: cols[b*64+s, (kh*3+kw)*C + c] = x[b*64 + s', c] with s' the square at
//   (rank + kh - 1, file + kw - 1), 0 off the board (zero padding 1). The weight matrix that goes
//   with it is OIHW reordered to [O, kh, kw, I]. One thread per element of cols.
//
// se_pool_{f32,f16}(z, pooled, n, C)
//   pooled [n, C] = mean over the 64 squares of z [n*64, C] (float sum). One thread per (b, c).
//
// residual_{f32,f16}(z, skip, se, out, n, C, act)
//   out = act(gamma * z + beta + skip) with gamma = sigmoid(se[b, c]), beta = se[b, C + c] when se
//   ([n, 2C], the SE unit's second dense output, bias included) is non-null, else act(z + skip).
//   `out` may alias `z` or `skip`. One thread per element.
#include "nn.h"

template <typename T>
__device__ void im2col3x3_impl(const T* x, T* cols, int n, int C) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int K = 9 * C;
    if (idx >= (long long)n * 64 * K) return;
    const int col = (int)(idx % K);
    const long long row = idx / K;
    const int k = col / C, c = col % C;
    const int s = (int)(row & 63);
    const int r = (s >> 3) + k / 3 - 1, f = (s & 7) + k % 3 - 1;
    float v = 0.0f;
    if (r >= 0 && r < 8 && f >= 0 && f < 8) v = lc0_load(x + ((row - s + r * 8 + f) * C + c));
    lc0_store(cols + idx, v);
}

template <typename T>
__device__ void se_pool_impl(const T* z, T* pooled, int n, int C) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)n * C) return;
    const long long b = idx / C;
    const int c = (int)(idx % C);
    const T* zb = z + b * 64 * C + c;
    float sum = 0.0f;
    for (int s = 0; s < 64; ++s) sum += lc0_load(zb + ((long long)s * C));
    lc0_store(pooled + idx, sum * (1.0f / 64.0f));
}

template <typename T>
__device__ void residual_impl(const T* z, const T* skip, const T* se, T* out, int n, int C, int act) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)n * 64 * C) return;
    float v = lc0_load(z + idx);
    if (se != nullptr) {
        const long long b = idx / (64LL * C);
        const int c = (int)(idx % C);
        v = nn_sigmoid(lc0_load(se + (b * 2 * C + c))) * v + lc0_load(se + (b * 2 * C + C + c));
    }
    lc0_store(out + idx, nn_act(v + lc0_load(skip + idx), act));
}

#define ENTRY(T, sfx)                                                                                      \
    extern "C" __global__ void im2col3x3##sfx(const T* x, T* cols, int n, int C) {                         \
        im2col3x3_impl<T>(x, cols, n, C);                                                                  \
    }                                                                                                      \
    extern "C" __global__ void se_pool##sfx(const T* z, T* pooled, int n, int C) {                         \
        se_pool_impl<T>(z, pooled, n, C);                                                                  \
    }                                                                                                      \
    extern "C" __global__ void residual##sfx(const T* z, const T* skip, const T* se, T* out, int n, int C, \
                                             int act) {                                                    \
        residual_impl<T>(z, skip, se, out, n, C, act);                                                     \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
