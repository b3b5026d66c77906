/* wl_kernels.cuh: device helpers shared by the workloads' kernels
 * (wl_kernels.cu: data, elementwise, MSE; wl_grads.cu: the bias gradient;
 * optimizer_kernels.cu: the foreach updates; the Transformer's through
 * tfm_kernels.cuh). CUDA C++ only. */
#ifndef MC_WL_KERNELS_CUH
#define MC_WL_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <stdint.h>
#include <string.h>

#include "wl_gpu.h"

extern "C" cudaStream_t mc_gpu_stream(mc_wl_gpu *g);

#define THREADS 256
#define MAX_BLOCKS 4224 /* 132 SMs x 32 */

static inline unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

template <typename T> __device__ __forceinline__ float ld(T v);
template <> __device__ __forceinline__ float ld<float>(float v) { return v; }
template <> __device__ __forceinline__ float ld<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T st(float v);
template <> __device__ __forceinline__ float st<float>(float v) { return v; }
template <> __device__ __forceinline__ __half st<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 st<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/* VEC elements of T: 16 bytes for fp16/bf16, 32 for fp32 (two 16-byte loads). */
#define VEC 8
template <typename T> struct pack { T v[VEC]; };

static inline bool aligned(const void *p) { return (uintptr_t)p % 16 == 0; }

/* Pack i of p (16-byte aligned), as 16-byte loads and stores. */
template <typename T> __device__ __forceinline__ pack<T> ldp(const T *p, int64_t i)
{
    constexpr int W = (int)(sizeof(pack<T>) / 16);
    const uint4 *q = reinterpret_cast<const uint4 *>(p) + i * W;
    uint4 u[W];
#pragma unroll
    for (int k = 0; k < W; k++) u[k] = q[k];
    pack<T> r;
    memcpy(&r, u, sizeof r);
    return r;
}
template <typename T> __device__ __forceinline__ void stp(T *p, int64_t i, const pack<T> &r)
{
    constexpr int W = (int)(sizeof(pack<T>) / 16);
    uint4 u[W];
    memcpy(u, &r, sizeof r);
    uint4 *q = reinterpret_cast<uint4 *>(p) + i * W;
#pragma unroll
    for (int k = 0; k < W; k++) q[k] = u[k];
}

#define GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* Calls F<T>(...) for the dtype dt. */
#define DISPATCH(dt, F, ...)                                                 \
    do {                                                                     \
        if ((dt) == MC_DT_F32) F<float>(__VA_ARGS__);                        \
        else if ((dt) == MC_DT_F16) F<__half>(__VA_ARGS__);                  \
        else F<__nv_bfloat16>(__VA_ARGS__);                                  \
    } while (0)

/* Kernels with V take packs of VEC elements over [0, nv VEC), nv = n / VEC,
 * then single elements over the rest (all of [0, n) without V). */
#define NV(V, n) ((V) ? (n) / VEC : 0)
#define TAIL(i, nv, n) \
    for (int64_t i = (nv) * VEC + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t)gridDim.x * blockDim.x)

static inline unsigned blocks_vec(int64_t n, bool v) { return blocks_for(v ? (n + VEC - 1) / VEC : n); }

#endif
