/* c08_checkpointing: C08. Peak memory and step time of the suite's training
 * workload with and without activation checkpointing, over depth, at a
 * fixed width and an activation-heavy batch (common/workload.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_model.h"
#include "check.h"
#include "experiment.h"
#include "stats.h"
#include "verdict.h"
#include "workload/workload.h"

static const mc_experiment EXP = {
    .claim = "C08",
    .key = "checkpointing",
    .title = "Peak memory and step time with and without activation checkpointing, over depth",
    .seed_claim = "Gradient checkpointing saves 60-70% of memory for 20-30% more compute.",
    .method = "The training workload (Linear+ReLU MLP, in = width = out = 1024, batch 8192, Adam, "
              "fp32; every tensor from the PyTorch-faithful allocator model) at depth L = 2, 4, 6, "
              "8, 12, 16 (--quick: 2, 8), plain and with cfg.checkpoint (non-reentrant "
              "torch.utils.checkpoint of every Linear+ReLU pair, the workload's only granularity). "
              "A fresh workload per point; step 1 creates Adam's state, so figures are read at "
              "steps >= 2 after the warm-up: max_memory_allocated of the step, peak reserved, the "
              "activations' share of the plain peak (what dropping every activation could save at "
              "most), and on a GPU the step time (CUDA events, median of --repeats). saving = 1 - "
              "peak_ckpt/peak_plain; overhead = t_ckpt/t_plain - 1. With --model-only the host "
              "backend: memory only. Verified: every step ran, the loss is finite (GPU), the peak is "
              "the same at every measured step, the allocator's invariants hold after the run.",
    .verdict_rule = "Bands with a tolerance of 5 points: saving 0.55..0.75 (claim 60-70%), overhead "
                    "0.15..0.35 (claim 20-30%; a depth whose time noise, 1.4826*MAD/median, exceeds 0.5 "
                    "is left out). On a GPU: holds if both are in band at a majority of depths; "
                    "holds-partly if either is in band at a majority of depths, or the saving is "
                    "in band at some depths (named); does-not-hold otherwise. --model-only judges "
                    "the memory half alone (the time half is inconclusive without a GPU): holds-partly "
                    "if the saving is in band at some depths, does-not-hold if at none.",
    .flags = MC_EXP_MODEL_ONLY,
    .default_repeats = 5,
    .default_warmup = 2,
    .extra = NULL,
};

#define WIDTH 1024
#define BATCH 8192
#define MIB (1024.0 * 1024.0)
#define SAVE_LO 0.60
#define SAVE_HI 0.70
#define OVER_LO 0.20
#define OVER_HI 0.30
#define BAND_TOL 0.05

static const int DEPTH_FULL[] = {2, 4, 6, 8, 12, 16};
static const int DEPTH_QUICK[] = {2, 8};

/* ============================================================== one configuration */

typedef struct {
    bool oom;
    uint64_t peak, reserved;         /* max over measured steps, bytes */
    uint64_t act;                    /* activations live at the peak (first measured step) */
    double *t;                       /* step times (CUDA events), s; GPU only */
    int n;
    bool steady;
} fig;

static fig run_config(mc_run *run, int layers, bool ckpt, int warm, int reps)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = layers;
    c.in = c.width = c.out = WIDTH;
    c.batch = BATCH;
    c.optimizer = MC_WL_ADAM;
    c.precision = MC_WL_FP32;
    c.checkpoint = ckpt;
    char what[64], err[256];
    snprintf(what, sizeof what, "L=%d %s", layers, ckpt ? "checkpoint" : "plain");
    fig f = {.t = mc_xmalloc((size_t)reps * sizeof(double)), .steady = true};
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
        if (f.n == 0) f.act = r.peak_by_category[MC_WL_ACTIVATIONS];
        else if (r.peak_allocated != f.peak) f.steady = false;
        if (r.peak_allocated > f.peak) f.peak = r.peak_allocated;
        if (r.peak_reserved > f.reserved) f.reserved = r.peak_reserved;
        f.t[f.n++] = r.step_time_s;
    }
    char e2[256];
    if (ca_check_invariants(mc_workload_allocator(w), e2, sizeof e2) != 0)
        mc_verify_failed(run, what, "allocator invariants: %s", e2);
    if (!f.oom && !f.steady)
        mc_verify_failed(run, what, "the peak differs between measured steps (not a steady state)");
    mc_workload_destroy(w);
    return f;
}

