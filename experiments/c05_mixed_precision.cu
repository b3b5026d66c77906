/* c05_mixed_precision.cu: C05. The suite's training workload
 * (common/workload.h) in fp32 and in mixed precision (fp16 with GradScaler,
 * bf16; autocast compute over fp32 master weights) over batch size, for a
 * weight-bound and an activation-bound shape: peak allocated, reserved,
 * step time, and on a GPU the cuBLAS GEMM throughput behind the step time
 * (the forward GEMM of one layer, measured alone). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "alloc/alloc_model.h"
#include "check_cuda.h"
#include "event_timer.h"
#include "experiment.h"
#include "stats.h"
#include "verdict.h"
#include "workload/workload.h"

static bool sgd_opt = false;

static const mc_extra_opt EXTRA[] = {
    {"sgd", MC_OPT_FLAG, &sgd_opt, "train with SGD instead of Adam"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const mc_experiment EXP = {
    .claim = "C05",
    .key = "mixed_precision",
    .title = "Training memory and speed in fp32 vs fp16/bf16 mixed precision, over batch size",
    .seed_claim = "Mixed precision (fp16/bf16) cuts memory by about 40% and speeds training 1.5-3x.",
    .method = "The training workload (Linear+ReLU MLP, in = width = out = H, Adam (--sgd: SGD), "
              "every tensor from the PyTorch-faithful allocator model) in fp32, fp16 (autocast + "
              "GradScaler) and bf16 (autocast), fp32 master weights. Two shapes: weight_bound L=4, "
              "H=4096 at B = 32, 128, 512, 2048, 8192 and activation_bound L=8, H=1024 at B = 128, "
              "512, 2048, 8192, 32768 (--quick: 2 batches each). A fresh workload per point; step 1 "
              "creates the optimizer state, so figures are read at steps >= 2 after the warm-up: "
              "max_memory_allocated of the step, peak reserved, live bytes per category at the "
              "peak, and on a GPU the step time (CUDA events, median of --repeats) and the step's "
              "achieved rate 6 * params * B / time. On a GPU also the cuBLAS GEMM of one hidden "
              "layer's forward ([B,H] x [H,H]^T, cublasGemmEx, default math: fp32 without TF32, "
              "fp16/bf16 with fp32 accumulation), timed with events, checked on sampled entries "
              "against a host reference. saving = 1 - peak_mixed/peak_fp32; speed-up = "
              "t_fp32/t_mixed. With --model-only the host backend: memory only. Verified: steps "
              "ran, loss finite (GPU), same peak at every measured step, allocator invariants.",
    .verdict_rule = "Points: every (shape, batch, fp16 or bf16). Memory in band: saving 0.30..0.50 "
                    "('about 40%'); speed in band: speed-up 1.5..3.0 (points whose time noise, "
                    "root-sum-square of 1.4826*MAD/median, exceeds 0.5 are left out). On a GPU: holds if "
                    "both are in band at more than half of their points; holds-partly if either is "
                    "in band at some point (the findings say where); does-not-hold otherwise. "
                    "--model-only judges the memory half alone: holds if in band at more than half "
                    "of the points, holds-partly at some, does-not-hold at none.",
    .flags = MC_EXP_MODEL_ONLY,
    .default_repeats = 5,
    .default_warmup = 2,
    .extra = EXTRA,
};

#define MIB (1024.0 * 1024.0)
#define MEM_LO 0.30
#define MEM_HI 0.50
#define SPD_LO 1.5
#define SPD_HI 3.0
#define GEMM_TARGET_FLOP 5e10   /* per timed sample: ~1 ms of fp32 GEMM on an H100 */
#define GEMM_MAX_ITERS 1000
#define GEMM_CHECKS 16          /* sampled entries checked against the host */
#define SEED_W 0xC05000000001ull
#define SEED_X 0xC05000000002ull
#define NP 3                    /* fp32, fp16, bf16 */
#define NB 5

typedef struct {
    const char *name;
    int layers, width;
    int64_t batch[NB], quick[2];
} shape;

static const shape SHAPES[2] = {
    {"weight_bound", 4, 4096, {32, 128, 512, 2048, 8192}, {32, 2048}},
    {"activation_bound", 8, 1024, {128, 512, 2048, 8192, 32768}, {512, 8192}},
};

/* ============================================================== GEMM throughput */

/* Element i of a seeded stream: k/64 for k in [-64, 64), exact in fp32, fp16
 * and bf16, so fp32 accumulation of up to 4096 products is exact. */
