/* c23_activation_offload: C23. Does copying saved activations to pinned host
 * memory during the forward, and back for the backward, lower the device
 * peak, and what does it cost in step time? A compact MLP training step of
 * its own (fp32, L bias-free Linear+ReLU layers of width H, MSE, SGD), every
 * device tensor taken from the allocator model, in three variants:
 *   keep            saved activations stay on the device
 *   offload         each saved input is copied D2H on a side stream as soon as
 *                   it exists, its block freed once the copy is done (the
 *                   compute stream waits on the copy's event); the backward
 *                   brings each back H2D on the side stream, one layer ahead
 *   offload_serial  the same copies on the compute stream, none overlapped,
 *                   as torch.autograd.graph.save_on_cpu(pin_memory=True) does
 * The workload library (workload.h) has no offload mode, hence this step. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "alloc_probe.h"
#include "check.h"
#include "check_cuda.h"
#include "event_timer.h"
#include "experiment.h"
#include "gate.h"

static int layers_opt = 8;
static int width_opt = 2048;

static const mc_extra_opt EXTRA[] = {
    {"layers", MC_OPT_COUNT, &layers_opt, "Linear layers, 2..64 (default 8)"},
    {"width", MC_OPT_COUNT, &width_opt, "features H, 64..16384 (default 2048)"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const char *validate(const mc_options *o)
{
    (void)o;
    if (layers_opt < 2 || layers_opt > 64) return "--layers must be from 2 to 64";
    if (width_opt < 64 || width_opt > 16384) return "--width must be from 64 to 16384";
    return NULL;
}

static const mc_experiment EXP = {
    .claim = "C23",
    .key = "activation_offload",
    .title = "Saved activations kept on the GPU vs offloaded to pinned host memory: peak and step time",
    .seed_claim = "Offloading activations or parameters to CPU relieves GPU memory.",
    .method = "A training step of its own (fp32 MLP of L=8 bias-free Linear+ReLU layers, width "
              "H=2048, MSE, SGD; cuBLAS without TF32; every device tensor from the allocator "
              "model, a 32 MiB cuBLAS workspace included) over batch B = 256..8192 (--quick 512, "
              "4096). keep: saved layer inputs stay on the device. offload: each saved input is "
              "copied D2H to pinned memory on a side stream when made and its block freed once "
              "copied (compute waits on the copy's event, one layer later); the backward copies "
              "each back H2D one layer ahead. offload_serial: the same copies on the compute "
              "stream (as save_on_cpu(pin_memory=True)). Per variant: max_memory_allocated of the "
              "steady steps (step >= 2 + --warmup), step time from CUDA events (--repeats steps), "
              "PCIe bytes per step, and the copy time they imply at the pinned bandwidth measured "
              "here (gated copies, events). Gradients and loss of the first step are checked "
              "against keep's (same weights and data). --model-only: the same request sequence "
              "on the host backend, no times.",
    .verdict_rule = "At each B: memory relieved if offload's steady peak allocated is at least 1% "
                    "below keep's; slowdown = median step time offload / keep (GPU only). "
                    "inconclusive if a run is out of memory; holds if memory is relieved at every "
                    "B and (on a GPU) slowdown <= 2 at every B; holds-partly if memory is relieved "
                    "at some B only, or everywhere but with slowdown > 2 somewhere; does-not-hold if "
                    "memory is relieved at no B. Without a GPU the memory part alone decides.",
    .flags = MC_EXP_MODEL_ONLY,
    .default_repeats = 5,
    .default_warmup = 2,
    .extra = EXTRA,
    .validate = validate,
};

enum { KEEP, OFFLOAD, SERIAL, NVAR };
static const char *const VAR[NVAR] = {"keep", "offload", "offload_serial"};
enum { C_W, C_G, C_ACT, C_WS, C_OTHER, NCAT };
static const int64_t BATCHES[] = {256, 512, 1024, 2048, 4096, 8192};
static const int64_t BATCHES_QUICK[] = {512, 4096};
#define MAXL 64
#define WS_BYTES (32ULL << 20) /* PyTorch's cuBLAS workspace on sm_90 */
#define NPART 264              /* loss partial sums: 2 x 132 SMs; fixed, so the sum is deterministic */
#define LR 1e-3f
#define RELIEF 0.01            /* a drop of at least 1% of keep's peak */
#define MAX_SLOWDOWN 2.0
#define GRAD_TOL 1e-6

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

