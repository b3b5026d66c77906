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
 * So B is read by ldmatrix from a shared tile stored [n][k] (k contiguous:
 * K for Q K^T), or by ldmatrix .trans from one stored [k][n] (V for P V),
 * and the accumulators of two adjacent 8-column tiles are, packed to 16
 * bits, the A fragment of the next product over those 16 columns (P V,
 * dS K, ...). Every tile is a row-major copy of its view (cp.async), padded
 * by 8 elements a row so that ldmatrix's eight rows of a phase hit different
 * banks. Speed (issue 19): 2.5-3x slower than the wgmma kernels cuDNN runs
 * for PyTorch on an H100, much faster than the general kernels. CUDA C++
 * only. */
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

/* Four 8 x 8 matrices of 16-bit values from shared memory (ldmatrix): lane
 * L names the address of row L % 8 of matrix L / 8; register m of lane 4 g
 * + t receives elements (g, 2t) and (g, 2t + 1) of matrix m: the fragment
 * layout above, four registers in one instruction. */
__device__ __forceinline__ void tc_ldsm4(uint32_t r[4], const void *p)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned addr = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#else
    (void)p;
    r[0] = r[1] = r[2] = r[3] = 0u;
    __trap();
#endif
}

/* Where lane L points for an A fragment (16 rows x 16 k at a, row stride
 * sa): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
 * (rows 8-15, k 8-15) = a0..a3. */
template <typename T> __device__ __forceinline__ const T *tc_a_lane(const T *a, int sa)
{
    const int lane = threadIdx.x & 31;
    return a + ((lane & 7) + 8 * ((lane >> 3) & 1)) * sa + 8 * (lane >> 4);
}

/* Where lane L points for the B fragments of two 8-column tiles (a tile
 * stored [n][k] at b, row stride sb): matrices (n 0-7, k 0-7), (n 0-7, k
 * 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) = b0, b1 of the first tile, b0,
 * b1 of the second. */
template <typename T> __device__ __forceinline__ const T *tc_b_lane(const T *b, int sb)
{
    const int lane = threadIdx.x & 31;
    return b + ((lane & 7) + 8 * (lane >> 4)) * sb + 8 * ((lane >> 3) & 1);
}

/* The same four matrices transposed (ldmatrix .trans): register m of lane
 * 4 g + t receives elements (2t, g) and (2t + 1, g) of matrix m. */
__device__ __forceinline__ void tc_ldsm4_t(uint32_t r[4], const void *p)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned addr = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#else
    (void)p;
    r[0] = r[1] = r[2] = r[3] = 0u;
    __trap();
#endif
}

/* B fragments of two 8-column tiles from a tile stored [k][n] (n
 * contiguous: V[j][d] for P V, K[j][d] for dS K, Q and dO for dK and dV),
 * at b + k0 sb + n0: lane L points at row (k) L % 8 + 8 ((L / 8) % 2),
 * column (n) 8 (L / 16), so that the transposed matrices are (k 0-7, n
 * 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15) = b0, b1 of
 * the first tile, b0, b1 of the second: the A pattern of tc_a_lane. */

/* acc[NT] += A B for the warp's 16 rows: A read from shared memory, 16 rows
 * of KS 16-wide k steps at a (row stride sa elements); B from a shared tile
 * at b (NT 8-column groups of n, NT even, row stride sb), stored [n][k]
 * (K for Q K^T), or stored [k][n] when B_KN (K for dS K). */
template <typename T, int KS, int NT, bool B_KN = false>
__device__ __forceinline__ void tc_mma_ss(float acc[NT][4], const T *a, int sa, const T *b, int sb)
{
    const T *al = tc_a_lane(a, sa), *bl = B_KN ? tc_a_lane(b, sb) : tc_b_lane(b, sb);
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
        uint32_t af[4];
        tc_ldsm4(af, al + ks * 16);
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
            uint32_t bf[4];
            if (B_KN) tc_ldsm4_t(bf, bl + ks * 16 * sb + nt * 8);
            else tc_ldsm4(bf, bl + nt * 8 * sb + ks * 16);
            tc_mma<T>(acc[nt], af[0], af[1], af[2], af[3], bf[0], bf[1]);
            tc_mma<T>(acc[nt + 1], af[0], af[1], af[2], af[3], bf[2], bf[3]);
        }
    }
}

/* acc[NT] += P B where P (16 x 8 KT) is in accumulator layout in p[KT]
 * (rounded to T here, as FlashAttention rounds its probabilities) and B is
 * a shared tile stored [k][n] at b (row stride sb): V for P V, K for dQ,
 * Q and dO for dK and dV. */
