/* c24_sharded_training: C24. Does fully sharded data parallelism (FSDP)
 * cut memory per GPU by up to 10x?
 *
 * The training workload (an MLP, fp32) under DDP, ZeRO-2 and FSDP as
 * PyTorch 2.11 runs them (common/workload/sharded/sharded_seq.h: the request order
 * of DDP's Reducer and FSDP2's fully_shard): per-rank peak allocated
 * predicted by the allocator model for N = 1..64 ranks (no GPU needed), and
 * on N GPUs (--gpus, default every GPU) the whole training step, a process
 * a rank (build/sharded_model --gpu, sharded_procs.h): each rank's peak and
 * end-of-step allocated against the model at every step, its step time,
 * and its parameters checked against one GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "check_cuda.h"
#include "child.h"
#include "experiment.h"
#include "workload/sharded/sharded_gpu.h"
#include "workload/sharded/sharded_procs.h"
#include "workload/sharded/sharded_seq.h"

static int layers_opt = 8;
static int batch_opt = 32;
static int max_ranks_opt = 64;
static int gpus_opt = 0; /* 0: every GPU there is */
static int width_opt = 0; /* 0: 4096, --quick 1024 */
static const char *optimizer_opt = "adam";

static const mc_extra_opt EXTRA[] = {
    {"layers", MC_OPT_COUNT, &layers_opt, "Linear layers, 2..64 (default 8)"},
    {"batch", MC_OPT_COUNT, &batch_opt, "rows per rank per step (default 32)"},
    {"optimizer", MC_OPT_STRING, &optimizer_opt, "sgd, momentum or adam (default adam)"},
    {"max-ranks", MC_OPT_COUNT, &max_ranks_opt, "largest N predicted, a power of two <= 4096 (default 64)"},
    {"gpus", MC_OPT_COUNT, &gpus_opt, "GPUs for the measured run, 2..16 (default: every GPU, at most 16)"},
    {"width", MC_OPT_COUNT, &width_opt, "width of the measured run (default 4096, --quick 1024)"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static mc_wl_optimizer optimizer;

static const char *validate(const mc_options *o)
{
    (void)o;
    if (layers_opt < 2 || layers_opt > 64) return "--layers must be from 2 to 64";
    if (max_ranks_opt > 4096 || (max_ranks_opt & (max_ranks_opt - 1)))
        return "--max-ranks must be a power of two up to 4096";
    if (gpus_opt != 0 && (gpus_opt < 2 || gpus_opt > MC_SH_MAX_GPUS)) return "--gpus must be from 2 to 16";
    if (width_opt > 65536) return "--width must be at most 65536";
    if (mc_wl_optimizer_parse(optimizer_opt, MC_WL_ADAM, &optimizer) != 0)
        return "--optimizer must be sgd, momentum or adam";
    return NULL;
}

static const mc_experiment EXP = {
    .claim = "C24",
    .key = "sharded_training",
    .title = "Per-rank memory of DDP, ZeRO-2 and FSDP over 1..64 ranks, and their cost on the GPUs",
    .seed_claim = "Fully sharded data parallelism (FSDP) shards parameters, gradients and optimizer "
                  "state over the GPUs, for up to 10x less memory per GPU.",
    .method = "The training workload (Linear+ReLU MLP, L=8 layers (--layers) of width 1024, 2048, "
              "4096, 8192 (--quick 256, 1024), input and output the width, 32 rows a rank (--batch), "
              "fp32, Adam (--optimizer)) under three wrappers, with each rank's requests in PyTorch "
              "2.11's order: DDP (the Reducer's flat gradient buckets, one bucket at step 1, rebuilt "
              "at 1 MiB then 25 MiB from step 2), ZeRO-2 (FSDP2 fully_shard per Linear with "
              "reshard_after_forward=False) and FSDP (fully_shard per Linear: each layer all-gathered "
              "before use and freed after, gradients reduce-scattered). Model: rank 0's largest step "
              "peak allocated over 3 steps, for N = 1, 2, 4 .. 64 (--max-ranks) and N = the width "
              "(one row of each parameter a rank: what stays unsharded), host backend, no capacity limit. GPU (--gpus: every GPU, width 4096 or "
              "--width; --quick 1024): the whole training step on each GPU, one process a rank "
              "(build/sharded_model --gpu, started as torchrun starts its workers; a rank that ends "
              "badly stops the others), each rank's allocator model over the CUDA backend: forward, loss, backward and optimizer "
              "with the workload's kernels, NCCL's collectives (NCCL_NVLS_ENABLE=0) on their own "
              "streams where PyTorch issues them (DDP's bucket all-reduces during the backward; "
              "FSDP2's all-gathers ahead of each layer, its reduce-scatters during the backward), "
              "1 + max(--warmup, 1) + --repeats steps, each rank idle 0.3 s after each (as PyTorch's "
              "reference pauses); per rank: max_memory_allocated and "
              "memory_allocated at each step's end, and the step's time (CUDA events). Checked: "
              "after the steps every rank's parameters equal one GPU trained on all ranks' batches "
              "(relative 1e-5) and each rank's loss falls.",
    .verdict_rule = "R(W, N) = peak(DDP, N=1) / peak(FSDP, N) from the model, per width W. holds if "
                    "R >= 10 at some N <= --max-ranks for the largest width; holds-partly if not, "
                    "but R >= 2 there (the unsharded activations, workspaces and one gathered "
                    "layer's parameters, gradient and communication buffers bound it); "
                    "does-not-hold if R < 2. On GPUs: inconclusive if a rank's measured peak or "
                    "end-of-step allocated differs from the model's at any step.",
    .flags = MC_EXP_MODEL_ONLY,
    .default_repeats = 5,
    .default_warmup = 1,
    .extra = EXTRA,
    .validate = validate,
};

static const int64_t WIDTHS[] = {1024, 2048, 4096, 8192};
static const int64_t WIDTHS_QUICK[] = {256, 1024};
#define MAX_WIDTHS 4
#define MODEL_STEPS 3
#define GOAL 10.0
#define SOME 2.0
static const mc_sh_mode MODES[3] = {MC_SH_DDP, MC_SH_ZERO2, MC_SH_FSDP};

static mc_sh_config config(int64_t width, mc_sh_mode mode, int world)
{
    mc_sh_config c;
    memset(&c, 0, sizeof c);
    c.wl = mc_sh_net_default();
    c.wl.layers = layers_opt;
    c.wl.in = c.wl.width = c.wl.out = width;
    c.wl.batch = batch_opt;
    c.wl.optimizer = optimizer;
    c.wl.host_capacity = 1ULL << 50; /* predictions: no capacity limit */
    c.mode = mode;
    c.world = world;
    c.rank = 0;
    return c;
}

static uint64_t predict(mc_run *run, int64_t width, mc_sh_mode mode, int world)
{
    mc_sh_config c = config(width, mode, world);
    char err[256];
    uint64_t peak = 0;
    if (mc_sh_predict_peak(&c, MODEL_STEPS, &peak, err, sizeof err) != 0) {
        mc_log(run, "model: %s", err);
        exit(MC_EXIT_USAGE); /* a configuration the model refuses: bad input */
    }
    return peak;
}

static double gib(uint64_t b) { return (double)b / (double)(1ULL << 30); }

/* ------------------------------------------------------------ GPU run */

/* Each rank's figures over the measured steps [first, steps). */
static mc_stats over_steps(const uint64_t *u, const double *d, int first, int steps)
{
    double v[MC_SH_MAX_STEPS];
    for (int s = first; s < steps; s++) v[s - first] = u ? (double)u[s] : d[s];
    return mc_stats_of(v, (size_t)(steps - first));
}

/* What the measured run says the saving costs, for the verdict ("" when
 * a wrapper was not measured). */
static char measured_cost[320];

/* Between the timed steps every rank idles as long as PyTorch's reference
 * does (tests/torch/fsdp_reference.py's REAP_S, so that NCCL's watchdog lets
 * go of a step's tensors), so that the two step times are taken alike. */
#define PAUSE_MS 300

/* This experiment's own model of each rank at each step, to hold the
 * ranks' against (they are build/sharded_model's, from its flags). */
static mc_sh_step_result own[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS];

/* Runs the GPU step of c as gpus_opt processes of build/sharded_model
 * (beside this program), one a GPU (sharded_procs.h), with the check;
 * their figures into res, and this program's model of each rank into own. */
static int run_ranks(const mc_sh_config *c, int steps, mc_sh_gpu_result *res, char *err, size_t len)
{
    char exe[1024], a[12][32];
    if (mc_self_exe(exe, sizeof exe) != 0 || !strrchr(exe, '/')) {
        snprintf(err, len, "cannot find this program's path (/proc/self/exe)");
        return -1;
    }
    snprintf(strrchr(exe, '/') + 1, sizeof exe - (size_t)(strrchr(exe, '/') + 1 - exe), "sharded_model");
    snprintf(a[0], sizeof a[0], "%d", c->world);
    snprintf(a[1], sizeof a[1], "%d", c->wl.layers);
    snprintf(a[2], sizeof a[2], "%lld", (long long)c->wl.width);
    snprintf(a[3], sizeof a[3], "%lld", (long long)c->wl.batch);
    snprintf(a[4], sizeof a[4], "%d", steps);
    snprintf(a[5], sizeof a[5], "%d", c->wl.sm_count);
    snprintf(a[6], sizeof a[6], "%llu", (unsigned long long)c->wl.seed);
    snprintf(a[7], sizeof a[7], "%d", PAUSE_MS);
    char *argv[] = {exe, "--gpu", "--verify", "--pause-ms", a[7], "--mode", (char *)mc_sh_mode_name(c->mode), "--world", a[0],
                    "--layers", a[1], "--in", a[2], "--width", a[2], "--out", a[2], "--batch", a[3],
                    "--optimizer", (char *)optimizer_opt, "--steps", a[4], "--sms", a[5], "--seed", a[6], NULL};
    for (int q = 0; q < c->world; q++) { /* this program's own model of every rank */
        mc_sh_config m = *c;
        m.rank = q;
        mc_sh_run *r = mc_sh_create(&m, NULL, NULL, err, len);
        if (!r) return -1;
        for (int s = 0; s < steps; s++) mc_sh_step(r, &own[q][s]);
        mc_sh_destroy(r);
    }
    const double limit = 2.0 * (steps + 4) * MC_SH_DEFAULT_DEADLINE_S;
    if (mc_sh_procs_run(argv, c->world, limit, NULL, res, err, len) != 0) return -1;
    res->steps = steps;
    return 0;
}

/* Runs each wrapper's whole training step on the GPUs (sharded_gpu.h), a
 * process a rank, checked against one GPU; returns false when a rank's
 * measured peak or end-of-step allocated differs from its host model's at
 * any step (the ranks' model or this program's). */
static bool gpu_part(mc_run *run, int64_t width)
{
    const int first = 1 + (run->opt.warmup > 1 ? run->opt.warmup : 1); /* step 1 makes Adam's state, 2 rebuilds DDP's buckets */
    const int steps = first + run->opt.repeats;
    static mc_sh_gpu_result res[3];
    char err[256], note[320], variant[32];
    bool model_ok = true;
    double time_med[3] = {0, 0, 0}, peak_med[3] = {0, 0, 0};
    int sms = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    if (steps > MC_SH_MAX_STEPS) {
        mc_log(run, "--warmup + --repeats: at most %d steps on the GPUs", MC_SH_MAX_STEPS - 2);
        exit(MC_EXIT_USAGE);
    }
    for (int m = 0; m < 3; m++) {
        const char *name = mc_sh_mode_name(MODES[m]);
        mc_sh_config c = config(width, MODES[m], gpus_opt);
        c.wl.host_capacity = mc_sh_net_default().host_capacity;
        c.wl.sm_count = sms; /* the reduction scratch is sized for this GPU's SMs, as PyTorch's */
        mc_log(run, "%s on %d GPUs, width %lld: %d steps and the one-GPU check, a process a rank", name, gpus_opt,
               (long long)width, steps);
        if (run_ranks(&c, steps, &res[m], err, sizeof err) != 0) {
            mc_emit(run, name, "ranks", gpus_opt, "peak_allocated", "bytes", mc_stats_of(NULL, 0), "failed", err);
            model_ok = false;
            continue;
        }
        mc_sh_gpu_result *r = &res[m];
        if (r->oom_rank >= 0) {
            snprintf(note, sizeof note, "rank %d ran out of device memory at step %d (width %lld, %d GPUs)",
                     r->oom_rank, r->oom_step, (long long)width, gpus_opt);
            mc_emit(run, name, "ranks", gpus_opt, "peak_allocated", "bytes", mc_stats_of(NULL, 0), "oom", note);
            continue;
        }
        if (!r->check.passed)
            mc_verify_failed(run, name, "%s", r->check.oom ? "the check ran out of memory"
                             : "after the check's steps a rank's parameters are off one GPU's, or its loss "
                               "did not fall (see the step_time rows' note)");
        for (int q = 0; q < gpus_opt; q++) {
            mc_stats sp = over_steps(r->peak[q], NULL, first, steps), se = over_steps(r->end[q], NULL, first, steps),
                     st = over_steps(NULL, r->time_s[q], first, steps);
            int off = 0;
            for (int s = 0; s < steps; s++)
                off += r->peak[q][s] != r->model_peak[q][s] || r->end[q][s] != r->model_end[q][s] ||
                       r->model_peak[q][s] != own[q][s].peak_allocated || r->model_end[q][s] != own[q][s].allocated_end;
            if (off) model_ok = false;
            snprintf(variant, sizeof variant, "%s_rank%d", name, q);
            snprintf(note, sizeof note, "width %lld, %d GPUs; rank %d, steps %d-%d of %d: max_memory_allocated "
                     "per step, the allocator model over the CUDA backend; the host model %s at %s",
                     (long long)width, gpus_opt, q, first + 1, steps, steps,
                     off ? "DIFFERS" : "equals it", off ? "some steps" : "every step");
            mc_emit(run, variant, "ranks", gpus_opt, "peak_allocated", "bytes", sp, "ok", note);
            mc_emit(run, variant, "ranks", gpus_opt, "allocated_end", "bytes", se, "ok",
                    "memory_allocated after zero_grad");
            snprintf(note, sizeof note, "CUDA events around the whole step on the default stream (forward, "
                     "backward, optimizer, every collective on its own stream); the check: after %d steps%s "
                     "every rank's parameters within %.1e of one GPU's (rank %d's parameter %d the worst; "
                     "1e-5 allowed), the loss %s", steps,
                     c.wl.optimizer == MC_WL_ADAM ? " with momentum in Adam's place" : "", r->check.max_rel,
                     r->check.worst_rank, r->check.worst_param, r->check.loss_falls ? "falling" : "NOT falling");
            mc_emit(run, variant, "ranks", gpus_opt, "step_time", "s", st, "ok", note);
            if (q == 0) {
                time_med[m] = st.median;
                peak_med[m] = sp.median;
            }
        }
    }
    if (peak_med[0] > 0 && peak_med[1] > 0 && peak_med[2] > 0)
        snprintf(measured_cost, sizeof measured_cost, "; measured on %d GPUs at width %lld (rank 0, whole "
                 "step): ZeRO-2 %.2fx less memory a rank than DDP at %.2fx its step time, FSDP %.2fx less at "
                 "%.2fx; more ranks than that are the model's extrapolation", gpus_opt, (long long)width,
                 peak_med[0] / peak_med[1], time_med[1] / time_med[0], peak_med[0] / peak_med[2],
                 time_med[2] / time_med[0]);
    if (peak_med[0] > 0 && peak_med[1] > 0 && peak_med[2] > 0)
        mc_emit_finding(run, "On %d GPUs at width %lld (measured, rank 0, the whole step): DDP %.2f GiB a "
                        "rank in %.2f ms; ZeRO-2 %.2f GiB (%.2fx less) in %.2f ms (%.2fx DDP's time); FSDP "
                        "%.2f GiB (%.2fx less) in %.2f ms (%.2fx DDP's time).",
                        gpus_opt, (long long)width, gib((uint64_t)peak_med[0]), time_med[0] * 1e3,
                        gib((uint64_t)peak_med[1]), peak_med[0] / peak_med[1], time_med[1] * 1e3,
                        time_med[1] / time_med[0], gib((uint64_t)peak_med[2]), peak_med[0] / peak_med[2],
                        time_med[2] * 1e3, time_med[2] / time_med[0]);
    return model_ok;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const int64_t *widths = run.opt.quick ? WIDTHS_QUICK : WIDTHS;
    const int nw = run.opt.quick ? 2 : 4;
    char variant[32], note[256];

    /* ---- model: every wrapper, width and N ---- */
    double best_r[MAX_WIDTHS];
    int n10[MAX_WIDTHS];
    for (int i = 0; i < nw; i++) {
        const int64_t W = widths[i];
        const uint64_t ddp1 = predict(&run, W, MC_SH_DDP, 1);
        n10[i] = 0;
        best_r[i] = 0;
        for (int m = 0; m < 3; m++) {
            snprintf(variant, sizeof variant, "%s_w%lld", mc_sh_mode_name(MODES[m]), (long long)W);
            snprintf(note, sizeof note, "model: rank 0's largest step peak over %d steps; L=%d, width "
                     "%lld, %d rows a rank, %s, fp32", MODEL_STEPS, layers_opt, (long long)W,
                     batch_opt, optimizer_opt);
            for (int n = 1; n <= max_ranks_opt; n *= 2) {
                uint64_t p = m == 0 && n == 1 ? ddp1 : predict(&run, W, MODES[m], n);
                double r = (double)ddp1 / (double)p;
                mc_emit_value(&run, variant, "ranks", n, "peak_allocated_model", "bytes", (double)p, note);
                mc_emit_value(&run, variant, "ranks", n, "reduction_model", "ratio", r,
                              "model: peak(DDP, N=1) / this peak");
                if (MODES[m] == MC_SH_FSDP) {
                    if (r > best_r[i]) best_r[i] = r;
                    if (!n10[i] && r >= GOAL) n10[i] = n;
                }
            }
        }
        /* What stays unsharded: N = W ranks hold one row of every
         * parameter each, with no padding (FSDP2 pads every dim-0 to a
         * multiple of N, so a larger N would gather more than the layer). */
        uint64_t floor = predict(&run, W, MC_SH_FSDP, (int)W);
        snprintf(variant, sizeof variant, "fsdp_w%lld", (long long)W);
        mc_emit_value(&run, variant, "ranks", (double)W, "peak_allocated_model", "bytes",
                      (double)floor, "model: what stays unsharded (N = width: one row of each "
                      "parameter a rank, no padding)");
        double P = 0;
        for (int l = 0; l < layers_opt; l++) P += (double)W * (double)W + (double)W;
        if (n10[i])
            mc_emit_finding(&run, "Width %lld (%.0fM parameters; model): DDP %.2f GiB a rank; FSDP "
                            "reaches %.0fx less at N = %d, %.1fx at N = %d; at N = %lld (one row "
                            "of each parameter a rank) %.2f GiB (%.1fx): activations, workspaces and one gathered "
                            "layer with its gradient and buffers stay whole.",
                            (long long)W, P / 1e6, gib(ddp1), GOAL, n10[i], best_r[i], max_ranks_opt,
                            (long long)W, gib(floor), (double)ddp1 / (double)floor);
        else
            mc_emit_finding(&run, "Width %lld (%.0fM parameters; model): DDP %.2f GiB a rank; FSDP "
                            "at most %.1fx less (N = %d), never %.0fx; at N = %lld (one row of "
                            "each parameter a rank) %.2f GiB (%.1fx): activations, workspaces and one gathered layer "
                            "with its gradient and buffers stay whole.",
                            (long long)W, P / 1e6, gib(ddp1), best_r[i], max_ranks_opt, GOAL,
                            (long long)W, gib(floor), (double)ddp1 / (double)floor);
    }

    /* ---- GPUs ---- */
    bool model_ok = true;
    if (run.on_gpu) {
        char why[256];
        if (!gpus_opt) { /* every GPU there is */
            int n = 0;
            if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
            gpus_opt = n < 2 ? 2 : n > MC_SH_MAX_GPUS ? MC_SH_MAX_GPUS : n;
        }
        if (!mc_sh_gpu_available(gpus_opt, why, sizeof why)) mc_run_waive(&run, "%s", why);
        model_ok = gpu_part(&run, width_opt ? width_opt : run.opt.quick ? 1024 : 4096);
    }

    /* ---- verdict ---- */
    const int L = nw - 1;
    mc_verdict v = !model_ok ? MC_INCONCLUSIVE
                   : n10[L] ? MC_HOLDS : best_r[L] >= SOME ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    char which[128] = "";
    size_t off = 0;
    for (int i = 0; i < nw; i++)
        if (n10[i])
            off += (size_t)snprintf(which + off, sizeof which - off, "%s%lld at N=%d", off ? ", " : "",
                                    (long long)widths[i], n10[i]);
    mc_emit_verdict(&run, v, "model: peak(DDP, N=1)/peak(FSDP, N) reaches %.1fx at N=%d for the largest "
                    "width %lld (goal %.0fx); 10x reached for widths: %s%s%s",
                    best_r[L], max_ranks_opt, (long long)widths[L], GOAL, off ? which : "none",
                    !model_ok ? "; on the GPUs a rank's figures differ from the model's (or a run failed)" : "",
                    measured_cost);
    return mc_run_end(&run);
}