typedef struct {
    mc_run *run;
    bool gpu, oom;
    int var, L;
    int64_t H, B;
    uint64_t act;                     /* one activation, B x H x 4 bytes */
    mc_probe p;
    uint64_t cat[NCAT], peak_seen, peak_cat[NCAT];
    uint64_t W[MAXL], ws;             /* kept */
    uint64_t x[MAXL], gW[MAXL], h, o, y, go, g, gx, part, loss; /* step tensors (0: none) */
    cublasHandle_t hb;
    cudaStream_t sc, ss;              /* compute; copies (== sc for keep and serial) */
    cudaEvent_t ready[MAXL], copied[MAXL], loaded[MAXL], alloc_ev;
    float *const *pinned;             /* host copies of the saved inputs, [L] */
    mc_event_timer tm;                /* around the step, on sc */
    double time_s;                    /* the last step's, events; NaN in model-only */
    uint64_t pcie_bytes;              /* moved in the last step */
} mlp;

#define PF(a) ((float *)(uintptr_t)(a))
#define BLOCKS(n) ((unsigned)((n) / 256 + 1 < 1056 ? (n) / 256 + 1 : 1056))

static bool talloc(mlp *m, uint64_t *dst, uint64_t bytes, int cat)
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
static void tfree(mlp *m, uint64_t *a, int cat)
{
    if (!*a) return;
    m->cat[cat] -= ca_block_size(m->p.a, *a);
    CHECK(ca_free(m->p.a, *a) == 0, "free of an unknown block");
    *a = 0;
}

static void gemm(mlp *m, cublasOperation_t ta, cublasOperation_t tb, int64_t M, int64_t N, int64_t K,
                 uint64_t A, int64_t lda, uint64_t Bm, int64_t ldb, uint64_t C, int64_t ldc)
{
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasSgemm(m->hb, ta, tb, (int)M, (int)N, (int)K, &one, PF(A), (int)lda, PF(Bm),
                             (int)ldb, &zero, PF(C), (int)ldc));
}

/* Saved input l exists on sc: copy it out on ss. */
static void off_save(mlp *m, int l)
{
    m->pcie_bytes += m->act;
    if (!m->gpu) return;
    CHECK_CUDA(cudaEventRecord(m->ready[l], m->sc));
    CHECK_CUDA(cudaStreamWaitEvent(m->ss, m->ready[l], 0));
    CHECK_CUDA(cudaMemcpyAsync(m->pinned[l], PF(m->x[l]), m->act, cudaMemcpyDeviceToHost, m->ss));
    CHECK_CUDA(cudaEventRecord(m->copied[l], m->ss));
}
/* Free saved input l once its copy is done: later compute is ordered after it. */
static void off_release(mlp *m, int l)
{
    if (m->gpu) CHECK_CUDA(cudaStreamWaitEvent(m->sc, m->copied[l], 0));
    tfree(m, &m->x[l], C_ACT);
}
/* Bring saved input l back into a new block, on ss, after what sc has queued. */
static void off_load(mlp *m, int l)
{
    if (!talloc(m, &m->x[l], m->act, C_ACT)) return;
    m->pcie_bytes += m->act;
    if (!m->gpu) return;
    CHECK_CUDA(cudaEventRecord(m->alloc_ev, m->sc));
    CHECK_CUDA(cudaStreamWaitEvent(m->ss, m->alloc_ev, 0));
    CHECK_CUDA(cudaMemcpyAsync(PF(m->x[l]), m->pinned[l], m->act, cudaMemcpyHostToDevice, m->ss));
    CHECK_CUDA(cudaEventRecord(m->loaded[l], m->ss));
}

#define A(dst, bytes, cat) do { if (!talloc(m, &(dst), (bytes), (cat))) goto out; } while (0)
#define LAUNCH(k, n, ...) do { if (m->gpu) { k<<<BLOCKS(n), 256, 0, m->sc>>>(__VA_ARGS__); CHECK_LAUNCH(); } } while (0)

