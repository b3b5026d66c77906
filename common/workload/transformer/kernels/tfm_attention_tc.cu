/* tfm_attention_tc.cu: the attention forward on the tensor cores
 * (tfm_attention_tc.cuh), and which calls it takes. One block of 4 warps
 * per (64 query rows, b * H + h); each warp owns 16 rows. The block walks
 * the key tiles of 64: S = Q K^T on the tensor cores, then, on the
 * accumulators, the online softmax (running max m and sum l per row, base
 * 2) and the dropout of the probabilities that go into O (not into l, as
 * SDPA's dropout), and O += P V with P rounded to fp16/bf16 (as
 * FlashAttention does). The next K and V tiles load (cp.async) into a
 * second buffer while the current ones are used. Writes O / l and lse = ln(sum_j exp(scale q.k_j)),
 * the same outputs as the general kernel (tfm_attention.cu). */
#include <stdio.h>

#include "tfm_attention_tc.cuh"

/* Blocks an SM should hold (__launch_bounds__' register cap a thread):
 * fp16/bf16 four up to head dim 64 (128 registers), fp32 two (its split
 * operands need more; its tiles take twice the shared memory). */
template <typename T, int D> struct tc_fwd_occ { static constexpr int v = (D <= 64 ? 4 : 2) / (tc_is_f32<T> ? 2 : 1); };

template <typename T, int D>
__global__ void __launch_bounds__(TC_THREADS, tc_fwd_occ<T, D>::v)
k_attn_fwd_tc(tfm_attn a, T *o, tfm_view vo, float *lse, const T *q, tfm_view vq, const T *k,
              tfm_view vk, const T *v, tfm_view vv, uint32_t thr, float f)
{
    constexpr int BR = 16 * TC_WARPS, BC = 64, SQ = D + tc_pad<T>;
    constexpr int NS = BC / 8, NO = D / 8; /* 8-column tiles of S and of O */
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *qs = reinterpret_cast<T *>(smem_raw); /* [BR][SQ] */
    T *kvs = qs + BR * SQ;                   /* two buffers of K [BC][SQ] then V [BC][SQ] */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t bh = blockIdx.y, b = bh / a.H, h = bh % a.H;
    /* causal: the last query blocks, which see the most keys, first */
    const int qb = a.causal ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;
    const int q0 = qb * BR, r0 = warp * 16;
    const int i_row[2] = {q0 + r0 + g, q0 + r0 + g + 8};
    const bool drop = a.dropout_p > 0.0f;
    const float sl2 = a.scale * LOG2E; /* scores in base 2 */

    int n_tiles = (a.Lk + BC - 1) / BC;
    if (a.causal) { /* keys past the block's last query are masked for every row */
        const int last = min(q0 + BR - 1, a.Lq - 1);
        n_tiles = min(n_tiles, last / BC + 1);
    }
    tc_load_async<T, D>(qs, SQ, q, vq, b, h, q0, BR, a.Lq);
    tc_load_pair<T, D>(kvs, SQ, k, vk, v, vv, b, h, 0, BC, a.Lk);
    tc_commit();
    float acc[NO][4];
#pragma unroll
    for (int c = 0; c < NO; c++) acc[c][0] = acc[c][1] = acc[c][2] = acc[c][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

    for (int tile = 0; tile < n_tiles; tile++) {
        const int k0 = tile * BC;
        tc_next_pair<T, D>(tile + 1 < n_tiles, kvs, SQ, k, vk, v, vv, b, h, tile + 1, BC, a.Lk);
        __syncthreads();
        const T *ks = kvs + (tile & 1) * 2 * BC * SQ, *vs = ks + BC * SQ;
        float s[NS][4];
#pragma unroll
        for (int nt = 0; nt < NS; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
        tc_mma_ss<T, D / 16, NS>(s, qs + r0 * SQ, SQ, ks, SQ);

        /* Masks only on the tiles that need them: the last key tile, the
         * last query block, and (causal) the tiles the diagonal crosses. */
        const bool edge = k0 + BC > a.Lk || q0 + BR > a.Lq || (a.causal && k0 + BC - 1 > q0 + r0);
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int nt = 0; nt < NS; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                if (edge) {
                    const int i = i_row[e >> 1], j = k0 + nt * 8 + 2 * t + (e & 1);
                    const bool masked = i >= a.Lq || j >= a.Lk || (a.causal && j > i);
                    s[nt][e] = masked ? -INFINITY : s[nt][e] * sl2;
                } else {
                    s[nt][e] *= sl2;
                }
                mx[e >> 1] = fmaxf(mx[e >> 1], s[nt][e]);
            }
        float alpha[2], mn[2], rs[2] = {0.0f, 0.0f};
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            mn[r] = fmaxf(m[r], mx[r]);
            /* mn is -inf only for a row with nothing visible yet (padding rows) */
            alpha[r] = mn[r] == -INFINITY ? 1.0f : exp2f(m[r] - mn[r]);
        }
#pragma unroll
        for (int nt = 0; nt < NS; nt += 4) {
            const unsigned keep = drop ? tc_keep4_rows_q(a, thr, bh, q0 + r0, k0 + nt * 8) : 0xffffu;
#pragma unroll
            for (int x = 0; x < 4; x++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    float &sv = s[nt + x][e];
                    const float p = edge && sv == -INFINITY ? 0.0f : exp2f(sv - mn[e >> 1]);
                    rs[e >> 1] += p;
                    sv = drop ? ((keep >> (4 * x + e)) & 1u ? p * f : 0.0f) : p;
                }
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 1);
            rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 2);
            l[r] = l[r] * alpha[r] + rs[r];
            m[r] = mn[r];
        }
