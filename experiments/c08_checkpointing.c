/* c08_checkpointing: C08. Peak memory and step time of the suite's training
 * workloads with and without activation checkpointing: the MLP over depth,
 * checkpointed per Linear+ReLU pair and in segments of several layers (as
 * torch.utils.checkpoint.checkpoint_sequential does), and seed 000's
 * nn.Transformer checkpointed per layer, over the sequence length
 * (common/workload/mlp/mlp.h, tfm.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_model.h"
#include "band.h"
#include "check.h"
#include "experiment.h"
#include "stats.h"
#include "verdict.h"
#include "support/steady.h"
#include "workload/transformer/tfm.h"
#include "workload/mlp/mlp.h"

static const mc_experiment EXP = {
    .claim = "C08",
    .key = "checkpointing",
    .title = "Peak memory and step time with and without activation checkpointing: MLP over depth "
             "(per pair, in segments), Transformer per layer over sequence length",
    .seed_claim = "Gradient checkpointing saves 60-70% of memory for 20-30% more compute.",
    .method = "Two training workloads, every tensor from the PyTorch-faithful allocator model. "
              "(1) The MLP (Linear+ReLU, in = width = out = 1024, batch 8192, Adam, fp32) at depth "
              "L = 2, 4, 6, 8, 12, 16 (--quick: 2, 8): plain; with non-reentrant "
              "torch.utils.checkpoint of every Linear+ReLU pair; and with checkpoint_sequential("
              "model, S, x, use_reentrant=False) over its 2L-1 modules for S = 2 and 4 segments "
              "(where S <= 2L-1; the first S-1 segments of (2L-1)//S modules are checkpointed, the "
              "rest runs plainly, as PyTorch 2.11 does). (2) Seed 000's model, "
              "nn.Transformer(d_model=256) (8 heads, 6+6 layers, ff 2048, dropout 0.1, "
              "batch_first=False; built on the host and moved (.cuda()) as the seed builds it), Adam, fp32, batch 100, at sequence 64 (the seed's shape), 128 "
              "and 256 (--quick: 64): plain and with every encoder and decoder layer under "
              "non-reentrant checkpoint. A fresh workload per point; step 1 creates Adam's state, "
              "so figures are read at steps >= 2 after the warm-up: max_memory_allocated of the "
              "step, peak reserved, the activations at the peak (their share of the plain peak is "
              "the most any recomputation could save), and on a GPU the step time (CUDA events, "
              "median of --repeats). saving = 1 - peak_ckpt/peak_plain; overhead = "
              "t_ckpt/t_plain - 1. With --model-only the host backend: memory only. Verified: "
              "every step ran, the loss is finite (GPU), the peak is the same at every measured "
              "step, the allocator's invariants hold after the run.",
    .verdict_rule = "Bands with a tolerance of 5 points: saving 0.55..0.75 (claim 60-70%), overhead "
                    "0.15..0.35 (claim 20-30%), the overhead t_ckpt/t_plain - 1 judged on its "
                    "uncertainty: in band when the 10th-90th percentile of the ratio of the two "
                    "median step times over 2000 bootstrap resamples of the measured steps (band.h), "
                    "less 1, lies inside it. A point whose interval straddles an edge is undecided "
                    "and counts as not in band (so machines whose medians fall on either side of the "
                    "edge read the same); this replaces leaving out points whose time noise exceeds "
                    "0.5 (a noisy point's interval is wide: it straddles, or lies clear of the band "
                    "whatever the noise). Step times that split into two modes are reported with both "
                    "modes and their shares (a finding). Points: every checkpointed variant of "
                    "both models (MLP per "
                    "pair and in S segments at each depth, Transformer per layer at each sequence "
                    "length). On a GPU: holds if both are in band at a majority of points; "
                    "holds-partly if either is in band at a majority of points, or the saving is in "
                    "band, or above it (a saving beyond the claim's), at some points (named, with "
                    "their model); does-not-hold otherwise. "
                    "--model-only judges the memory half alone (the time half is inconclusive "
                    "without a GPU): holds-partly if the saving is in band or above it at some "
                    "points, does-not-hold if at none. Where the Transformer cannot run (its GPU step is "
                    "missing: a failed row says why), the verdict rests on the MLP alone and says so.",
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
static const int SEGMENTS[] = {2, 4};
#define NSEG 2

/* Seed 000's Transformer: nn.Transformer(d_model=256), (seq, batch 100). */
#define TFM_D_MODEL 256
#define TFM_BATCH 100
static const int64_t SEQ_FULL[] = {64, 128, 256};
static const int64_t SEQ_QUICK[] = {64};

