/* tfm_attention_tc_bwd.cu: the attention backward on the tensor cores
 * (tfm_attention_tc.cuh), after the same delta = rowsum(dO * O) as the
 * general kernels (tfm_attention_bwd.cu):
 *   dK, dV: one block per (64 keys, bh), each warp 16 keys, walks the query
 *     tiles (the next Q and dO loading while one is used). It forms the
 *     scores transposed, S^T = K Q^T and dP^T = V dO^T (rows keys, columns
 *     queries), so that P~^T and dS^T come out in the accumulator layout
 *     that is the A of dV += P~^T dO and dK += dS^T Q;
 *   dQ, where the caller gives an fp32 accumulator (the dQ accumulator of
 *     cuDNN's backward workspace, which PyTorch allocates): in the same
 *     pass, dS goes through shared memory and each warp adds its part of
 *     dQ += dS K to the accumulator with atomics, as FlashAttention-2 does;
 *     then one pass writes dQ = scale acc in the output's type and view;
 *   dQ without one: its own pass, one block per (64 queries, bh) over the
 *     key tiles (S = Q K^T, dP = dO V^T, dQ += dS K): S and dP once more,
 *     but no memory beyond the caller's, no atomics.
 * P = exp(scale s - lse), P~ = P z / (1 - p) with z the forward's keep
 * decision, dS = P (z / (1 - p) dP - delta); P~ and dS are rounded to
 * fp16/bf16 for their products, as FlashAttention's backward does. */
#include "tfm_attention_tc.cuh"

/* Blocks an SM should hold: __launch_bounds__' register cap per thread
 * (fp32: its split operands need more registers, its tiles twice the
 * shared memory, which holds two blocks at most from head dim 64). */
template <typename T, int D> struct tc_occ {
    static constexpr int DKDV = tc_is_f32<T> ? (D <= 32 ? 2 : 1) : D <= 64 ? 3 : 2, DQ = DKDV;
};

/* ------------------------------------------------------------ dK, dV (and dQ) */

