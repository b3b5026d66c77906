/* tfm_attention_tc.cuh: what the tensor-core attention kernels (forward:
 * tfm_attention_tc.cu, backward: tfm_attention_tc_bwd.cu) share, in the
 * manner of FlashAttention-2: fp16/bf16 tiles in shared memory, products on
 * the tensor cores with mma.sync m16n8k16 (fp32 accumulation, sm_80 and
 * up), the softmax on the accumulators in registers. Same contract as the
 * general kernels (tfm_kernels.h): the same inputs and outputs, no memory
 * beyond them, the same dropout decisions (tfm_rng.h), so the requests and
 * every memory figure stay PyTorch's; only the arithmetic is faster.
 *
 * Fragment layouts of mma.m16n8k16 (PTX ISA, "Matrix fragments for
 * mma.m16n8k16"), lane = 4 g + t:
 *   accumulator C (16 x 8, fp32): c0, c1 at row g, cols 2t, 2t + 1;
 *                                  c2, c3 at row g + 8, the same cols;
 *   A (16 x 16, row-major):  reg0 row g, k 2t..2t+1; reg1 row g + 8;
 *                            reg2 row g, k 2t+8..2t+9; reg3 row g + 8, k 2t+8;
 *   B (16 x 8, "col"):       reg0 k 2t..2t+1 of col g; reg1 k 2t+8..2t+9.
 * So B is read from a shared tile stored [n][k] (k contiguous), and the
 * accumulators of two adjacent 8-column tiles are, packed to 16 bits, the A
 * fragment of the next product over those 16 columns (P V, dS K, ...).
 * Shared tiles are padded by 8 elements a row so that the 32 lanes of a
 * fragment load hit 32 different banks. CUDA C++ only. */
#ifndef MC_TFM_ATTENTION_TC_CUH
#define MC_TFM_ATTENTION_TC_CUH

#include "tfm_attention.cuh"

#define TC_WARPS 4 /* 16 rows of a tile per warp */
#define TC_THREADS (32 * TC_WARPS)
#define TC_PAD 8   /* elements added to each shared row */

/* ------------------------------------------------------------ the product */

/* c += A B, one m16n8k16 on 32-bit registers holding two fp16 or bf16. */
template <typename T>
__device__ __forceinline__ void tc_mma(float c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                       uint32_t a3, uint32_t b0, uint32_t b1);

template <>
__device__ __forceinline__ void tc_mma<__half>(float c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                               uint32_t a3, uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    __trap(); /* the host never launches these kernels below sm_80 */
#endif
}

template <>
__device__ __forceinline__ void tc_mma<__nv_bfloat16>(float c[4], uint32_t a0, uint32_t a1,
                                                      uint32_t a2, uint32_t a3, uint32_t b0,
                                                      uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    __trap();
#endif
}

/* Two floats as one register of two 16-bit values, lo in the low half. */
template <typename T> __device__ __forceinline__ uint32_t tc_pack(float lo, float hi);
template <> __device__ __forceinline__ uint32_t tc_pack<__half>(float lo, float hi)
{
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ __forceinline__ uint32_t tc_pack<__nv_bfloat16>(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

template <typename T> __device__ __forceinline__ uint32_t tc_ld32(const T *p)
{
    return *reinterpret_cast<const uint32_t *>(p);
}

/* acc[NT] += A B for the warp's 16 rows: A read from shared memory, 16 rows
 * of KS 16-wide k steps at a (row stride sa elements); B from a shared tile
 * stored [n][k] at b (NT 8-row groups of n, row stride sb). */
template <typename T, int KS, int NT>
__device__ __forceinline__ void tc_mma_ss(float acc[NT][4], const T *a, int sa, const T *b, int sb)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
        const T *ap = a + g * sa + ks * 16 + 2 * t;
        const uint32_t a0 = tc_ld32(ap), a1 = tc_ld32(ap + 8 * sa), a2 = tc_ld32(ap + 8),
                       a3 = tc_ld32(ap + 8 * sa + 8);
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const T *bp = b + (nt * 8 + g) * sb + ks * 16 + 2 * t;
            tc_mma<T>(acc[nt], a0, a1, a2, a3, tc_ld32(bp), tc_ld32(bp + 8));
        }
    }
}

/* acc[NT] += P B where P (16 x 8 KT) is in accumulator layout in p[KT]
 * (rounded to T here, as FlashAttention rounds its probabilities) and B is
 * a shared tile stored [n][k] at b (row stride sb). */
