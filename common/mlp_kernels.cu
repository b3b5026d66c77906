/* mlp_kernels.cu: the workload's elementwise and reduction kernels
 * (mlp_gpu.h): random data (Philox4x32-10 + Box-Muller), casts, ReLU and its
 * backward, MSE and its backward, the bias gradient, scalar ops, and the
 * foreach optimizers and GradScaler unscale over many tensors per launch.
 * Grid-stride loops of 256 threads; fp16/bf16 compute in fp32. */
#include "mlp_gpu.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <math.h>

#include "check.h"
#include "check_cuda.h"

extern "C" cudaStream_t mc_gpu_stream(mc_wl_gpu *g);

#define THREADS 256
#define MAX_BLOCKS 4224 /* 132 SMs x 32 */

static unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

template <typename T> __device__ __forceinline__ float ld(T v);
template <> __device__ __forceinline__ float ld<float>(float v) { return v; }
template <> __device__ __forceinline__ float ld<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T st(float v);
template <> __device__ __forceinline__ float st<float>(float v) { return v; }
template <> __device__ __forceinline__ __half st<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 st<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

#define GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* Calls F<T>(...) for the dtype dt. */
#define DISPATCH(dt, F, ...)                                                 \
    do {                                                                     \
        if ((dt) == MC_DT_F32) F<float>(__VA_ARGS__);                        \
        else if ((dt) == MC_DT_F16) F<__half>(__VA_ARGS__);                  \
        else F<__nv_bfloat16>(__VA_ARGS__);                                  \
    } while (0)

/* ------------------------------------------------------------ random data */

/* Philox4x32-10 (Salmon et al., SC'11), as cuRAND and PyTorch use. */
__device__ static uint4 philox(uint4 c, uint2 k)
{
    for (int r = 0; r < 10; r++) {
        unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k.x += 0x9E3779B9u;
        k.y += 0xBB67AE85u;
    }
    return c;
}

__device__ static float u01(unsigned x) { return ((float)(x >> 8) + 0.5f) * (1.0f / 16777216.0f); }

/* normal: Box-Muller on each pair; uniform: U(-bound, bound). */
__global__ void k_random(float *p, int64_t n, uint64_t seed, uint64_t sid, int normal, float bound)
{
    uint2 key = make_uint2((unsigned)seed, (unsigned)(seed >> 32));
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; 4 * q < n;
         q += (int64_t)gridDim.x * blockDim.x) {
        uint4 r = philox(make_uint4((unsigned)q, (unsigned)(q >> 32), (unsigned)sid,
                                    (unsigned)(sid >> 32)), key);
        float u[4] = {u01(r.x), u01(r.y), u01(r.z), u01(r.w)}, v[4];
        if (normal) {
            for (int j = 0; j < 4; j += 2) {
                float rad = sqrtf(-2.0f * logf(u[j])), th = 6.283185307f * u[j + 1];
                v[j] = rad * cosf(th);
                v[j + 1] = rad * sinf(th);
            }
        } else {
            for (int j = 0; j < 4; j++) v[j] = (2.0f * u[j] - 1.0f) * bound;
        }
        for (int j = 0; j < 4 && 4 * q + j < n; j++) p[4 * q + j] = v[j];
    }
}

