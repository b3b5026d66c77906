/* tfm_layernorm.cu: LayerNorm forward and backward (tfm_kernels.h). One
 * warp per row (d_model 256 to 1024+: 8 to 32 elements a lane), fp32
 * arithmetic, two passes for the variance (exact). Rows of a multiple of
 * 256 elements up to 1024 (d_model 256, 512, 768, 1024), 16-byte aligned:
 * the row is read once, in packs of VEC elements (16-byte loads), and
 * kept in registers; other rows: element by element, the row in L1.
 * dgamma / dbeta: column sums over the rows, split over blocks into the
 * caller's partial buffers where given (as PyTorch's dgamma_blocks), else
 * into dX's buffer before the dx kernel writes it, then one final pass. */
#include "tfm_kernels.cuh"
#include "workload/core/wl_profile.h"

#define LN_WARPS 4 /* rows per block */

__device__ __forceinline__ float warp_sum(float s)
{
#pragma unroll
    for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    return s;
}

template <typename T>
__global__ void k_ln_fwd(T *y, float *mean, float *rstd, const T *x, const T *gamma, const T *beta,
                         int64_t rows, int64_t n, float eps)
{
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * LN_WARPS + (threadIdx.x >> 5);
    if (r >= rows) return;
    const T *xr = x + r * n;
    float s = 0.0f;
    for (int64_t j = lane; j < n; j += 32) s += ld<T>(xr[j]);
    const float mu = warp_sum(s) / (float)n;
    float v = 0.0f;
    for (int64_t j = lane; j < n; j += 32) {
        const float d = ld<T>(xr[j]) - mu;
        v += d * d;
    }
    const float rs = rsqrtf(warp_sum(v) / (float)n + eps);
    if (lane == 0) {
        mean[r] = mu;
        rstd[r] = rs;
    }
    for (int64_t j = lane; j < n; j += 32)
        y[r * n + j] = st<T>((ld<T>(xr[j]) - mu) * rs * ld<T>(gamma[j]) + ld<T>(beta[j]));
}

#define LN_PMAX 4 /* packs of VEC a lane holds in registers: rows up to 32 x 8 x 4 = 1024 */

/* Whether a row of n takes the register kernels (whole packs on every lane). */
static bool ln_packed(int64_t n, const void *const *p, int np)
{
    if (n % (32 * VEC) != 0 || n > 32 * VEC * LN_PMAX) return false;
    for (int i = 0; i < np; i++)
        if (p[i] && !aligned(p[i])) return false;
    return true;
}

/* Packs k < np of lane's share of row r (pack index lane + 32 k) as floats. */
template <typename T>
__device__ __forceinline__ void ln_load(float v[LN_PMAX][VEC], const T *row, int lane, int np)
{
#pragma unroll
    for (int k = 0; k < LN_PMAX; k++)
        if (k < np) {
            const pack<T> p = ldp(row, lane + 32 * k);
#pragma unroll
            for (int j = 0; j < VEC; j++) v[k][j] = ld<T>(p.v[j]);
        }
}

template <typename T>
__global__ void k_ln_fwd_packed(T *y, float *mean, float *rstd, const T *x, const T *gamma, const T *beta,
                                int64_t rows, int64_t n, float eps)
{
    const int lane = threadIdx.x & 31, np = (int)(n / (32 * VEC));
    const int64_t r = (int64_t)blockIdx.x * LN_WARPS + (threadIdx.x >> 5);
    if (r >= rows) return;
    float v[LN_PMAX][VEC];
    ln_load(v, x + r * n, lane, np);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < LN_PMAX; k++)
        if (k < np)
#pragma unroll
            for (int j = 0; j < VEC; j++) s += v[k][j];
    const float mu = warp_sum(s) / (float)n;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < LN_PMAX; k++)
        if (k < np)
#pragma unroll
            for (int j = 0; j < VEC; j++) q += (v[k][j] - mu) * (v[k][j] - mu);
    const float rs = rsqrtf(warp_sum(q) / (float)n + eps);
    if (lane == 0) {
        mean[r] = mu;
        rstd[r] = rs;
    }
