/* c20_memory_breakdown: C20. What the training peak is made of, over batch
 * size: the training workloads with fp32 Adam, the MLP (mlp.h) at two
 * shapes and seed 000's nn.Transformer(d_model=512, batch_first=True) on
 * (B, 100, 512) (tfm.h), the steady step's max_memory_allocated split
 * into weights, grads, optimizer state (with its foreach temporaries),
 * activations, cuBLAS workspaces and other, and the activations' share of it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "experiment.h"
#include "support/steady.h"
#include "workload/core/wl_handle.h"
#include "workload/transformer/tfm.h"
#include "workload/mlp/mlp.h"

static const mc_experiment EXP = {
    .claim = "C20",
    .key = "memory_breakdown",
    .title = "Peak training memory by category (weights, grads, optimizer, activations) over batch size (MLP and Transformer)",
    .seed_claim = "Activations take more than half of training memory and grow with batch size.",
    .method = "Two training workloads, fp32, Adam, PyTorch 2.11's request order: the MLP "
              "(Linear+ReLU) at two shapes, narrow (L=4, H=1024) and wide (L=4, H=4096), over batch "
              "8, 16, ..., 16384 (--quick: narrow at 8, 256, 8192, 16384), and seed 000's model, "
              "nn.Transformer(d_model=512, batch_first=True) (8 heads, 6+6 layers, ff 2048, dropout "
              "0.1; built on the host and moved (.cuda()) as the seed builds it) with MSE on src = tgt shape (B, 100, 512), over batch 4, 8, ..., 256 (--quick: "
              "8 and 32); B=32 is the seed's own input. Step 1 creates Adam's state (the "
              "Transformer's step 2 too is left out: its peak settles from step 3); then "
              "--warmup steps and --repeats measured steps (default 0 and 2). At each step's "
              "max_memory_allocated (peak reset at the step's start) the workload reports the live "
              "bytes of each category: weights, grads, optimizer (exp_avg, exp_avg_sq and the "
              "step's _foreach_sqrt temporaries), activations (inputs, targets, layer outputs and "
              "their gradients), workspace (cuBLAS/cuBLASLt), other (scalars, reduction scratch). "
              "Allocator model over the CUDA backend on a GPU (checked against the model-only run "
              "of the same configuration), the host backend with --model-only.",
    .verdict_rule = "share(B) = activation bytes at the steady peak / peak allocated. For each "
                    "shape (the MLP's two and the Transformer; the note names each with its batch "
                    "range and gives the seed's point), B* = the smallest swept batch from which "
                    "share > 0.5 at every larger "
                    "swept batch. holds if share > 0.5 at every swept batch of every shape; "
                    "holds-partly if share > 0.5 at some batch of some shape (the note gives B* per "
                    "shape); does-not-hold if share <= 0.5 everywhere; inconclusive if a run is out "
                    "of memory below the largest batch.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 2,
    .default_warmup = 0,
    .extra = NULL,
};

typedef struct {
    const char *name;
    bool tfm;          /* the Transformer (layers, width unused) or the MLP */
    int layers;
    int64_t width;
    int64_t batch_min, batch_max;   /* swept in powers of two */
    int64_t quick[4];  /* --quick's batches, 0-terminated when fewer */
    const char *desc;
} shape;

#define TFM_SEQ MC_TFM_SEED000_AMP_SEQ /* seed 000: torch.randn(32, 100, 512) */
#define TFM_D_MODEL 512
#define SEED_BATCH 32
static const shape SHAPES[] = {
    {"narrow", false, 4, 1024, 8, 16384, {8, 256, 8192, 16384}, "MLP L=4, H=1024"},
    {"wide", false, 4, 4096, 8, 16384, {0}, "MLP L=4, H=4096"},
    {"transformer", true, 0, 0, 4, 256, {8, SEED_BATCH, 0},
     "nn.Transformer(d_model=512, batch_first=True), seq 100"},
};
#define NSHAPE 3
#define HALF 0.5