template <typename T, int KT, int NT>
__device__ __forceinline__ void tc_mma_rs(float acc[NT][4], const float p[KT][4], const T *b, int sb)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int kk = 0; kk < KT / 2; kk++) {
        const uint32_t a0 = tc_pack<T>(p[2 * kk][0], p[2 * kk][1]);
        const uint32_t a1 = tc_pack<T>(p[2 * kk][2], p[2 * kk][3]);
        const uint32_t a2 = tc_pack<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]);
        const uint32_t a3 = tc_pack<T>(p[2 * kk + 1][2], p[2 * kk + 1][3]);
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const T *bp = b + (nt * 8 + g) * sb + kk * 16 + 2 * t;
            tc_mma<T>(acc[nt], a0, a1, a2, a3, tc_ld32(bp), tc_ld32(bp + 8));
        }
    }
}

/* ------------------------------------------------------------ tiles */

/* rows x D of the view (rows from row0; past L zero) into s[r][d], row
 * stride S elements, as 16-byte loads (tc_usable checked the alignment). */
template <typename T, int D>
__device__ __forceinline__ void tc_load(T *s, int S, const T *base, tfm_view v, int64_t b, int64_t h,
                                        int row0, int rows, int L)
{
    constexpr int C = D / 8; /* 16-byte chunks a row */
    const T *p = base + b * v.b + h * v.h;
    for (int idx = threadIdx.x; idx < rows * C; idx += blockDim.x) {
        const int r = idx / C, c = idx % C, l = row0 + r;
        uint4 val = make_uint4(0u, 0u, 0u, 0u);
        if (l < L) val = *reinterpret_cast<const uint4 *>(p + (int64_t)l * v.l + c * 8);
        *reinterpret_cast<uint4 *>(s + r * S + c * 8) = val;
    }
}

/* The same rows transposed: s[d][r], row stride S. Consecutive threads take
 * consecutive rows, so that their 16-bit stores fall in different banks. */
template <typename T, int D>
__device__ __forceinline__ void tc_load_t(T *s, int S, const T *base, tfm_view v, int64_t b,
                                          int64_t h, int row0, int rows, int L)
{
    constexpr int C = D / 8;
    const T *p = base + b * v.b + h * v.h;
    for (int idx = threadIdx.x; idx < rows * C; idx += blockDim.x) {
        const int r = idx % rows, c = idx / rows, l = row0 + r;
        uint4 val = make_uint4(0u, 0u, 0u, 0u);
        if (l < L) val = *reinterpret_cast<const uint4 *>(p + (int64_t)l * v.l + c * 8);
        const T *e = reinterpret_cast<const T *>(&val);
#pragma unroll
        for (int k = 0; k < 8; k++) s[(c * 8 + k) * S + r] = e[k];
    }
}

/* ------------------------------------------------------------ dropout */

/* Keep bits of a 16 x 8 accumulator tile whose rows are queries i0 + (g,
 * g + 8) and whose columns are keys j0 + (2t, 2t + 1): bit 0 (row g, 2t),
 * bit 1 (g, 2t + 1), bit 2 (g + 8, 2t), bit 3 (g + 8, 2t + 1). Element
 * (bh, i, j) is word e % 4 of philox block e / 4, e = (bh Lq + i) Lk + j
 * (tfm_kernels.h). Where Lk % 4 == 0 (and j0 % 4 == 0) the tile's 128
 * elements are 32 blocks of four keys: each lane draws one (row g' = lane /
 * 2 over the 16 rows, keys 4 (lane % 2)), and the owners fetch their bits by
 * shuffle; else one block per element. Every lane of the warp calls it. */
