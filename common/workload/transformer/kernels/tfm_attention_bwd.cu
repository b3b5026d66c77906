/* tfm_attention_bwd.cu: fused attention backward (tfm_kernels.h). Three
 * kernels, none needing memory beyond the caller's delta [B, H, Lq]:
 *   k_attn_delta: delta_i = sum_d dO_id O_id (one warp per row);
 *   k_attn_dkdv: one block per (key tile, bh) walks the query tiles,
 *     recomputes P = exp(scale q.k - lse) and the dropout decisions (same
 *     philox stream as the forward), and accumulates
 *       dV_j += sum_i P~_ij dO_i,  dK_j += scale sum_i dS_ij Q_i,
 *     with P~ = P z / (1 - p) (z the keep decision) and
 *     dS_ij = P_ij (z_ij / (1 - p) dO_i.V_j - delta_i);
 *   k_attn_dq: one block per (query tile, bh) walks the key tiles:
 *     dQ_i = scale sum_j dS_ij K_j.
 * Splitting dQ from dK/dV recomputes S and dP once more but needs neither
 * an fp32 dQ accumulator nor atomics (and is deterministic). */
#include "tfm_attention_tc.cuh"

/* ------------------------------------------------------------ delta */

template <typename T>
__global__ void k_attn_delta(float *delta, const T *dout, tfm_view vdo, const T *o, tfm_view vo,
                             int H, int Lq, int Dh, int64_t rows)
{
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * 4 + (threadIdx.x >> 5); /* r = bh Lq + i */
    if (r >= rows) return;
    const int64_t bh = r / Lq, i = r % Lq, b = bh / H, h = bh % H;
    const T *dr = dout + b * vdo.b + h * vdo.h + i * vdo.l, *orow = o + b * vo.b + h * vo.h + i * vo.l;
    float s = 0.0f;
    for (int d = lane; d < Dh; d += 32) s += ld<T>(dr[d]) * ld<T>(orow[d]);
#pragma unroll
    for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) delta[r] = s;
}

/* ------------------------------------------------------------ scores of a tile pair */

/* Thread (i_loc, sub) computes, for its 4 NS elements (i, 16 k2 + 4 sub + r)
 * of the R x R tile pair, the dropped probability P~ (into pt, if given)
 * and dS (into ds); both [R][R + 1], row = query. */
template <int D>
__device__ __forceinline__ void tile_scores(const tfm_attn &a, const float *qs, const float *ks,
                                            const float *dos, const float *vs, const float *lse_s,
                                            const float *delta_s, float *pt, float *ds, int64_t bh,
                                            int q0, int k0, uint32_t thr, float f)
{
    constexpr int R = tile_of<D>::R, P = tile_of<D>::P, NS = R / 16;
    const int i_loc = threadIdx.x >> 2, sub = threadIdx.x & 3, i = q0 + i_loc;
    const bool drop = a.dropout_p > 0.0f;
    /* d outermost: one load of q and of dO per 4 NS products each */
    float sc[NS][4], dpd[NS][4];
#pragma unroll
    for (int k2 = 0; k2 < NS; k2++)
#pragma unroll
        for (int r = 0; r < 4; r++) sc[k2][r] = dpd[k2][r] = 0.0f;
#pragma unroll 2
    for (int d = 0; d < D; d++) {
        const float qv = qs[i_loc * P + d], ov = dos[i_loc * P + d];
#pragma unroll
        for (int k2 = 0; k2 < NS; k2++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int jl = 16 * k2 + 4 * sub + r;
                sc[k2][r] += qv * ks[jl * P + d];
                dpd[k2][r] += ov * vs[jl * P + d];
            }
    }
#pragma unroll
    for (int k2 = 0; k2 < NS; k2++) {
        const int jl0 = 16 * k2 + 4 * sub;
        float z[4] = {1.0f, 1.0f, 1.0f, 1.0f};
        if (drop && i < a.Lq) attn_drop4(a, thr, f, bh, i, k0 + jl0, z);
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int jl = jl0 + r, j = k0 + jl;
            float p = 0.0f, dp = 0.0f;
            if (i < a.Lq && j < a.Lk && !(a.causal && j > i)) {
                p = expf(sc[k2][r] * a.scale - lse_s[i_loc]);
                dp = dpd[k2][r] * z[r];
            }
            if (pt) pt[i_loc * (R + 1) + jl] = p * z[r];
            ds[i_loc * (R + 1) + jl] = p * (dp - delta_s[i_loc]);
        }
    }
}