/* The chart's categories, bottom to top; casts (fp32: none) go with other. */
enum { K_WEIGHTS, K_GRADS, K_OPT, K_ACT, K_WS, K_OTHER, NK };
static const char *const KNAME[NK] = {"weights", "grads", "optimizer", "activations",
                                      "workspace", "other"};

typedef struct {
    bool oom;
    bool failed;      /* the workload could not be created */
    mc_stats peak;
    double cat[NK];   /* bytes at the peak of the last measured step */
    double share;     /* activations / peak */
} point;

/* The shape's workload at batch B; NULL with the reason in err. */
static mc_wl *create(const shape *s, int64_t B, bool on_gpu, char *err, size_t len)
{
    if (s->tfm) {
        mc_tfm_config c = mc_tfm_seed000_amp(B, MC_WL_FP32);
        return mc_tfm_handle(mc_tfm_create(&c, on_gpu, NULL, err, len));
    }
    mc_workload_config c = mc_workload_config_default();
    c.layers = s->layers;
    c.in = c.width = c.out = s->width;
    c.batch = B;
    c.optimizer = MC_WL_ADAM;
    return mc_workload_handle(mc_workload_create(&c, on_gpu, NULL, err, len));
}

/* p->failed when a workload cannot be created (recorded as a failed verification). */
static point measure(mc_run *run, const shape *s, int64_t B)
{
    point p;
    memset(&p, 0, sizeof p);
    char err[256] = "";
    mc_wl *w = create(s, B, run->on_gpu, err, sizeof err), *ref = NULL;
    if (!w || (run->on_gpu && !(ref = create(s, B, false, err, sizeof err)))) {
        mc_verify_failed(run, s->name, "batch %lld: the workload cannot be created: %s",
                         (long long)B, err);
        mc_wl_destroy(w);
        p.failed = true;
        return p;
    }
    /* Step 1 creates Adam's state; the Transformer's step 2 is a warm-up too. */
    const int skip = s->tfm ? 2 : 1, W = run->opt.warmup, R = run->opt.repeats;
    /* the median of the measured peaks: a GPU's may move with a block's placement */
    const mc_wl_plan plan = {.warm = skip + W, .reps = R, .on_gpu = run->on_gpu, .peak_may_move = true};
    char what[96];
    snprintf(what, sizeof what, "%s batch %lld", s->name, (long long)B);
    mc_wl_measured f = mc_wl_measure_run(run, w, what, &plan);
    /* the GPU run makes the host model's requests: the model's peak at every
     * step (the MLP's blocks land where the model's do; the Transformer's may
     * not, at the befa603 reference runs' batch 64) */
    if (ref) {
        const mc_wl_plan host = {.warm = skip + W, .reps = R, .peak_may_move = true};
        mc_wl_measured h = mc_wl_measure_run(run, ref, what, &host);
        for (int st = 1; st <= f.n; st++) {
            snprintf(what, sizeof what, "%s batch %lld step %d", s->name, (long long)B, st);
            if (st > h.n)
                mc_verify_failed(run, what, "the host model ran out of memory");
            else
                mc_check_gpu_peak(run, what, f.step[st - 1].peak_allocated,
                                  h.step[st - 1].peak_allocated, s->tfm ? MC_PLACEMENT_TOL : 0.0,
                                  st == skip + W + R);
        }
        mc_wl_measured_free(&h);
    }
    p.oom = f.oom;
    if (!p.oom) {
        double *pk = mc_xmalloc((size_t)R * sizeof *pk);
        for (int i = 0; i < R; i++) pk[i] = (double)f.step[skip + W + i].peak_allocated;
        p.peak = mc_stats_of(pk, (size_t)R);
        free(pk);
        const mc_workload_step_result *r = &f.step[f.n - 1]; /* the last measured step */
        const uint64_t *pc = r->peak_by_category;
        p.cat[K_WEIGHTS] = (double)pc[MC_WL_WEIGHTS];
        p.cat[K_GRADS] = (double)pc[MC_WL_GRADS];
        p.cat[K_OPT] = (double)pc[MC_WL_OPTIMIZER];
        p.cat[K_ACT] = (double)pc[MC_WL_ACTIVATIONS];
        p.cat[K_WS] = (double)pc[MC_WL_WORKSPACE];
        p.cat[K_OTHER] = (double)(pc[MC_WL_OTHER] + pc[MC_WL_CASTS]);
        p.share = p.cat[K_ACT] / (double)r->peak_allocated;
    }
    mc_wl_measured_free(&f);
    return p;
}