/* One step on data `step_id`. grads_out (GPU, may be NULL): the gradients
 * are copied there ([L][H*H]) instead of applied; *loss_out gets the loss.
 * Returns false on OOM (everything the step held is freed). */
static bool mlp_step(mlp *m, uint64_t step_id, float *grads_out, float *loss_out)
{
    const int L = m->L;
    const int64_t H = m->H, n = m->B * H;
    const bool off = m->var != KEEP;
    m->pcie_bytes = 0;
    ca_reset_peak(m->p.a);
    m->peak_seen = (uint64_t)ca_get_stats(m->p.a)->allocated_bytes.current;
    memcpy(m->peak_cat, m->cat, sizeof m->cat);
    m->time_s = NAN;
    if (m->gpu) mc_event_timer_start(&m->tm);
    A(m->x[0], m->act, C_ACT);
    LAUNCH(k_fill, n, PF(m->x[0]), n, 2 * step_id + 1000, 1.0f);
    A(m->y, m->act, C_ACT);
    LAUNCH(k_fill, n, PF(m->y), n, 2 * step_id + 1001, 1.0f);
    for (int l = 0; l < L; l++) { /* forward: x[l] is layer l's saved input */
        if (off) off_save(m, l);
        A(m->h, m->act, C_ACT);
        if (m->gpu) gemm(m, CUBLAS_OP_T, CUBLAS_OP_N, H, m->B, H, m->W[l], H, m->x[l], H, m->h, H);
        if (off && l > 0) off_release(m, l - 1);
        if (l == L - 1) {
            m->o = m->h;
            m->h = 0;
            break;
        }
        A(m->x[l + 1], m->act, C_ACT);
        LAUNCH(k_relu, n, PF(m->x[l + 1]), PF(m->h), n);
        tfree(m, &m->h, C_ACT);
    }
    if (off) off_release(m, L - 1);
    A(m->go, m->act, C_ACT);
    A(m->part, NPART * 4, C_OTHER);
    A(m->loss, 4, C_OTHER);
    if (m->gpu) {
        k_mse<<<NPART, 256, 0, m->sc>>>(PF(m->go), PF(m->part), PF(m->o), PF(m->y), n);
        CHECK_LAUNCH();
        k_sum<<<1, 1, 0, m->sc>>>(PF(m->loss), PF(m->part), NPART);
        CHECK_LAUNCH();
    }
    tfree(m, &m->part, C_OTHER);
    tfree(m, &m->o, C_ACT);
    tfree(m, &m->y, C_ACT);
    m->g = m->go;
    m->go = 0;
    if (off) off_load(m, L - 1);
    for (int l = L - 1; l >= 0 && !m->oom; l--) { /* backward */
        if (off && m->gpu) CHECK_CUDA(cudaStreamWaitEvent(m->sc, m->loaded[l], 0));
        if (off && l > 0) off_load(m, l - 1);
        A(m->gW[l], (uint64_t)(H * H) * 4, C_G);
        if (m->gpu) gemm(m, CUBLAS_OP_N, CUBLAS_OP_T, H, H, m->B, m->x[l], H, m->g, H, m->gW[l], H);
        if (l > 0) {
            A(m->gx, m->act, C_ACT);
            if (m->gpu) gemm(m, CUBLAS_OP_N, CUBLAS_OP_N, H, m->B, H, m->W[l], H, m->g, H, m->gx, H);
            LAUNCH(k_relu_bwd, n, PF(m->gx), PF(m->x[l]), n); /* x[l] = relu output of layer l-1 */
        }
        tfree(m, &m->g, C_ACT);
        tfree(m, &m->x[l], C_ACT);
        m->g = m->gx;
        m->gx = 0;
    }
    if (m->oom) goto out;
    for (int l = 0; l < L; l++) { /* the update, then zero_grad(set_to_none=True) */
        if (m->gpu && grads_out)
            CHECK_CUDA(cudaMemcpyAsync(grads_out + (size_t)l * (size_t)(H * H), PF(m->gW[l]),
                                       (size_t)(H * H) * 4, cudaMemcpyDeviceToHost, m->sc));
        else LAUNCH(k_sgd, H * H, PF(m->W[l]), PF(m->gW[l]), H * H, LR);
        tfree(m, &m->gW[l], C_G);
    }
    if (m->gpu) mc_event_timer_stop(&m->tm);
    if (m->gpu && loss_out)
        CHECK_CUDA(cudaMemcpyAsync(loss_out, PF(m->loss), 4, cudaMemcpyDeviceToHost, m->sc));
    if (m->gpu) m->time_s = mc_event_timer_elapsed_s(&m->tm);
out:
    if (m->gpu) CHECK_CUDA(cudaDeviceSynchronize()); /* before blocks go back after an OOM */
    uint64_t *step_t[] = {&m->h, &m->o, &m->y, &m->go, &m->g, &m->gx, &m->part, &m->loss};
    for (size_t i = 0; i < sizeof step_t / sizeof *step_t; i++)
        tfree(m, step_t[i], i >= 6 ? C_OTHER : C_ACT);
    for (int l = 0; l < L; l++) {
        tfree(m, &m->x[l], C_ACT);
        tfree(m, &m->gW[l], C_G);
    }
    return !m->oom;
}