#pragma unroll
    for (int k = 0; k < LN_PMAX; k++)
        if (k < np) {
            const pack<T> gp = ldp(gamma, lane + 32 * k), bp = ldp(beta, lane + 32 * k);
            pack<T> o;
#pragma unroll
            for (int j = 0; j < VEC; j++) o.v[j] = st<T>((v[k][j] - mu) * rs * ld<T>(gp.v[j]) + ld<T>(bp.v[j]));
            stp(y + r * n, lane + 32 * k, o);
        }
}

template <typename T>
static void ln_fwd(mc_wl_gpu *g, void *y, float *mean, float *rstd, const void *x, const void *gamma,
                   const void *beta, int64_t rows, int64_t n, float eps)
{
    const unsigned blocks = (unsigned)((rows + LN_WARPS - 1) / LN_WARPS);
    const void *ptrs[] = {y, x, gamma, beta};
    if (ln_packed(n, ptrs, 4))
        k_ln_fwd_packed<T><<<blocks, 32 * LN_WARPS, 0, mc_gpu_stream(g)>>>(
            (T *)y, mean, rstd, (const T *)x, (const T *)gamma, (const T *)beta, rows, n, eps);
    else
        k_ln_fwd<T><<<blocks, 32 * LN_WARPS, 0, mc_gpu_stream(g)>>>(
            (T *)y, mean, rstd, (const T *)x, (const T *)gamma, (const T *)beta, rows, n, eps);
    CHECK_LAUNCH();
}

extern "C" void tfm_ln_fwd(mc_wl_gpu *g, void *y, float *mean, float *rstd, const void *x,
                           const void *gamma, const void *beta, int64_t rows, int64_t n, float eps,
                           int dt)
{
    MC_PROF(g, MC_PROF_LAYERNORM);
    CHECK(rows > 0 && n > 0 && rows < (int64_t)LN_WARPS * 0x7fffffff, "LayerNorm %lld x %lld",
          (long long)rows, (long long)n);
    DISPATCH(dt, ln_fwd, g, y, mean, rstd, x, gamma, beta, rows, n, eps);
}

/* ------------------------------------------------------------ backward: dx */

template <typename T>
__global__ void k_ln_bwd_dx(T *dx, const T *dy, const T *x, const T *gamma, const float *mean,
                            const float *rstd, int64_t rows, int64_t n)
{
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * LN_WARPS + (threadIdx.x >> 5);
    if (r >= rows) return;
    const T *xr = x + r * n, *dyr = dy + r * n;
    const float mu = mean[r], rs = rstd[r];
    float a = 0.0f, b = 0.0f;
    for (int64_t j = lane; j < n; j += 32) {
        const float dg = ld<T>(dyr[j]) * ld<T>(gamma[j]);
        a += dg;
        b += dg * (ld<T>(xr[j]) - mu) * rs;
    }
    a = warp_sum(a) / (float)n;
    b = warp_sum(b) / (float)n;
    for (int64_t j = lane; j < n; j += 32) {
        const float xh = (ld<T>(xr[j]) - mu) * rs;
        dx[r * n + j] = st<T>(rs * (ld<T>(dyr[j]) * ld<T>(gamma[j]) - a - xh * b));
    }
}

template <typename T>
__global__ void k_ln_bwd_dx_packed(T *dx, const T *dy, const T *x, const T *gamma, const float *mean,
                                   const float *rstd, int64_t rows, int64_t n)
{
    const int lane = threadIdx.x & 31, np = (int)(n / (32 * VEC));
    const int64_t r = (int64_t)blockIdx.x * LN_WARPS + (threadIdx.x >> 5);
    if (r >= rows) return;
    const float mu = mean[r], rs = rstd[r];
    float dg[LN_PMAX][VEC], xh[LN_PMAX][VEC]; /* dy gamma, and x normalized */
    ln_load(dg, dy + r * n, lane, np);
    ln_load(xh, x + r * n, lane, np);
    float a = 0.0f, b = 0.0f;
#pragma unroll
    for (int k = 0; k < LN_PMAX; k++)
        if (k < np) {
            const pack<T> gp = ldp(gamma, lane + 32 * k);
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                dg[k][j] *= ld<T>(gp.v[j]);
                xh[k][j] = (xh[k][j] - mu) * rs;
                a += dg[k][j];
                b += dg[k][j] * xh[k][j];
            }
        }
    a = warp_sum(a) / (float)n;
    b = warp_sum(b) / (float)n;
