// heads.hip — the last step of the value and moves-left heads, into one small float32 table.
//
// head_outputs_{f32,f16}(v, ld_v, wdl, m, ld_m, out, n)
//   v T [n, ld_v]: the value head's last dense output (3 WDL logits W, D, L when wdl != 0, else one
//   value logit); m T [n, ld_m] or null: the moves-left head's last dense output (one column).
//   out float [n, 5] = (W, D, L, Q, M): WDL = softmax of the logits (float), Q = W - L, or for a
//   tanh-value net W = D = L = 0 and Q = tanh(logit); M = max(m, 0) (0 without a moves-left head).
//   One thread per position.
#include "nn.h"

template <typename T>
__device__ void head_outputs_impl(const T* v, int ld_v, int wdl, const T* m, int ld_m, float* out, int n) {
    const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n) return;
    float* o = out + b * 5;
    const T* vb = v + b * ld_v;
    if (wdl) {
        const float w = lc0_load(vb), d = lc0_load(vb + 1), l = lc0_load(vb + 2);
        const float mx = fmaxf(w, fmaxf(d, l));
        const float ew = expf(w - mx), ed = expf(d - mx), el = expf(l - mx);
        const float inv = 1.0f / (ew + ed + el);
        o[0] = ew * inv;
        o[1] = ed * inv;
        o[2] = el * inv;
        o[3] = o[0] - o[2];
    } else {
        o[0] = o[1] = o[2] = 0.0f;
        o[3] = tanhf(lc0_load(vb));
    }
    o[4] = m != nullptr ? fmaxf(lc0_load(m + (b * ld_m)), 0.0f) : 0.0f;
}

#define ENTRY(T, sfx)                                                                                    \
    extern "C" __global__ void head_outputs##sfx(const T* v, int ld_v, int wdl, const T* m, int ld_m,   \
                                                 float* out, int n) {                                    \
        head_outputs_impl<T>(v, ld_v, wdl, m, ld_m, out, n);                                             \
    }
ENTRY(float, _f32)
ENTRY(__half, _f16)
