/* tfm_fused.cu: the fused elementwise chains of C25 (tfm_kernels.h): bias
 * add, activation, dropout and residual add in one pass forward, and their
 * backward in one pass, against eager's four kernels and their
 * intermediates. Element e = r * n_cols + c draws dropout word e of the
 * stream (seed, offset), as tfm_dropout_fwd on the same tensor would, so
 * fused and eager drop the same elements. */
#include "tfm_kernels.cuh"
#include "workload/core/wl_profile.h"

enum { BIT_KEEP = 1, BIT_POS = 2 };

/* One element: returns y, sets its bits. */
template <typename T, typename O>
__device__ __forceinline__ float fused1(float u, float res, bool has_res, bool keep, float f,
                                        int act, uint8_t *bits)
{
    const float a = tfm_act(u, act);
    *bits = (uint8_t)((keep ? BIT_KEEP : 0) | (u > 0.0f ? BIT_POS : 0));
    const float d = keep ? a * f : 0.0f;
    return has_res ? res + d : d;
}

/* V: packs of VEC (needs n_cols % VEC == 0 and aligned pointers). */
template <typename T, typename O, bool V>
__global__ void k_fused_fwd(O *y, uint8_t *bits, const T *h, const T *bias, const O *res,
                            int64_t n, int64_t n_cols, int act, bool drop, uint32_t thr, float f,
                            uint64_t seed, uint64_t offset)
{
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        const pack<T> hv = ldp(h, i);
        const int64_t c0 = (i * VEC) % n_cols;
        pack<T> bv;
        if (bias) bv = ldp(bias, c0 / VEC);
        pack<O> rv;
        if (res) rv = ldp(res, i);
        tfm_rng4 r0 = {{0, 0, 0, 0}}, r1 = r0;
        if (drop) {
            r0 = tfm_philox(seed, offset, 2 * (uint64_t)i);
            r1 = tfm_philox(seed, offset, 2 * (uint64_t)i + 1);
        }
        pack<O> o;
        uint8_t mk[VEC];
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float u = ld<T>(hv.v[j]) + (bias ? ld<T>(bv.v[j]) : 0.0f);
            const bool keep = !drop || tfm_rng_word_keeps(j < 4 ? r0.w[j] : r1.w[j - 4], thr);
            o.v[j] = st<O>(fused1<T, O>(u, res ? ld<O>(rv.v[j]) : 0.0f, res != NULL, keep, f, act, &mk[j]));
        }
        stp(y, i, o);
        uint2 m2;
        memcpy(&m2, mk, sizeof m2);
        reinterpret_cast<uint2 *>(bits)[i] = m2;
    }
    TAIL(i, nv, n) {
        const float u = ld<T>(h[i]) + (bias ? ld<T>(bias[i % n_cols]) : 0.0f);
        bool keep = true;
        if (drop) keep = tfm_rng_word_keeps(tfm_philox(seed, offset, (uint64_t)i >> 2).w[i & 3], thr);
        y[i] = st<O>(fused1<T, O>(u, res ? ld<O>(res[i]) : 0.0f, res != NULL, keep, f, act, &bits[i]));
    }
}

template <typename T, typename O>
static void fused_fwd(mc_wl_gpu *g, void *y, uint8_t *bits, const void *h, const void *bias,
                      const void *res, int64_t rows, int64_t n_cols, int act, float p,
                      uint64_t seed, uint64_t offset)
{
    const int64_t n = rows * n_cols;
    const bool v = n_cols % VEC == 0 && aligned(y) && aligned(bits) && aligned(h) &&
                   (!bias || aligned(bias)) && (!res || aligned(res));
    const bool drop = p > 0.0f;
    const uint32_t thr = tfm_rng_threshold(p);
    const float f = drop ? (float)(1.0 / (1.0 - (double)p)) : 1.0f;
    cudaStream_t q = mc_gpu_stream(g);
    if (v)
        k_fused_fwd<T, O, true><<<blocks_vec(n, v), THREADS, 0, q>>>(
            (O *)y, bits, (const T *)h, (const T *)bias, (const O *)res, n, n_cols, act, drop, thr, f, seed, offset);
    else
        k_fused_fwd<T, O, false><<<blocks_vec(n, v), THREADS, 0, q>>>(
            (O *)y, bits, (const T *)h, (const T *)bias, (const O *)res, n, n_cols, act, drop, thr, f, seed, offset);
    CHECK_LAUNCH();
}

