/* tfm_kernels.cuh: device helpers of the Transformer kernels (tfm_*.cu),
 * CUDA C++ only. Builds on the workloads' helpers (core/wl_kernels.cuh: ld/st
 * conversions, 16-byte packs of VEC elements, grid-stride loops, dtype
 * dispatch) rather than repeating them. */
#ifndef MC_TFM_KERNELS_CUH
#define MC_TFM_KERNELS_CUH

#include "workload/core/wl_kernels.cuh"
#include "tfm_kernels.h"
#include "tfm_rng.h"

#include "check.h"
#include "check_cuda.h"

/* erf GELU and its derivative, fp32 (as PyTorch's GeluCUDAKernelImpl with
 * approximate='none': 0.5 x (1 + erf(x / sqrt 2))). */
__device__ __forceinline__ float tfm_gelu(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
__device__ __forceinline__ float tfm_gelu_grad(float x)
{
    const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    const float pdf = 0.39894228040143267794f * expf(-0.5f * x * x);
    return cdf + x * pdf;
}

__device__ __forceinline__ float tfm_act(float x, int act)
{
    return act == TFM_ACT_RELU ? fmaxf(x, 0.0f) : act == TFM_ACT_GELU ? tfm_gelu(x) : x;
}

/* Calls F<T, O>(...) for the pair (dt, dt_out) the fused chains take: both
 * the same, or fp16/bf16 into fp32 (autocast's residual stream). */
#define DISPATCH2(dt, dto, F, ...)                                                   \
    do {                                                                             \
        if ((dt) == MC_DT_F32) F<float, float>(__VA_ARGS__);                         \
        else if ((dt) == MC_DT_F16 && (dto) == MC_DT_F16) F<__half, __half>(__VA_ARGS__); \
        else if ((dt) == MC_DT_F16) F<__half, float>(__VA_ARGS__);                   \
        else if ((dto) == MC_DT_BF16) F<__nv_bfloat16, __nv_bfloat16>(__VA_ARGS__);  \
        else F<__nv_bfloat16, float>(__VA_ARGS__);                                   \
    } while (0)

#endif