template <typename T, int D, bool ACC>
__global__ void __launch_bounds__(TC_THREADS, tc_occ<T, D>::DKDV)
k_attn_dkdv_tc(tfm_attn a, T *dk, tfm_view vdk, T *dv, tfm_view vdv, float *dq_acc,
               const float *delta, const T *dout, tfm_view vdo, const T *q, tfm_view vq,
               const T *k, tfm_view vk, const T *v, tfm_view vv, const float *lse, uint32_t thr,
               float f)
{
    constexpr int BC = 16 * TC_WARPS, BQ = tc_walk<D>::N, SD = D + tc_pad<T>, SS = BC + tc_pad<T>;
    constexpr int NQ = BQ / 8, NO = D / 8;
    /* dQ's product: BQ / 16 row blocks of 16 queries, the warps split the
     * head dim among the rest */
    constexpr int RB = BQ / 16, CG = TC_WARPS / RB, NOW = NO / CG;
    static_assert(NQ % 4 == 0 && NOW % 2 == 0, "dropout draws four 8-column tiles at once");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *ks = reinterpret_cast<T *>(smem_raw); /* [BC][SD] A of S^T; B of dQ */
    T *vs = ks + BC * SD;                    /* [BC][SD] A of dP^T */
    T *qd = vs + BC * SD;                    /* two buffers of Q [BQ][SD] then dO [BQ][SD] */
    T *ds_s = qd + 4 * BQ * SD;              /* [BQ][SS] dS (ACC only) */
    float *lse2_s = reinterpret_cast<float *>(ds_s + (ACC ? BQ * SS : 0)); /* [BQ] lse in base 2 */
    float *delta_s = lse2_s + BQ;                                          /* [BQ] */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t bh = blockIdx.y, b = bh / a.H, h = bh % a.H;
    const int k0 = blockIdx.x * BC, r0 = warp * 16;
    const int j_row[2] = {k0 + r0 + g, k0 + r0 + g + 8};
    const bool drop = a.dropout_p > 0.0f;
    const float sl2 = a.scale * LOG2E;

    const int n_q = (a.Lq + BQ - 1) / BQ;
    const int t0 = a.causal ? k0 / BQ : 0; /* query tiles wholly before k0 see none of these keys */
    tc_load_async<T, D>(ks, SD, k, vk, b, h, k0, BC, a.Lk);
    tc_load_async<T, D>(vs, SD, v, vv, b, h, k0, BC, a.Lk);
    if (t0 < n_q) tc_load_pair<T, D>(qd + (t0 & 1) * 2 * BQ * SD, SD, q, vq, dout, vdo, b, h, t0 * BQ, BQ, a.Lq);
    tc_commit();
    float adk[NO][4], adv[NO][4];
#pragma unroll
    for (int c = 0; c < NO; c++)
#pragma unroll
        for (int e = 0; e < 4; e++) adk[c][e] = adv[c][e] = 0.0f;

    for (int tile = t0; tile < n_q; tile++) {
        const int q0 = tile * BQ;
        tc_next_pair<T, D>(tile + 1 < n_q, qd, SD, q, vq, dout, vdo, b, h, tile + 1, BQ, a.Lq);
        for (int r = threadIdx.x; r < BQ; r += blockDim.x) {
            const int i = q0 + r;
            lse2_s[r] = i < a.Lq ? lse[bh * a.Lq + i] * LOG2E : 0.0f;
            delta_s[r] = i < a.Lq ? delta[bh * a.Lq + i] : 0.0f;
        }
        __syncthreads();
        const T *qs = qd + (tile & 1) * 2 * BQ * SD, *dos = qs + BQ * SD;
        float s[NQ][4], dp[NQ][4];
#pragma unroll
        for (int nt = 0; nt < NQ; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[nt][e] = dp[nt][e] = 0.0f;
        tc_mma_ss<T, D / 16, NQ>(s, ks + r0 * SD, SD, qs, SD);
        tc_mma_ss<T, D / 16, NQ>(dp, vs + r0 * SD, SD, dos, SD);
        const bool edge = k0 + BC > a.Lk || q0 + BQ > a.Lq || (a.causal && k0 + r0 + 15 > q0);
#pragma unroll
        for (int nt = 0; nt < NQ; nt += 4) {
            const unsigned keep = drop ? tc_keep4_rows_k(a, thr, bh, k0 + r0, q0 + nt * 8) : 0xffffu;
#pragma unroll
            for (int x = 0; x < 4; x++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int il = (nt + x) * 8 + 2 * t + (e & 1), i = q0 + il, j = j_row[e >> 1];
                    const bool ok = !edge || (i < a.Lq && j < a.Lk && !(a.causal && j > i));
                    const float pr = ok ? exp2f(s[nt + x][e] * sl2 - lse2_s[il]) : 0.0f;
                    const float zf = drop ? ((keep >> (4 * x + e)) & 1u ? f : 0.0f) : 1.0f;
                    s[nt + x][e] = pr * zf;                                   /* P~^T */
                    dp[nt + x][e] = pr * (zf * dp[nt + x][e] - delta_s[il]); /* dS^T */
                    if (ACC) ds_s[il * SS + r0 + g + 8 * (e >> 1)] = st<T>(dp[nt + x][e]);
                }
        }
        tc_mma_rs<T, NQ, NO>(adv, s, dos, SD);
        tc_mma_rs<T, NQ, NO>(adk, dp, qs, SD);
        if (ACC) {
            __syncthreads(); /* every warp's dS is in ds_s */
            const int rb = warp % RB, cg = warp / RB;
            float dqa[NOW][4];
#pragma unroll
            for (int c = 0; c < NOW; c++) dqa[c][0] = dqa[c][1] = dqa[c][2] = dqa[c][3] = 0.0f;
            tc_mma_ss<T, BC / 16, NOW, true>(dqa, ds_s + rb * 16 * SS, SS, ks + cg * NOW * 8, SD);
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const int i = q0 + rb * 16 + g + 8 * r;
                if (i >= a.Lq) continue;
                float *row = dq_acc + (bh * a.Lq + i) * D + cg * NOW * 8 + 2 * t;
#pragma unroll
                for (int c = 0; c < NOW; c++) {
                    atomicAdd(row + c * 8, dqa[c][2 * r]);
                    atomicAdd(row + c * 8 + 1, dqa[c][2 * r + 1]);
                }
            }
        }
        __syncthreads(); /* this tile's buffers (and ds_s) are consumed */
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int j = j_row[r];
        if (j >= a.Lk) continue;
        T *dkr = dk + b * vdk.b + h * vdk.h + (int64_t)j * vdk.l;
        T *dvr = dv + b * vdv.b + h * vdv.h + (int64_t)j * vdv.l;
#pragma unroll
        for (int c = 0; c < NO; c++) {
            tc_store2<T>(dkr + c * 8 + 2 * t, adk[c][2 * r] * a.scale, adk[c][2 * r + 1] * a.scale);
            tc_store2<T>(dvr + c * 8 + 2 * t, adv[c][2 * r], adv[c][2 * r + 1]);
        }
    }
}

/* dq (its view, type T) = scale acc, acc float [B H][Lq][D] contiguous. */
template <typename T>
__global__ void k_attn_dq_store(T *dq, tfm_view vdq, const float *acc, int H, int Lq, int D,
                                float scale, int64_t n)
{
    GRID_STRIDE(x, n)
    {
        const int64_t d = x % D, r = x / D, i = r % Lq, bh = r / Lq;
        dq[(bh / H) * vdq.b + (bh % H) * vdq.h + i * vdq.l + d] = st<T>(acc[x] * scale);
    }
}