template <typename T, int KT, int NT>
__device__ __forceinline__ void tc_mma_rs(float acc[NT][4], const float p[KT][4], const T *b, int sb)
{
    const T *bl = tc_a_lane(b, sb);
#pragma unroll
    for (int kk = 0; kk < KT / 2; kk++) {
        const uint32_t a0 = tc_pack<T>(p[2 * kk][0], p[2 * kk][1]);
        const uint32_t a1 = tc_pack<T>(p[2 * kk][2], p[2 * kk][3]);
        const uint32_t a2 = tc_pack<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]);
        const uint32_t a3 = tc_pack<T>(p[2 * kk + 1][2], p[2 * kk + 1][3]);
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
            uint32_t bf[4];
            tc_ldsm4_t(bf, bl + kk * 16 * sb + nt * 8);
            tc_mma<T>(acc[nt], a0, a1, a2, a3, bf[0], bf[1]);
            tc_mma<T>(acc[nt + 1], a0, a1, a2, a3, bf[2], bf[3]);
        }
    }
}

/* ------------------------------------------------------------ tiles */

/* rows x D of the view (rows from row0; past L zero) into s[r][d], row
 * stride S elements, as 16-byte asynchronous copies (cp.async; tc_usable
 * checked the alignment): the caller commits them (tc_commit) and waits
 * (tc_wait) before a __syncthreads, so that a tile loads while the
 * previous one is being used. */
template <typename T, int D>
__device__ __forceinline__ void tc_load_async(T *s, int S, const T *base, tfm_view v, int64_t b,
                                              int64_t h, int row0, int rows, int L)
{
    constexpr int C = D / 8; /* 16-byte chunks a row */
    const T *p = base + b * v.b + h * v.h;
    for (int idx = threadIdx.x; idx < rows * C; idx += blockDim.x) {
        const int r = idx / C, c = idx % C, l = row0 + r;
        const T *src = l < L ? p + (int64_t)l * v.l + c * 8 : p; /* a valid address, 0 bytes read */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        const unsigned dst = (unsigned)__cvta_generic_to_shared(s + r * S + c * 8);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                     "r"(l < L ? 16 : 0));
#else
        (void)src;
        __trap();
#endif
    }
}