/* ------------------------------------------------------------ set-up */

static void mlp_create(mlp *m, mc_run *run, int var, int64_t B, float *const *pinned)
{
    memset(m, 0, sizeof *m);
    m->run = run;
    m->gpu = run->on_gpu;
    m->var = var;
    m->L = layers_opt;
    m->H = width_opt;
    m->B = B;
    m->act = (uint64_t)B * (uint64_t)m->H * 4;
    m->pinned = pinned;
    mc_probe_open(&m->p, run, NULL);
    if (m->gpu) {
        CHECK_CUDA(cudaStreamCreateWithFlags(&m->sc, cudaStreamNonBlocking));
        m->ss = m->sc;
        if (var == OFFLOAD) CHECK_CUDA(cudaStreamCreateWithFlags(&m->ss, cudaStreamNonBlocking));
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
        if (!talloc(m, &m->W[l], (uint64_t)(m->H * m->H) * 4, C_W)) return;
        LAUNCH(k_fill, m->H * m->H, PF(m->W[l]), m->H * m->H, 7 + (uint64_t)l, bound);
    }
    if (!talloc(m, &m->ws, WS_BYTES, C_WS)) return;
    if (m->gpu) CHECK_CUBLAS(cublasSetWorkspace(m->hb, PF(m->ws), WS_BYTES));
}

static void mlp_destroy(mlp *m)
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
    for (int l = 0; l < m->L; l++) tfree(m, &m->W[l], C_W);
    tfree(m, &m->ws, C_WS);
    mc_probe_check(m->run, &m->p, VAR[m->var]);
    mc_probe_close(&m->p);
}

