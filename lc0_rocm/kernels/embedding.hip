// embedding.hip — the attention body's input-embedding pieces that are not GEMMs or LayerNorms.
//
// gate_{f32,f16}(x, gate_mul, gate_add, rows, C)
//   In place on x [rows, C] (rows = batch * 64, square-major): x[r, c] = x[r, c] * gate_mul[r % 64, c]
//   + gate_add[r % 64, c]. Used when a net has gates but no embedding LayerNorm to fuse them into
//   (with one, layernorm.hip applies them). One thread per element, 1-D grid of 256-thread blocks.
#include "nn.h"

template <typename T>
__device__ void gate_impl(T* x, const T* gate_mul, const T* gate_add, int rows, int C) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)rows * C) return;
    int c = (int)(idx % C);
    int s = (int)((idx / C) & 63);
    lc0_store(x + idx, lc0_load(x + idx) * lc0_load(gate_mul + (s * C + c)) + lc0_load(gate_add + (s * C + c)));
}

#define ENTRY(T, sfx)                                                                                     \
    extern "C" __global__ void gate##sfx(T* x, const T* gate_mul, const T* gate_add, int rows, int C) {  \
        gate_impl<T>(x, gate_mul, gate_add, rows, C);                                                     \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