__device__ __forceinline__ unsigned tc_keep_rows_q(const tfm_attn &a, uint32_t thr, int64_t bh,
                                                   int i0, int j0)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    if (a.Lk % 4 == 0) {
        const int r = lane >> 1, jb = j0 + 4 * (lane & 1);
        const uint64_t e = ((uint64_t)bh * (uint64_t)a.Lq + (uint64_t)(i0 + r)) * (uint64_t)a.Lk + (uint64_t)jb;
        const tfm_rng4 w = tfm_philox(a.seed, a.offset, e >> 2);
        unsigned m4 = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) m4 |= (tfm_rng_word_keeps(w.w[k], thr) ? 1u : 0u) << k;
        /* (row g, cols 2t, 2t + 1) lie in block (row g, keys 4 (t / 2)): lane 2 g + t / 2,
         * words 2 (t % 2), 2 (t % 2) + 1; row g + 8: lane 2 (g + 8) + t / 2. */
        const unsigned lo = __shfl_sync(0xffffffffu, m4, 2 * g + (t >> 1));
        const unsigned hi = __shfl_sync(0xffffffffu, m4, 2 * (g + 8) + (t >> 1));
        const int sh = 2 * (t & 1);
        return ((lo >> sh) & 3u) | (((hi >> sh) & 3u) << 2);
    }
    unsigned bits = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int i = i0 + g + 8 * (k >> 1), j = j0 + 2 * t + (k & 1);
        const uint64_t e = ((uint64_t)bh * (uint64_t)a.Lq + (uint64_t)i) * (uint64_t)a.Lk + (uint64_t)j;
        bits |= (tfm_rng_word_keeps(tfm_philox(a.seed, a.offset, e >> 2).w[e & 3], thr) ? 1u : 0u) << k;
    }
    return bits;
}

/* The same for a tile whose rows are keys j0 + (g, g + 8) and whose
 * columns are queries i0 + (2t, 2t + 1) (the backward's transposed
 * scores): bit 0 (row g, col 2t), bit 1 (g, 2t + 1), bit 2 (g + 8, 2t),
 * bit 3 (g + 8, 2t + 1). Where Lk % 4 == 0 the 32 blocks are (query i0 +
 * lane % 8, keys j0 + 4 (lane / 8)); the owner of (key row g, query col c)
 * reads bit g % 4 from lane 8 (g / 4) + c. */
__device__ __forceinline__ unsigned tc_keep_rows_k(const tfm_attn &a, uint32_t thr, int64_t bh,
                                                   int j0, int i0)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    if (a.Lk % 4 == 0) {
        const int i = i0 + (lane & 7), jb = j0 + 4 * (lane >> 3);
        const uint64_t e = ((uint64_t)bh * (uint64_t)a.Lq + (uint64_t)i) * (uint64_t)a.Lk + (uint64_t)jb;
        const tfm_rng4 w = tfm_philox(a.seed, a.offset, e >> 2);
        unsigned m4 = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) m4 |= (tfm_rng_word_keeps(w.w[k], thr) ? 1u : 0u) << k;
        unsigned bits = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int row = g + 8 * (k >> 1), col = 2 * t + (k & 1);
            const unsigned m = __shfl_sync(0xffffffffu, m4, 8 * (row >> 2) + col);
            bits |= ((m >> (row & 3)) & 1u) << k;
        }
        return bits;
    }
    unsigned bits = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int j = j0 + g + 8 * (k >> 1), i = i0 + 2 * t + (k & 1);
        const uint64_t e = ((uint64_t)bh * (uint64_t)a.Lq + (uint64_t)i) * (uint64_t)a.Lk + (uint64_t)j;
        bits |= (tfm_rng_word_keeps(tfm_philox(a.seed, a.offset, e >> 2).w[e & 3], thr) ? 1u : 0u) << k;
    }
    return bits;
}

/* ------------------------------------------------------------ host side */

/* MC_DT_* of a kernel's element type. */
template <typename T> struct tc_dt { static constexpr int v = MC_DT_F32; };
template <> struct tc_dt<__half> { static constexpr int v = MC_DT_F16; };
template <> struct tc_dt<__nv_bfloat16> { static constexpr int v = MC_DT_BF16; };

/* Whether the tensor-core kernels take this call: fp16 or bf16, a head dim
 * of 16, 32, 64 or 128, a GPU of compute capability 8.0 or more, and every
 * pointer 16-byte aligned with strides of whole 16-byte chunks (what
 * MultiheadAttention's views always are). Prints a one-line note, once a
 * process, when a half-precision call falls back to the general kernels. */
bool tc_usable(const tfm_attn *a, int dt, const void *const *ptrs, int n_ptrs,
               const tfm_view *views, int n_views);

/* The backward's dK, dV and dQ passes on the tensor cores (delta already
 * computed by the caller); tc_usable must have said yes. */
void tc_attn_bwd(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk, tfm_view vdk,
                 void *dv, tfm_view vdv, const float *delta, const void *dout, tfm_view vdo,
                 const void *q, tfm_view vq, const void *k, tfm_view vk, const void *v,
                 tfm_view vv, const float *lse, int dt);

/* The forward on the tensor cores; tc_usable must have said yes. */
void tc_attn_fwd(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *lse, const void *q,
                 tfm_view vq, const void *k, tfm_view vk, const void *v, tfm_view vv, int dt);

#endif
