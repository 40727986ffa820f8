// gemv.hip — dense layers of a few rows (the per-position layers at batch sizes <= 8), where a
// library GEMM is latency-bound: y[m, n] = act(x[m, k] . w[n, k]^T + bias[n]), m <= GEMV_MAX_M.
//
// gemv_{f32,f16}(x, w, bias, y, m, n, k, act)
//   x T [m, k], w T [n, k], bias T [n] or null, y T [m, n]; all row-major, k % 8 == 0, every pointer
//   16-byte aligned (16-byte loads of 8 elements). act is an LC0_ACT_* code (nn.h), applied after the
//   bias. Float accumulation; each output is the warp-wide sum of its lanes' partial sums.
//   Launch: 1-D grid of blocks of 256 threads; warp w of the grid computes column n = w for all m
//   rows (grid-stride over columns, so any grid size works; ceil(n / (256 / warpSize)) blocks
//   give one column per warp). Lanes walk k in steps of 8 * warpSize; any warp size.
#include "nn.h"

#define GEMV_MAX_M 8

template <typename T>
__device__ void gemv_impl(const T* x, const T* w, const T* bias, T* y, int m, int n, int k, int act) {
    const int lane = lc0_lane();
    const int warps_per_block = blockDim.x / warpSize;
    const int warp = blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int nwarps = gridDim.x * warps_per_block;
    for (int col = warp; col < n; col += nwarps) {
        float acc[GEMV_MAX_M];
#pragma unroll
        for (int r = 0; r < GEMV_MAX_M; ++r) acc[r] = 0.0f;
        const T* wr = w + (long long)col * k;
        const int step = warpSize * 8;
        int k0 = lane * 8;
        for (; k0 + 3 * step < k; k0 += 4 * step) {  // four weight loads in flight before any use
            float wv[4][8];
#pragma unroll
            for (int u = 0; u < 4; ++u) lc0_load8(wr + (k0 + u * step), wv[u]);
#pragma unroll
            for (int r = 0; r < GEMV_MAX_M; ++r) {
                if (r < m) {
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        float xv[8];
                        lc0_load8(x + ((long long)r * k + k0 + u * step), xv);
#pragma unroll
                        for (int i = 0; i < 8; ++i) acc[r] += wv[u][i] * xv[i];
                    }
                }
            }
        }
        for (; k0 < k; k0 += step) {
            float wv[8];
            lc0_load8(wr + k0, wv);
#pragma unroll
            for (int r = 0; r < GEMV_MAX_M; ++r) {
                if (r < m) {
                    float xv[8];
                    lc0_load8(x + ((long long)r * k + k0), xv);
#pragma unroll
                    for (int i = 0; i < 8; ++i) acc[r] += wv[i] * xv[i];
                }
            }
        }
        const float b = bias != nullptr ? lc0_load(bias + col) : 0.0f;
#pragma unroll
        for (int r = 0; r < GEMV_MAX_M; ++r) {
            if (r < m) {
                const float s = lc0_warp_sum(acc[r]);
                if (lane == 0) lc0_store(y + ((long long)r * n + col), nn_act(s + b, act));
            }
        }
    }
}

#define ENTRY(T, sfx)                                                                                    \
    extern "C" __global__ void __launch_bounds__(256)                                                    \
        gemv##sfx(const T* x, const T* w, const T* bias, T* y, int m, int n, int k, int act) {           \
        gemv_impl<T>(x, w, bias, y, m, n, k, act);                                                       \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
