/* wl_gpu.cu: the workloads' GEMMs and its stream (wl_gpu.h). The forward's
 * Linear is addmm's cuBLASLt path with a bias epilogue; the backward's two
 * products are cuBLAS GEMMs, as PyTorch runs them (default math: no TF32
 * for fp32, as allow_tf32 is False by default; fp16/bf16 with fp32
 * accumulation). Two cuBLAS handles stand for PyTorch's two threads; their
 * workspaces come from the allocator model (set by the caller). The
 * elementwise kernels are in wl_kernels.cu. */
#include "wl_gpu.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_cuda.h"
#include "wl_profile.h"
#include "pytorch_consts.h"

#define MAX_PLANS 64 /* distinct (handle, shape, dtype) Linear calls cached */

typedef struct {
    int handle, dt;
    int64_t m, k, n;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    size_t ws_needed;
} lt_plan;

struct mc_wl_gpu {
    cudaStream_t stream;
    cublasHandle_t h[2];
    void *lt_ws[2];
    uint64_t lt_ws_bytes[2];
    cudaEvent_t start, stop;
    float *pinned;      /* [0, n_loss): micro-steps' losses; [n_loss]: a scalar read */
    int n_loss;
    lt_plan plans[MAX_PLANS];
    int n_plans;
    mc_wl_prof *prof;   /* --profile: the recorder while on, else NULL */
    double prof_ms;     /* elapsed ms of the steps ended while on */
};

/* Event pairs made before a profiled step: a step of seed 000's Transformer
 * (accumulation 4) launches a few thousand operations. A step that needs
 * more makes them as it goes, host time that build/workload reports. */
#define PROFILE_OPS 16384

extern "C" cudaStream_t mc_gpu_stream(mc_wl_gpu *g) { return g->stream; }
extern "C" mc_wl_prof *mc_gpu_prof(mc_wl_gpu *g) { return g->prof; }

