/* wl_kernels.cu: the workloads' elementwise kernels (wl_gpu.h): random
 * data (Philox4x32-10 + Box-Muller), casts, ReLU and its backward, MSE and
 * its backward, scalar ops; the bias gradient is in wl_grads.cu, the
 * foreach updates in optimizer_kernels.cu. Grid-stride loops of 256 threads; fp16/bf16 compute in fp32.
 * The passes over [batch, features] activations move VEC elements per thread
 * per iteration (16-byte loads for fp16/bf16): with one 2-byte load in
 * flight per thread an SM has 4 KiB in flight, a fraction of what HBM3 needs
 * (about 3 TB/s x 0.6 us / 132 SMs = 14 KiB). */
#include <math.h>

#include "check.h"
#include "check_cuda.h"
#include "wl_kernels.cuh"
#include "wl_profile.h"

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
__global__ void k_random(float *p, int64_t n, uint64_t seed, uint64_t sid, int normal, float bound,
                         bool vec)
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
        if (vec && 4 * q + 3 < n) /* one 16-byte store, not four strided ones */
            reinterpret_cast<float4 *>(p)[q] = make_float4(v[0], v[1], v[2], v[3]);
        else
            for (int j = 0; j < 4 && 4 * q + j < n; j++) p[4 * q + j] = v[j];
    }
}

static void fill_random(mc_wl_gpu *g, float *p, int64_t n, uint64_t seed, uint64_t sid, int normal, float bound)
{
    k_random<<<blocks_for((n + 3) / 4), THREADS, 0, mc_gpu_stream(g)>>>(p, n, seed, sid, normal, bound,
                                                                       aligned(p));
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_randn(mc_wl_gpu *g, float *p, int64_t n, uint64_t seed, uint64_t sid)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    fill_random(g, p, n, seed, sid, 1, 0.0f);
}

extern "C" void mc_gpu_uniform(mc_wl_gpu *g, float *p, int64_t n, float bound, uint64_t seed, uint64_t sid)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    fill_random(g, p, n, seed, sid, 0, bound);
}

/* ------------------------------------------------------------ elementwise */


template <typename D, typename S, bool V> __global__ void k_cast(D *d, const S *s, int64_t n)
{
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        pack<S> a = ldp(s, i);
        pack<D> o;
#pragma unroll
        for (int j = 0; j < VEC; j++) o.v[j] = st<D>(ld<S>(a.v[j]));
        stp(d, i, o);
    }
    TAIL(i, nv, n) d[i] = st<D>(ld<S>(s[i]));
}

template <typename D, typename S> static void cast_from(mc_wl_gpu *g, void *d, const void *s, int64_t n)
{
    const bool v = aligned(d) && aligned(s);
    if (v) k_cast<D, S, true><<<blocks_vec(n, v), THREADS, 0, mc_gpu_stream(g)>>>((D *)d, (const S *)s, n);
    else k_cast<D, S, false><<<blocks_vec(n, v), THREADS, 0, mc_gpu_stream(g)>>>((D *)d, (const S *)s, n);
    CHECK_LAUNCH();
}

template <typename D> static void cast_to(mc_wl_gpu *g, void *d, const void *s, int dt_src, int64_t n)
{
    if (dt_src == MC_DT_F32) cast_from<D, float>(g, d, s, n);
    else if (dt_src == MC_DT_F16) cast_from<D, __half>(g, d, s, n);
    else cast_from<D, __nv_bfloat16>(g, d, s, n);
}

extern "C" void mc_gpu_cast(mc_wl_gpu *g, void *dst, int dt_dst, const void *src, int dt_src, int64_t n)
{
    MC_PROF(g, MC_PROF_COPY);
    DISPATCH(dt_dst, cast_to, g, dst, src, dt_src, n);
}

__global__ void k_fill(float *p, float v, int64_t n) { GRID_STRIDE(i, n) p[i] = v; }