/* ============================================================== one configuration */

typedef mc_wl_measured fig; /* workload/core/wl_measure.h */

/* The MLP at depth L: plain (ckpt false, segments 0), per pair (ckpt), or
 * checkpoint_sequential with `segments` segments. */
static fig run_mlp(mc_run *run, int layers, bool ckpt, int segments, int warm, int reps)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = layers;
    c.in = c.width = c.out = WIDTH;
    c.batch = BATCH;
    c.optimizer = MC_WL_ADAM;
    c.precision = MC_WL_FP32;
    c.checkpoint = ckpt;
    c.checkpoint_segments = segments;
    char what[64], err[256];
    snprintf(what, sizeof what, "L=%d %s S=%d", layers, ckpt ? "checkpoint" : "", segments);
    mc_wl *m = mc_workload_handle(mc_workload_create(&c, run->on_gpu, NULL, err, sizeof err));
    CHECK(m != NULL, "workload %s: %s", what, err);
    const mc_wl_plan p = {.warm = warm, .reps = reps, .on_gpu = run->on_gpu};
    return mc_wl_measure_run(run, m, what, &p);
}

/* Seed 000's Transformer at sequence `seq`, plain or every layer
 * checkpointed. false (with a failed row and the reason in why) where it
 * cannot be made: on a GPU before its step exists. */
static bool run_tfm(mc_run *run, int64_t seq, bool ckpt, int warm, int reps, fig *f, char *why,
                    size_t why_len)
{
    mc_tfm_config c = mc_tfm_seed000_accum(seq, TFM_BATCH);
    c.checkpoint = ckpt;
    char what[80];
    snprintf(what, sizeof what, "transformer seq=%lld %s", (long long)seq, ckpt ? "checkpoint" : "plain");
    const mc_wl_plan p = {.warm = warm, .reps = reps, .on_gpu = run->on_gpu};
    return mc_wl_measure_tfm(run, &c, what, &p, f, why, why_len);
}

static bool in_band(double x, double lo, double hi)
{
    return x >= lo - BAND_TOL && x <= hi + BAND_TOL;
}

/* ============================================================== tallies */

/* One checkpointed variant's points, for the findings and the verdict. */
typedef struct {
    const char *name;                /* "MLP per pair", ... */
    int n, save_in, over_n, over_in;
    int over_edge;             /* overhead intervals straddling an edge of the band: undecided */
    int save_above;            /* points saving more than the band: at least the claimed saving */
    double smin, smax, omin, omax;
    char save_at[160];
} tally;

static void tally_init(tally *t, const char *name)
{
    memset(t, 0, sizeof *t);
    t->name = name;
    t->smin = t->omin = INFINITY;
    t->smax = t->omax = -INFINITY;
}

/* The measured steps' times, s, into a new array (free) of *n: the last
 * f->measured of f->step (the warm-up's come first). */
static double *step_times(const fig *f, size_t *n)
{
    *n = (size_t)f->measured;
    double *t = mc_xmalloc((*n ? *n : 1) * sizeof *t);
    for (int i = 0; i < f->measured; i++) t[i] = f->step[f->n - f->measured + i].step_time_s;
    return t;
}

static void emit_fig(mc_run *run, const char *var, const char *param, double x, const fig *f,
                     mc_stats *ts)
{
    if (f->oom) {
        mc_emit(run, var, param, x, "peak_allocated", "bytes", mc_stats_one(NAN), "oom",
                "the step ran out of memory");
        return;
    }
    mc_emit_value(run, var, param, x, "peak_allocated", "bytes", (double)f->peak,
                  "max_memory_allocated of a step >= 2");
    mc_emit_value(run, var, param, x, "peak_reserved", "bytes", (double)f->reserved, "");
    mc_emit_value(run, var, param, x, "peak_activations", "bytes", (double)f->cat[MC_WL_ACTIVATIONS],
                  "activations live at the peak");
    if (run->on_gpu) {
        *ts = f->time;
        mc_emit(run, var, param, x, "step_time", "s", *ts, "ok", "CUDA events around the step");
        size_t n;
        double *t = step_times(f, &n);
        mc_modes md = mc_modes_of(t, n);
        free(t);
        if (md.n == 2)
            mc_emit_finding(run, "%s %s=%g: the step time is bimodal, %.3g ms (%.0f%% of the "
                            "measured steps) and %.3g ms (%.0f%%); the overhead's interval reflects "
                            "both.", var, param, x, 1e3 * md.median[0], 100 * md.share[0],
                            1e3 * md.median[1], 100 * md.share[1]);
    }
}

