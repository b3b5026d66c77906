/* tfm_attention_tc.cuh: what the tensor-core attention kernels (forward:
 * tfm_attention_tc.cu, backward: tfm_attention_tc_bwd.cu) share, in the
 * manner of FlashAttention-2: tiles in shared memory, products on the
 * tensor cores with mma.sync (fp32 accumulation, sm_80 and up), the
 * softmax on the accumulators in registers. Same contract as the general
 * kernels (tfm_kernels.h): the same inputs and outputs, no memory beyond
 * them, the same dropout decisions (tfm_rng.h), so the requests and every
 * memory figure stay PyTorch's; only the arithmetic is faster.
 *
 * fp16 and bf16: mma m16n8k16, fragments read by ldmatrix. fp32: three
 * mma m16n8k8 on tf32 per product ("3xTF32": each operand split into a
 * tf32 part and a tf32 remainder, a b = a_big b_big + a_big b_small +
 * a_small b_big), the arithmetic PyTorch's memory-efficient kernel runs for
 * fp32 on sm_80 and up (cutlass OpMultiplyAddFastF32, mem_eff_attention
 * gemm_kernel_utils.h): close to fp32's rounding, not tf32's.
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
 * dS K, ...). Of mma.m16n8k8 on tf32 (one 32-bit value a register):
 *   A (16 x 8): reg0 row g, k t; reg1 row g + 8, k t; reg2 row g, k t + 4;
 *               reg3 row g + 8, k t + 4;  B (8 x 8): reg0 k t of col g,
 *               reg1 k t + 4;  C as above.
 * A sum over k may take its k in any order, A's and B's the same: where A
 * is an accumulator tile (P V, ...), its k 2t and 2t + 1 serve as k t and
 * t + 4, and B's rows 2t and 2t + 1 are read to match.
 * Every tile is a row-major copy of its view (cp.async), each row padded
 * by 16 bytes, so that the rows a fragment reads at once hit different
 * banks (fp16/bf16: ldmatrix's eight rows; fp32: a row stride of 4 mod 32
 * words puts lanes 4 g + t at banks 4 g + t). Speed (issue 19): fp16/bf16
 * 2.5-3x slower than the wgmma kernels cuDNN runs for PyTorch on an H100,
 * much faster than the general kernels. CUDA C++ only. */
#ifndef MC_TFM_ATTENTION_TC_CUH
#define MC_TFM_ATTENTION_TC_CUH

#include "tfm_attention.cuh"

#define TC_WARPS 4 /* 16 rows of a tile per warp */
#define TC_THREADS (32 * TC_WARPS)

/* A kernel's shared-memory opt-in is a property of the device it was set
 * on: a process whose threads drive several GPUs (sharded_model --threads)
 * sets it once on each. True the first time this device is seen by `seen`
 * (a function's own static array). */
#define TC_MAX_DEVICES 64
static inline bool tc_first_on_device(bool seen[TC_MAX_DEVICES])
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= TC_MAX_DEVICES) return true;
    if (seen[dev]) return false;
    seen[dev] = true;
    return true;
}

/* Elements of T in one 16-byte chunk (a cp.async copy); also the pad of
 * every shared row. */
template <typename T> constexpr int tc_chunk = 16 / (int)sizeof(T);
template <typename T> constexpr int tc_pad = tc_chunk<T>;

template <typename T> constexpr bool tc_is_f32 = sizeof(T) == 4;

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

/* x as a tf32 part and the tf32 rounding of what is left (3xTF32). */
__device__ __forceinline__ void tc_split(float x, uint32_t &big, uint32_t &small)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(big) : "f"(x));
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(small) : "f"(x - __uint_as_float(big)));
#else
    big = small = 0u;
    (void)x;
    __trap();
#endif
}

/* c += A B, one m16n8k8 on tf32. */
__device__ __forceinline__ void tc_mma_tf32(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    (void)c; (void)a; (void)b0; (void)b1;
    __trap();
#endif
}

/* c += A B in fp32 from split operands: the small products first, so that
 * they are not lost against the large one (as cutlass orders them). */
__device__ __forceinline__ void tc_mma_3xtf32(float c[4], const uint32_t ab[4], const uint32_t as[4],
                                              float b0, float b1)
{
    uint32_t bb0, bs0, bb1, bs1;
    tc_split(b0, bb0, bs0);
    tc_split(b1, bb1, bs1);
    tc_mma_tf32(c, as, bb0, bb1);
    tc_mma_tf32(c, ab, bs0, bs1);
    tc_mma_tf32(c, ab, bb0, bb1);
}

