/* tfm_elementwise.cu: the Transformer's eager elementwise kernels
 * (tfm_kernels.h), one op per kernel as PyTorch runs them: relu / gelu and
 * their backwards, native_dropout and its backward, the residual add.
 * Grid-stride loops of 256 threads, VEC elements (16-byte loads for
 * fp16/bf16) per thread per iteration where every pointer is 16-byte
 * aligned, single elements otherwise and for the tail. fp32 arithmetic. */
#include "tfm_kernels.cuh"
#include "workload/core/wl_profile.h"

/* ------------------------------------------------------------ activations */

template <typename T, bool V> __global__ void k_act(T *y, const T *x, int64_t n, int act)
{
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        pack<T> a = ldp(x, i);
#pragma unroll
        for (int j = 0; j < VEC; j++) a.v[j] = st<T>(tfm_act(ld<T>(a.v[j]), act));
        stp(y, i, a);
    }
    TAIL(i, nv, n) y[i] = st<T>(tfm_act(ld<T>(x[i]), act));
}

template <typename T> static void act_fwd(mc_wl_gpu *g, void *y, const void *x, int64_t n, int act)
{
    const bool v = aligned(y) && aligned(x);
    cudaStream_t q = mc_gpu_stream(g);
    if (v) k_act<T, true><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)y, (const T *)x, n, act);
    else k_act<T, false><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)y, (const T *)x, n, act);
    CHECK_LAUNCH();
}

extern "C" void tfm_act_fwd(mc_wl_gpu *g, void *y, const void *x, int64_t n, int act, int dt)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    CHECK(act == TFM_ACT_RELU || act == TFM_ACT_GELU, "activation %d", act);
    DISPATCH(dt, act_fwd, g, y, x, n, act);
}

/* relu: saved = output (threshold_backward); gelu: saved = input. */
__device__ __forceinline__ float act_bwd1(float dy, float s, int act)
{
    return act == TFM_ACT_RELU ? (s > 0.0f ? dy : 0.0f) : dy * tfm_gelu_grad(s);
}

template <typename T, bool V>
__global__ void k_act_bwd(T *dx, const T *dy, const T *s, int64_t n, int act)
{
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        pack<T> a = ldp(dy, i), b = ldp(s, i);
#pragma unroll
        for (int j = 0; j < VEC; j++) a.v[j] = st<T>(act_bwd1(ld<T>(a.v[j]), ld<T>(b.v[j]), act));
        stp(dx, i, a);
    }
    TAIL(i, nv, n) dx[i] = st<T>(act_bwd1(ld<T>(dy[i]), ld<T>(s[i]), act));
}

template <typename T>
static void act_bwd(mc_wl_gpu *g, void *dx, const void *dy, const void *s, int64_t n, int act)
{
    const bool v = aligned(dx) && aligned(dy) && aligned(s);
    cudaStream_t q = mc_gpu_stream(g);
    if (v) k_act_bwd<T, true><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)dx, (const T *)dy, (const T *)s, n, act);
    else k_act_bwd<T, false><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)dx, (const T *)dy, (const T *)s, n, act);
    CHECK_LAUNCH();
}

extern "C" void tfm_act_bwd(mc_wl_gpu *g, void *dx, const void *dy, const void *saved, int64_t n,
                            int act, int dt)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    CHECK(act == TFM_ACT_RELU || act == TFM_ACT_GELU, "activation %d", act);
    DISPATCH(dt, act_bwd, g, dx, dy, saved, n, act);
}

/* ------------------------------------------------------------ dropout */

/* A pack of VEC = 8 elements starting at 8 i is philox blocks 2 i, 2 i + 1. */
template <typename T, bool V>
__global__ void k_dropout(T *y, uint8_t *mask, const T *x, int64_t n, uint32_t thr, float f,
                          uint64_t seed, uint64_t offset)
{
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        pack<T> a = ldp(x, i);
        const tfm_rng4 r0 = tfm_philox(seed, offset, 2 * (uint64_t)i),
                       r1 = tfm_philox(seed, offset, 2 * (uint64_t)i + 1);
        uint8_t mk[VEC];
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const uint32_t w = j < 4 ? r0.w[j] : r1.w[j - 4];
            mk[j] = tfm_rng_word_keeps(w, thr);
            a.v[j] = st<T>(mk[j] ? ld<T>(a.v[j]) * f : 0.0f);
        }
        stp(y, i, a);
        uint2 m2;
        memcpy(&m2, mk, sizeof m2);
        reinterpret_cast<uint2 *>(mask)[i] = m2; /* 8 bytes: mask aligned to 16 in the V path */
    }
    TAIL(i, nv, n) {
        const tfm_rng4 r = tfm_philox(seed, offset, (uint64_t)i >> 2);
        const bool keep = tfm_rng_word_keeps(r.w[i & 3], thr);
        mask[i] = keep;
        y[i] = st<T>(keep ? ld<T>(x[i]) * f : 0.0f);
    }
}

template <typename T>
static void dropout_fwd(mc_wl_gpu *g, void *y, uint8_t *mask, const void *x, int64_t n, float p,
                        uint64_t seed, uint64_t offset)
{
    const bool v = aligned(y) && aligned(x) && aligned(mask);
    const uint32_t thr = tfm_rng_threshold(p);
    const float f = (float)(1.0 / (1.0 - (double)p));
    cudaStream_t q = mc_gpu_stream(g);
    if (v) k_dropout<T, true><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)y, mask, (const T *)x, n, thr, f, seed, offset);
    else k_dropout<T, false><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)y, mask, (const T *)x, n, thr, f, seed, offset);
    CHECK_LAUNCH();
}