/* The checkpointed figure c against the plain one p at x: its rows (saving,
 * overhead) and the tally. Returns the saving (NaN where either ran out). */
static double compare(mc_run *run, tally *t, const char *var, const char *param, double x,
                      const fig *p, const mc_stats *tp, const fig *c, double *over)
{
    mc_stats tc = {0};
    emit_fig(run, var, param, x, c, &tc);
    *over = NAN;
    if (p->oom || c->oom) return NAN;
    double saving = 1.0 - (double)c->peak / (double)p->peak;
    t->n++;
    mc_emit_value(run, var, param, x, "memory_saving", "ratio", saving, "1 - peak_ckpt / peak_plain");
    t->smin = fmin(t->smin, saving);
    t->smax = fmax(t->smax, saving);
    if (saving > SAVE_HI + BAND_TOL) t->save_above++;
    if (in_band(saving, SAVE_LO, SAVE_HI)) {
        t->save_in++;
        size_t u = strlen(t->save_at);
        snprintf(t->save_at + u, sizeof t->save_at - u, "%s%s=%g", u ? "," : "",
                 strcmp(param, "layers") ? "seq" : "L", x);
    }
    if (run->on_gpu) {
        *over = tc.median / tp->median - 1.0;
        double noise = hypot(mc_stats_noise(tp), mc_stats_noise(&tc));
        mc_emit(run, var, param, x, "time_overhead", "ratio", mc_stats_one(*over),
                noise > MC_VERDICT_MAX_NOISE ? "noisy" : "ok", "t_ckpt / t_plain - 1 (medians)");
        /* The verdict judges the median ratio's uncertainty, not the ratio
         * alone: one that straddles an edge decides nothing on any machine. */
        size_t np, nc;
        double *sp = step_times(p, &np), *sc = step_times(c, &nc);
        mc_band b = mc_band_ratio_of(sc, nc, sp, np, 1.0 + OVER_LO - BAND_TOL, 1.0 + OVER_HI + BAND_TOL);
        free(sp);
        free(sc);
        mc_emit_value(run, var, param, x, "time_overhead_p10", "ratio", b.p_low - 1.0,
                      "10th percentile of t_ckpt / t_plain - 1 over bootstrap resamples of the "
                      "median step times (band.h)");
        mc_emit_value(run, var, param, x, "time_overhead_p90", "ratio", b.p_high - 1.0,
                      "90th percentile, as time_overhead_p10");
        t->over_n++;
        t->omin = fmin(t->omin, *over);
        t->omax = fmax(t->omax, *over);
        if (b.place == MC_BAND_INSIDE) t->over_in++;
        else if (b.place == MC_BAND_STRADDLES) t->over_edge++;
    }
    return saving;
}

/* One variant's summary for the verdict: "NAME: saving a..b%, in band at i of n [where]". */
static size_t describe(const tally *t, bool on_gpu, char *out, size_t len)
{
    if (!t->n) return (size_t)snprintf(out, len, "%s: no point ran", t->name);
    int w = snprintf(out, len, "%s: saving %.1f%%..%.1f%%, in band at %d of %d [%s]%s", t->name,
                     100 * t->smin, 100 * t->smax, t->save_in, t->n, t->save_in ? t->save_at : "none",
                     t->save_above ? ", above it (saves more than claimed) at the others" : "");
    if (on_gpu && t->over_n && w > 0 && (size_t)w < len)
        w += snprintf(out + w, len - (size_t)w, ", overhead %+.1f%%..%+.1f%% (in band at %d of %d, "
                      "its interval straddling an edge, undecided, at %d)",
                      100 * t->omin, 100 * t->omax, t->over_in, t->over_n, t->over_edge);
    return w > 0 ? (size_t)w : 0;
}

/* ============================================================== the MLP */