/* Loads lse and delta of query rows [q0, q0 + R) (0 past Lq). */
template <int R>
__device__ __forceinline__ void load_rows(float *lse_s, float *delta_s, const float *lse,
                                          const float *delta, int64_t bh, int q0, int Lq)
{
    for (int r = threadIdx.x; r < R; r += blockDim.x) {
        const int i = q0 + r;
        lse_s[r] = i < Lq ? lse[bh * Lq + i] : 0.0f;
        delta_s[r] = i < Lq ? delta[bh * Lq + i] : 0.0f;
    }
}

/* ------------------------------------------------------------ dK, dV */

template <typename T, int D>
__global__ void __launch_bounds__(tile_of<D>::THREADS_)
k_attn_dkdv(tfm_attn a, T *dk, tfm_view vdk, T *dv, tfm_view vdv, const float *delta,
            const T *dout, tfm_view vdo, const T *q, tfm_view vq, const T *k, tfm_view vk,
            const T *v, tfm_view vv, const float *lse, uint32_t thr, float f)
{
    constexpr int R = tile_of<D>::R, P = tile_of<D>::P, NO = D / 4;
    extern __shared__ float smem[];
    float *ks = smem, *vs = ks + R * P, *qs = vs + R * P, *dos = qs + R * P;
    float *pt = dos + R * P, *ds = pt + R * (R + 1), *lse_s = ds + R * (R + 1), *delta_s = lse_s + R;
    const int64_t bh = blockIdx.y, b = bh / a.H, h = bh % a.H;
    const int k0 = blockIdx.x * R, j_loc = threadIdx.x >> 2, sub = threadIdx.x & 3, j = k0 + j_loc;

    load_tile<T, D>(ks, k, vk, b, h, k0, R, a.Lk);
    load_tile<T, D>(vs, v, vv, b, h, k0, R, a.Lk);
    float ak[NO], av[NO];
#pragma unroll
    for (int c = 0; c < NO; c++) ak[c] = av[c] = 0.0f;

    const int n_q = (a.Lq + R - 1) / R;
    const int t0 = a.causal ? k0 / R : 0; /* query tiles wholly before k0 see none of these keys */
    for (int t = t0; t < n_q; t++) {
        const int q0 = t * R;
        __syncthreads(); /* the previous tile is consumed */
        load_tile<T, D>(qs, q, vq, b, h, q0, R, a.Lq);
        load_tile<T, D>(dos, dout, vdo, b, h, q0, R, a.Lq);
        load_rows<R>(lse_s, delta_s, lse, delta, bh, q0, a.Lq);
        __syncthreads();
        tile_scores<D>(a, qs, ks, dos, vs, lse_s, delta_s, pt, ds, bh, q0, k0, thr, f);
        __syncthreads();
        for (int il = 0; il < R; il++) {
            const float p = pt[il * (R + 1) + j_loc], s = ds[il * (R + 1) + j_loc];
#pragma unroll
            for (int c = 0; c < NO; c++) {
                av[c] += p * dos[il * P + sub + 4 * c];
                ak[c] += s * qs[il * P + sub + 4 * c];
            }
        }
    }
    if (j >= a.Lk) return;
    T *dkr = dk + b * vdk.b + h * vdk.h + (int64_t)j * vdk.l, *dvr = dv + b * vdv.b + h * vdv.h + (int64_t)j * vdv.l;
#pragma unroll
    for (int c = 0; c < NO; c++) {
        dkr[sub + 4 * c] = st<T>(ak[c] * a.scale);
        dvr[sub + 4 * c] = st<T>(av[c]);
    }
}