static cudaDataType_t cuda_type(int dt)
{
    return dt == MC_DT_F32 ? CUDA_R_32F : dt == MC_DT_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

extern "C" mc_wl_gpu *mc_gpu_create(int max_micro_steps)
{
    mc_wl_gpu *g = (mc_wl_gpu *)calloc(1, sizeof *g);
    CHECK(g != NULL, "out of host memory");
    CHECK_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    for (int i = 0; i < 2; i++) {
        CHECK_CUBLAS(cublasCreate(&g->h[i]));
        CHECK_CUBLAS(cublasSetStream(g->h[i], g->stream));
        CHECK_CUBLAS(cublasSetMathMode(g->h[i], CUBLAS_DEFAULT_MATH));
    }
    CHECK_CUDA(cudaEventCreate(&g->start));
    CHECK_CUDA(cudaEventCreate(&g->stop));
    g->n_loss = max_micro_steps;
    CHECK_CUDA(cudaMallocHost((void **)&g->pinned, (size_t)(max_micro_steps + 1) * sizeof(float)));
    return g;
}

extern "C" void mc_gpu_destroy(mc_wl_gpu *g)
{
    if (!g) return;
    CHECK_CUDA(cudaStreamSynchronize(g->stream));
    for (int i = 0; i < g->n_plans; i++) {
        lt_plan *p = &g->plans[i];
        cublasLtMatrixLayoutDestroy(p->a);
        cublasLtMatrixLayoutDestroy(p->b);
        cublasLtMatrixLayoutDestroy(p->c);
        cublasLtMatmulDescDestroy(p->op);
    }
    for (int i = 0; i < 2; i++) CHECK_CUBLAS(cublasDestroy(g->h[i]));
    mc_prof_destroy(g->prof);
    CHECK_CUDA(cudaEventDestroy(g->start));
    CHECK_CUDA(cudaEventDestroy(g->stop));
    CHECK_CUDA(cudaFreeHost(g->pinned));
    CHECK_CUDA(cudaStreamDestroy(g->stream));
    free(g);
}

extern "C" void mc_gpu_set_workspace(mc_wl_gpu *g, int handle, void *ws, uint64_t bytes)
{
    CHECK_CUBLAS(cublasSetWorkspace(g->h[handle], ws, (size_t)bytes));
}

extern "C" void mc_gpu_set_lt_workspace(mc_wl_gpu *g, int handle, void *ws, uint64_t bytes)
{
    g->lt_ws[handle] = ws;
    g->lt_ws_bytes[handle] = bytes;
}

extern "C" void mc_gpu_step_begin(mc_wl_gpu *g) { CHECK_CUDA(cudaEventRecord(g->start, g->stream)); }

extern "C" double mc_gpu_step_end(mc_wl_gpu *g)
{
    CHECK_CUDA(cudaEventRecord(g->stop, g->stream));
    CHECK_CUDA(cudaEventSynchronize(g->stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, g->start, g->stop));
    if (g->prof) g->prof_ms += ms;
    return (double)ms * 1e-3;
}

extern "C" void mc_gpu_sync(mc_wl_gpu *g) { CHECK_CUDA(cudaStreamSynchronize(g->stream)); }

extern "C" void mc_gpu_profile_start(mc_wl_gpu *g)
{
    CHECK(g->prof == NULL, "profile: started twice");
    g->prof = mc_prof_create(g->stream, PROFILE_OPS);
    g->prof_ms = 0;
}

extern "C" void mc_gpu_profile_stop(mc_wl_gpu *g, mc_prof_table *t)
{
    CHECK(g->prof != NULL, "profile: stopped without a start");
    mc_prof_table_init(t);
    mc_prof_sum(g->prof, t);
    t->grown = mc_prof_grown(g->prof);
    mc_prof_table_finish(t, g->prof_ms);
    mc_prof_destroy(g->prof);
    g->prof = NULL;
}

/* ------------------------------------------------------------ Linear (cuBLASLt) */

/* Row-major h[m,n] = x[m,k] W[n,k]^T + b is column-major h^T (n x m) =
 * op_T(W stored k x n) . x^T (k x m), the bias added along the n rows. */
static lt_plan *plan_for(mc_wl_gpu *g, int handle, int64_t m, int64_t k, int64_t n, int dt)
{
    for (int i = 0; i < g->n_plans; i++) {
        lt_plan *p = &g->plans[i];
        if (p->handle == handle && p->m == m && p->k == k && p->n == n && p->dt == dt) return p;
    }
    CHECK(g->n_plans < MAX_PLANS, "too many distinct Linear shapes");
    lt_plan *p = &g->plans[g->n_plans++];
    memset(p, 0, sizeof *p);
    p->handle = handle;
    p->m = m;
    p->k = k;
    p->n = n;
    p->dt = dt;
    cudaDataType_t t = cuda_type(dt);
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_BIAS;
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->a, t, (uint64_t)k, (uint64_t)n, k));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->b, t, (uint64_t)k, (uint64_t)m, k));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->c, t, (uint64_t)n, (uint64_t)m, n));
    cublasLtMatmulPreference_t pref;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = (size_t)g->lt_ws_bytes[handle];
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)g->h[handle], p->op, p->a,
                                                p->b, p->c, p->c, pref, 1, &res, &found));
    CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
    CHECK(found > 0, "cuBLASLt has no algorithm for Linear %lldx%lldx%lld", (long long)m,
          (long long)k, (long long)n);
    p->algo = res.algo;
    p->ws_needed = res.workspaceSize;
    return p;
}

static void gemm(mc_wl_gpu *g, int handle, cublasOperation_t ta, cublasOperation_t tb, int64_t M,
                 int64_t N, int64_t K, const void *A, int64_t lda, const void *B, int64_t ldb,
                 void *C, int64_t ldc, int dt, float beta);

/* h[i, j] = b[j] over m rows of n: the bias where addmm is not cuBLASLt's. */
template <typename T>
__global__ void bias_rows_kernel(T *h, const T *b, int64_t m, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * n;
         i += (int64_t)gridDim.x * blockDim.x)
        h[i] = b[i % n];
}