extern "C" void tfm_dropout_fwd(mc_wl_gpu *g, void *y, uint8_t *mask, const void *x, int64_t n,
                                float p, uint64_t seed, uint64_t offset, int dt)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    CHECK(p > 0.0f && p < 1.0f, "dropout p %g outside (0, 1)", (double)p);
    DISPATCH(dt, dropout_fwd, g, y, mask, x, n, p, seed, offset);
}

template <typename T, bool V>
__global__ void k_dropout_bwd(T *dx, const T *dy, const uint8_t *mask, int64_t n, float f)
{
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        pack<T> a = ldp(dy, i);
        const uint2 m2 = reinterpret_cast<const uint2 *>(mask)[i];
        uint8_t mk[VEC];
        memcpy(mk, &m2, sizeof mk);
#pragma unroll
        for (int j = 0; j < VEC; j++) a.v[j] = st<T>(mk[j] ? ld<T>(a.v[j]) * f : 0.0f);
        stp(dx, i, a);
    }
    TAIL(i, nv, n) dx[i] = st<T>(mask[i] ? ld<T>(dy[i]) * f : 0.0f);
}

template <typename T>
static void dropout_bwd(mc_wl_gpu *g, void *dx, const void *dy, const uint8_t *mask, int64_t n, float p)
{
    const bool v = aligned(dx) && aligned(dy) && aligned(mask);
    const float f = (float)(1.0 / (1.0 - (double)p));
    cudaStream_t q = mc_gpu_stream(g);
    if (v) k_dropout_bwd<T, true><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)dx, (const T *)dy, mask, n, f);
    else k_dropout_bwd<T, false><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)dx, (const T *)dy, mask, n, f);
    CHECK_LAUNCH();
}

extern "C" void tfm_dropout_bwd(mc_wl_gpu *g, void *dx, const void *dy, const uint8_t *mask,
                                int64_t n, float p, int dt)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    CHECK(p > 0.0f && p < 1.0f, "dropout p %g outside (0, 1)", (double)p);
    DISPATCH(dt, dropout_bwd, g, dx, dy, mask, n, p);
}

/* ------------------------------------------------------------ residual add */

template <typename O, typename A, typename B, bool V>
__global__ void k_add3(O *out, const A *a, const B *b, int64_t n)
{
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        const pack<A> x = ldp(a, i);
        const pack<B> y = ldp(b, i);
        pack<O> o;
#pragma unroll
        for (int j = 0; j < VEC; j++) o.v[j] = st<O>(ld<A>(x.v[j]) + ld<B>(y.v[j]));
        stp(out, i, o);
    }
    TAIL(i, nv, n) out[i] = st<O>(ld<A>(a[i]) + ld<B>(b[i]));
}

template <typename O, typename A, typename B>
static void add3(mc_wl_gpu *g, void *out, const void *a, const void *b, int64_t n)
{
    const bool v = aligned(out) && aligned(a) && aligned(b);
    cudaStream_t q = mc_gpu_stream(g);
    if (v) k_add3<O, A, B, true><<<blocks_vec(n, v), THREADS, 0, q>>>((O *)out, (const A *)a, (const B *)b, n);
    else k_add3<O, A, B, false><<<blocks_vec(n, v), THREADS, 0, q>>>((O *)out, (const A *)a, (const B *)b, n);
    CHECK_LAUNCH();
}

template <typename O, typename A>
static void add_b(mc_wl_gpu *g, void *out, const void *a, const void *b, int dt_b, int64_t n)
{
    if (dt_b == MC_DT_F32) add3<O, A, float>(g, out, a, b, n);
    else if (dt_b == MC_DT_F16) add3<O, A, __half>(g, out, a, b, n);
    else add3<O, A, __nv_bfloat16>(g, out, a, b, n);
}

template <typename O>
static void add_a(mc_wl_gpu *g, void *out, const void *a, int dt_a, const void *b, int dt_b, int64_t n)
{
    if (dt_a == MC_DT_F32) add_b<O, float>(g, out, a, b, dt_b, n);
    else if (dt_a == MC_DT_F16) add_b<O, __half>(g, out, a, b, dt_b, n);
    else add_b<O, __nv_bfloat16>(g, out, a, b, dt_b, n);
}

extern "C" void tfm_add(mc_wl_gpu *g, void *out, int dt_out, const void *a, int dt_a, const void *b,
                        int dt_b, int64_t n)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    DISPATCH(dt_out, add_a, g, out, a, dt_a, b, dt_b, n);
}

/* ------------------------------------------------------------ bias add */

template <typename T> __global__ void k_bias_add(T *h, const T *b, int64_t rows, int64_t n)
{
    GRID_STRIDE(i, rows * n) h[i] = st<T>(ld<T>(h[i]) + ld<T>(b[i % n]));
}

template <typename T> static void bias_add(mc_wl_gpu *g, void *h, const void *b, int64_t rows, int64_t n)
{
    k_bias_add<T><<<blocks_vec(rows * n, false), THREADS, 0, mc_gpu_stream(g)>>>((T *)h, (const T *)b, rows, n);
    CHECK_LAUNCH();
}

extern "C" void tfm_bias_add(mc_wl_gpu *g, void *h, const void *b, int64_t rows, int64_t n, int dt)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    DISPATCH(dt, bias_add, g, h, b, rows, n);
}