extern "C" void mc_gpu_fill(mc_wl_gpu *g, float *p, float v, int64_t n)
{
    MC_PROF(g, MC_PROF_COPY);
    k_fill<<<blocks_for(n), THREADS, 0, mc_gpu_stream(g)>>>(p, v, n);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_copy(mc_wl_gpu *g, void *dst, const void *src, uint64_t bytes)
{
    MC_PROF(g, MC_PROF_COPY);
    CHECK_CUDA(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice, mc_gpu_stream(g)));
}

extern "C" void mc_gpu_copy2d(mc_wl_gpu *g, void *dst, uint64_t dpitch, const void *src,
                              uint64_t spitch, uint64_t width, uint64_t rows)
{
    MC_PROF(g, MC_PROF_COPY);
    CHECK_CUDA(cudaMemcpy2DAsync(dst, (size_t)dpitch, src, (size_t)spitch, (size_t)width,
                                 (size_t)rows, cudaMemcpyDeviceToDevice, mc_gpu_stream(g)));
}

extern "C" void mc_gpu_zero(mc_wl_gpu *g, void *p, uint64_t bytes)
{
    MC_PROF(g, MC_PROF_COPY);
    CHECK_CUDA(cudaMemsetAsync(p, 0, (size_t)bytes, mc_gpu_stream(g)));
}

extern "C" void mc_gpu_fill_bytes(mc_wl_gpu *g, void *p, int byte, uint64_t bytes)
{
    MC_PROF(g, MC_PROF_COPY);
    CHECK_CUDA(cudaMemsetAsync(p, byte, (size_t)bytes, mc_gpu_stream(g)));
}

template <typename T, bool V> __global__ void k_relu(T *r, const T *h, int64_t n)
{
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        pack<T> a = ldp(h, i);
#pragma unroll
        for (int j = 0; j < VEC; j++) a.v[j] = st<T>(fmaxf(ld<T>(a.v[j]), 0.0f));
        stp(r, i, a);
    }
    TAIL(i, nv, n) r[i] = st<T>(fmaxf(ld<T>(h[i]), 0.0f));
}

template <typename T> static void relu(mc_wl_gpu *g, void *r, const void *h, int64_t n)
{
    const bool v = aligned(r) && aligned(h);
    if (v) k_relu<T, true><<<blocks_vec(n, v), THREADS, 0, mc_gpu_stream(g)>>>((T *)r, (const T *)h, n);
    else k_relu<T, false><<<blocks_vec(n, v), THREADS, 0, mc_gpu_stream(g)>>>((T *)r, (const T *)h, n);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_relu(mc_wl_gpu *g, void *r, const void *h, int64_t n, int dt)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    DISPATCH(dt, relu, g, r, h, n);
}

/* threshold_backward(grad, result, 0): gradient where the result is > 0. */
template <typename T, bool V> __global__ void k_relu_bwd(T *gh, const T *gr, const T *r, int64_t n)
{
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        pack<T> a = ldp(gr, i), b = ldp(r, i);
#pragma unroll
        for (int j = 0; j < VEC; j++) a.v[j] = ld<T>(b.v[j]) > 0.0f ? a.v[j] : st<T>(0.0f);
        stp(gh, i, a);
    }
    TAIL(i, nv, n) gh[i] = ld<T>(r[i]) > 0.0f ? gr[i] : st<T>(0.0f);
}

template <typename T> static void relu_bwd(mc_wl_gpu *g, void *gh, const void *gr, const void *r, int64_t n)
{
    const bool v = aligned(gh) && aligned(gr) && aligned(r);
    cudaStream_t q = mc_gpu_stream(g);
    if (v) k_relu_bwd<T, true><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)gh, (const T *)gr, (const T *)r, n);
    else k_relu_bwd<T, false><<<blocks_vec(n, v), THREADS, 0, q>>>((T *)gh, (const T *)gr, (const T *)r, n);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_relu_bwd(mc_wl_gpu *g, void *gh, const void *gr, const void *r, int64_t n, int dt)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    DISPATCH(dt, relu_bwd, g, gh, gr, r, n);
}