extern "C" void mc_gpu_linear(mc_wl_gpu *g, int handle, void *h, const void *x, const void *W,
                              const void *b, int64_t m, int64_t k, int64_t n, int dt)
{
    MC_PROF(g, MC_PROF_GEMM);
    if (!MC_PT_ADDMM_USES_LT(k, n)) { /* PyTorch's cuBLAS path: the bias copied in, beta = 1 */
        const int64_t total = m * n;
        const unsigned blocks = (unsigned)(total < 65536 * 256 ? (total + 255) / 256 : 65536);
        if (dt == MC_DT_F32) bias_rows_kernel<<<blocks, 256, 0, g->stream>>>((float *)h, (const float *)b, m, n);
        else if (dt == MC_DT_F16) bias_rows_kernel<<<blocks, 256, 0, g->stream>>>((__half *)h, (const __half *)b, m, n);
        else bias_rows_kernel<<<blocks, 256, 0, g->stream>>>((__nv_bfloat16 *)h, (const __nv_bfloat16 *)b, m, n);
        CHECK_CUDA(cudaGetLastError());
        gemm(g, handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, W, k, x, k, h, n, dt, 1.0f);
        return;
    }
    CHECK(g->lt_ws[handle] != NULL, "cuBLASLt workspace of handle %d not set", handle);
    lt_plan *p = plan_for(g, handle, m, k, n, dt);
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b,
                                                sizeof b));
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasLtMatmul((cublasLtHandle_t)g->h[handle], p->op, &one, W, p->a, x, p->b,
                                &zero, h, p->c, h, p->c, &p->algo, g->lt_ws[handle],
                                (size_t)g->lt_ws_bytes[handle], g->stream));
}

/* ------------------------------------------------------------ backward GEMMs */