#pragma unroll
    for (int k = 0; k < LN_PMAX; k++)
        if (k < np) {
            pack<T> o;
#pragma unroll
            for (int j = 0; j < VEC; j++) o.v[j] = st<T>(rs * (dg[k][j] - a - xh[k][j] * b));
            stp(dx + r * n, lane + 32 * k, o);
        }
}

/* ------------------------------------------------------------ backward: dgamma, dbeta */

#define GB_X 32
#define GB_Y 32     /* row threads of a block: 1024 threads */
#define GB_UNROLL 4 /* rows a thread loads before it adds: loads in flight */
#define LN_GB_ROWS 256  /* rows a block sums where the sums go through dX's buffer */
#define LN_GB_SPLITS 64 /* at most so many blocks of rows (d_model 1024: 32 x 64 blocks) */

/* Block (x, y): columns 32 x, rows [y rows_per, (y + 1) rows_per). With
 * partial buffers: part[y][c]; without (gridDim.y == 1): the outputs.
 * Without partial buffers there are only n / 32 blocks (32 for d_model
 * 1024), each walking every row: the rows are spread over 32 warps, each
 * keeping GB_UNROLL rows' loads in flight, so that the few SMs that work
 * still pull memory at a good rate. Deterministic: no atomics. */
template <typename T>
__global__ void __launch_bounds__(GB_X * GB_Y)
k_ln_gb(T *dgamma, T *dbeta, float *part_g, float *part_b, const T *dy, const T *x,
        const float *mean, const float *rstd, int64_t rows, int64_t n, int64_t rows_per)
{
    __shared__ float sg[GB_Y][GB_X + 1], sb[GB_Y][GB_X + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t c = (int64_t)blockIdx.x * GB_X + tx;
    const int64_t r0 = (int64_t)blockIdx.y * rows_per, r1 = r0 + rows_per < rows ? r0 + rows_per : rows;
    float ag = 0.0f, ab = 0.0f;
    if (c < n) {
        int64_t r = r0 + ty;
        for (; r + (GB_UNROLL - 1) * GB_Y < r1; r += GB_UNROLL * GB_Y) {
            float d[GB_UNROLL], xv[GB_UNROLL], mu[GB_UNROLL], rs[GB_UNROLL];
#pragma unroll
            for (int u = 0; u < GB_UNROLL; u++) {
                const int64_t ru = r + u * GB_Y;
                d[u] = ld<T>(dy[ru * n + c]);
                xv[u] = ld<T>(x[ru * n + c]);
                mu[u] = mean[ru];
                rs[u] = rstd[ru];
            }
#pragma unroll
            for (int u = 0; u < GB_UNROLL; u++) {
                ag += d[u] * (xv[u] - mu[u]) * rs[u];
                ab += d[u];
            }
        }
        for (; r < r1; r += GB_Y) {
            const float d = ld<T>(dy[r * n + c]);
            ag += d * (ld<T>(x[r * n + c]) - mean[r]) * rstd[r];
            ab += d;
        }
    }
    sg[ty][tx] = ag;
    sb[ty][tx] = ab;
    __syncthreads();
    if (ty == 0 && c < n) {
        float g = 0.0f, b = 0.0f;
        for (int k = 0; k < GB_Y; k++) {
            g += sg[k][tx];
            b += sb[k][tx];
        }
        if (part_g) {
            part_g[blockIdx.y * n + c] = g;
            part_b[blockIdx.y * n + c] = b;
        } else {
            if (dgamma) dgamma[c] = st<T>(g);
            if (dbeta) dbeta[c] = st<T>(b);
        }
    }
}

template <typename T>
__global__ void k_ln_gb_final(T *dgamma, T *dbeta, const float *part_g, const float *part_b,
                              int64_t splits, int64_t n)
{
    __shared__ float sg[GB_Y][GB_X + 1], sb[GB_Y][GB_X + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t c = (int64_t)blockIdx.x * GB_X + tx;
    float g = 0.0f, b = 0.0f;
    if (c < n)
        for (int64_t k = ty; k < splits; k += GB_Y) {
            g += part_g[k * n + c];
            b += part_b[k * n + c];
        }
    sg[ty][tx] = g;
    sb[ty][tx] = b;
    __syncthreads();
    if (ty == 0 && c < n) {
        g = 0.0f;
        b = 0.0f;
        for (int k = 0; k < GB_Y; k++) {
            g += sg[k][tx];
            b += sb[k][tx];
        }
        if (dgamma) dgamma[c] = st<T>(g);
        if (dbeta) dbeta[c] = st<T>(b);
    }
}

template <typename T>
static void ln_bwd(mc_wl_gpu *g, void *dx, void *dgamma, void *dbeta, const void *dy, const void *x,
                   const void *gamma, const float *mean, const float *rstd, int64_t rows, int64_t n,
                   float *part_g, float *part_b, int64_t part_rows)
{
    cudaStream_t q = mc_gpu_stream(g);
    if (dgamma || dbeta) {
        /* Partial column sums per block of rows, then a final pass in a fixed
         * order: into the caller's buffers where given; else, where dX is
         * made, into its buffer, free until the dx kernel below writes it
         * (blocks of LN_GB_ROWS rows: deterministic, no memory beyond
         * PyTorch's); else one block of columns walks every row (n / 32
         * blocks: 32 of an H100's 132 SMs at d_model 1024). */
        int64_t splits = 1;
        if (part_g && part_b && part_rows > 0) {
            splits = part_rows > 65535 ? 65535 : part_rows;
        } else if (dx) {
            splits = (rows + LN_GB_ROWS - 1) / LN_GB_ROWS;
            if (splits > LN_GB_SPLITS) splits = LN_GB_SPLITS;
            if (2 * splits * n * (int64_t)sizeof(float) > rows * n * (int64_t)sizeof(T)) splits = 1;
            part_g = (float *)dx;
            part_b = part_g + splits * n;
        }
        const int64_t rows_per = (rows + splits - 1) / splits;
        splits = (rows + rows_per - 1) / rows_per; /* no empty split */
        const bool use_part = splits > 1;
        const dim3 block(GB_X, GB_Y), grid((unsigned)((n + GB_X - 1) / GB_X), (unsigned)splits);
        k_ln_gb<T><<<grid, block, 0, q>>>((T *)dgamma, (T *)dbeta, use_part ? part_g : NULL,
                                          use_part ? part_b : NULL, (const T *)dy, (const T *)x, mean,
                                          rstd, rows, n, rows_per);
        CHECK_LAUNCH();
        if (use_part) {
            k_ln_gb_final<T><<<grid.x, block, 0, q>>>((T *)dgamma, (T *)dbeta, part_g, part_b, splits, n);
            CHECK_LAUNCH();
        }
    }
    if (dx) {
        const unsigned blocks = (unsigned)((rows + LN_WARPS - 1) / LN_WARPS);
        const void *ptrs[] = {dx, dy, x, gamma};
        if (ln_packed(n, ptrs, 4))
            k_ln_bwd_dx_packed<T><<<blocks, 32 * LN_WARPS, 0, q>>>((T *)dx, (const T *)dy, (const T *)x,
                                                                   (const T *)gamma, mean, rstd, rows, n);
        else
            k_ln_bwd_dx<T><<<blocks, 32 * LN_WARPS, 0, q>>>((T *)dx, (const T *)dy, (const T *)x,
                                                            (const T *)gamma, mean, rstd, rows, n);
        CHECK_LAUNCH();
    }
}

extern "C" void tfm_ln_bwd(mc_wl_gpu *g, void *dx, void *dgamma, void *dbeta, const void *dy,
                           const void *x, const void *gamma, const float *mean, const float *rstd,
                           int64_t rows, int64_t n, float *part_g, float *part_b, int64_t part_rows,
                           int dt)
{
    MC_PROF(g, MC_PROF_LAYERNORM);
    CHECK(rows > 0 && n > 0 && rows < (int64_t)LN_WARPS * 0x7fffffff, "LayerNorm %lld x %lld",
          (long long)rows, (long long)n);
    DISPATCH(dt, ln_bwd, g, dx, dgamma, dbeta, dy, x, gamma, mean, rstd, rows, n, part_g, part_b,
             part_rows);
}
