/* tfm_attention.cu: fused attention forward (tfm_kernels.h), in the manner
 * of FlashAttention-2: one block per (query tile, b * H + h); the block
 * walks the key tiles, keeps each query row's running max m and sum l
 * (online softmax, base 2), and accumulates O in registers; it writes O / l
 * and lse = ln(sum_j exp(scale q.k_j)). Dropout multiplies the probabilities
 * that go into O, not those of l, as SDPA's dropout does. No memory beyond
 * q, k, v, o and lse. Thread (i, sub) of 4 per row owns O[i][sub + 4 k]
 * and scores (i, 16 k2 + 4 sub + r), so that a thread's four consecutive
 * keys share one philox block. */
#include "tfm_attention_tc.cuh"

template <typename T, int D>
__global__ void __launch_bounds__(tile_of<D>::THREADS_)
k_attn_fwd(tfm_attn a, T *o, tfm_view vo, float *lse, const T *q, tfm_view vq, const T *k,
           tfm_view vk, const T *v, tfm_view vv, uint32_t thr, float f)
{
    constexpr int R = tile_of<D>::R, P = tile_of<D>::P, NS = R / 16, NO = D / 4;
    extern __shared__ float smem[];
    float *qs = smem, *ks = qs + R * P, *vs = ks + R * P, *ps = vs + R * P; /* ps: R x (R + 1) */
    const int64_t bh = blockIdx.y, b = bh / a.H, h = bh % a.H;
    const int q0 = blockIdx.x * R, i_loc = threadIdx.x >> 2, sub = threadIdx.x & 3, i = q0 + i_loc;
    const bool row_ok = i < a.Lq;
    const bool drop = a.dropout_p > 0.0f;
    const float sl2 = a.scale * LOG2E; /* scores in base 2 */

    load_tile<T, D>(qs, q, vq, b, h, q0, R, a.Lq);
    float acc[NO];
#pragma unroll
    for (int c = 0; c < NO; c++) acc[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;

    int n_tiles = (a.Lk + R - 1) / R;
    if (a.causal) { /* keys past the tile's last query are masked for every row */
        const int last = (q0 + R - 1 < a.Lq - 1 ? q0 + R - 1 : a.Lq - 1);
        n_tiles = min(n_tiles, last / R + 1);
    }
    for (int t = 0; t < n_tiles; t++) {
        const int k0 = t * R;
        __syncthreads(); /* the previous tile's ks, vs, ps are consumed */
        load_tile<T, D>(ks, k, vk, b, h, k0, R, a.Lk);
        load_tile<T, D>(vs, v, vv, b, h, k0, R, a.Lk);
        __syncthreads();
        /* d outermost: one load of q per 4 NS products */
        float s[NS][4];
#pragma unroll
        for (int k2 = 0; k2 < NS; k2++)
#pragma unroll
            for (int r = 0; r < 4; r++) s[k2][r] = 0.0f;
#pragma unroll 4
        for (int d = 0; d < D; d++) {
            const float qv = qs[i_loc * P + d];
#pragma unroll
            for (int k2 = 0; k2 < NS; k2++)
#pragma unroll
                for (int r = 0; r < 4; r++) s[k2][r] += qv * ks[(16 * k2 + 4 * sub + r) * P + d];
        }
        float mx = -INFINITY;
#pragma unroll
        for (int k2 = 0; k2 < NS; k2++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int j = k0 + 16 * k2 + 4 * sub + r;
                const bool masked = !row_ok || j >= a.Lk || (a.causal && j > i);
                s[k2][r] = masked ? -INFINITY : s[k2][r] * sl2;
                mx = fmaxf(mx, s[k2][r]);
            }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m, mx);
        /* m_new is -inf only for a row with nothing visible yet (padding rows). */
        const float alpha = m_new == -INFINITY ? 1.0f : exp2f(m - m_new);
        float rs = 0.0f;
#pragma unroll
        for (int k2 = 0; k2 < NS; k2++) {
            float z[4] = {1.0f, 1.0f, 1.0f, 1.0f};
            const int jl0 = 16 * k2 + 4 * sub;
            if (drop && row_ok) attn_drop4(a, thr, f, bh, i, k0 + jl0, z);
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const float p = s[k2][r] == -INFINITY ? 0.0f : exp2f(s[k2][r] - m_new);
                rs += p;
                ps[i_loc * (R + 1) + jl0 + r] = p * z[r];
            }
        }
        rs += __shfl_xor_sync(0xffffffffu, rs, 1);
        rs += __shfl_xor_sync(0xffffffffu, rs, 2);
        l = l * alpha + rs;
        m = m_new;
        __syncwarp(); /* the row's four threads wrote ps; all four read it */
#pragma unroll
        for (int c = 0; c < NO; c++) acc[c] *= alpha;
        for (int jl = 0; jl < R; jl++) {
            const float p = ps[i_loc * (R + 1) + jl];
#pragma unroll
            for (int c = 0; c < NO; c++) acc[c] += p * vs[jl * P + sub + 4 * c];
        }
    }
    if (!row_ok) return;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    T *orow = o + b * vo.b + h * vo.h + (int64_t)i * vo.l;