/* ------------------------------------------------------------ dQ */

template <typename T, int D>
__global__ void __launch_bounds__(tile_of<D>::THREADS_)
k_attn_dq(tfm_attn a, T *dq, tfm_view vdq, const float *delta, const T *dout, tfm_view vdo,
          const T *q, tfm_view vq, const T *k, tfm_view vk, const T *v, tfm_view vv,
          const float *lse, uint32_t thr, float f)
{
    constexpr int R = tile_of<D>::R, P = tile_of<D>::P, NO = D / 4;
    extern __shared__ float smem[];
    float *qs = smem, *dos = qs + R * P, *ks = dos + R * P, *vs = ks + R * P;
    float *ds = vs + R * P, *lse_s = ds + R * (R + 1), *delta_s = lse_s + R;
    const int64_t bh = blockIdx.y, b = bh / a.H, h = bh % a.H;
    const int q0 = blockIdx.x * R, i_loc = threadIdx.x >> 2, sub = threadIdx.x & 3, i = q0 + i_loc;

    load_tile<T, D>(qs, q, vq, b, h, q0, R, a.Lq);
    load_tile<T, D>(dos, dout, vdo, b, h, q0, R, a.Lq);
    load_rows<R>(lse_s, delta_s, lse, delta, bh, q0, a.Lq);
    float acc[NO];
#pragma unroll
    for (int c = 0; c < NO; c++) acc[c] = 0.0f;

    int n_k = (a.Lk + R - 1) / R;
    if (a.causal) {
        const int last = (q0 + R - 1 < a.Lq - 1 ? q0 + R - 1 : a.Lq - 1);
        n_k = min(n_k, last / R + 1);
    }
    for (int t = 0; t < n_k; t++) {
        const int k0 = t * R;
        __syncthreads();
        load_tile<T, D>(ks, k, vk, b, h, k0, R, a.Lk);
        load_tile<T, D>(vs, v, vv, b, h, k0, R, a.Lk);
        __syncthreads();
        tile_scores<D>(a, qs, ks, dos, vs, lse_s, delta_s, NULL, ds, bh, q0, k0, thr, f);
        __syncwarp(); /* row i_loc of ds is written and read by its own four threads */
        for (int jl = 0; jl < R; jl++) {
            const float s = ds[i_loc * (R + 1) + jl];
#pragma unroll
            for (int c = 0; c < NO; c++) acc[c] += s * ks[jl * P + sub + 4 * c];
        }
    }
    if (i >= a.Lq) return;
    T *dqr = dq + b * vdq.b + h * vdq.h + (int64_t)i * vdq.l;
#pragma unroll
    for (int c = 0; c < NO; c++) dqr[sub + 4 * c] = st<T>(acc[c] * a.scale);
}

/* ------------------------------------------------------------ launch */