static void fill_random(mc_wl_gpu *g, float *p, int64_t n, uint64_t seed, uint64_t sid, int normal, float bound)
{
    k_random<<<blocks_for((n + 3) / 4), THREADS, 0, mc_gpu_stream(g)>>>(p, n, seed, sid, normal, bound);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_randn(mc_wl_gpu *g, float *p, int64_t n, uint64_t seed, uint64_t sid)
{
    fill_random(g, p, n, seed, sid, 1, 0.0f);
}

extern "C" void mc_gpu_uniform(mc_wl_gpu *g, float *p, int64_t n, float bound, uint64_t seed, uint64_t sid)
{
    fill_random(g, p, n, seed, sid, 0, bound);
}

/* ------------------------------------------------------------ elementwise */

template <typename D, typename S> __global__ void k_cast(D *d, const S *s, int64_t n)
{
    GRID_STRIDE(i, n) d[i] = st<D>(ld<S>(s[i]));
}

template <typename D> static void cast_to(mc_wl_gpu *g, void *d, const void *s, int dt_src, int64_t n)
{
    cudaStream_t q = mc_gpu_stream(g);
    if (dt_src == MC_DT_F32) k_cast<<<blocks_for(n), THREADS, 0, q>>>((D *)d, (const float *)s, n);
    else if (dt_src == MC_DT_F16) k_cast<<<blocks_for(n), THREADS, 0, q>>>((D *)d, (const __half *)s, n);
    else k_cast<<<blocks_for(n), THREADS, 0, q>>>((D *)d, (const __nv_bfloat16 *)s, n);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_cast(mc_wl_gpu *g, void *dst, int dt_dst, const void *src, int dt_src, int64_t n)
{
    DISPATCH(dt_dst, cast_to, g, dst, src, dt_src, n);
}

__global__ void k_fill(float *p, float v, int64_t n) { GRID_STRIDE(i, n) p[i] = v; }

extern "C" void mc_gpu_fill(mc_wl_gpu *g, float *p, float v, int64_t n)
{
    k_fill<<<blocks_for(n), THREADS, 0, mc_gpu_stream(g)>>>(p, v, n);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_copy(mc_wl_gpu *g, void *dst, const void *src, uint64_t bytes)
{
    CHECK_CUDA(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice, mc_gpu_stream(g)));
}

template <typename T> __global__ void k_relu(T *r, const T *h, int64_t n)
{
    GRID_STRIDE(i, n) r[i] = st<T>(fmaxf(ld<T>(h[i]), 0.0f));
}

template <typename T> static void relu(mc_wl_gpu *g, void *r, const void *h, int64_t n)
{
    k_relu<<<blocks_for(n), THREADS, 0, mc_gpu_stream(g)>>>((T *)r, (const T *)h, n);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_relu(mc_wl_gpu *g, void *r, const void *h, int64_t n, int dt)
{
    DISPATCH(dt, relu, g, r, h, n);
}

/* threshold_backward(grad, result, 0): gradient where the result is > 0. */
template <typename T> __global__ void k_relu_bwd(T *gh, const T *gr, const T *r, int64_t n)
{
    GRID_STRIDE(i, n) gh[i] = ld<T>(r[i]) > 0.0f ? gr[i] : st<T>(0.0f);
}

template <typename T> static void relu_bwd(mc_wl_gpu *g, void *gh, const void *gr, const void *r, int64_t n)
{
    k_relu_bwd<<<blocks_for(n), THREADS, 0, mc_gpu_stream(g)>>>((T *)gh, (const T *)gr, (const T *)r, n);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_relu_bwd(mc_wl_gpu *g, void *gh, const void *gr, const void *r, int64_t n, int dt)
{
    DISPATCH(dt, relu_bwd, g, gh, gr, r, n);
}

__global__ void k_add(float *d, const float *s, int64_t n) { GRID_STRIDE(i, n) d[i] += s[i]; }

extern "C" void mc_gpu_add(mc_wl_gpu *g, float *dst, const float *src, int64_t n)
{
    k_add<<<blocks_for(n), THREADS, 0, mc_gpu_stream(g)>>>(dst, src, n);
    CHECK_LAUNCH();
}

__global__ void k_scalar(float *d, const float *a, const float *b, float c, float inf_poison)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        if (inf_poison != 0.0f) d[0] = INFINITY;
        else d[0] = a[0] * (b ? b[0] : 1.0f) * c;
    }
}

extern "C" void mc_gpu_scalar(mc_wl_gpu *g, float *dst, const float *a, const float *b, float c)
{
    k_scalar<<<1, 32, 0, mc_gpu_stream(g)>>>(dst, a, b, c, 0.0f);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_poison(mc_wl_gpu *g, float *p)
{
    k_scalar<<<1, 32, 0, mc_gpu_stream(g)>>>(p, p, NULL, 1.0f, 1.0f);
    CHECK_LAUNCH();
}

__global__ void k_inv_scale(float *inv, const float *scale)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) inv[0] = (float)(1.0 / (double)scale[0]);
}

extern "C" void mc_gpu_inv_scale(mc_wl_gpu *g, float *inv, const float *scale)
{
    k_inv_scale<<<1, 32, 0, mc_gpu_stream(g)>>>(inv, scale);
    CHECK_LAUNCH();
}

/* ------------------------------------------------------------ MSE */

/* tmp = (o - y)^2; loss += sum(tmp) * scale / n (loss zeroed first). */
__global__ void k_mse(float *loss, float *tmp, const float *o, const float *y, int64_t n, float f)
{
    __shared__ float part[THREADS / 32];
    float s = 0.0f;
    GRID_STRIDE(i, n) {
        float d = o[i] - y[i];
        tmp[i] = d * d;
        s += d * d;
    }
    for (int off = 16; off; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int w = 0; w < THREADS / 32; w++) t += part[w];
        atomicAdd(loss, t * f);
    }
}

