/* HIP-on-CUDA prelude: <hip/hip_fp16.h> is CUDA's cuda_fp16.h (same __half/__half2 types and
 * conversions: __float2half, __half2float, __halves2half2, __low2float, __high2float, ...). */
#pragma once
#include <hip/hip_runtime.h>
