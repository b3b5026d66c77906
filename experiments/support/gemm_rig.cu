/* gemm_rig.cu: C05's GEMM alone (gemm_rig.h): seeded exact inputs, the
 * layer's forward GEMM repeated in one CUDA graph and timed with events,
 * sampled entries checked against a host double reference. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "check.h"
#include "check_cuda.h"
#include "gemm_rig.h"
#include "seeded_stream.h"
#include "workload/core/wl_types.h"

#define GEMM_TARGET_FLOP 5e10   /* per timed sample: ~1 ms of fp32 GEMM on an H100 */
#define GEMM_MAX_ITERS 1000
#define GEMM_CHECKS 16          /* sampled entries checked against the host */
#define SEED_W 0xC05000000001ull
#define SEED_X 0xC05000000002ull

/* Element i of a seeded stream: k/64 for k in [-64, 64), exact in fp32, fp16
 * and bf16, so fp32 accumulation of up to 4096 products is exact. */
__host__ __device__ static inline float seeded(uint64_t seed, uint64_t i)
{
    return (float)((int)(mc_seeded_bits(seed, i) >> 57) - 64) / 64.0f;
}

static __global__ void fill_kernel(void *p, int prec, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = seeded(seed, i);
        if (prec == MC_WL_FP32) ((float *)p)[i] = v;
        else if (prec == MC_WL_FP16) ((__half *)p)[i] = __float2half(v);
        else ((__nv_bfloat16 *)p)[i] = __float2bfloat16(v);
    }
}