template <typename T, int D>
static void attn_bwd_d(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk,
                       tfm_view vdk, void *dv, tfm_view vdv, float *delta, float *dq_acc, const void *dout,
                       tfm_view vdo, const void *q, tfm_view vq, const void *k, tfm_view vk,
                       const void *v, tfm_view vv, const void *o, tfm_view vo, const float *lse)
{
    constexpr int R = tile_of<D>::R, P = tile_of<D>::P;
    const size_t smem_kv = sizeof(float) * (size_t)(4 * R * P + 2 * R * (R + 1) + 2 * R);
    const size_t smem_q = sizeof(float) * (size_t)(4 * R * P + R * (R + 1) + 2 * R);
    static bool seen[TC_MAX_DEVICES];
    if (tc_first_on_device(seen)) {
        allow_smem(k_attn_dkdv<T, D>, smem_kv);
        allow_smem(k_attn_dq<T, D>, smem_q);
    }
    cudaStream_t st_ = mc_gpu_stream(g);
    const int64_t rows = (int64_t)a->B * a->H * a->Lq;
    k_attn_delta<T><<<(unsigned)((rows + 3) / 4), 128, 0, st_>>>(delta, (const T *)dout, vdo, (const T *)o, vo,
                                                                a->H, a->Lq, a->Dh, rows);
    CHECK_LAUNCH();
    const void *ptrs[] = {dq, dk, dv, dout, q, k, v};
    const tfm_view views[] = {vdq, vdk, vdv, vdo, vq, vk, vv};
    if (tc_usable(a, tc_dt<T>::v, ptrs, 7, views, 7)) {
        tc_attn_bwd(g, a, dq, vdq, dk, vdk, dv, vdv, dq_acc, delta, dout, vdo, q, vq, k, vk, v, vv, lse, tc_dt<T>::v);
        return;
    }
    const float p = a->dropout_p;
    const uint32_t thr = tfm_rng_attn_threshold(p);
    const float f = p > 0.0f ? (float)(1.0 / (1.0 - (double)p)) : 1.0f;
    const dim3 grid_kv((unsigned)((a->Lk + R - 1) / R), (unsigned)(a->B * a->H));
    k_attn_dkdv<T, D><<<grid_kv, tile_of<D>::THREADS_, smem_kv, st_>>>(
        *a, (T *)dk, vdk, (T *)dv, vdv, delta, (const T *)dout, vdo, (const T *)q, vq, (const T *)k, vk,
        (const T *)v, vv, lse, thr, f);
    CHECK_LAUNCH();
    const dim3 grid_q((unsigned)((a->Lq + R - 1) / R), (unsigned)(a->B * a->H));
    k_attn_dq<T, D><<<grid_q, tile_of<D>::THREADS_, smem_q, st_>>>(
        *a, (T *)dq, vdq, delta, (const T *)dout, vdo, (const T *)q, vq, (const T *)k, vk, (const T *)v, vv,
        lse, thr, f);
    CHECK_LAUNCH();
}

template <typename T>
static void attn_bwd(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk,
                     tfm_view vdk, void *dv, tfm_view vdv, float *delta, float *dq_acc, const void *dout,
                     tfm_view vdo, const void *q, tfm_view vq, const void *k, tfm_view vk,
                     const void *v, tfm_view vv, const void *o, tfm_view vo, const float *lse)
{
    if (a->Dh == 16)
        attn_bwd_d<T, 16>(g, a, dq, vdq, dk, vdk, dv, vdv, delta, dq_acc, dout, vdo, q, vq, k, vk, v, vv, o, vo, lse);
    else if (a->Dh == 32)
        attn_bwd_d<T, 32>(g, a, dq, vdq, dk, vdk, dv, vdv, delta, dq_acc, dout, vdo, q, vq, k, vk, v, vv, o, vo, lse);
    else if (a->Dh == 64)
        attn_bwd_d<T, 64>(g, a, dq, vdq, dk, vdk, dv, vdv, delta, dq_acc, dout, vdo, q, vq, k, vk, v, vv, o, vo, lse);
    else
        attn_bwd_d<T, 128>(g, a, dq, vdq, dk, vdk, dv, vdv, delta, dq_acc, dout, vdo, q, vq, k, vk, v, vv, o, vo, lse);
}

extern "C" void tfm_attn_bwd(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk,
                             tfm_view vdk, void *dv, tfm_view vdv, float *delta, float *dq_acc, const void *dout,
                             tfm_view vdo, const void *q, tfm_view vq, const void *k, tfm_view vk,
                             const void *v, tfm_view vv, const void *o, tfm_view vo,
                             const float *lse, int dt)
{
    check_attn(a);
    DISPATCH(dt, attn_bwd, g, a, dq, vdq, dk, vdk, dv, vdv, delta, dq_acc, dout, vdo, q, vq, k, vk, v, vv, o,
             vo, lse);
}