static void check_pair(int dt, int dt_out)
{
    CHECK(dt == dt_out || (dt != MC_DT_F32 && dt_out == MC_DT_F32),
          "fused chain: dtype %d into %d not supported", dt, dt_out);
}

extern "C" void tfm_fused_fwd(mc_wl_gpu *g, void *y, int dt_out, uint8_t *bits, const void *h,
                              const void *bias, const void *res, int64_t rows, int64_t n_cols,
                              int act, float p, uint64_t seed, uint64_t offset, int dt)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    check_pair(dt, dt_out);
    CHECK(act >= TFM_ACT_NONE && act <= TFM_ACT_GELU, "activation %d", act);
    CHECK(p >= 0.0f && p < 1.0f, "dropout p %g outside [0, 1)", (double)p);
    DISPATCH2(dt, dt_out, fused_fwd, g, y, bits, h, bias, res, rows, n_cols, act, p, seed, offset);
}

/* du = dy * kept * f * act'(u); act' from bit 1 for relu, from u for gelu. */
__device__ __forceinline__ float fused_bwd1(float dy, uint8_t b, float u, int act, float f)
{
    if (!(b & BIT_KEEP)) return 0.0f;
    const float d = dy * f;
    return act == TFM_ACT_RELU ? ((b & BIT_POS) ? d : 0.0f) : act == TFM_ACT_GELU ? d * tfm_gelu_grad(u) : d;
}

template <typename T, typename O, bool V>
__global__ void k_fused_bwd(T *du, const O *dy, const uint8_t *bits, const T *h, const T *bias,
                            int64_t n, int64_t n_cols, int act, float f)
{
    const bool need_u = act == TFM_ACT_GELU;
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        const pack<O> dv = ldp(dy, i);
        const uint2 m2 = reinterpret_cast<const uint2 *>(bits)[i];
        uint8_t mk[VEC];
        memcpy(mk, &m2, sizeof mk);
        pack<T> hv, bv;
        if (need_u) {
            hv = ldp(h, i);
            if (bias) bv = ldp(bias, ((i * VEC) % n_cols) / VEC);
        }
        pack<T> o;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float u = need_u ? ld<T>(hv.v[j]) + (bias ? ld<T>(bv.v[j]) : 0.0f) : 0.0f;
            o.v[j] = st<T>(fused_bwd1(ld<O>(dv.v[j]), mk[j], u, act, f));
        }
        stp(du, i, o);
    }
    TAIL(i, nv, n) {
        const float u = need_u ? ld<T>(h[i]) + (bias ? ld<T>(bias[i % n_cols]) : 0.0f) : 0.0f;
        du[i] = st<T>(fused_bwd1(ld<O>(dy[i]), bits[i], u, act, f));
    }
}

template <typename T, typename O>
static void fused_bwd(mc_wl_gpu *g, void *du, const void *dy, const uint8_t *bits, const void *h,
                      const void *bias, int64_t rows, int64_t n_cols, int act, float p)
{
    const int64_t n = rows * n_cols;
    const bool v = n_cols % VEC == 0 && aligned(du) && aligned(dy) && aligned(bits) &&
                   (!h || aligned(h)) && (!bias || aligned(bias));
    const float f = p > 0.0f ? (float)(1.0 / (1.0 - (double)p)) : 1.0f;
    cudaStream_t q = mc_gpu_stream(g);
    if (v)
        k_fused_bwd<T, O, true><<<blocks_vec(n, v), THREADS, 0, q>>>(
            (T *)du, (const O *)dy, bits, (const T *)h, (const T *)bias, n, n_cols, act, f);
    else
        k_fused_bwd<T, O, false><<<blocks_vec(n, v), THREADS, 0, q>>>(
            (T *)du, (const O *)dy, bits, (const T *)h, (const T *)bias, n, n_cols, act, f);
    CHECK_LAUNCH();
}

extern "C" void tfm_fused_bwd(mc_wl_gpu *g, void *du, const void *dy, int dt_out,
                              const uint8_t *bits, const void *h, const void *bias, int64_t rows,
                              int64_t n_cols, int act, float p, int dt)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    check_pair(dt, dt_out);
    CHECK(act >= TFM_ACT_NONE && act <= TFM_ACT_GELU, "activation %d", act);
    CHECK(act != TFM_ACT_GELU || h != NULL, "fused gelu backward needs h");
    CHECK(p >= 0.0f && p < 1.0f, "dropout p %g outside [0, 1)", (double)p);
    DISPATCH2(dt, dt_out, fused_bwd, g, du, dy, bits, h, bias, rows, n_cols, act, p);
}