__host__ __device__ static inline float seeded(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((int)(z >> 57) - 64) / 64.0f;
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

typedef struct {
    cublasHandle_t h;
    cudaStream_t stream;
    mc_event_timer et;
    void *W, *X, *C;   /* H x H, H x Bmax, H x Bmax elements, 4 bytes each at most */
} gemm_rig;

/* C (H x B, column-major) = W^T X: PyTorch's Linear forward, out^T = W x^T. */
static void gemm(gemm_rig *g, int prec, int H, int64_t B)
{
    const float one = 1.0f, zero = 0.0f;
    cudaDataType_t t = dtype_of(prec);
    CHECK_CUBLAS(cublasGemmEx(g->h, CUBLAS_OP_T, CUBLAS_OP_N, H, (int)B, H, &one, g->W, t, H, g->X,
                              t, H, &zero, g->C, t, H, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* FLOP/s of the layer GEMM, reps samples; 0 samples and a verify failure on a wrong result. */
static mc_stats gemm_rate(mc_run *run, gemm_rig *g, int prec, int H, int64_t B)
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
    for (int r = 0; r < reps; r++) {
        mc_event_timer_start(&g->et);
        for (int i = 0; i < iters; i++) gemm(g, prec, H, B);
        mc_event_timer_stop(&g->et);
        x[r] = flop * iters / mc_event_timer_elapsed_s(&g->et);
    }
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

/* ============================================================== one training point */

typedef struct {
    bool oom;
    uint64_t peak, reserved, cat[MC_WL_NCAT];
    mc_stats t;
} fig;

static fig run_point(mc_run *run, const shape *sh, int64_t B, int prec, int warm, int reps)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = sh->layers;
    c.in = c.width = c.out = sh->width;
    c.batch = B;
    c.optimizer = sgd_opt ? MC_WL_SGD : MC_WL_ADAM;
    c.precision = (mc_wl_precision)prec;
    char what[96], err[256];
    snprintf(what, sizeof what, "%s B=%lld %s", sh->name, (long long)B,
             mc_wl_precision_name((mc_wl_precision)prec));
    fig f;
    memset(&f, 0, sizeof f);
    double *t = (double *)mc_xmalloc((size_t)reps * sizeof *t);
    int n = 0;
    bool steady = true;
    mc_workload *w = mc_workload_create(&c, run->on_gpu, NULL, err, sizeof err);
    CHECK(w != NULL, "workload %s: %s", what, err);
    for (int s = 0; s < warm + reps; s++) {
        mc_workload_step_result r;
        if (mc_workload_step(w, &r) != MC_WL_OK) {
            f.oom = true;
            break;
        }
        if (run->on_gpu && !isfinite(r.loss))
            mc_verify_failed(run, what, "step %d: loss %g is not finite", r.step, r.loss);
        if (s < warm) continue;
        if (n == 0) memcpy(f.cat, r.peak_by_category, sizeof f.cat);
        else if (r.peak_allocated != f.peak) steady = false;
        if (r.peak_allocated > f.peak) f.peak = r.peak_allocated;
        if (r.peak_reserved > f.reserved) f.reserved = r.peak_reserved;
        t[n++] = r.step_time_s;
    }
    char e2[256];
    if (ca_check_invariants(mc_workload_allocator(w), e2, sizeof e2) != 0)
        mc_verify_failed(run, what, "allocator invariants: %s", e2);
    if (!f.oom && !steady) mc_verify_failed(run, what, "the peak differs between measured steps");
    mc_workload_destroy(w);
    f.t = mc_stats_of(t, (size_t)n);
    free(t);
    return f;
}

/* Appends ",B" (or "B" first) to a list of batches. */
static void append_batch(char *buf, size_t len, int64_t B)
{
    size_t u = strlen(buf);
    if (u + 1 < len) snprintf(buf + u, len - u, "%s%lld", u ? "," : "", (long long)B);
}

/* The category holding most bytes at the peak. */
static const char *top_category(const uint64_t cat[MC_WL_NCAT])
{
    int best = 0;
    for (int c = 1; c < MC_WL_NCAT; c++)
        if (cat[c] > cat[best]) best = c;
    return mc_wl_category_name((mc_wl_category)best);
}

/* ============================================================== main */

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const bool q = run.opt.quick, gpu = run.on_gpu;
    const int nb = q ? 2 : NB;
    const int warm = gpu ? (run.opt.warmup > 1 ? run.opt.warmup : 1) : 1;
    const int reps = gpu ? run.opt.repeats : 1;
    const char *const PN[NP] = {"fp32", "fp16", "bf16"};
    mc_log(&run, "2 shapes x %d batches x fp32/fp16/bf16, %s, %d warm-up + %d measured steps", nb,
           sgd_opt ? "SGD" : "Adam", warm, reps);

    int n_mem = 0, mem_in = 0, n_spd = 0, spd_in = 0;
    for (int si = 0; si < 2; si++) {
        const shape *sh = &SHAPES[si];
        const int64_t *Bs = q ? sh->quick : sh->batch;
        gemm_rig g;
        memset(&g, 0, sizeof g);
        if (gpu) {
            size_t bmax = (size_t)Bs[nb - 1], H = (size_t)sh->width;
            CHECK_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
            CHECK_CUBLAS(cublasCreate(&g.h));
            CHECK_CUBLAS(cublasSetStream(g.h, g.stream));
            CHECK_CUBLAS(cublasSetMathMode(g.h, CUBLAS_DEFAULT_MATH)); /* no TF32, as PyTorch */
            mc_event_timer_init(&g.et, g.stream);
            CHECK_CUDA(cudaMalloc(&g.W, 4 * H * H));
            CHECK_CUDA(cudaMalloc(&g.X, 4 * H * bmax));
            CHECK_CUDA(cudaMalloc(&g.C, 4 * H * bmax));
        }
        double mlo[NP] = {INFINITY, INFINITY, INFINITY}, mhi[NP] = {-INFINITY, -INFINITY, -INFINITY};
        double slo[NP] = {INFINITY, INFINITY, INFINITY}, shi[NP] = {-INFINITY, -INFINITY, -INFINITY};
        double glo[NP] = {INFINITY, INFINITY, INFINITY}, ghi[NP] = {-INFINITY, -INFINITY, -INFINITY};
        double rlo[NP] = {INFINITY, INFINITY, INFINITY}, rhi[NP] = {-INFINITY, -INFINITY, -INFINITY};
        const char *top_small[NP] = {"", "", ""}, *top_large[NP] = {"", "", ""};
        char mem_at[NP][64], spd_at[NP][64];   /* batches in band, "" when none */
        memset(mem_at, 0, sizeof mem_at);
        memset(spd_at, 0, sizeof spd_at);
        for (int bi = 0; bi < nb; bi++) {
            const int64_t B = Bs[bi];
            const double b = (double)B;
            fig f[NP];
            mc_stats gr[NP];
            for (int p = 0; p < NP; p++) {
                char var[48];
                snprintf(var, sizeof var, "%s_%s", sh->name, PN[p]);
                if (gpu) {
                    gr[p] = gemm_rate(&run, &g, p, sh->width, B);
                    mc_emit(&run, var, "batch", b, "gemm_flop_rate", "FLOP/s", gr[p], "ok",
                            "one layer's forward GEMM alone, CUDA events");
                }
                f[p] = run_point(&run, sh, B, p, warm, reps);
                if (f[p].oom) {
                    mc_emit(&run, var, "batch", b, "peak_allocated", "bytes", mc_stats_one(NAN),
                            "oom", "the step ran out of memory");
                    continue;
                }
                mc_emit_value(&run, var, "batch", b, "peak_allocated", "bytes", (double)f[p].peak,
                              "max_memory_allocated of a step >= 2");
                mc_emit_value(&run, var, "batch", b, "peak_reserved", "bytes",
                              (double)f[p].reserved, "");
                for (int c = 0; c < MC_WL_NCAT; c++) {
                    char m[40];
                    snprintf(m, sizeof m, "peak_%s", mc_wl_category_name((mc_wl_category)c));
                    mc_emit_value(&run, var, "batch", b, m, "bytes", (double)f[p].cat[c],
                                  "live bytes of this category at the peak");
                }
                if (bi == 0) top_small[p] = top_category(f[p].cat);
                if (bi == nb - 1) top_large[p] = top_category(f[p].cat);
                if (gpu) {
                    mc_workload_config c = mc_workload_config_default();
                    c.layers = sh->layers;
                    c.in = c.width = c.out = sh->width;
                    double flop = 6.0 * (double)mc_workload_param_count(&c) * b;
                    mc_emit(&run, var, "batch", b, "step_time", "s", f[p].t, "ok",
                            "CUDA events around the step");
                    mc_emit_value(&run, var, "batch", b, "step_flop_rate", "FLOP/s",
                                  flop / f[p].t.median, "6 * params * batch / median step time");
                }
            }
            for (int p = 1; p < NP && !f[0].oom; p++) {
                if (f[p].oom) continue;
                char var[48];
                snprintf(var, sizeof var, "%s_%s", sh->name, PN[p]);
                double sv = 1.0 - (double)f[p].peak / (double)f[0].peak;
                double rv = 1.0 - (double)f[p].reserved / (double)f[0].reserved;
                mc_emit_value(&run, var, "batch", b, "memory_saving", "ratio", sv,
                              "1 - peak_mixed / peak_fp32 (allocated)");
                mc_emit_value(&run, var, "batch", b, "reserved_saving", "ratio", rv,
                              "1 - reserved_mixed / reserved_fp32");
                n_mem++;
                if (sv >= MEM_LO && sv <= MEM_HI) {
                    mem_in++;
                    append_batch(mem_at[p], sizeof mem_at[p], B);
                }
                mlo[p] = fmin(mlo[p], sv);
                mhi[p] = fmax(mhi[p], sv);
                rlo[p] = fmin(rlo[p], rv);
                rhi[p] = fmax(rhi[p], rv);
                if (!gpu) continue;
                double spd = f[0].t.median / f[p].t.median;
                double noise = hypot(mc_stats_noise(&f[0].t), mc_stats_noise(&f[p].t));
                bool usable = noise <= MC_VERDICT_MAX_NOISE;
                mc_emit(&run, var, "batch", b, "speedup", "ratio", mc_stats_one(spd),
                        usable ? "ok" : "noisy", "t_fp32 / t_mixed (median step times)");
                double gs = gr[p].median / gr[0].median;
                mc_emit_value(&run, var, "batch", b, "gemm_speedup", "ratio", gs,
                              "GEMM FLOP/s mixed / fp32");
                glo[p] = fmin(glo[p], gs);
                ghi[p] = fmax(ghi[p], gs);
                if (!usable) continue;
                n_spd++;
                if (spd >= SPD_LO && spd <= SPD_HI) {
                    spd_in++;
                    append_batch(spd_at[p], sizeof spd_at[p], B);
                }
                slo[p] = fmin(slo[p], spd);
                shi[p] = fmax(shi[p], spd);
            }
        }
        for (int p = 1; p < NP; p++) {
            char speed[200] = "";
            if (gpu)
                snprintf(speed, sizeof speed, "; step speed-up %.2fx..%.2fx, in band at B = %s "
                         "(the GEMM alone %.1fx..%.1fx)", slo[p], shi[p],
                         spd_at[p][0] ? spd_at[p] : "none", glo[p], ghi[p]);
            mc_emit_finding(&run,
                "%s (L=%d, H=%d), %s vs fp32 over B=%lld..%lld: peak allocated saving %.1f%%..%.1f%%, "
                "in band at B = %s; reserved saving %.1f%%..%.1f%%%s. At the peak the largest "
                "category is %s at B=%lld and %s at B=%lld.",
                sh->name, sh->layers, sh->width, PN[p], (long long)Bs[0], (long long)Bs[nb - 1],
                100 * mlo[p], 100 * mhi[p], mem_at[p][0] ? mem_at[p] : "none", 100 * rlo[p],
                100 * rhi[p], speed, top_small[p], (long long)Bs[0], top_large[p],
                (long long)Bs[nb - 1]);
        }
        if (gpu) {
            CHECK_CUDA(cudaStreamSynchronize(g.stream));
            CHECK_CUDA(cudaFree(g.W));
            CHECK_CUDA(cudaFree(g.X));
            CHECK_CUDA(cudaFree(g.C));
            mc_event_timer_destroy(&g.et);
            CHECK_CUBLAS(cublasDestroy(g.h));
            CHECK_CUDA(cudaStreamDestroy(g.stream));
        }
    }
    mc_emit_finding(&run,
        "Why: mixed precision keeps fp32 master weights, fp32 .grad and fp32 optimizer state, and "
        "adds 16-bit casts of the weights for the forward and backward; only the activations "
        "between layers (and their gradients) halve, while the inputs, targets and the loss stay "
        "fp32. So memory falls only where activations dominate the peak (large batch, narrow "
        "layers) and can grow where weights do (the casts, and with Adam the optimizer step, which "
        "no precision touches, is the peak). Speed comes from tensor-core GEMMs, so it grows with "
        "the GEMMs' share of the step.");

    mc_verdict v;
    if (n_mem == 0) v = MC_INCONCLUSIVE;
    else if (gpu) {
        bool m = 2 * mem_in > n_mem, s = n_spd > 0 && 2 * spd_in > n_spd;
        v = m && s ? MC_HOLDS : (mem_in > 0 || spd_in > 0) ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    } else {
        v = 2 * mem_in > n_mem ? MC_HOLDS : mem_in > 0 ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    }
    char speed[160];
    if (gpu)
        snprintf(speed, sizeof speed, "speed-up in %.1f..%.1fx at %d of %d points", SPD_LO, SPD_HI,
                 spd_in, n_spd);
    else
        snprintf(speed, sizeof speed, "speed not measured (model-only): memory half alone");
    mc_emit_verdict(&run, v, "%s: memory saving in %.0f..%.0f%% at %d of %d points; %s.",
                    sgd_opt ? "SGD" : "Adam", 100 * MEM_LO, 100 * MEM_HI, mem_in, n_mem, speed);
    return mc_run_end(&run);
}