__global__ void k_add(float *d, const float *s, int64_t n) { GRID_STRIDE(i, n) d[i] += s[i]; }

extern "C" void mc_gpu_add(mc_wl_gpu *g, float *dst, const float *src, int64_t n)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
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
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    k_scalar<<<1, 32, 0, mc_gpu_stream(g)>>>(dst, a, b, c, 0.0f);
    CHECK_LAUNCH();
}

extern "C" void mc_gpu_poison(mc_wl_gpu *g, float *p)
{
    MC_PROF(g, MC_PROF_COPY);
    k_scalar<<<1, 32, 0, mc_gpu_stream(g)>>>(p, p, NULL, 1.0f, 1.0f);
    CHECK_LAUNCH();
}

__global__ void k_inv_scale(float *inv, const float *scale)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) inv[0] = (float)(1.0 / (double)scale[0]);
}

extern "C" void mc_gpu_inv_scale(mc_wl_gpu *g, float *inv, const float *scale)
{
    MC_PROF(g, MC_PROF_OPTIMIZER);
    k_inv_scale<<<1, 32, 0, mc_gpu_stream(g)>>>(inv, scale);
    CHECK_LAUNCH();
}

/* ------------------------------------------------------------ MSE */

/* tmp = (o - y)^2; loss += sum(tmp) * scale / n (loss zeroed first). */
template <bool V> __global__ void k_mse(float *loss, float *tmp, const float *o, const float *y, int64_t n, float f)
{
    __shared__ float part[THREADS / 32];
    float s = 0.0f;
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        pack<float> a = ldp(o, i), b = ldp(y, i);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            float d = a.v[j] - b.v[j];
            a.v[j] = d * d;
            s += d * d;
        }
        stp(tmp, i, a);
    }
    TAIL(i, nv, n) {
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
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    cudaStream_t q = mc_gpu_stream(g);
    CHECK_CUDA(cudaMemsetAsync(loss, 0, sizeof(float), q));
    unsigned b = blocks_for(n);
    if (b > 528) b = 528; /* a few blocks per SM: fewer atomics */
    const float f = (float)((double)scale / (double)n);
    if (aligned(tmp) && aligned(o) && aligned(y)) k_mse<true><<<b, THREADS, 0, q>>>(loss, tmp, o, y, n, f);
    else k_mse<false><<<b, THREADS, 0, q>>>(loss, tmp, o, y, n, f);
    CHECK_LAUNCH();
}

template <bool V>
__global__ void k_mse_bwd(float *go, const float *o, const float *y, const float *gs, int64_t n, float f)
{
    float s = gs[0] * f;
    const int64_t nv = NV(V, n);
    GRID_STRIDE(i, nv) {
        pack<float> a = ldp(o, i), b = ldp(y, i);
#pragma unroll
        for (int j = 0; j < VEC; j++) a.v[j] = (a.v[j] - b.v[j]) * s;
        stp(go, i, a);
    }
    TAIL(i, nv, n) go[i] = (o[i] - y[i]) * s;
}

extern "C" void mc_gpu_mse_bwd(mc_wl_gpu *g, float *go, const float *o, const float *y,
                               const float *gscalar, int64_t n)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    const bool v = aligned(go) && aligned(o) && aligned(y);
    const float f = (float)(2.0 / (double)n);
    cudaStream_t q = mc_gpu_stream(g);
    if (v) k_mse_bwd<true><<<blocks_vec(n, v), THREADS, 0, q>>>(go, o, y, gscalar, n, f);
    else k_mse_bwd<false><<<blocks_vec(n, v), THREADS, 0, q>>>(go, o, y, gscalar, n, f);
    CHECK_LAUNCH();
}