static bool in_band(double x, double lo, double hi)
{
    return x >= lo - BAND_TOL && x <= hi + BAND_TOL;
}

/* ============================================================== main */

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const bool q = run.opt.quick;
    const int *D = q ? DEPTH_QUICK : DEPTH_FULL;
    const int nd = q ? 2 : 6;
    const int warm = run.on_gpu ? (run.opt.warmup > 1 ? run.opt.warmup : 1) : 1;
    const int reps = run.on_gpu ? run.opt.repeats : 1;
    mc_log(&run, "%d depths x {plain, checkpoint}, %d warm-up + %d measured steps each", nd, warm,
           reps);

    int n = 0, save_in = 0, over_in = 0, over_n = 0;
    double smin = INFINITY, smax = -INFINITY, omin = INFINITY, omax = -INFINITY;
    double share_min = INFINITY, share_max = -INFINITY;
    char save_at[128] = "", over_at[128] = "";
    size_t su = 0, ou = 0;
    for (int i = 0; i < nd; i++) {
        const double L = D[i];
        fig p = run_config(&run, D[i], false, warm, reps);
        fig c = run_config(&run, D[i], true, warm, reps);
        const fig *both[2] = {&p, &c};
        const char *var[2] = {"plain", "checkpoint"};
        mc_stats ts[2];
        for (int v = 0; v < 2; v++) {
            const fig *f = both[v];
            if (f->oom) {
                mc_emit(&run, var[v], "layers", L, "peak_allocated", "bytes", mc_stats_one(NAN),
                        "oom", "the step ran out of memory");
                continue;
            }
            mc_emit_value(&run, var[v], "layers", L, "peak_allocated", "bytes", (double)f->peak,
                          "max_memory_allocated of a step >= 2");
            mc_emit_value(&run, var[v], "layers", L, "peak_reserved", "bytes", (double)f->reserved,
                          "");
            mc_emit_value(&run, var[v], "layers", L, "peak_activations", "bytes", (double)f->act,
                          "activations live at the peak");
            if (run.on_gpu) {
                ts[v] = mc_stats_of(f->t, (size_t)f->n);
                mc_emit(&run, var[v], "layers", L, "step_time", "s", ts[v], "ok",
                        "CUDA events around the step");
            }
        }
        if (!p.oom && !c.oom) {
            double saving = 1.0 - (double)c.peak / (double)p.peak;
            double share = (double)p.act / (double)p.peak;
            n++;
            mc_emit_value(&run, "checkpoint", "layers", L, "memory_saving", "ratio", saving,
                          "1 - peak_ckpt / peak_plain");
            mc_emit_value(&run, "plain", "layers", L, "activation_share", "ratio", share,
                          "activations / peak at the plain peak: the most any recomputation saves");
            smin = fmin(smin, saving);
            smax = fmax(smax, saving);
            share_min = fmin(share_min, share);
            share_max = fmax(share_max, share);
            if (in_band(saving, SAVE_LO, SAVE_HI)) {
                save_in++;
                su += (size_t)snprintf(save_at + su, su < sizeof save_at ? sizeof save_at - su : 0,
                                       "%s%d", su ? "," : "", D[i]);
            }
            if (run.on_gpu) {
                double over = ts[1].median / ts[0].median - 1.0;
                double noise = hypot(mc_stats_noise(&ts[0]), mc_stats_noise(&ts[1]));
                mc_emit(&run, "checkpoint", "layers", L, "time_overhead", "ratio",
                        mc_stats_one(over), noise > MC_VERDICT_MAX_NOISE ? "noisy" : "ok",
                        "t_ckpt / t_plain - 1 (medians)");
                if (noise <= MC_VERDICT_MAX_NOISE) {
                    over_n++;
                    omin = fmin(omin, over);
                    omax = fmax(omax, over);
                    if (in_band(over, OVER_LO, OVER_HI)) {
                        over_in++;
                        ou += (size_t)snprintf(over_at + ou,
                                               ou < sizeof over_at ? sizeof over_at - ou : 0,
                                               "%s%d", ou ? "," : "", D[i]);
                    }
                }
                mc_emit_finding(&run,
                    "L=%d: peak %.1f MiB plain, %.1f MiB with checkpointing (saving %.1f%%; "
                    "activations were %.0f%% of the plain peak); step %.2f ms vs %.2f ms "
                    "(overhead %+.1f%%).",
                    D[i], p.peak / MIB, c.peak / MIB, 100 * saving, 100 * share,
                    1e3 * ts[0].median, 1e3 * ts[1].median, 100 * over);
            } else {
                mc_emit_finding(&run,
                    "L=%d: peak %.1f MiB plain, %.1f MiB with checkpointing (saving %.1f%%; "
                    "activations were %.0f%% of the plain peak).",
                    D[i], p.peak / MIB, c.peak / MIB, 100 * saving, 100 * share);
            }
        }
        free(p.t);
        free(c.t);
    }
    if (!su) snprintf(save_at, sizeof save_at, "none");
    if (!ou) snprintf(over_at, sizeof over_at, "none");
    if (n > 0)
        mc_emit_finding(&run,
            "Why: what autograd saves for a Linear+ReLU pair is its input (addmm's mat1) and ReLU's "
            "result, and ReLU's result is the next pair's input; the pre-ReLU output is freed as "
            "soon as ReLU has run. Checkpointing each pair keeps exactly the pairs' inputs, the "
            "same tensors, and adds the recomputed pair's transient output during backward: saving "
            "%.1f%% to %.1f%%, although activations are %.0f%% to %.0f%% of the plain peak. "
            "Checkpointing saves memory only where a segment holds more than its input (several "
            "layers per segment, or blocks with many intermediates, as in transformers); the "
            "workload offers only per-pair checkpointing.",
            100 * smin, 100 * smax, 100 * share_min, 100 * share_max);

    mc_verdict v;
    char timing[192];
    if (n == 0) {
        v = MC_INCONCLUSIVE;
        snprintf(timing, sizeof timing, "no depth ran in both variants");
    } else if (run.on_gpu) {
        bool s_maj = 2 * save_in > n, o_maj = over_n > 0 && 2 * over_in > over_n;
        v = s_maj && o_maj ? MC_HOLDS
            : (s_maj || o_maj || save_in > 0) ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
        snprintf(timing, sizeof timing,
                 "overhead %+.1f%%..%+.1f%%, in band (%.0f..%.0f%%) at %d of %d depths [%s]",
                 100 * omin, 100 * omax, 100 * (OVER_LO - BAND_TOL), 100 * (OVER_HI + BAND_TOL),
                 over_in, over_n, over_at);
    } else {
        v = save_in > 0 ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
        snprintf(timing, sizeof timing,
                 "memory half alone: the time half is inconclusive without a GPU (model-only)");
    }
    mc_emit_verdict(&run, v,
        "H=%d, B=%d, Adam fp32: saving %.1f%%..%.1f%%, in band (%.0f..%.0f%%) at %d of %d depths "
        "[%s]; %s.",
        WIDTH, BATCH, 100 * smin, 100 * smax, 100 * (SAVE_LO - BAND_TOL), 100 * (SAVE_HI + BAND_TOL),
        save_in, n, save_at, timing);
    return mc_run_end(&run);
}
