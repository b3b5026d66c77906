/* wl_grads.cu: the workload's reduction over gradients (wl_gpu.h): the
 * bias gradient's column sum, fp32 accumulation. The optimizers' kernels
 * are optimizer_kernels.cu's. */
#include <math.h>

#include "check.h"
#include "check_cuda.h"
#include "wl_kernels.cuh"
#include "wl_profile.h"

/* ------------------------------------------------------------ bias gradient */

/* A block of 32 x 8 threads sums a tile of 32 x V columns over the rows
 * [r0, r0 + rows): thread (x, y) adds V adjacent columns (one 16-byte load
 * for V > 1) of every 8th row, then shared memory adds the 8 row lanes. With
 * a split of the rows over gridDim.y blocks (as Reduce.cuh's global reduce,
 * into the buffer PyTorch allocates for it) part[y][c] gets the sums and
 * k_colsum_final adds them; without, gb. fp32 accumulation, fixed order.
 * (One block per 32 columns walking all the rows, as before, kept 32 of 132
 * SMs busy at [32768, 1024], each with 2 KiB in flight: an estimated 0.1 to
 * 0.2 ms per layer, against 64 MiB / 3 TB/s = 0.02 ms.) */
#define CS_X 32
#define CS_Y 8
#define CS_BLOCKS_PER_SM 4

template <typename T, int V>
__global__ void k_colsum(T *gb, float *part, const T *gh, int64_t m, int64_t n, int64_t rows)
{
    __shared__ float sm[CS_Y][CS_X * V + 1];
    const int x = threadIdx.x, y = threadIdx.y;
    const int64_t c0 = (int64_t)blockIdx.x * CS_X * V, c = c0 + (int64_t)x * V;
    const int64_t r0 = (int64_t)blockIdx.y * rows, r1 = r0 + rows < m ? r0 + rows : m;
    float s[V];
#pragma unroll
    for (int j = 0; j < V; j++) s[j] = 0.0f;
    if (c < n) /* V > 1 only where V divides n: the whole pack is in the row */
#pragma unroll 4
        for (int64_t r = r0 + y; r < r1; r += CS_Y) {
            const T *p = gh + r * n + c;
            if constexpr (V > 1) {
                const uint4 u = *reinterpret_cast<const uint4 *>(p);
                T e[V];
                memcpy(e, &u, sizeof e);
#pragma unroll
                for (int j = 0; j < V; j++) s[j] += ld<T>(e[j]);
            } else {
                s[0] += ld<T>(*p);
            }
        }
#pragma unroll
    for (int j = 0; j < V; j++) sm[y][x * V + j] = s[j];
    __syncthreads();
    for (int t = y * CS_X + x; t < CS_X * V; t += CS_X * CS_Y) {
        const int64_t col = c0 + t;
        if (col >= n) break;
        float a = 0.0f;
        for (int k = 0; k < CS_Y; k++) a += sm[k][t];
        if (part) part[blockIdx.y * n + col] = a;
        else gb[col] = st<T>(a);
    }
}

/* gb[c] = sum over the splits k of part[k][c]: 32 columns per block. */
template <typename T> __global__ void k_colsum_final(T *gb, const float *part, int64_t splits, int64_t n)
{
    __shared__ float sm[CS_Y][CS_X + 1];
    const int x = threadIdx.x, y = threadIdx.y;
    const int64_t c = (int64_t)blockIdx.x * CS_X + x;
    float s = 0.0f;
    if (c < n)
        for (int64_t k = y; k < splits; k += CS_Y) s += part[k * n + c];
    sm[y][x] = s;
    __syncthreads();
    if (y == 0 && c < n) {
        float a = 0.0f;
        for (int k = 0; k < CS_Y; k++) a += sm[k][x];
        gb[c] = st<T>(a);
    }
}

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int sm_count(void)
{
    static int sms = 0; /* of the first device asked: a process's GPUs are of one kind */
    if (!sms) {
        int dev = 0;
        CHECK_CUDA(cudaGetDevice(&dev));
        CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    }
    return sms;
}

template <typename T>
static void colsum(mc_wl_gpu *g, void *gb, const void *gh, int64_t m, int64_t n, void *scratch,
                   uint64_t scratch_bytes)
{
    constexpr int V = (int)(16 / sizeof(T));
    cudaStream_t q = mc_gpu_stream(g);
    /* Rows split over blocks only with scratch for the partial sums; 16-byte
     * loads only with a split (without, narrow tiles keep more blocks busy)
     * and where the packs tile the rows. */
    int64_t splits = 1;
    const bool split = scratch != NULL && aligned(scratch) && scratch_bytes >= 8 * (uint64_t)n;
    const bool vec = split && n % V == 0 && aligned(gh);
    const int64_t tiles = div_up(n, CS_X * (vec ? V : 1));
    if (split) {
        splits = div_up((int64_t)sm_count() * CS_BLOCKS_PER_SM, tiles);
        const int64_t most_rows = div_up(m, 8 * CS_Y), most_ws = (int64_t)(scratch_bytes / (4 * (uint64_t)n));
        if (splits > most_rows) splits = most_rows; /* at least 8 rows a thread */
        if (splits > most_ws) splits = most_ws;
        if (splits > 65535) splits = 65535;        /* gridDim.y */
        if (splits < 1) splits = 1;
    }
    const int64_t rows = div_up(m, splits);
    splits = div_up(m, rows); /* no empty split */
    float *part = splits > 1 ? (float *)scratch : NULL;
    const dim3 block(CS_X, CS_Y), grid((unsigned)tiles, (unsigned)splits);
    if (vec) k_colsum<T, V><<<grid, block, 0, q>>>((T *)gb, part, (const T *)gh, m, n, rows);
    else k_colsum<T, 1><<<grid, block, 0, q>>>((T *)gb, part, (const T *)gh, m, n, rows);
    CHECK_LAUNCH();
    if (part) {
        k_colsum_final<T><<<(unsigned)div_up(n, CS_X), block, 0, q>>>((T *)gb, part, splits, n);
        CHECK_LAUNCH();
    }
}

extern "C" void mc_gpu_bias_grad(mc_wl_gpu *g, void *gb, const void *gh, int64_t m, int64_t n, int dt,
                                 void *scratch, uint64_t scratch_bytes)
{
    MC_PROF(g, MC_PROF_ELEMENTWISE);
    DISPATCH(dt, colsum, g, gb, gh, m, n, scratch, scratch_bytes);
}