/* An A fragment of m16n8k8 split: a[4] in register order. */
__device__ __forceinline__ void tc_split4(const float a[4], uint32_t ab[4], uint32_t as[4])
{
#pragma unroll
    for (int r = 0; r < 4; r++) tc_split(a[r], ab[r], as[r]);
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

/* Two adjacent outputs (p 4-byte aligned for 16-bit T, 8-byte for fp32). */
template <typename T> __device__ __forceinline__ void tc_store2(T *p, float lo, float hi)
{
    if constexpr (tc_is_f32<T>) *reinterpret_cast<float2 *>(p) = make_float2(lo, hi);
    else *reinterpret_cast<uint32_t *>(p) = tc_pack<T>(lo, hi);
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
    if constexpr (tc_is_f32<T>) { /* two k8 steps a 16-wide one; scalar reads (see the top) */
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int k = 0; k < 16 * KS; k += 8) {
            const float af[4] = {a[g * sa + k + t], a[(g + 8) * sa + k + t], a[g * sa + k + t + 4],
                                 a[(g + 8) * sa + k + t + 4]};
            uint32_t ab[4], as[4];
            tc_split4(af, ab, as);
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int n = nt * 8 + g;
                if (B_KN) tc_mma_3xtf32(acc[nt], ab, as, b[(k + t) * sb + n], b[(k + t + 4) * sb + n]);
                else tc_mma_3xtf32(acc[nt], ab, as, b[n * sb + k + t], b[n * sb + k + t + 4]);
            }
        }
    } else {
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
}

/* acc[NT] += P B where P (16 x 8 KT) is in accumulator layout in p[KT]
 * (rounded to T here, as FlashAttention rounds its probabilities) and B is
 * a shared tile stored [k][n] at b (row stride sb): V for P V, K for dQ,
 * Q and dO for dK and dV. */
template <typename T, int KT, int NT>
__device__ __forceinline__ void tc_mma_rs(float acc[NT][4], const float p[KT][4], const T *b, int sb)
{
    if constexpr (tc_is_f32<T>) { /* P's columns 2t, 2t + 1 as k t, t + 4 (see the top) */
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int kt = 0; kt < KT; kt++) {
            const float af[4] = {p[kt][0], p[kt][2], p[kt][1], p[kt][3]};
            uint32_t ab[4], as[4];
            tc_split4(af, ab, as);
            const T *br = b + (kt * 8 + 2 * t) * sb + g;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) tc_mma_3xtf32(acc[nt], ab, as, br[nt * 8], br[sb + nt * 8]);
        }
    } else {
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
    constexpr int E = tc_chunk<T>, C = D / E; /* 16-byte chunks a row */
    const T *p = base + b * v.b + h * v.h;
    for (int idx = threadIdx.x; idx < rows * C; idx += blockDim.x) {
        const int r = idx / C, c = idx % C, l = row0 + r;
        const T *src = l < L ? p + (int64_t)l * v.l + c * E : p; /* a valid address, 0 bytes read */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        const unsigned dst = (unsigned)__cvta_generic_to_shared(s + r * S + c * E);
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

/* ------------------------------------------------------------ tile sizes */

/* The query (or key) tile the backward's dK/dV (or dQ) pass walks: 32 rows
 * from head dim 64, so that the fp32 accumulators of two 16 x D tiles and
 * the scores stay in registers, and (D 64) three blocks fit an SM's
 * registers. */
template <int D> struct tc_walk { static constexpr int N = D >= 64 ? 32 : 64; };

/* Dynamic shared memory of each kernel, bytes: the forward's Q tile and two
 * buffers of K and V tiles (64 rows each); the dK/dV pass's K and V tiles,
 * two buffers of Q and dO, dS (ACC) and two rows of floats; the dQ pass's
 * Q and dO tiles and two buffers of K and V. */
template <typename T, int D> constexpr size_t tc_fwd_smem(void)
{
    return sizeof(T) * (size_t)((16 * TC_WARPS + 4 * 64) * (D + tc_pad<T>));
}
template <typename T, int D, bool ACC> constexpr size_t tc_dkdv_smem(void)
{
    constexpr int B64 = 16 * TC_WARPS, N = tc_walk<D>::N, SD = D + tc_pad<T>;
    return sizeof(T) * (size_t)(2 * B64 * SD + 4 * N * SD + (ACC ? N * (B64 + tc_pad<T>) : 0)) +
           sizeof(float) * 2 * N;
}
template <typename T, int D> constexpr size_t tc_dq_smem(void)
{
    constexpr int B64 = 16 * TC_WARPS, N = tc_walk<D>::N, SD = D + tc_pad<T>;
    return sizeof(T) * (size_t)(2 * B64 * SD + 4 * N * SD);
}

/* ------------------------------------------------------------ host side */

/* MC_DT_* of a kernel's element type. */
template <typename T> struct tc_dt { static constexpr int v = MC_DT_F32; };
template <> struct tc_dt<__half> { static constexpr int v = MC_DT_F16; };
template <> struct tc_dt<__nv_bfloat16> { static constexpr int v = MC_DT_BF16; };

/* Whether the tensor-core kernels take this call: a head dim of 16, 32, 64
 * or 128, a GPU of compute capability 8.0 or more whose blocks may have the
 * kernels' shared memory, every pointer 16-byte aligned with strides of
 * whole 16-byte chunks (what MultiheadAttention's views always are), and
 * the kernels not turned off (tfm_attn_tc_set_enabled). Prints a one-line
 * note, once a process, when a call falls back to the general kernels. */
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