/* Pinned copy bandwidth, bytes/s (median of R gated copies of `bytes`). */
static mc_stats copy_bw(mc_run *run, void *dev, float *host, uint64_t bytes, bool d2h)
{
    const int R = run->opt.repeats;
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    mc_event_timer t;
    mc_event_timer_init(&t, s);
    mc_gate gate;
    mc_gate_init(&gate);
    double *x = (double *)mc_xmalloc((size_t)R * sizeof *x);
    for (int r = -1; r < R; r++) { /* r = -1: untimed warm-up */
        mc_gate_close(&gate, s);
        mc_event_timer_start(&t);
        if (d2h) CHECK_CUDA(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
        else CHECK_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
        mc_event_timer_stop(&t);
        mc_gate_release(&gate);
        double sec = mc_event_timer_elapsed_s(&t);
        if (r >= 0) x[r] = (double)bytes / sec;
    }
    mc_stats st = mc_stats_of(x, (size_t)R);
    free(x);
    mc_gate_destroy(&gate);
    mc_event_timer_destroy(&t);
    CHECK_CUDA(cudaStreamDestroy(s));
    return st;
}

/* ------------------------------------------------------------ one variant at one batch */

typedef struct {
    bool oom;
    mc_stats peak, resv, time;
    double act_at_peak, grads_at_peak; /* bytes at the last measured step's peak */
    double pcie;                        /* bytes per step */
    double grad_rel, loss_rel;          /* against keep (GPU, offload variants) */
    bool bit_equal;
    float loss;
} vfig;

static vfig run_variant(mc_run *run, int var, int64_t B, float *const *pinned, float *ref,
                        float *tmp, float *ref_loss)
{
    vfig f;
    memset(&f, 0, sizeof f);
    mlp m;
    mlp_create(&m, run, var, B, pinned);
    const int W = run->opt.warmup, R = run->opt.repeats;
    double *pk = (double *)mc_xmalloc((size_t)R * 3 * sizeof *pk), *rs = pk + R, *tm = pk + 2 * R;
    float *grads = run->on_gpu ? (var == KEEP ? ref : tmp) : NULL;
    f.oom = m.oom || !mlp_step(&m, 1, grads, &f.loss); /* step 1: checked, not applied */
    for (int s = 0; s < W + R && !f.oom; s++) {
        f.oom = !mlp_step(&m, 2 + (uint64_t)s, NULL, NULL);
        const ca_stats *st = ca_get_stats(m.p.a);
        if (s >= W) {
            pk[s - W] = (double)st->allocated_bytes.peak;
            rs[s - W] = (double)st->reserved_bytes.peak;
            tm[s - W] = m.time_s;
        }
    }
    if (!f.oom) {
        f.peak = mc_stats_of(pk, (size_t)R);
        f.resv = mc_stats_of(rs, (size_t)R);
        f.time = mc_stats_of(tm, (size_t)R);
        f.act_at_peak = (double)m.peak_cat[C_ACT];
        f.grads_at_peak = (double)m.peak_cat[C_G];
        f.pcie = (double)m.pcie_bytes;
    }
    if (!f.oom && run->on_gpu && var == KEEP) *ref_loss = f.loss;
    if (!f.oom && run->on_gpu && var != KEEP) { /* same weights, same data: same gradients */
        const size_t n = (size_t)m.L * (size_t)(m.H * m.H);
        double dmax = 0.0, amax = 0.0;
        for (size_t i = 0; i < n; i++) {
            dmax = fmax(dmax, fabs((double)tmp[i] - (double)ref[i]));
            amax = fmax(amax, fabs((double)ref[i]));
        }
        f.bit_equal = memcmp(tmp, ref, n * sizeof *ref) == 0 && f.loss == *ref_loss;
        f.grad_rel = amax > 0.0 ? dmax / amax : (dmax > 0.0 ? INFINITY : 0.0);
        f.loss_rel = fabs((double)f.loss - (double)*ref_loss) / fmax(fabs((double)*ref_loss), 1e-30);
        if (!(f.grad_rel <= GRAD_TOL) || !(f.loss_rel <= GRAD_TOL) || !isfinite(f.loss) || !(f.loss > 0))
            mc_verify_failed(run, VAR[var], "B=%lld: gradients differ from keep's by %.3g (max abs "
                             "diff / max abs), loss %.9g vs %.9g", (long long)B, f.grad_rel,
                             (double)f.loss, (double)*ref_loss);
    }
    free(pk);
    mlp_destroy(&m);
    return f;
}

/* ------------------------------------------------------------ main */

static void emit_variant(mc_run *run, int var, int64_t B, const vfig *f)
{
    const char *v = VAR[var];
    const double pv = (double)B;
    if (f->oom) {
        mc_emit(run, v, "batch", pv, "peak_allocated", "bytes", mc_stats_one(NAN), "oom", "out of memory");
        return;
    }
    mc_emit(run, v, "batch", pv, "peak_allocated", "bytes", f->peak, "ok",
            "max_memory_allocated() of the measured steps");
    mc_emit(run, v, "batch", pv, "peak_reserved", "bytes", f->resv, "ok", "max_memory_reserved()");
    mc_emit_value(run, v, "batch", pv, "peak_activations", "bytes", f->act_at_peak,
                  "activation bytes live at the peak (last measured step)");
    mc_emit_value(run, v, "batch", pv, "peak_grads", "bytes", f->grads_at_peak,
                  "gradient bytes live at the peak (last measured step)");
    if (var != KEEP)
        mc_emit_value(run, v, "batch", pv, "pcie_bytes", "bytes", f->pcie,
                      "bytes copied D2H + H2D per step");
    if (!run->on_gpu) return;
    mc_emit(run, v, "batch", pv, "step_time", "s", f->time, "ok", "CUDA events around the step");
    if (var != KEEP) {
        mc_emit_value(run, v, "batch", pv, "grad_max_rel_diff", "ratio", f->grad_rel,
                      f->bit_equal ? "gradients and loss bit-identical to keep's"
                                   : "max |grad - keep's| / max |keep's grad|, step 1");
        mc_emit_value(run, v, "batch", pv, "loss_rel_diff", "ratio", f->loss_rel,
                      "|loss - keep's| / keep's, step 1");
    }
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const int64_t *batches = run.opt.quick ? BATCHES_QUICK : BATCHES;
    const int nb = run.opt.quick ? 2 : (int)(sizeof BATCHES / sizeof *BATCHES);
    const int L = layers_opt;
    const int64_t H = width_opt, bmax = batches[nb - 1];
    const uint64_t act_max = (uint64_t)bmax * (uint64_t)H * 4;
    float *pinned[MAXL] = {0}, *ref = NULL, *tmp = NULL;
    void *dev = NULL;
    if (run.on_gpu) { /* host buffers once, at the largest batch (PyTorch caches pinned blocks too) */
        for (int l = 0; l < L; l++) CHECK_CUDA(cudaMallocHost((void **)&pinned[l], act_max));
        CHECK_CUDA(cudaMalloc(&dev, act_max)); /* bandwidth only; outside the model */
        ref = (float *)mc_xmalloc((uint64_t)L * (uint64_t)(H * H) * 4);
        tmp = (float *)mc_xmalloc((uint64_t)L * (uint64_t)(H * H) * 4);
    }
    int relieved = 0, slow_ok = 0, points = 0;
    bool oom = false;
    double worst_slow = 0.0;
    char per_b[1024] = "";
    size_t used = 0;
    for (int i = 0; i < nb; i++) {
        const int64_t B = batches[i];
        const uint64_t act = (uint64_t)B * (uint64_t)H * 4;
        mc_stats d2h = {0}, h2d = {0};
        if (run.on_gpu) {
            CHECK_CUDA(cudaMemset(dev, 0x5a, act));
            d2h = copy_bw(&run, dev, pinned[0], act, true);
            h2d = copy_bw(&run, dev, pinned[0], act, false);
            mc_emit(&run, "pinned_copy", "batch", (double)B, "d2h_bandwidth", "B/s", d2h, "ok",
                    "one activation's bytes, gated, CUDA events");
            mc_emit(&run, "pinned_copy", "batch", (double)B, "h2d_bandwidth", "B/s", h2d, "ok",
                    "one activation's bytes, gated, CUDA events");
        }
        vfig f[NVAR];
        float ref_loss = NAN;
        for (int v = 0; v < NVAR; v++) {
            mc_log(&run, "B=%lld, %s", (long long)B, VAR[v]);
            f[v] = run_variant(&run, v, B, pinned, ref, tmp, &ref_loss);
            emit_variant(&run, v, B, &f[v]);
            oom |= f[v].oom;
        }
        if (f[KEEP].oom || f[OFFLOAD].oom || f[SERIAL].oom) continue;
        if (run.on_gpu && !(isfinite(ref_loss) && ref_loss > 0))
            mc_verify_failed(&run, "keep", "B=%lld: loss %g", (long long)B, (double)ref_loss);
        const vfig *k = &f[KEEP], *o = &f[OFFLOAD], *s = &f[SERIAL];
        const double red = k->peak.median - o->peak.median, share = k->act_at_peak / k->peak.median;
        const bool rel = red >= RELIEF * k->peak.median;
        const double slow = o->time.median / k->time.median, slow_s = s->time.median / k->time.median;
        const double implied = run.on_gpu ? (double)L * act / d2h.median + (double)L * act / h2d.median : NAN;
        points++;
        relieved += rel;
        if (run.on_gpu) {
            slow_ok += slow <= MAX_SLOWDOWN;
            worst_slow = fmax(worst_slow, slow);
        }
        for (int v = OFFLOAD; v <= SERIAL; v++) {
            mc_emit_value(&run, VAR[v], "batch", (double)B, "peak_ratio", "ratio",
                          f[v].peak.median / k->peak.median, "steady peak allocated / keep's");
            mc_emit_value(&run, VAR[v], "batch", (double)B, "peak_reduction", "bytes",
                          k->peak.median - f[v].peak.median, "keep's steady peak - this one's");
            if (run.on_gpu)
                mc_emit_value(&run, VAR[v], "batch", (double)B, "slowdown", "ratio",
                              f[v].time.median / k->time.median, "median step time / keep's");
        }
        mc_emit_value(&run, "keep", "batch", (double)B, "activation_share", "ratio", share,
                      "activations at keep's peak / keep's peak");
        if (run.on_gpu)
            mc_emit_value(&run, "offload", "batch", (double)B, "implied_copy_time", "s", implied,
                          "L activations D2H at the measured D2H rate + L back at the H2D rate");
        char why[256] = ""; /* grads are made only in the backward: none live = a forward peak */
        if (!rel)
            snprintf(why, sizeof why, ": no relief; keep's peak is in the %s, offload's in the %s "
                     "with %.1f MiB of gradients live, which the copies do not lower",
                     k->grads_at_peak > 0 ? "backward" : "forward",
                     o->grads_at_peak > 0 ? "backward" : "forward", MC_MIB(o->grads_at_peak));
        mc_emit_finding(&run,
            "B=%lld: keep peaks at %.1f MiB (activations %.1f MiB = %.0f%%, grads %.1f MiB); offload "
            "%.1f MiB (%+.1f%%, activations %.1f MiB), offload_serial %.1f MiB; PCIe %.1f MiB per "
            "step%s.", (long long)B, MC_MIB(k->peak.median), MC_MIB(k->act_at_peak), 100.0 * share,
            MC_MIB(k->grads_at_peak), MC_MIB(o->peak.median), -100.0 * red / k->peak.median,
            MC_MIB(o->act_at_peak), MC_MIB(s->peak.median), MC_MIB(o->pcie), why);
        if (run.on_gpu)
            mc_emit_finding(&run,
                "B=%lld: step time keep %.3f ms, offload %.3f ms (%.2fx), offload_serial %.3f ms "
                "(%.2fx); the copies alone take %.3f ms at the measured %.1f GB/s D2H and %.1f GB/s "
                "H2D; gradients vs keep: max rel diff %.2g%s.", (long long)B, 1e3 * k->time.median,
                1e3 * o->time.median, slow, 1e3 * s->time.median, slow_s, 1e3 * implied,
                d2h.median / 1e9, h2d.median / 1e9, fmax(o->grad_rel, s->grad_rel),
                o->bit_equal && s->bit_equal ? " (bit-identical)" : "");
        used += (size_t)snprintf(per_b + used, used < sizeof per_b ? sizeof per_b - used : 0,
                                 "%sB=%lld %+.1f%%", used ? ", " : "", (long long)B,
                                 -100.0 * red / k->peak.median);
        if (run.on_gpu)
            used += (size_t)snprintf(per_b + used, used < sizeof per_b ? sizeof per_b - used : 0,
                                     " %.2fx", slow);
    }
    mc_verdict v;
    if (oom || points == 0) v = MC_INCONCLUSIVE;
    else if (relieved == 0) v = MC_DOES_NOT_HOLD;
    else if (relieved < points || (run.on_gpu && slow_ok < points)) v = MC_HOLDS_PARTLY;
    else v = MC_HOLDS;
    mc_emit_verdict(&run, v, "offload's steady peak allocated vs keep's (L=%d, H=%lld)%s: %s; "
                    "relieved (>= 1%% lower) at %d of %d batches%s.", L, (long long)H,
                    run.on_gpu ? ", and step-time slowdown" : "", per_b, relieved, points,
                    run.on_gpu ? "" : "; no GPU: memory only, no step times");
    if (run.on_gpu) {
        mc_emit_finding(&run, "Worst offload slowdown %.2fx (limit for holds: %.1fx).", worst_slow,
                        MAX_SLOWDOWN);
        for (int l = 0; l < L; l++) CHECK_CUDA(cudaFreeHost(pinned[l]));
        CHECK_CUDA(cudaFree(dev));
    }
    free(ref);
    free(tmp);
    return mc_run_end(&run);
}