static void run_mlp_sweep(mc_run *run, bool quick, int warm, int reps, tally *pair, tally *seg)
{
    const int *D = quick ? DEPTH_QUICK : DEPTH_FULL;
    const int nd = quick ? 2 : 6;
    double share_min = INFINITY, share_max = -INFINITY, pmin = INFINITY, pmax = -INFINITY;
    for (int i = 0; i < nd; i++) {
        const double L = D[i];
        fig p = run_mlp(run, D[i], false, 0, warm, reps);
        mc_stats tp = {0};
        emit_fig(run, "plain", "layers", L, &p, &tp);
        fig c = run_mlp(run, D[i], true, 0, warm, reps);
        double over_c, save_c = compare(run, pair, "checkpoint", "layers", L, &p, &tp, &c, &over_c);
        pmin = fmin(pmin, save_c);
        pmax = fmax(pmax, save_c);
        char segs[256] = "";
        size_t su = 0;
        for (int s = 0; s < NSEG; s++) {
            if (SEGMENTS[s] > 2 * D[i] - 1) continue; /* PyTorch refuses: a segment of no module */
            char var[24];
            snprintf(var, sizeof var, "segments=%d", SEGMENTS[s]);
            fig g = run_mlp(run, D[i], false, SEGMENTS[s], warm, reps);
            double over_g, save_g = compare(run, &seg[s], var, "layers", L, &p, &tp, &g, &over_g);
            if (!g.oom && su < sizeof segs)
                su += (size_t)snprintf(segs + su, sizeof segs - su,
                                       "; %d segments %.1f MiB (saving %.1f%%)", SEGMENTS[s],
                                       g.peak / MIB, 100 * save_g);
            if (run->on_gpu && isfinite(over_g) && su < sizeof segs)
                su += (size_t)snprintf(segs + su, sizeof segs - su, ", overhead %+.1f%%", 100 * over_g);
            mc_wl_measured_free(&g);
        }
        if (!p.oom && !c.oom) {
            double share = (double)p.cat[MC_WL_ACTIVATIONS] / (double)p.peak;
            mc_emit_value(run, "plain", "layers", L, "activation_share", "ratio", share,
                          "activations / peak at the plain peak: the most any recomputation saves");
            share_min = fmin(share_min, share);
            share_max = fmax(share_max, share);
            char ov[48] = "";
            if (run->on_gpu) snprintf(ov, sizeof ov, ", overhead %+.1f%%", 100 * over_c);
            mc_emit_finding(run,
                "MLP L=%d: peak %.1f MiB plain (activations %.0f%% of it); per-pair checkpoint "
                "%.1f MiB (saving %.1f%%%s)%s.",
                D[i], p.peak / MIB, 100 * share, c.peak / MIB, 100 * save_c, ov, segs);
        }
        mc_wl_measured_free(&p);
        mc_wl_measured_free(&c);
    }
    if (pair->n > 0)
        mc_emit_finding(run,
            "Why the MLP saves little: what autograd saves for a Linear+ReLU pair is its input "
            "(addmm's mat1) and ReLU's result, and ReLU's result is the next pair's input; the "
            "pre-ReLU output is freed as soon as ReLU has run. Checkpointing each pair keeps exactly "
            "the pairs' inputs, the same tensors, and adds the recomputed pair's transient output "
            "during backward: saving %.1f%% to %.1f%%, although activations are %.0f%% to %.0f%% of "
            "the plain peak. checkpoint_sequential saves where a segment spans several layers: only "
            "the segments' inputs stay, and one segment's activations come back during its "
            "recomputation; its last segment always runs plainly, and a segment boundary between a "
            "Linear and its ReLU keeps the pre-ReLU output as well.",
            100 * pmin, 100 * pmax, 100 * share_min, 100 * share_max);
}

/* ============================================================== the Transformer */

static bool run_tfm_sweep(mc_run *run, bool quick, int warm, int reps, tally *t, char *why,
                          size_t why_len)
{
    const int64_t *S = quick ? SEQ_QUICK : SEQ_FULL;
    const int ns = quick ? 1 : 3;
    for (int i = 0; i < ns; i++) {
        fig p, c;
        if (!run_tfm(run, S[i], false, warm, reps, &p, why, why_len)) return false;
        if (!run_tfm(run, S[i], true, warm, reps, &c, why, why_len)) {
            mc_wl_measured_free(&p);
            return false;
        }
        const double x = (double)S[i];
        mc_stats tp = {0};
        emit_fig(run, "transformer plain", "seq", x, &p, &tp);
        double over, saving = compare(run, t, "transformer checkpoint", "seq", x, &p, &tp, &c, &over);
        if (!p.oom && !c.oom) {
            double share = (double)p.cat[MC_WL_ACTIVATIONS] / (double)p.peak;
            mc_emit_value(run, "transformer plain", "seq", x, "activation_share", "ratio", share,
                          "activations / peak at the plain peak: the most any recomputation saves");
            char ov[48] = "";
            if (run->on_gpu) snprintf(ov, sizeof ov, "; overhead %+.1f%%", 100 * over);
            mc_emit_finding(run,
                "Transformer (nn.Transformer(d_model=256), Adam fp32) sequence %lld x batch %d: peak "
                "%.1f MiB plain (activations %.0f%% of it), %.1f MiB with every layer checkpointed "
                "(saving %.1f%%%s).",
                (long long)S[i], TFM_BATCH, p.peak / MIB, 100 * share, c.peak / MIB, 100 * saving, ov);
        }
        mc_wl_measured_free(&p);
        mc_wl_measured_free(&c);
    }
    mc_emit_finding(run,
        "Why the Transformer saves: a layer keeps many tensors per input for its backward (the "
        "q/k/v projections, attention weights and dropout masks, the feed-forward's 4x-wide "
        "hidden state, LayerNorm statistics); checkpointing a layer keeps only its input and "
        "brings one layer's tensors back at a time.");
    return true;
}