/* ------------------------------------------------------------ dQ (its own pass) */

template <typename T, int D>
__global__ void __launch_bounds__(TC_THREADS, tc_occ<T, D>::DQ)
k_attn_dq_tc(tfm_attn a, T *dq, tfm_view vdq, const float *delta, const T *dout, tfm_view vdo,
             const T *q, tfm_view vq, const T *k, tfm_view vk, const T *v, tfm_view vv,
             const float *lse, uint32_t thr, float f)
{
    constexpr int BR = 16 * TC_WARPS, BC = tc_walk<D>::N, SD = D + tc_pad<T>;
    constexpr int NS = BC / 8, NO = D / 8;
    static_assert(NS % 4 == 0, "dropout draws four 8-column tiles at once");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *qs = reinterpret_cast<T *>(smem_raw); /* [BR][SD] A of S */
    T *dos = qs + BR * SD;                   /* [BR][SD] A of dP */
    T *kv = dos + BR * SD;                   /* two buffers of K [BC][SD] then V [BC][SD] */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t bh = blockIdx.y, b = bh / a.H, h = bh % a.H;
    /* causal: the last query blocks, which see the most keys, first */
    const int qb = a.causal ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;
    const int q0 = qb * BR, r0 = warp * 16;
    const int i_row[2] = {q0 + r0 + g, q0 + r0 + g + 8};
    const bool drop = a.dropout_p > 0.0f;
    const float sl2 = a.scale * LOG2E;
    float lse2[2], dl[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        lse2[r] = i_row[r] < a.Lq ? lse[bh * a.Lq + i_row[r]] * LOG2E : 0.0f;
        dl[r] = i_row[r] < a.Lq ? delta[bh * a.Lq + i_row[r]] : 0.0f;
    }

    int n_k = (a.Lk + BC - 1) / BC;
    if (a.causal) {
        const int last = min(q0 + BR - 1, a.Lq - 1);
        n_k = min(n_k, last / BC + 1);
    }
    tc_load_async<T, D>(qs, SD, q, vq, b, h, q0, BR, a.Lq);
    tc_load_async<T, D>(dos, SD, dout, vdo, b, h, q0, BR, a.Lq);
    tc_load_pair<T, D>(kv, SD, k, vk, v, vv, b, h, 0, BC, a.Lk);
    tc_commit();
    float acc[NO][4];
#pragma unroll
    for (int c = 0; c < NO; c++) acc[c][0] = acc[c][1] = acc[c][2] = acc[c][3] = 0.0f;

    for (int tile = 0; tile < n_k; tile++) {
        const int k0 = tile * BC;
        tc_next_pair<T, D>(tile + 1 < n_k, kv, SD, k, vk, v, vv, b, h, tile + 1, BC, a.Lk);
        __syncthreads();
        const T *ks = kv + (tile & 1) * 2 * BC * SD, *vs = ks + BC * SD;
        float s[NS][4], dp[NS][4];
#pragma unroll
        for (int nt = 0; nt < NS; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[nt][e] = dp[nt][e] = 0.0f;
        tc_mma_ss<T, D / 16, NS>(s, qs + r0 * SD, SD, ks, SD);
        tc_mma_ss<T, D / 16, NS>(dp, dos + r0 * SD, SD, vs, SD);
        const bool edge = k0 + BC > a.Lk || q0 + BR > a.Lq || (a.causal && k0 + BC - 1 > q0 + r0);
#pragma unroll
        for (int nt = 0; nt < NS; nt += 4) {
            const unsigned keep = drop ? tc_keep4_rows_q(a, thr, bh, q0 + r0, k0 + nt * 8) : 0xffffu;
#pragma unroll
            for (int x = 0; x < 4; x++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int i = i_row[e >> 1], j = k0 + (nt + x) * 8 + 2 * t + (e & 1);
                    const bool ok = !edge || (i < a.Lq && j < a.Lk && !(a.causal && j > i));
                    const float pr = ok ? exp2f(s[nt + x][e] * sl2 - lse2[e >> 1]) : 0.0f;
                    const float zf = drop ? ((keep >> (4 * x + e)) & 1u ? f : 0.0f) : 1.0f;
                    dp[nt + x][e] = pr * (zf * dp[nt + x][e] - dl[e >> 1]); /* dS */
                }
        }
        tc_mma_rs<T, NS, NO>(acc, dp, ks, SD);
        __syncthreads(); /* this buffer is consumed before the next iteration refills it */
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int i = i_row[r];
        if (i >= a.Lq) continue;
        T *dqr = dq + b * vdq.b + h * vdq.h + (int64_t)i * vdq.l;
#pragma unroll
        for (int c = 0; c < NO; c++)
            tc_store2<T>(dqr + c * 8 + 2 * t, acc[c][2 * r] * a.scale, acc[c][2 * r + 1] * a.scale);
    }
}

/* ------------------------------------------------------------ launch */

template <typename T, int D>
static void bwd_d(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk, tfm_view vdk,
                  void *dv, tfm_view vdv, float *dq_acc, const float *delta, const void *dout,
                  tfm_view vdo, const void *q, tfm_view vq, const void *k, tfm_view vk,
                  const void *v, tfm_view vv, const float *lse)
{
    constexpr int B64 = 16 * TC_WARPS;
    const size_t smem_q = tc_dq_smem<T, D>();
    static bool seen[TC_MAX_DEVICES];
    if (tc_first_on_device(seen)) {
        allow_smem(k_attn_dkdv_tc<T, D, true>, tc_dkdv_smem<T, D, true>());
        allow_smem(k_attn_dkdv_tc<T, D, false>, tc_dkdv_smem<T, D, false>());
        allow_smem(k_attn_dq_tc<T, D>, smem_q);
    }
    cudaStream_t st_ = mc_gpu_stream(g);
    const float p = a->dropout_p;
    const uint32_t thr = tfm_rng_attn_threshold(p);
    const float f = p > 0.0f ? (float)(1.0 / (1.0 - (double)p)) : 1.0f;
    const dim3 grid_kv((unsigned)((a->Lk + B64 - 1) / B64), (unsigned)(a->B * a->H));
    if (dq_acc) {
        const int64_t n = (int64_t)a->B * a->H * a->Lq * D;
        CHECK_CUDA(cudaMemsetAsync(dq_acc, 0, (size_t)n * sizeof(float), st_));
        k_attn_dkdv_tc<T, D, true><<<grid_kv, TC_THREADS, tc_dkdv_smem<T, D, true>(), st_>>>(
            *a, (T *)dk, vdk, (T *)dv, vdv, dq_acc, delta, (const T *)dout, vdo, (const T *)q, vq,
            (const T *)k, vk, (const T *)v, vv, lse, thr, f);
        CHECK_LAUNCH();
        k_attn_dq_store<T><<<blocks_for(n), THREADS, 0, st_>>>((T *)dq, vdq, dq_acc, a->H, a->Lq, D,
                                                               a->scale, n);
        CHECK_LAUNCH();
        return;
    }
    k_attn_dkdv_tc<T, D, false><<<grid_kv, TC_THREADS, tc_dkdv_smem<T, D, false>(), st_>>>(
        *a, (T *)dk, vdk, (T *)dv, vdv, NULL, delta, (const T *)dout, vdo, (const T *)q, vq,
        (const T *)k, vk, (const T *)v, vv, lse, thr, f);
    CHECK_LAUNCH();
    const dim3 grid_q((unsigned)((a->Lq + B64 - 1) / B64), (unsigned)(a->B * a->H));
    k_attn_dq_tc<T, D><<<grid_q, TC_THREADS, smem_q, st_>>>(
        *a, (T *)dq, vdq, delta, (const T *)dout, vdo, (const T *)q, vq, (const T *)k, vk,
        (const T *)v, vv, lse, thr, f);
    CHECK_LAUNCH();
}

template <typename T>
static void bwd_t(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk, tfm_view vdk,
                  void *dv, tfm_view vdv, float *dq_acc, const float *delta, const void *dout,
                  tfm_view vdo, const void *q, tfm_view vq, const void *k, tfm_view vk,
                  const void *v, tfm_view vv, const float *lse)
{
    if (a->Dh == 16)
        bwd_d<T, 16>(g, a, dq, vdq, dk, vdk, dv, vdv, dq_acc, delta, dout, vdo, q, vq, k, vk, v, vv, lse);
    else if (a->Dh == 32)
        bwd_d<T, 32>(g, a, dq, vdq, dk, vdk, dv, vdv, dq_acc, delta, dout, vdo, q, vq, k, vk, v, vv, lse);
    else if (a->Dh == 64)
        bwd_d<T, 64>(g, a, dq, vdq, dk, vdk, dv, vdv, dq_acc, delta, dout, vdo, q, vq, k, vk, v, vv, lse);
    else
        bwd_d<T, 128>(g, a, dq, vdq, dk, vdk, dv, vdv, dq_acc, delta, dout, vdo, q, vq, k, vk, v, vv, lse);
}

void tc_attn_bwd(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk, tfm_view vdk,
                 void *dv, tfm_view vdv, float *dq_acc, const float *delta, const void *dout,
                 tfm_view vdo, const void *q, tfm_view vq, const void *k, tfm_view vk,
                 const void *v, tfm_view vv, const float *lse, int dt)
{
    DISPATCH(dt, bwd_t, g, a, dq, vdq, dk, vdk, dv, vdv, dq_acc, delta, dout, vdo, q, vq, k, vk, v, vv, lse);
}