static cudaDataType_t dtype_of(int prec)
{
    return prec == MC_WL_FP32 ? CUDA_R_32F : prec == MC_WL_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

static double read_entry(const void *c, int prec, size_t idx)
{
    if (prec == MC_WL_FP32) {
        float v;
        CHECK_CUDA(cudaMemcpy(&v, (const float *)c + idx, sizeof v, cudaMemcpyDeviceToHost));
        return v;
    }
    if (prec == MC_WL_FP16) {
        __half v;
        CHECK_CUDA(cudaMemcpy(&v, (const __half *)c + idx, sizeof v, cudaMemcpyDeviceToHost));
        return __half2float(v);
    }
    __nv_bfloat16 v;
    CHECK_CUDA(cudaMemcpy(&v, (const __nv_bfloat16 *)c + idx, sizeof v, cudaMemcpyDeviceToHost));
    return __bfloat162float(v);
}

/* C (H x B, column-major) = W^T X: PyTorch's Linear forward, out^T = W x^T. */
static void gemm(mc_gemm_rig *g, int prec, int H, int64_t B)
{
    const float one = 1.0f, zero = 0.0f;
    cudaDataType_t t = dtype_of(prec);
    CHECK_CUBLAS(cublasGemmEx(g->h, CUBLAS_OP_T, CUBLAS_OP_N, H, (int)B, H, &one, g->W, t, H, g->X,
                              t, H, &zero, g->C, t, H, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

mc_stats mc_gemm_rig_rate(mc_run *run, mc_gemm_rig *g, int prec, int H, int64_t B)
{
    const size_t nw = (size_t)H * H, nx = (size_t)H * (size_t)B;
    fill_kernel<<<1024, 256, 0, g->stream>>>(g->W, prec, nw, SEED_W);
    CHECK_LAUNCH();
    fill_kernel<<<1024, 256, 0, g->stream>>>(g->X, prec, nx, SEED_X);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemsetAsync(g->C, 0xFF, nx * (prec == MC_WL_FP32 ? 4 : 2), g->stream)); /* NaN */
    const double flop = 2.0 * H * (double)H * (double)B;
    int iters = (int)ceil(GEMM_TARGET_FLOP / flop);
    iters = iters < 1 ? 1 : iters > GEMM_MAX_ITERS ? GEMM_MAX_ITERS : iters;
    const int reps = run->opt.repeats;
    double *x = (double *)mc_xmalloc((size_t)reps * sizeof *x);
    gemm(g, prec, H, B); /* warm-up: heuristics, kernel load */
    /* The iters GEMMs as one CUDA graph, launched with one call: a GEMM at
     * B=2048, H=1024 takes ~10 us, about what cublasGemmEx takes on the
     * host, so launched one by one the events also timed the host's launch
     * gaps: on one H200, fp16 read 424 TFLOP/s on one lease and 310 on
     * another whose host ran slower. In a graph the GPU runs them back to
     * back, whatever the host's speed. */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < iters; i++) gemm(g, prec, H, B);
    CHECK_CUDA(cudaStreamEndCapture(g->stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(exec, g->stream)); /* warm-up: the graph's upload */
    for (int r = 0; r < reps; r++) {
        mc_event_timer_start(&g->et);
        CHECK_CUDA(cudaGraphLaunch(exec, g->stream));
        mc_event_timer_stop(&g->et);
        x[r] = flop * iters / mc_event_timer_elapsed_s(&g->et);
    }
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    mc_stats s = mc_stats_of(x, (size_t)reps);
    free(x);
    /* Sampled entries against the host (double; exact inputs, so the only error is the
     * output's rounding: 2^-24 fp32, 2^-11 fp16, 2^-8 bf16, relative). */
    const double tol = prec == MC_WL_FP32 ? 1e-6 : prec == MC_WL_FP16 ? 1e-3 : 8e-3;
    uint64_t z = 88172645463325252ull;
    for (int k = 0; k < GEMM_CHECKS; k++) {
        z ^= z << 13; z ^= z >> 7; z ^= z << 17;
        int i = k == 0 ? 0 : (int)(z % (uint64_t)H);
        int64_t j = k == 0 ? B - 1 : (int64_t)((z >> 20) % (uint64_t)B);
        double ref = 0.0;
        for (int kk = 0; kk < H; kk++)
            ref += (double)seeded(SEED_W, (uint64_t)kk + (uint64_t)i * H) *
                   seeded(SEED_X, (uint64_t)kk + (uint64_t)j * H);
        double got = read_entry(g->C, prec, (size_t)i + (size_t)j * H);
        if (!(fabs(got - ref) <= tol * fabs(ref) + 1e-6)) {
            mc_verify_failed(run, "gemm", "%s H=%d B=%lld C(%d,%lld) = %.8g, reference %.8g",
                             mc_wl_precision_name((mc_wl_precision)prec), H, (long long)B, i,
                             (long long)j, got, ref);
            break;
        }
    }
    return s;
}

void mc_gemm_rig_create(mc_gemm_rig *g, int H, int64_t bmax)
{
    const size_t h = (size_t)H, b = (size_t)bmax;
    CHECK_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CHECK_CUBLAS(cublasCreate(&g->h));
    CHECK_CUBLAS(cublasSetStream(g->h, g->stream));
    CHECK_CUBLAS(cublasSetMathMode(g->h, CUBLAS_DEFAULT_MATH)); /* no TF32, as PyTorch */
    mc_event_timer_init(&g->et, g->stream);
    CHECK_CUDA(cudaMalloc(&g->W, 4 * h * h));
    CHECK_CUDA(cudaMalloc(&g->X, 4 * h * b));
    CHECK_CUDA(cudaMalloc(&g->C, 4 * h * b));
}

void mc_gemm_rig_destroy(mc_gemm_rig *g)
{
    CHECK_CUDA(cudaStreamSynchronize(g->stream));
    CHECK_CUDA(cudaFree(g->W));
    CHECK_CUDA(cudaFree(g->X));
    CHECK_CUDA(cudaFree(g->C));
    mc_event_timer_destroy(&g->et);
    CHECK_CUBLAS(cublasDestroy(g->h));
    CHECK_CUDA(cudaStreamDestroy(g->stream));
}
