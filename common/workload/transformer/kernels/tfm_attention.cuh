/* tfm_attention.cuh: what the attention kernels' forward (tfm_attention.cu)
 * and backward (tfm_attention_bwd.cu) share: tile shapes per head dim, tile
 * loads from strided [B, H, L, Dh] views into fp32 shared memory, the
 * dropout decision of an element of the probabilities. CUDA C++ only.
 *
 * These are the general kernels: plain SIMT fp32 arithmetic out of shared
 * memory (no tensor cores), for what the tensor-core kernels
 * (tfm_attention_tc.cuh: sm_80 and newer) do not take. Same
 * memory behaviour (no L x L buffer, only lse saved). Rows of Dh are padded by one float
 * so that threads reading different rows at the same column hit different
 * banks. */
#ifndef MC_TFM_ATTENTION_CUH
#define MC_TFM_ATTENTION_CUH

#include "tfm_kernels.cuh"

#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* Tile rows (queries and keys alike) for head dim D; 4 threads per row. */
template <int D> struct tile_of {
    static constexpr int R = D >= 128 ? 32 : 64;
    static constexpr int THREADS_ = 4 * R;
    static constexpr int P = D + 1; /* padded row, floats */
};

/* rows x D of the view at row0 (rows past L zero) into s[rows][D + 1]. */
template <typename T, int D>
__device__ __forceinline__ void load_tile(float *s, const T *base, tfm_view v, int64_t bh_b,
                                          int64_t bh_h, int row0, int rows, int L)
{
    const T *p = base + bh_b * v.b + bh_h * v.h;
    for (int idx = threadIdx.x; idx < rows * D; idx += blockDim.x) {
        const int r = idx / D, d = idx % D, l = row0 + r;
        s[r * (D + 1) + d] = l < L ? ld<T>(p[(int64_t)l * v.l + d]) : 0.0f;
    }
}

/* Dropout factor of element (bh, i, j) of the probabilities: 0 or f, from
 * byte e % 16 of philox block e / 16, e = (bh Lq + i) Lk + j
 * (tfm_rng_attn_keep; thr is tfm_rng_attn_threshold(p)). */
__device__ __forceinline__ float attn_drop(const tfm_attn &a, uint32_t thr, float f, int64_t bh,
                                           int i, int j)
{
    const uint64_t e = ((uint64_t)bh * (uint64_t)a.Lq + (uint64_t)i) * (uint64_t)a.Lk + (uint64_t)j;
    return tfm_rng_attn_byte_keeps(tfm_philox(a.seed, a.offset, e >> 4), (int)(e & 15), thr) ? f : 0.0f;
}

/* Dropout factors of (bh, i, j0 .. j0 + 3): one philox block where the four
 * share it (Lk % 4 == 0 and j0 % 4 == 0), else one per element. */
__device__ __forceinline__ void attn_drop4(const tfm_attn &a, uint32_t thr, float f, int64_t bh,
                                           int i, int j0, float z[4])
{
    if (a.Lk % 4 == 0) {
        const uint64_t e = ((uint64_t)bh * (uint64_t)a.Lq + (uint64_t)i) * (uint64_t)a.Lk + (uint64_t)j0;
        const tfm_rng4 r = tfm_philox(a.seed, a.offset, e >> 4);
#pragma unroll
        for (int k = 0; k < 4; k++) z[k] = tfm_rng_attn_byte_keeps(r, (int)(e & 15) + k, thr) ? f : 0.0f;
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++) z[k] = attn_drop(a, thr, f, bh, i, j0 + k);
    }
}

/* Sets the dynamic shared-memory limit of kernel K once (above 48 KiB needs it). */
template <typename K> static void allow_smem(K kernel, size_t bytes)
{
    CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

static inline void check_attn(const tfm_attn *a)
{
    CHECK(a->B > 0 && a->H > 0 && a->Lq > 0 && a->Lk > 0, "attention shape %d x %d x %d x %d", a->B,
          a->H, a->Lq, a->Lk);
    CHECK((int64_t)a->B * a->H <= 65535, "attention: B * H = %lld above 65535",
          (long long)a->B * a->H);
    CHECK(tfm_attn_supported(a->Dh), "attention head dim %d not built (16, 32, 64, 128)", a->Dh);
    CHECK(a->dropout_p >= 0.0f && a->dropout_p < 1.0f, "attention dropout %g", (double)a->dropout_p);
}

#endif