#pragma unroll
    for (int c = 0; c < NO; c++) orow[sub + 4 * c] = st<T>(acc[c] * inv);
    if (sub == 0 && lse) lse[bh * a.Lq + i] = m * LN2 + logf(l); /* NULL: not kept (no grad) */
}

template <typename T, int D>
static void attn_fwd_d(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *lse,
                       const void *q, tfm_view vq, const void *k, tfm_view vk, const void *v,
                       tfm_view vv)
{
    constexpr int R = tile_of<D>::R, P = tile_of<D>::P;
    const size_t smem = sizeof(float) * (size_t)(3 * R * P + R * (R + 1));
    static bool seen[TC_MAX_DEVICES];
    if (tc_first_on_device(seen)) allow_smem(k_attn_fwd<T, D>, smem);
    const float p = a->dropout_p;
    const uint32_t thr = tfm_rng_attn_threshold(p);
    const float f = p > 0.0f ? (float)(1.0 / (1.0 - (double)p)) : 1.0f;
    const dim3 grid((unsigned)((a->Lq + R - 1) / R), (unsigned)(a->B * a->H));
    k_attn_fwd<T, D><<<grid, tile_of<D>::THREADS_, smem, mc_gpu_stream(g)>>>(
        *a, (T *)o, vo, lse, (const T *)q, vq, (const T *)k, vk, (const T *)v, vv, thr, f);
    CHECK_LAUNCH();
}

template <typename T>
static void attn_fwd(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *lse,
                     const void *q, tfm_view vq, const void *k, tfm_view vk, const void *v,
                     tfm_view vv)
{
    if (a->Dh == 16) attn_fwd_d<T, 16>(g, a, o, vo, lse, q, vq, k, vk, v, vv);
    else if (a->Dh == 32) attn_fwd_d<T, 32>(g, a, o, vo, lse, q, vq, k, vk, v, vv);
    else if (a->Dh == 64) attn_fwd_d<T, 64>(g, a, o, vo, lse, q, vq, k, vk, v, vv);
    else attn_fwd_d<T, 128>(g, a, o, vo, lse, q, vq, k, vk, v, vv);
}

extern "C" bool tfm_attn_supported(int Dh) { return Dh == 16 || Dh == 32 || Dh == 64 || Dh == 128; }

extern "C" void tfm_attn_fwd(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *lse,
                             const void *q, tfm_view vq, const void *k, tfm_view vk, const void *v,
                             tfm_view vv, int dt)
{
    check_attn(a);
    const void *ptrs[] = {o, q, k, v};
    const tfm_view views[] = {vo, vq, vk, vv};
    if (tc_usable(a, dt, ptrs, 4, views, 4)) {
        tc_attn_fwd(g, a, o, vo, lse, q, vq, k, vk, v, vv, dt);
        return;
    }
    DISPATCH(dt, attn_fwd, g, a, o, vo, lse, q, vq, k, vk, v, vv);
}
