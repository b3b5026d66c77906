/* offload_mlp.cu: C23's training step with activation offload (offload_mlp.h):
 * its kernels, the allocator-model bookkeeping, the offload copies and their
 * stream ordering, the step itself, set-up and tear-down. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "alloc/alloc_probe.h"
#include "check.h"
#include "check_cuda.h"
#include "event_timer.h"
#include "offload_mlp.h"

#define NPART 264              /* loss partial sums: 2 x 132 SMs; fixed, so the sum is deterministic */
#define LR 1e-3f               /* SGD learning rate */

const char *mc_offload_variant_name(int var)
{
    static const char *const name[MC_OFFLOAD_NVAR] = {"keep", "offload", "offload_serial"};
    return var >= 0 && var < MC_OFFLOAD_NVAR ? name[var] : "?";
}

/* ------------------------------------------------------------ kernels */

static __device__ float hash_unit(uint64_t seed, uint64_t i) /* uniform in [-1, 1) */
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}
#define GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
static __global__ void k_fill(float *p, int64_t n, uint64_t seed, float scale)
{
    GRID_STRIDE(i, n) p[i] = scale * hash_unit(seed, (uint64_t)i);
}
static __global__ void k_relu(float *r, const float *h, int64_t n) { GRID_STRIDE(i, n) r[i] = fmaxf(h[i], 0.0f); }
static __global__ void k_relu_bwd(float *g, const float *r, int64_t n) { GRID_STRIDE(i, n) if (!(r[i] > 0.0f)) g[i] = 0.0f; }
static __global__ void k_sgd(float *w, const float *g, int64_t n, float lr) { GRID_STRIDE(i, n) w[i] -= lr * g[i]; }
/* go = 2 (o - y) / n; part[block] = sum of (o - y)^2 / n over the block's elements. */
static __global__ void k_mse(float *go, float *part, const float *o, const float *y, int64_t n)
{
    __shared__ float s[256];
    float acc = 0.0f;
    GRID_STRIDE(i, n) {
        float d = o[i] - y[i];
        go[i] = 2.0f * d / (float)n;
        acc += d * d / (float)n;
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = 128; k > 0; k /= 2) {
        if ((int)threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = s[0];
}
static __global__ void k_sum(float *loss, const float *part, int n)
{
    float t = 0.0f;
    for (int i = 0; i < n; i++) t += part[i];
    *loss = t;
}

/* ------------------------------------------------------------ the step */

#define PF(a) ((float *)(uintptr_t)(a))
#define BLOCKS(n) ((unsigned)((n) / 256 + 1 < 1056 ? (n) / 256 + 1 : 1056))

static bool talloc(mc_offload_mlp *m, uint64_t *dst, uint64_t bytes, int cat)
{
    if (m->oom || ca_malloc(m->p.a, bytes, dst) != CA_OK) {
        m->oom = true;
        *dst = 0;
        return false;
    }
    m->cat[cat] += ca_block_size(m->p.a, *dst);
    uint64_t cur = (uint64_t)ca_get_stats(m->p.a)->allocated_bytes.current;
    if (cur > m->peak_seen) {
        m->peak_seen = cur;
        memcpy(m->peak_cat, m->cat, sizeof m->cat);
    }
    return true;
}
static void tfree(mc_offload_mlp *m, uint64_t *a, int cat)
{
    if (!*a) return;
    m->cat[cat] -= ca_block_size(m->p.a, *a);
    CHECK(ca_free(m->p.a, *a) == 0, "free of an unknown block");
    *a = 0;
}

static void gemm(mc_offload_mlp *m, cublasOperation_t ta, cublasOperation_t tb, int64_t M, int64_t N,
                 int64_t K, uint64_t A, int64_t lda, uint64_t Bm, int64_t ldb, uint64_t C, int64_t ldc)
{
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasSgemm(m->hb, ta, tb, (int)M, (int)N, (int)K, &one, PF(A), (int)lda, PF(Bm),
                             (int)ldb, &zero, PF(C), (int)ldc));
}

/* Saved input l exists on sc: copy it out on ss. */
static void off_save(mc_offload_mlp *m, int l)
{
    m->pcie_bytes += m->act;
    if (!m->gpu) return;
    CHECK_CUDA(cudaEventRecord(m->ready[l], m->sc));
    CHECK_CUDA(cudaStreamWaitEvent(m->ss, m->ready[l], 0));
    CHECK_CUDA(cudaMemcpyAsync(m->pinned[l], PF(m->x[l]), m->act, cudaMemcpyDeviceToHost, m->ss));
    CHECK_CUDA(cudaEventRecord(m->copied[l], m->ss));
}
/* Free saved input l once its copy is done: later compute is ordered after it. */
static void off_release(mc_offload_mlp *m, int l)
{
    if (m->gpu) CHECK_CUDA(cudaStreamWaitEvent(m->sc, m->copied[l], 0));
    tfree(m, &m->x[l], MC_OFFLOAD_CAT_ACT);
}
/* Bring saved input l back into a new block, on ss, after what sc has queued. */
static void off_load(mc_offload_mlp *m, int l)
{
    if (!talloc(m, &m->x[l], m->act, MC_OFFLOAD_CAT_ACT)) return;
    m->pcie_bytes += m->act;
    if (!m->gpu) return;
    CHECK_CUDA(cudaEventRecord(m->alloc_ev, m->sc));
    CHECK_CUDA(cudaStreamWaitEvent(m->ss, m->alloc_ev, 0));
    CHECK_CUDA(cudaMemcpyAsync(PF(m->x[l]), m->pinned[l], m->act, cudaMemcpyHostToDevice, m->ss));
    CHECK_CUDA(cudaEventRecord(m->loaded[l], m->ss));
}

#define A(dst, bytes, cat) do { if (!talloc(m, &(dst), (bytes), (cat))) goto out; } while (0)
#define LAUNCH(k, n, ...) do { if (m->gpu) { k<<<BLOCKS(n), 256, 0, m->sc>>>(__VA_ARGS__); CHECK_LAUNCH(); } } while (0)

/* One step on data `step_id` (contract in offload_mlp.h). */
bool mc_offload_step(mc_offload_mlp *m, uint64_t step_id, float *grads_out, float *loss_out)
{
    const int L = m->L;
    const int64_t H = m->H, n = m->B * H;
    const bool off = m->var != MC_OFFLOAD_KEEP;
    m->pcie_bytes = 0;
    ca_reset_peak(m->p.a);
    m->peak_seen = (uint64_t)ca_get_stats(m->p.a)->allocated_bytes.current;
    memcpy(m->peak_cat, m->cat, sizeof m->cat);
    m->time_s = NAN;
    if (m->gpu) mc_event_timer_start(&m->tm);
    A(m->x[0], m->act, MC_OFFLOAD_CAT_ACT);
    LAUNCH(k_fill, n, PF(m->x[0]), n, 2 * step_id + 1000, 1.0f);
    A(m->y, m->act, MC_OFFLOAD_CAT_ACT);
    LAUNCH(k_fill, n, PF(m->y), n, 2 * step_id + 1001, 1.0f);
    for (int l = 0; l < L; l++) { /* forward: x[l] is layer l's saved input */
        if (off) off_save(m, l);
        A(m->h, m->act, MC_OFFLOAD_CAT_ACT);
        if (m->gpu) gemm(m, CUBLAS_OP_T, CUBLAS_OP_N, H, m->B, H, m->W[l], H, m->x[l], H, m->h, H);
        if (off && l > 0) off_release(m, l - 1);
        if (l == L - 1) {
            m->o = m->h;
            m->h = 0;
            break;
        }
        A(m->x[l + 1], m->act, MC_OFFLOAD_CAT_ACT);
        LAUNCH(k_relu, n, PF(m->x[l + 1]), PF(m->h), n);
        tfree(m, &m->h, MC_OFFLOAD_CAT_ACT);
    }
    if (off) off_release(m, L - 1);
    A(m->go, m->act, MC_OFFLOAD_CAT_ACT);
    A(m->part, NPART * 4, MC_OFFLOAD_CAT_OTHER);
    A(m->loss, 4, MC_OFFLOAD_CAT_OTHER);
    if (m->gpu) {
        k_mse<<<NPART, 256, 0, m->sc>>>(PF(m->go), PF(m->part), PF(m->o), PF(m->y), n);
        CHECK_LAUNCH();
        k_sum<<<1, 1, 0, m->sc>>>(PF(m->loss), PF(m->part), NPART);
        CHECK_LAUNCH();
    }
    tfree(m, &m->part, MC_OFFLOAD_CAT_OTHER);
    tfree(m, &m->o, MC_OFFLOAD_CAT_ACT);
    tfree(m, &m->y, MC_OFFLOAD_CAT_ACT);
    m->g = m->go;
    m->go = 0;
    if (off) off_load(m, L - 1);
    for (int l = L - 1; l >= 0 && !m->oom; l--) { /* backward */
        if (off && m->gpu) CHECK_CUDA(cudaStreamWaitEvent(m->sc, m->loaded[l], 0));
        if (off && l > 0) off_load(m, l - 1);
        A(m->gW[l], (uint64_t)(H * H) * 4, MC_OFFLOAD_CAT_G);
        if (m->gpu) gemm(m, CUBLAS_OP_N, CUBLAS_OP_T, H, H, m->B, m->x[l], H, m->g, H, m->gW[l], H);
        if (l > 0) {
            A(m->gx, m->act, MC_OFFLOAD_CAT_ACT);
            if (m->gpu) gemm(m, CUBLAS_OP_N, CUBLAS_OP_N, H, m->B, H, m->W[l], H, m->g, H, m->gx, H);
            LAUNCH(k_relu_bwd, n, PF(m->gx), PF(m->x[l]), n); /* x[l] = relu output of layer l-1 */
        }
        tfree(m, &m->g, MC_OFFLOAD_CAT_ACT);
        tfree(m, &m->x[l], MC_OFFLOAD_CAT_ACT);
        m->g = m->gx;
        m->gx = 0;
    }
    if (m->oom) goto out;
    for (int l = 0; l < L; l++) { /* the update, then zero_grad(set_to_none=True) */
        if (m->gpu && grads_out)
            CHECK_CUDA(cudaMemcpyAsync(grads_out + (size_t)l * (size_t)(H * H), PF(m->gW[l]),
                                       (size_t)(H * H) * 4, cudaMemcpyDeviceToHost, m->sc));
        else LAUNCH(k_sgd, H * H, PF(m->W[l]), PF(m->gW[l]), H * H, LR);
        tfree(m, &m->gW[l], MC_OFFLOAD_CAT_G);
    }
    if (m->gpu) mc_event_timer_stop(&m->tm);
    if (m->gpu && loss_out)
        CHECK_CUDA(cudaMemcpyAsync(loss_out, PF(m->loss), 4, cudaMemcpyDeviceToHost, m->sc));
    if (m->gpu) m->time_s = mc_event_timer_elapsed_s(&m->tm);
out:
    if (m->gpu) CHECK_CUDA(cudaDeviceSynchronize()); /* before blocks go back after an OOM */
    uint64_t *step_t[] = {&m->h, &m->o, &m->y, &m->go, &m->g, &m->gx, &m->part, &m->loss};
    for (size_t i = 0; i < sizeof step_t / sizeof *step_t; i++)
        tfree(m, step_t[i], i >= 6 ? MC_OFFLOAD_CAT_OTHER : MC_OFFLOAD_CAT_ACT);
    for (int l = 0; l < L; l++) {
        tfree(m, &m->x[l], MC_OFFLOAD_CAT_ACT);
        tfree(m, &m->gW[l], MC_OFFLOAD_CAT_G);
    }
    return !m->oom;
}

/* ------------------------------------------------------------ set-up */

void mc_offload_create(mc_offload_mlp *m, mc_run *run, int var, int L, int64_t H, int64_t B,
                       float *const *pinned)
{
    memset(m, 0, sizeof *m);
    m->run = run;
    m->gpu = run->on_gpu;
    m->var = var;
    m->L = L;
    m->H = H;
    m->B = B;
    m->act = (uint64_t)B * (uint64_t)m->H * 4;
    m->pinned = pinned;
    mc_probe_open(&m->p, run->on_gpu, NULL);
    if (m->gpu) {
        CHECK_CUDA(cudaStreamCreateWithFlags(&m->sc, cudaStreamNonBlocking));
        m->ss = m->sc;
        if (var == MC_OFFLOAD_OFFLOAD) CHECK_CUDA(cudaStreamCreateWithFlags(&m->ss, cudaStreamNonBlocking));
        for (int l = 0; l < m->L; l++) {
            CHECK_CUDA(cudaEventCreateWithFlags(&m->ready[l], cudaEventDisableTiming));
            CHECK_CUDA(cudaEventCreateWithFlags(&m->copied[l], cudaEventDisableTiming));
            CHECK_CUDA(cudaEventCreateWithFlags(&m->loaded[l], cudaEventDisableTiming));
        }
        CHECK_CUDA(cudaEventCreateWithFlags(&m->alloc_ev, cudaEventDisableTiming));
        mc_event_timer_init(&m->tm, m->sc);
        CHECK_CUBLAS(cublasCreate(&m->hb));
        CHECK_CUBLAS(cublasSetStream(m->hb, m->sc));
        CHECK_CUBLAS(cublasSetMathMode(m->hb, CUBLAS_DEFAULT_MATH)); /* no TF32, as PyTorch's default */
    }
    /* nn.Linear-like init, bound sqrt(6 / H) (keeps the scale through ReLU); same seed in every variant */
    const float bound = sqrtf(6.0f / (float)m->H);
    for (int l = 0; l < m->L; l++) {
        if (!talloc(m, &m->W[l], (uint64_t)(m->H * m->H) * 4, MC_OFFLOAD_CAT_W)) return;
        LAUNCH(k_fill, m->H * m->H, PF(m->W[l]), m->H * m->H, 7 + (uint64_t)l, bound);
    }
    if (!talloc(m, &m->ws, MC_OFFLOAD_WS_BYTES, MC_OFFLOAD_CAT_WS)) return;
    if (m->gpu) CHECK_CUBLAS(cublasSetWorkspace(m->hb, PF(m->ws), MC_OFFLOAD_WS_BYTES));
}

void mc_offload_destroy(mc_offload_mlp *m)
{
    if (m->gpu) {
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUBLAS(cublasDestroy(m->hb));
        for (int l = 0; l < m->L; l++) {
            CHECK_CUDA(cudaEventDestroy(m->ready[l]));
            CHECK_CUDA(cudaEventDestroy(m->copied[l]));
            CHECK_CUDA(cudaEventDestroy(m->loaded[l]));
        }
        CHECK_CUDA(cudaEventDestroy(m->alloc_ev));
        mc_event_timer_destroy(&m->tm);
        if (m->ss != m->sc) CHECK_CUDA(cudaStreamDestroy(m->ss));
        CHECK_CUDA(cudaStreamDestroy(m->sc));
    }
    for (int l = 0; l < m->L; l++) tfree(m, &m->W[l], MC_OFFLOAD_CAT_W);
    tfree(m, &m->ws, MC_OFFLOAD_CAT_WS);
    const char *broken = mc_probe_check(&m->p);
    if (broken) mc_verify_failed(m->run, mc_offload_variant_name(m->var), "%s", broken);
    mc_probe_close(&m->p);
}