extern "C" void mc_gpu_mse(mc_wl_gpu *g, float *loss, float *tmp, const float *o, const float *y,
                           int64_t n, float scale)
{
    cudaStream_t q = mc_gpu_stream(g);
    CHECK_CUDA(cudaMemsetAsync(loss, 0, sizeof(float), q));
    unsigned b = blocks_for(n);
    if (b > 528) b = 528; /* a few blocks per SM: fewer atomics */
    k_mse<<<b, THREADS, 0, q>>>(loss, tmp, o, y, n, (float)((double)scale / (double)n));
    CHECK_LAUNCH();
}

__global__ void k_mse_bwd(float *go, const float *o, const float *y, const float *gs, int64_t n, float f)
{
    float s = gs[0] * f;
    GRID_STRIDE(i, n) go[i] = (o[i] - y[i]) * s;
}

extern "C" void mc_gpu_mse_bwd(mc_wl_gpu *g, float *go, const float *o, const float *y,
                               const float *gscalar, int64_t n)
{
    k_mse_bwd<<<blocks_for(n), THREADS, 0, mc_gpu_stream(g)>>>(go, o, y, gscalar, n,
                                                              (float)(2.0 / (double)n));
    CHECK_LAUNCH();
}

/* ------------------------------------------------------------ bias gradient */

/* gb[c] = sum over rows r of gh[r, c]: 32 columns per block, 8 row lanes. */
template <typename T> __global__ void k_colsum(T *gb, const T *gh, int64_t m, int64_t n)
{
    __shared__ float part[8][33];
    int64_t c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < n)
        for (int64_t r = threadIdx.y; r < m; r += 8) s += ld<T>(gh[r * n + c]);
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < n) {
        for (int j = 1; j < 8; j++) s += part[j][threadIdx.x];
        gb[c] = st<T>(s);
    }
}