static void emit_point(mc_run *run, const shape *s, int64_t B, const point *p)
{
    const double pv = (double)B;
    if (p->oom) {
        mc_emit(run, s->name, "batch", pv, "peak_allocated", "bytes", mc_stats_one(NAN), "oom",
                "out of memory");
        return;
    }
    mc_emit(run, s->name, "batch", pv, "peak_allocated", "bytes", p->peak, "ok",
            "max_memory_allocated() of the measured steady steps");
    for (int k = 0; k < NK; k++) {
        char metric[48];
        snprintf(metric, sizeof metric, "peak_%s", KNAME[k]);
        mc_emit_value(run, s->name, "batch", pv, metric, "bytes", p->cat[k],
                      "live bytes of the category at the last measured step's peak");
    }
    mc_emit_value(run, s->name, "batch", pv, "activation_share", "ratio", p->share,
                  "activations / peak allocated");
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const bool q = run.opt.quick;

    int above_total = 0, points = 0;
    bool bad_oom = false, tfm_failed = false;
    double seed_share = NAN, seed_act = NAN, seed_peak = NAN;
    char per_shape[1200] = "";
    size_t used = 0;
    for (int si = 0; si < NSHAPE; si++) {
        const shape *s = &SHAPES[si];
        int64_t batches[32];
        int nb = 0;
        if (q)
            for (int i = 0; i < 4 && s->quick[i]; i++) batches[nb++] = s->quick[i];
        else
            for (int64_t b = s->batch_min; b <= s->batch_max; b *= 2) batches[nb++] = b;
        if (nb == 0) continue;   /* --quick leaves the shape out */
        point pts[32];
        int crossing = -1, above = 0;
        bool failed = false;
        for (int i = 0; i < nb; i++) {
            mc_log(&run, "%s, batch %lld", s->name, (long long)batches[i]);
            pts[i] = measure(&run, s, batches[i]);
            if (pts[i].failed) { /* the same error at every batch: recorded once */
                failed = true;
                tfm_failed |= s->tfm;
                break;
            }
            emit_point(&run, s, batches[i], &pts[i]);
            if (pts[i].oom) { /* only the largest batches may run out */
                for (int j = i + 1; j < nb; j++)
                    mc_emit(&run, s->name, "batch", (double)batches[j], "peak_allocated", "bytes",
                            mc_stats_one(NAN), "oom", "not run: a smaller batch was out of memory");
                bad_oom |= i == 0;
                nb = i;
                break;
            }
            if (s->tfm && batches[i] == SEED_BATCH) {
                seed_share = pts[i].share;
                seed_act = pts[i].cat[K_ACT];
                seed_peak = pts[i].peak.median;
            }
        }
        if (failed) continue;
        for (int i = nb - 1; i >= 0 && pts[i].share > HALF; i--) crossing = i;
        for (int i = 0; i < nb; i++) above += pts[i].share > HALF;
        above_total += above;
        points += nb;
        if (nb == 0) continue;
        const point *lo = &pts[0], *hi = &pts[nb - 1];
        char cross[96];
        if (crossing >= 0)
            snprintf(cross, sizeof cross, "above half from B=%lld", (long long)batches[crossing]);
        else
            snprintf(cross, sizeof cross, "never above half up to B=%lld", (long long)batches[nb - 1]);
        mc_emit_finding(&run,
            "%s (%s): at B=%lld the peak is %.1f MiB with activations %.1f MiB "
            "(share %.3f; weights %.1f, grads %.1f, optimizer %.1f, workspace %.1f MiB); at "
            "B=%lld it is %.1f MiB with activations %.1f MiB (share %.3f; weights %.1f, grads "
            "%.1f, optimizer %.1f MiB). Activation share %s; above half at %d of %d batches.",
            s->name, s->desc, (long long)batches[0],
            lo->peak.median / 1048576.0, lo->cat[K_ACT] / 1048576.0, lo->share,
            lo->cat[K_WEIGHTS] / 1048576.0, lo->cat[K_GRADS] / 1048576.0,
            lo->cat[K_OPT] / 1048576.0, lo->cat[K_WS] / 1048576.0, (long long)batches[nb - 1],
            hi->peak.median / 1048576.0, hi->cat[K_ACT] / 1048576.0, hi->share,
            hi->cat[K_WEIGHTS] / 1048576.0, hi->cat[K_GRADS] / 1048576.0,
            hi->cat[K_OPT] / 1048576.0, cross, above, nb);
        int zero_act = 0;
        while (zero_act < nb && pts[zero_act].cat[K_ACT] == 0) zero_act++;
        if (zero_act > 0)
            mc_emit_finding(&run, "%s: up to B=%lld the step's peak is Adam's update (weights, "
                            "grads, exp_avg, exp_avg_sq and _foreach_sqrt live at once, no "
                            "activations); from B=%lld the forward/backward peak is higher and "
                            "activations are part of it.", s->name,
                            (long long)batches[zero_act - 1],
                            zero_act < nb ? (long long)batches[zero_act] : 0LL);
        used += (size_t)snprintf(per_shape + used, used < sizeof per_shape ? sizeof per_shape - used : 0,
                                 "%s%s (%s, B=%lld..%lld): share %.3f at B=%lld to %.3f at B=%lld, %s",
                                 used ? "; " : "", s->name, s->desc, (long long)batches[0],
                                 (long long)batches[nb - 1], lo->share, (long long)batches[0],
                                 hi->share, (long long)batches[nb - 1], cross);
    }
    char seed[240];
    if (isfinite(seed_share)) {
        snprintf(seed, sizeof seed, "seed 000's own model and input (Transformer, (%d, %d, %d)): "
                 "activations %.1f of %.1f MiB, share %.3f", SEED_BATCH, TFM_SEQ, TFM_D_MODEL,
                 seed_act / 1048576.0, seed_peak / 1048576.0, seed_share);
        mc_emit_finding(&run, "Seed 000's own code, nn.Transformer(d_model=512, batch_first=True) "
                        "on (%d, %d, %d), fp32 Adam: the steady peak is %.1f MiB, of which "
                        "activations are %.1f MiB (share %.3f).", SEED_BATCH, TFM_SEQ,
                        TFM_D_MODEL, seed_peak / 1048576.0, seed_act / 1048576.0, seed_share);
    } else {
        snprintf(seed, sizeof seed, "seed 000's own point (Transformer, B=%d) not measured%s",
                 SEED_BATCH, tfm_failed ? ": the Transformer could not run (see the failed row)"
                                        : "");
    }
    mc_verdict v = bad_oom || points == 0 ? MC_INCONCLUSIVE
                 : above_total == points  ? MC_HOLDS
                 : above_total > 0        ? MC_HOLDS_PARTLY
                                          : MC_DOES_NOT_HOLD;
    mc_emit_verdict(&run, v, "activations / steady peak allocated, fp32 Adam; rests on %s%s (above "
                    "0.5 at %d of %d points); %s.", per_shape[0] ? per_shape : "no point",
                    tfm_failed ? "; not the Transformer, which could not run" : "", above_total,
                    points, seed);
    return mc_run_end(&run);
}