/* ============================================================== main */

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const bool q = run.opt.quick;
    const int warm = run.on_gpu ? (run.opt.warmup > 1 ? run.opt.warmup : 1) : 1;
    const int reps = run.on_gpu ? run.opt.repeats : 1;
    mc_log(&run, "MLP: %d depths x {plain, per pair, %d segment counts}; Transformer: %d sequence "
           "lengths x {plain, per layer}; %d warm-up + %d measured steps each",
           q ? 2 : 6, NSEG, q ? 1 : 3, warm, reps);

    tally pair, seg[NSEG], tfm;
    tally_init(&pair, "MLP per pair (L=2..16, H=1024, B=8192)");
    tally_init(&seg[0], "MLP checkpoint_sequential S=2");
    tally_init(&seg[1], "MLP checkpoint_sequential S=4");
    tally_init(&tfm, "Transformer per layer (seed 000's nn.Transformer(d_model=256), batch 100, "
                     "seq 64..256)");
    if (q) {
        pair.name = "MLP per pair (L=2,8, H=1024, B=8192)";
        tfm.name = "Transformer per layer (seed 000's nn.Transformer(d_model=256), seq 64 x batch 100)";
    }
    run_mlp_sweep(&run, q, warm, reps, &pair, seg);
    char why[256] = "";
    bool tfm_ran = run_tfm_sweep(&run, q, warm, reps, &tfm, why, sizeof why);

    const tally *all[4] = {&pair, &seg[0], &seg[1], &tfm};
    const int nall = tfm_ran ? 4 : 3;
    int n = 0, save_in = 0, over_n = 0, over_in = 0, save_above = 0;
    for (int i = 0; i < nall; i++) {
        n += all[i]->n;
        save_in += all[i]->save_in;
        save_above += all[i]->save_above;
        over_n += all[i]->over_n;
        over_in += all[i]->over_in;
    }
    mc_verdict v;
    if (n == 0) v = MC_INCONCLUSIVE;
    else if (run.on_gpu) {
        bool s_maj = 2 * save_in > n, o_maj = over_n > 0 && 2 * over_in > over_n;
        v = s_maj && o_maj ? MC_HOLDS
            : (s_maj || o_maj || save_in > 0 || save_above > 0) ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    } else {
        v = save_in > 0 || save_above > 0 ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    }
    char text[1800];
    size_t u = 0;
    for (int i = 0; i < nall && u < sizeof text; i++) {
        u += describe(all[i], run.on_gpu, text + u, sizeof text - u);
        if (u < sizeof text) u += (size_t)snprintf(text + u, sizeof text - u, "; ");
    }
    if (!tfm_ran && u < sizeof text)
        u += (size_t)snprintf(text + u, sizeof text - u,
                              "Transformer not run (%s): the verdict rests on the MLP alone; ", why);
    mc_emit_verdict(&run, v,
        "Adam fp32, bands saving %.0f..%.0f%%, overhead %.0f..%.0f%%: %ssaving in band at %d of %d "
        "points%s.",
        100 * (SAVE_LO - BAND_TOL), 100 * (SAVE_HI + BAND_TOL), 100 * (OVER_LO - BAND_TOL),
        100 * (OVER_HI + BAND_TOL), text, save_in, n,
        run.on_gpu ? "; overhead in band where the 10th-90th percentile of its bootstrap median "
                     "ratio lies inside the band, undecided (not in band) where it straddles an edge"
                   : "; memory half alone: the time half is inconclusive without a GPU (model-only)");
    return mc_run_end(&run);
}