#pragma unroll
        for (int c = 0; c < NO; c++) {
            acc[c][0] *= alpha[0];
            acc[c][1] *= alpha[0];
            acc[c][2] *= alpha[1];
            acc[c][3] *= alpha[1];
        }
        tc_mma_rs<T, NS, NO>(acc, s, vs, SQ);
        __syncthreads(); /* this buffer is consumed before the next iteration refills it */
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int i = i_row[r];
        if (i >= a.Lq) continue;
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
        T *orow = o + b * vo.b + h * vo.h + (int64_t)i * vo.l;
#pragma unroll
        for (int c = 0; c < NO; c++)
            tc_store2<T>(orow + c * 8 + 2 * t, acc[c][2 * r] * inv, acc[c][2 * r + 1] * inv);
        if (t == 0 && lse) lse[bh * a.Lq + i] = m[r] * LN2 + logf(l[r]); /* NULL: not kept */
    }
}

template <typename T, int D>
static void fwd_d(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *lse, const void *q,
                  tfm_view vq, const void *k, tfm_view vk, const void *v, tfm_view vv)
{
    constexpr int BR = 16 * TC_WARPS;
    const size_t smem = tc_fwd_smem<T, D>();
    static bool seen[TC_MAX_DEVICES];
    if (tc_first_on_device(seen)) allow_smem(k_attn_fwd_tc<T, D>, smem);
    const float p = a->dropout_p;
    const uint32_t thr = tfm_rng_attn_threshold(p);
    const float f = p > 0.0f ? (float)(1.0 / (1.0 - (double)p)) : 1.0f;
    const dim3 grid((unsigned)((a->Lq + BR - 1) / BR), (unsigned)(a->B * a->H));
    k_attn_fwd_tc<T, D><<<grid, TC_THREADS, smem, mc_gpu_stream(g)>>>(
        *a, (T *)o, vo, lse, (const T *)q, vq, (const T *)k, vk, (const T *)v, vv, thr, f);
    CHECK_LAUNCH();
}

template <typename T>
static void fwd_t(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *lse, const void *q,
                  tfm_view vq, const void *k, tfm_view vk, const void *v, tfm_view vv)
{
    if (a->Dh == 16) fwd_d<T, 16>(g, a, o, vo, lse, q, vq, k, vk, v, vv);
    else if (a->Dh == 32) fwd_d<T, 32>(g, a, o, vo, lse, q, vq, k, vk, v, vv);
    else if (a->Dh == 64) fwd_d<T, 64>(g, a, o, vo, lse, q, vq, k, vk, v, vv);
    else fwd_d<T, 128>(g, a, o, vo, lse, q, vq, k, vk, v, vv);
}

void tc_attn_fwd(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *lse, const void *q,
                 tfm_view vq, const void *k, tfm_view vk, const void *v, tfm_view vv, int dt)
{
    DISPATCH(dt, fwd_t, g, a, o, vo, lse, q, vq, k, vk, v, vv);
}

/* ------------------------------------------------------------ which calls */

static int device_attr(cudaDeviceAttr what)
{
    int dev = 0, v = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&v, what, dev));
    return v;
}

/* The most dynamic shared memory any of the kernels of (T, D) asks for. */
template <typename T, int D> static size_t smem_most(void)
{
    size_t m = tc_fwd_smem<T, D>();
    if (tc_dkdv_smem<T, D, true>() > m) m = tc_dkdv_smem<T, D, true>();
    if (tc_dq_smem<T, D>() > m) m = tc_dq_smem<T, D>();
    return m;
}

template <typename T> static void smem_most_t(int Dh, size_t *bytes)
{
    *bytes = Dh == 16 ? smem_most<T, 16>() : Dh == 32 ? smem_most<T, 32>() : Dh == 64 ? smem_most<T, 64>()
                                                                                     : smem_most<T, 128>();
}

static bool g_tc_on = true;

extern "C" void tfm_attn_tc_set_enabled(bool on) { g_tc_on = on; }

bool tc_usable(const tfm_attn *a, int dt, const void *const *ptrs, int n_ptrs,
               const tfm_view *views, int n_views)
{
    if (!g_tc_on) return false;
    static int major = -1, optin = 0; /* of the first device asked: a process's GPUs are of one kind */
    if (major < 0) {
        major = device_attr(cudaDevAttrComputeCapabilityMajor);
        optin = device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    }
    const int chunk = 16 / MC_DT_SIZE(dt); /* elements of a 16-byte chunk */
    size_t smem = 0;
    const char *why = NULL;
    if (!(a->Dh == 16 || a->Dh == 32 || a->Dh == 64 || a->Dh == 128)) why = "head dim";
    else if (major < 8) why = "a GPU before sm_80 (no mma.sync on tf32, fp16, bf16)";
    else {
        DISPATCH(dt, smem_most_t, a->Dh, &smem);
        if (smem > (size_t)optin) why = "tiles larger than a block's shared memory on this GPU";
    }
    for (int i = 0; !why && i < n_ptrs; i++)
        if ((uintptr_t)ptrs[i] % 16 != 0) why = "a tensor not 16-byte aligned";
    for (int i = 0; !why && i < n_views; i++)
        if (views[i].b % chunk || views[i].h % chunk || views[i].l % chunk) why = "strides not in 16-byte chunks";
    if (!why) return true;
    static bool said = false;
    if (!said) {
        fprintf(stderr, "attention: %s: the general kernels run instead of the tensor-core ones\n", why);
        said = true;
    }
    return false;
}