static void gemm(mc_wl_gpu *g, int handle, cublasOperation_t ta, cublasOperation_t tb, int64_t M,
                 int64_t N, int64_t K, const void *A, int64_t lda, const void *B, int64_t ldb,
                 void *C, int64_t ldc, int dt, float beta)
{
    const float one = 1.0f;
    cudaDataType_t t = cuda_type(dt);
    CHECK(M <= 0x7fffffff && N <= 0x7fffffff && K <= 0x7fffffff, "GEMM too large for cuBLAS");
    CHECK_CUBLAS(cublasGemmEx(g->h[handle], ta, tb, (int)M, (int)N, (int)K, &one, A, t, (int)lda,
                              B, t, (int)ldb, &beta, C, t, (int)ldc, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
}

/* h[m,n] = x[m,k] W[n,k]^T with no bias (matmul's mm): column-major
 * h^T (n x m) = W (n x k, W^T stored) x^T (k x m). */
extern "C" void mc_gpu_mm_nt(mc_wl_gpu *g, int handle, void *h, const void *x, const void *W,
                             int64_t m, int64_t k, int64_t n, int dt)
{
    MC_PROF(g, MC_PROF_GEMM);
    gemm(g, handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, W, k, x, k, h, n, dt, 0.0f);
}

/* gx[m,k] = gh[m,n] W[n,k]: column-major gx^T (k x m) = W^T (k x n) gh^T (n x m). */
extern "C" void mc_gpu_gemm_dx(mc_wl_gpu *g, int handle, void *gx, const void *gh, const void *W,
                               int64_t m, int64_t k, int64_t n, int dt)
{
    MC_PROF(g, MC_PROF_GEMM);
    gemm(g, handle, CUBLAS_OP_N, CUBLAS_OP_N, k, m, n, W, k, gh, n, gx, k, dt, 0.0f);
}

/* gW[n,k] = gh[m,n]^T x[m,k]: column-major gW^T (k x n) = x^T (k x m) gh (m x n). */
extern "C" void mc_gpu_gemm_dw(mc_wl_gpu *g, int handle, void *gW, const void *gh, const void *x,
                               int64_t m, int64_t k, int64_t n, int dt)
{
    MC_PROF(g, MC_PROF_GEMM);
    gemm(g, handle, CUBLAS_OP_N, CUBLAS_OP_T, k, n, m, x, k, gh, n, gW, k, dt, 0.0f);
}

/* ------------------------------------------------------------ host copies */

extern "C" void mc_gpu_read_loss(mc_wl_gpu *g, int slot, const float *loss)
{
    MC_PROF(g, MC_PROF_COPY);
    CHECK(slot >= 0 && slot < g->n_loss, "loss slot %d out of range", slot);
    CHECK_CUDA(cudaMemcpyAsync(&g->pinned[slot], loss, sizeof(float), cudaMemcpyDeviceToHost,
                               g->stream));
}

extern "C" double mc_gpu_loss_sum(const mc_wl_gpu *g, int n_slots)
{
    double s = 0;
    for (int i = 0; i < n_slots && i < g->n_loss; i++) s += g->pinned[i];
    return s;
}

extern "C" float mc_gpu_slot_loss(const mc_wl_gpu *g, int slot)
{
    CHECK(slot >= 0 && slot < g->n_loss, "loss slot %d out of range", slot);
    return g->pinned[slot];
}

extern "C" void mc_gpu_from_host(mc_wl_gpu *g, void *dev, const void *host, uint64_t bytes)
{
    MC_PROF(g, MC_PROF_COPY);
    CHECK_CUDA(cudaMemcpyAsync(dev, host, (size_t)bytes, cudaMemcpyHostToDevice, g->stream));
    CHECK_CUDA(cudaStreamSynchronize(g->stream)); /* host may be pageable and go out of scope */
}

extern "C" float mc_gpu_read_scalar(mc_wl_gpu *g, const float *p)
{
    MC_PROF(g, MC_PROF_COPY);
    float *slot = &g->pinned[g->n_loss];
    CHECK_CUDA(cudaMemcpyAsync(slot, p, sizeof(float), cudaMemcpyDeviceToHost, g->stream));
    CHECK_CUDA(cudaStreamSynchronize(g->stream));
    return *slot;
}

extern "C" void mc_gpu_write_scalar(mc_wl_gpu *g, float *p, float v)
{
    MC_PROF(g, MC_PROF_COPY);
    CHECK_CUDA(cudaMemcpyAsync(p, &v, sizeof v, cudaMemcpyHostToDevice, g->stream));
    CHECK_CUDA(cudaStreamSynchronize(g->stream));
}

extern "C" void mc_gpu_to_host(mc_wl_gpu *g, float *host, const void *dev, int64_t n, int dt)
{
    MC_PROF(g, MC_PROF_COPY);
    size_t es = (size_t)MC_DT_SIZE(dt);
    void *tmp = dt == MC_DT_F32 ? (void *)host : malloc((size_t)n * es);
    CHECK(tmp != NULL, "out of host memory");
    CHECK_CUDA(cudaMemcpyAsync(tmp, dev, (size_t)n * es, cudaMemcpyDeviceToHost, g->stream));
    CHECK_CUDA(cudaStreamSynchronize(g->stream));
    if (dt == MC_DT_F16)
        for (int64_t i = 0; i < n; i++) host[i] = __half2float(((const __half *)tmp)[i]);
    else if (dt == MC_DT_BF16)
        for (int64_t i = 0; i < n; i++) host[i] = __bfloat162float(((const __nv_bfloat16 *)tmp)[i]);
    if (tmp != (void *)host) free(tmp);
}

extern "C" void *mc_gpu_pinned_alloc(uint64_t bytes)
{
    void *p = NULL;
    CHECK_CUDA(cudaHostAlloc(&p, (size_t)bytes, cudaHostAllocDefault));
    return p;
}

extern "C" void mc_gpu_pinned_free(void *host)
{
    if (host) CHECK_CUDA(cudaFreeHost(host));
}

extern "C" void mc_gpu_to_pinned(mc_wl_gpu *g, void *host, const void *dev, uint64_t bytes)
{
    MC_PROF(g, MC_PROF_COPY);
    CHECK_CUDA(cudaMemcpyAsync(host, dev, (size_t)bytes, cudaMemcpyDeviceToHost, g->stream));
}

extern "C" void mc_gpu_from_pinned(mc_wl_gpu *g, void *dev, const void *host, uint64_t bytes)
{
    MC_PROF(g, MC_PROF_COPY);
    CHECK_CUDA(cudaMemcpyAsync(dev, host, (size_t)bytes, cudaMemcpyHostToDevice, g->stream));
}
