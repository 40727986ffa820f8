// expand_planes.hip — packed input planes -> dense square-major tokens, the network's first tensor.
//
// expand_planes_{f32,f16}(masks, values, out, vec12, n, ld, pe_map)
//   masks  u64 [n, 112], values f32 [n, 112]: plane p of position b is values[b,p] on every square
//          whose bit is set in masks[b,p] (bit s = square s, a1 = 0), 0 elsewhere.
//   out    T [n*64, ld]: row b*64+s, columns 0..111 = the 112 plane values at square s; with
//          pe_map != 0 also columns 112..175 = lc0's positional table kPosEncoding[s][t]
//          (-1 on t == s, +1 where a queen or knight move on an empty board reaches t, else 0).
//   vec12  T [n, 768] or null: PE_DENSE pre-processing input, vec12[b, s*12 + c] = plane c at s.
//   Launch: one thread per (b, s, column < 112 + 64*pe_map), 1-D grid of 256-thread blocks.
//
// copy_columns_{f32,f16}(src, dst, rows, width, ld_dst, col0)
//   dst[r, col0 + c] = src[r, c] for c < width (src rows are `width` long): puts the PE_DENSE
//   positional features beside the planes. One thread per element.
#include "nn.h"

__device__ __forceinline__ float pos_encoding(int s, int t) {
    if (s == t) return -1.0f;
    int df = (t & 7) - (s & 7), dr = (t >> 3) - (s >> 3);
    int af = df < 0 ? -df : df, ar = dr < 0 ? -dr : dr;
    bool queen = df == 0 || dr == 0 || af == ar;
    bool knight = (af == 1 && ar == 2) || (af == 2 && ar == 1);
    return (queen || knight) ? 1.0f : 0.0f;
}

template <typename T>
__device__ void expand_planes_impl(const unsigned long long* masks, const float* values, T* out, T* vec12, int n,
                                   int ld, int pe_map) {
    const int cols = pe_map ? 112 + 64 : 112;
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = (long long)n * 64 * cols;
    if (idx >= total) return;
    int col = (int)(idx % cols);
    long long row = idx / cols;  // b * 64 + s
    int s = (int)(row & 63);
    long long b = row >> 6;
    float v;
    if (col < 112) {
        unsigned long long m = masks[b * 112 + col];
        v = ((m >> s) & 1ull) ? values[b * 112 + col] : 0.0f;
        if (vec12 != nullptr && col < 12) lc0_store(vec12 + (b * 768 + s * 12 + col), v);
    } else {
        v = pos_encoding(s, col - 112);
    }
    lc0_store(out + (row * ld + col), v);
}

template <typename T>
__device__ void copy_columns_impl(const T* src, T* dst, int rows, int width, int ld_dst, int col0) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)rows * width) return;
    long long r = idx / width;
    int c = (int)(idx % width);
    dst[r * ld_dst + col0 + c] = src[idx];
}

#define ENTRY(T, sfx)                                                                                     \
    extern "C" __global__ void expand_planes##sfx(const unsigned long long* masks, const float* values,   \
                                                  T* out, T* vec12, int n, int ld, int pe_map) {          \
        expand_planes_impl<T>(masks, values, out, vec12, n, ld, pe_map);                                  \
    }                                                                                                     \
    extern "C" __global__ void copy_columns##sfx(const T* src, T* dst, int rows, int width, int ld_dst, \
                                                 int col0) {                                              \
        copy_columns_impl<T>(src, dst, rows, width, ld_dst, col0);                                        \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
