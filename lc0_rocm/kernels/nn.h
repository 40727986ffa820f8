// nn.h — what the network kernels add to common.h: an activation chosen at run time by its code.
//
// The network kernels (expand_planes, layernorm, attention, conv, policy, heads, embedding) write
// each body once as a template over the storage type T (float or __half; loads and stores through
// common.h's lc0_load / lc0_store, math in float) and instantiate it for both with a file-local
// ENTRY(T, suffix) macro, giving `<kernel>_f32` and `<kernel>_f16`.
#pragma once
#include "common.h"

// act is one of common.h's LC0_ACT_* codes (lc0_rocm/gpu/nn/kernels.py ACT_CODES mirrors them).
__device__ __forceinline__ float nn_act(float x, int act) {
    switch (act) {
        case LC0_ACT_RELU: return lc0_activate<LC0_ACT_RELU>(x);
        case LC0_ACT_RELU2: return lc0_activate<LC0_ACT_RELU2>(x);
        case LC0_ACT_MISH: return lc0_activate<LC0_ACT_MISH>(x);
        case LC0_ACT_SWISH: return lc0_activate<LC0_ACT_SWISH>(x);
        case LC0_ACT_SELU: return lc0_activate<LC0_ACT_SELU>(x);
        case LC0_ACT_TANH: return lc0_activate<LC0_ACT_TANH>(x);
        case LC0_ACT_SIGMOID: return lc0_activate<LC0_ACT_SIGMOID>(x);
        default: return x;
    }
}

__device__ __forceinline__ float nn_sigmoid(float x) { return lc0_activate<LC0_ACT_SIGMOID>(x); }