__device__ __forceinline__ void tc_commit(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* Waits until at most N of this thread's committed groups are pending. */
template <int N> __device__ __forceinline__ void tc_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* Rows [row0, row0 + rows) of two views (K and V, or Q and dO) into buf: the
 * first view's tile, then the second's, rows x S elements each. */
template <typename T, int D>
__device__ __forceinline__ void tc_load_pair(T *buf, int S, const T *pa, tfm_view va, const T *pb,
                                             tfm_view vb, int64_t b, int64_t h, int row0, int rows, int L)
{
    tc_load_async<T, D>(buf, S, pa, va, b, h, row0, rows, L);
    tc_load_async<T, D>(buf + rows * S, S, pb, vb, b, h, row0, rows, L);
}

/* cp.async's double buffering over the tiles a pass walks: bufs holds two
 * pairs (tc_load_pair), tile t's in pair t % 2. The pair of tile `next`
 * loads (if has_next) while the caller uses the current one, which this
 * waits for; a __syncthreads follows before it is read, and another after
 * it is used, before the next call refills it. */
template <typename T, int D>
__device__ __forceinline__ void tc_next_pair(bool has_next, T *bufs, int S, const T *pa, tfm_view va,
                                             const T *pb, tfm_view vb, int64_t b, int64_t h, int next,
                                             int rows, int L)
{
    if (has_next) {
        tc_load_pair<T, D>(bufs + (next & 1) * 2 * rows * S, S, pa, va, pb, vb, b, h, next * rows, rows, L);
        tc_commit();
        tc_wait<1>();
    } else {
        tc_wait<0>();
    }
}

/* ------------------------------------------------------------ dropout */

/* The sixteen keep bits of one philox block: keys jb .. jb + 15 of query i
 * (tfm_rng_attn_keep; jb % 16 == 0 and Lk % 16 == 0, so they share it). */
__device__ __forceinline__ unsigned tc_keep16(const tfm_attn &a, uint32_t thr, int64_t bh, int i, int jb)
{
    const uint64_t e = ((uint64_t)bh * (uint64_t)a.Lq + (uint64_t)i) * (uint64_t)a.Lk + (uint64_t)jb;
    const tfm_rng4 w = tfm_philox(a.seed, a.offset, e >> 4);
    unsigned m = 0;
#pragma unroll
    for (int k = 0; k < 16; k++) m |= (tfm_rng_attn_byte_keeps(w, k, thr) ? 1u : 0u) << k;
    return m;
}

__device__ __forceinline__ unsigned tc_keep1(const tfm_attn &a, uint32_t thr, int64_t bh, int i, int j)
{
    const uint64_t e = ((uint64_t)bh * (uint64_t)a.Lq + (uint64_t)i) * (uint64_t)a.Lk + (uint64_t)j;
    return tfm_rng_attn_byte_keeps(tfm_philox(a.seed, a.offset, e >> 4), (int)(e & 15), thr) ? 1u : 0u;
}

/* Keep bits of four adjacent 16 x 8 accumulator tiles whose rows are
 * queries i0 + (g, g + 8) and whose columns are keys j0 + 8 x + (2t, 2t +
 * 1), x = 0..3: bit 4 x + e for element c[e] of tile x (e = 0: row g, col
 * 2t; 1: g, 2t + 1; 2: g + 8, 2t; 3: g + 8, 2t + 1). Where Lk % 16 == 0
 * the 512 elements are 32 philox blocks of sixteen keys: lane L draws row
 * L % 16, keys j0 + 16 (L / 16), and the owners fetch their bits by
 * shuffle; else a block per element. Every lane of the warp calls it
 * (j0 % 16 == 0). */
__device__ __forceinline__ unsigned tc_keep4_rows_q(const tfm_attn &a, uint32_t thr, int64_t bh,
                                                    int i0, int j0)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    unsigned bits = 0;
    if (a.Lk % 16 == 0) {
        const unsigned m16 = tc_keep16(a, thr, bh, i0 + (lane & 15), j0 + 16 * (lane >> 4));
#pragma unroll
        for (int hx = 0; hx < 2; hx++)
#pragma unroll
            for (int rr = 0; rr < 2; rr++) {
                const unsigned m = __shfl_sync(0xffffffffu, m16, g + 8 * rr + 16 * hx);
#pragma unroll
                for (int x2 = 0; x2 < 2; x2++) /* tile x = 2 hx + x2: keys 8 x2 + 2t, + 1 of the block */
                    bits |= ((m >> (8 * x2 + 2 * t)) & 3u) << (4 * (2 * hx + x2) + 2 * rr);
            }
        return bits;
    }
#pragma unroll
    for (int x = 0; x < 4; x++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            bits |= tc_keep1(a, thr, bh, i0 + g + 8 * (e >> 1), j0 + 8 * x + 2 * t + (e & 1)) << (4 * x + e);
    return bits;
}

/* The same for four tiles whose rows are keys j0 + (g, g + 8) and whose
 * columns are queries i0 + 8 x + (2t, 2t + 1) (the backward's transposed
 * scores). Where Lk % 16 == 0 lane L draws query i0 + L, keys j0 .. j0 +
 * 15; the owner of (key row r, query column c) reads bit r of lane c. */
__device__ __forceinline__ unsigned tc_keep4_rows_k(const tfm_attn &a, uint32_t thr, int64_t bh,
                                                    int j0, int i0)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    unsigned bits = 0;
    if (a.Lk % 16 == 0) {
        const unsigned m16 = tc_keep16(a, thr, bh, i0 + lane, j0);
#pragma unroll
        for (int x = 0; x < 4; x++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const unsigned m = __shfl_sync(0xffffffffu, m16, 8 * x + 2 * t + (e & 1));
                bits |= ((m >> (g + 8 * (e >> 1))) & 1u) << (4 * x + e);
            }
        return bits;
    }
#pragma unroll
    for (int x = 0; x < 4; x++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            bits |= tc_keep1(a, thr, bh, i0 + 8 * x + 2 * t + (e & 1), j0 + g + 8 * (e >> 1)) << (4 * x + e);
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
 * computed by the caller; dq_acc as tfm_attn_bwd's); tc_usable must have
 * said yes. */
void tc_attn_bwd(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk, tfm_view vdk,
                 void *dv, tfm_view vdv, float *dq_acc, const float *delta, const void *dout,
                 tfm_view vdo, const void *q, tfm_view vq, const void *k, tfm_view vk,
                 const void *v, tfm_view vv, const float *lse, int dt);

/* The forward on the tensor cores; tc_usable must have said yes. */
void tc_attn_fwd(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *lse, const void *q,
                 tfm_view vq, const void *k, tfm_view vk, const void *v, tfm_view vv, int dt);

#endif