template <typename T> static void colsum(mc_wl_gpu *g, void *gb, const void *gh, int64_t m, int64_t n)
{
    dim3 block(32, 8);
    k_colsum<<<(unsigned)((n + 31) / 32), block, 0, mc_gpu_stream(g)>>>((T *)gb, (const T *)gh, m, n);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_bias_grad(mc_wl_gpu *g, void *gb, const void *gh, int64_t m, int64_t n, int dt)
{
    DISPATCH(dt, colsum, g, gb, gh, m, n);
}

/* ------------------------------------------------------------ foreach updates */

#define MT 24 /* tensors per launch: 5 pointers + a length each, < 4 KiB of parameters */

typedef struct {
    float *p[MT], *g[MT], *m[MT], *v[MT];
    int64_t n[MT];
} mt_args;

enum { OP_SGD, OP_MOMENTUM, OP_MOMENTUM_FIRST, OP_ADAM, OP_UNSCALE };

typedef struct {
    float lr, a, b, eps, bc1, bc2_sqrt;
    const float *inv;
    float *found;
} mt_scalars;

__global__ void k_foreach(mt_args t, mt_scalars s, int op)
{
    const int j = blockIdx.y;
    float *p = t.p[j], *gr = t.g[j], *m = t.m[j], *v = t.v[j];
    const int64_t n = t.n[j];
    float inv = op == OP_UNSCALE ? s.inv[0] : 0.0f;
    GRID_STRIDE(i, n) {
        float gi = gr[i];
        switch (op) {
        case OP_SGD: p[i] -= s.lr * gi; break;
        case OP_MOMENTUM_FIRST: m[i] = gi; p[i] -= s.lr * gi; break;
        case OP_MOMENTUM: { float b = s.a * m[i] + gi; m[i] = b; p[i] -= s.lr * b; break; }
        case OP_ADAM: {
            float mi = m[i] + (1.0f - s.a) * (gi - m[i]);          /* lerp_(grad, 1 - beta1) */
            float vi = s.b * v[i] + (1.0f - s.b) * gi * gi;          /* mul_(beta2).addcmul_ */
            m[i] = mi;
            v[i] = vi;
            p[i] -= (s.lr / s.bc1) * mi / (sqrtf(vi) / s.bc2_sqrt + s.eps);
            break;
        }
        case OP_UNSCALE:
            if (!isfinite(gi)) *s.found = 1.0f;
            gr[i] = inv == 1.0f ? gi : gi * inv;
            break;
        }
    }
}

static void foreach(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, float *const *m,
                    float *const *v, const int64_t *n, mt_scalars s, int op)
{
    for (int base = 0; base < nt; base += MT) {
        mt_args a = {};
        int cnt = nt - base < MT ? nt - base : MT;
        int64_t most = 1;
        for (int j = 0; j < cnt; j++) {
            a.p[j] = p ? p[base + j] : NULL;
            a.g[j] = gr[base + j];
            a.m[j] = m ? m[base + j] : NULL;
            a.v[j] = v ? v[base + j] : NULL;
            a.n[j] = n[base + j];
            if (a.n[j] > most) most = a.n[j];
        }
        unsigned bx = blocks_for(most);
        if (bx > 512) bx = 512;
        k_foreach<<<dim3(bx, (unsigned)cnt), THREADS, 0, mc_gpu_stream(g)>>>(a, s, op);
        CHECK_LAUNCH();
    }
}

extern "C" void mc_gpu_sgd(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, const int64_t *n, float lr)
{
    mt_scalars s = {};
    s.lr = lr;
    foreach(g, nt, p, gr, NULL, NULL, n, s, OP_SGD);
}

extern "C" void mc_gpu_momentum(mc_wl_gpu *g, int nt, float *const *p, float *const *gr,
                                float *const *buf, const int64_t *n, float lr, float momentum, bool first)
{
    mt_scalars s = {};
    s.lr = lr;
    s.a = momentum;
    foreach(g, nt, p, gr, buf, NULL, n, s, first ? OP_MOMENTUM_FIRST : OP_MOMENTUM);
}

extern "C" void mc_gpu_adam(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, float *const *m,
                            float *const *v, const int64_t *n, float lr, float beta1, float beta2,
                            float eps, int step)
{
    mt_scalars s = {};
    s.lr = lr;
    s.a = beta1;
    s.b = beta2;
    s.eps = eps;
    s.bc1 = (float)(1.0 - pow((double)beta1, step));
    s.bc2_sqrt = (float)sqrt(1.0 - pow((double)beta2, step));
    foreach(g, nt, p, gr, m, v, n, s, OP_ADAM);
}

extern "C" void mc_gpu_unscale(mc_wl_gpu *g, int nt, float *const *gr, const int64_t *n,
                               const float *inv_scale, float *found)
{
    mt_scalars s = {};
    s.inv = inv_scale;
    s.found = found;
    foreach(g, nt, NULL, gr, NULL, NULL, n, s, OP_UNSCALE);
}
