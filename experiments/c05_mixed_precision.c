/* c05_mixed_precision.c: C05. The suite's training workloads in fp32 and in
 * mixed precision (fp16 with GradScaler, bf16; autocast compute over fp32
 * master weights) over batch size: the MLP (common/workload/mlp/mlp.h) at a
 * weight-bound and an activation-bound shape, and seed 000's own model,
 * nn.Transformer(d_model=512, batch_first=True) on (B, 100, 512)
 * (common/workload/transformer/tfm.h): peak allocated, reserved, live bytes per
 * category at the peak, step time, and on a GPU the cuBLAS GEMM throughput
 * behind the MLP's step time (the forward GEMM of one layer alone: support/gemm_rig.h). */
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
#include "support/gemm_rig.h"
#include "support/steady.h"
#include "workload/core/wl_handle.h"
#include "workload/transformer/tfm.h"
#include "workload/mlp/mlp.h"

static bool sgd_opt = false;

static const mc_extra_opt EXTRA[] = {
    {"sgd", MC_OPT_FLAG, &sgd_opt, "train with SGD instead of Adam"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const mc_experiment EXP = {
    .claim = "C05",
    .key = "mixed_precision",
    .title = "Training memory and speed in fp32 vs fp16/bf16 mixed precision, over batch size (MLP and Transformer)",
    .seed_claim = "Mixed precision (fp16/bf16) cuts memory by about 40% and speeds training 1.5-3x.",
    .method = "Two training workloads, every tensor from the PyTorch-faithful allocator model, Adam "
              "(--sgd: SGD), in fp32, fp16 (autocast + GradScaler) and bf16 (autocast), fp32 master "
              "weights. The MLP (Linear+ReLU, in = width = out = H) at two shapes: weight_bound L=4, "
              "H=4096 at B = 32, 128, 512, 2048, 8192 and activation_bound L=8, H=1024 at B = 128, "
              "512, 2048, 8192, 32768 (--quick: 2 batches each). The Transformer (variant "
              "transformer): seed 000's nn.Transformer(d_model=512, batch_first=True) (8 heads, 6+6 "
              "layers, ff 2048, dropout 0.1; built on the host and moved (.cuda()) as the seed builds it), src and tgt of (B, 100, 512), MSE loss, at B = 8, 16, "
              "32, 64, 128 (--quick: 32 alone); B=32 is the seed's own input (32, 100, 512) (its "
              "snippet reads max_memory_allocated over a first fp32 forward/backward with no "
              "optimizer step against autocast + GradScaler stepping an Adam; here every "
              "precision trains with the same optimizer and is read at a steady step). A fresh "
              "workload per point; step 1 "
              "creates the optimizer state, so figures are read at steps >= 2 after the warm-up "
              "(the Transformer's at steps >= 3: its step-2 peak still differs by about 1 MiB): "
              "max_memory_allocated of the step, peak reserved, live bytes per category at the "
              "peak, and on a GPU the step time (CUDA events, median of --repeats) and the step's "
              "achieved rate 6 * params * B / time (the Transformer's: 6 * params * B * 100 "
              "tokens, attention's own FLOPs not counted). On a GPU also, for the MLP, the cuBLAS "
              "GEMM of one hidden "
              "layer's forward ([B,H] x [H,H]^T, cublasGemmEx, default math: fp32 without TF32, "
              "fp16/bf16 with fp32 accumulation), repeated as one CUDA graph timed with events (the "
              "GPU's rate, not the host's launch rate), checked on sampled entries "
              "against a host reference. saving = 1 - peak_mixed/peak_fp32; speed-up = "
              "t_fp32/t_mixed. With --model-only the host backend: memory only. Verified: steps "
              "ran, loss finite (GPU), same peak at every measured step, categories summing to the "
              "peak, allocator invariants.",
    .verdict_rule = "Points: every (shape, batch, fp16 or bf16). Memory in band: saving 0.30..0.50 "
                    "('about 40%'); speed in band: the speed-up t_fp32/t_mixed judged on its uncertainty, "
                    "the 10th-90th percentile of the ratio of the two precisions' median step times "
                    "over 2000 bootstrap resamples of the measured steps (band.h), inside 1.5..3.0. "
                    "A point whose interval straddles an edge is undecided and counts as not in band "
                    "(so machines whose medians fall on either side of the edge read the same); this "
                    "replaces leaving out points whose time noise exceeds 0.5 (a noisy point's "
                    "interval is wide: it straddles, or lies clear of the band whatever the noise). "
                    "A point's step times that split into two modes are reported with both modes and "
                    "their shares (a finding). On a GPU: holds if "
                    "both are in band at more than half of their points; holds-partly if either is "
                    "in band at some point (the findings say where); does-not-hold otherwise. "
                    "--model-only judges the memory half alone: holds if in band at more than half "
                    "of the points, holds-partly at some, does-not-hold at none. The points are "
                    "the MLP's and the Transformer's together; the note gives each model's count "
                    "and range, the speed points straddling an edge, and seed 000's own point "
                    "(Transformer, B=32) apart.",
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
#define PROF_MIN_MS 0.05 /* a kind's time changed by less: not listed */
#define NP 3                    /* fp32, fp16, bf16 */
#define NB 5

#define NSHAPE 3
#define TFM_SEQ MC_TFM_SEED000_AMP_SEQ /* seed 000: torch.randn(32, 100, 512) */
#define TFM_D_MODEL 512
#define SEED_BATCH 32

typedef struct {
    const char *name;
    bool tfm;                   /* the Transformer (layers, width unused) or the MLP */
    int layers, width;
    int64_t batch[NB], quick[2];
    int nquick;
    const char *desc;           /* the model, for the findings and the verdict */
} shape;

static const shape SHAPES[NSHAPE] = {
    {"weight_bound", false, 4, 4096, {32, 128, 512, 2048, 8192}, {32, 2048}, 2, "MLP L=4, H=4096"},
    {"activation_bound", false, 8, 1024, {128, 512, 2048, 8192, 32768}, {512, 8192}, 2,
     "MLP L=8, H=1024"},
    {"transformer", true, 0, 0, {8, 16, SEED_BATCH, 64, 128}, {SEED_BATCH}, 1,
     "nn.Transformer(d_model=512, batch_first=True), seq 100"},
};

/* ============================================================== one training point */

typedef struct {
    bool oom;
    bool failed;   /* the workload could not be created (the reason went to mc_verify_failed) */
    uint64_t peak, reserved, cat[MC_WL_NCAT];
    mc_stats t;
    double *ts;    /* on a GPU, the measured steps' times, s (free); the verdict's samples */
    int nts;
    bool have_prof;     /* on a GPU where asked: one more step, profiled */
    mc_prof_table prof; /* its GPU time by kind (wl_profile_table.h) */
} fig;

/* Seed 000's model: nn.Transformer(d_model=512, batch_first=True), PyTorch's
 * other defaults, on (B, 100, 512). */
static mc_tfm_config tfm_config(int64_t B, int prec)
{
    mc_tfm_config c = mc_tfm_seed000_amp(B, (mc_wl_precision)prec);
    if (sgd_opt) c.optimizer = MC_WL_SGD;
    return c;
}

static mc_workload_config mlp_config(const shape *sh, int64_t B, int prec)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = sh->layers;
    c.in = c.width = c.out = sh->width;
    c.batch = B;
    c.optimizer = sgd_opt ? MC_WL_SGD : MC_WL_ADAM;
    c.precision = (mc_wl_precision)prec;
    return c;
}

static fig run_point(mc_run *run, const shape *sh, int64_t B, int prec, int warm, int reps, bool profile)
{
    char what[96], err[256] = "";
    snprintf(what, sizeof what, "%s B=%lld %s", sh->name, (long long)B,
             mc_wl_precision_name((mc_wl_precision)prec));
    fig f;
    memset(&f, 0, sizeof f);
    mc_wl *w;
    if (sh->tfm) {
        mc_tfm_config c = tfm_config(B, prec);
        w = mc_tfm_handle(mc_tfm_create(&c, run->on_gpu, NULL, err, sizeof err));
    } else {
        mc_workload_config c = mlp_config(sh, B, prec);
        w = mc_workload_handle(mc_workload_create(&c, run->on_gpu, NULL, err, sizeof err));
    }
    if (!w) {
        /* Recorded, and the rest of the run goes on (exit code 1). */
        mc_verify_failed(run, what, "the workload cannot be created: %s", err);
        f.failed = true;
        return f;
    }
    /* warm, reps, no timed steps; where asked, one profiled step after them */
    const mc_wl_plan plan = {warm, reps, 0, 0, run->on_gpu, false, profile};
    mc_wl_measured m = mc_wl_measure_run(run, w, what, &plan);
    f.oom = m.oom;
    f.peak = m.peak;
    f.reserved = m.reserved;
    memcpy(f.cat, m.cat, sizeof f.cat);
    f.t = m.time;
    f.have_prof = m.have_prof;
    f.prof = m.prof;
    if (run->on_gpu && m.measured > 0) {
        /* The measured steps are the last m.measured of m.step (warm-up first). */
        f.ts = (double *)mc_xmalloc((size_t)m.measured * sizeof *f.ts);
        for (int i = 0; i < m.measured; i++) f.ts[i] = m.step[m.n - m.measured + i].step_time_s;
        f.nts = m.measured;
    }
    mc_wl_measured_free(&m);
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

/* What a verdict's points came from: index 0 the MLP, 1 the Transformer. */
typedef struct {
    int n_mem, mem_in, n_spd, spd_in;
    int spd_edge;   /* speed points whose interval straddles an edge of the band: undecided */
} tally;

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const bool q = run.opt.quick, gpu = run.on_gpu;
    const int warm_mlp = gpu ? (run.opt.warmup > 1 ? run.opt.warmup : 1) : 1;
    /* The Transformer's peak settles from step 3: step 2's differs from it by
     * about 1 MiB (the allocator's cache still settling), so step 2 is warm-up too. */
    const int warm_tfm = gpu ? (run.opt.warmup > 2 ? run.opt.warmup : 2) : 2;
    const int reps = gpu ? run.opt.repeats : 1;
    const char *const PN[NP] = {"fp32", "fp16", "bf16"};
    mc_log(&run, "MLP: 2 shapes x %d batches, Transformer: %d batches, x fp32/fp16/bf16, %s, "
           "%d (MLP) or %d (Transformer) warm-up + %d measured steps", q ? 2 : NB, q ? 1 : NB,
           sgd_opt ? "SGD" : "Adam", warm_mlp, warm_tfm, reps);

    tally tl[2];
    memset(tl, 0, sizeof tl);
    bool tfm_failed = false;
    fig seed_fig[NP];   /* the Transformer at B = SEED_BATCH */
    double seed_spd[NP] = {NAN, NAN, NAN};
    mc_band seed_band[NP];   /* the seed point's speed-up interval (band.h) */
    memset(seed_band, 0, sizeof seed_band);
    bool seed_seen = false;
    char range[NSHAPE][160];   /* "<desc> at B=lo..hi", "" when the shape gave no point */
    memset(range, 0, sizeof range);
    for (int si = 0; si < NSHAPE; si++) {
        const shape *sh = &SHAPES[si];
        tally *t = &tl[sh->tfm];
        const int nb = q ? sh->nquick : NB, warm = sh->tfm ? warm_tfm : warm_mlp;
        const int64_t *Bs = q ? sh->quick : sh->batch;
        mc_gemm_rig g;
        memset(&g, 0, sizeof g);
        const bool rig = gpu && !sh->tfm;   /* the GEMM alone: the MLP's layer */
        if (rig) mc_gemm_rig_create(&g, sh->width, Bs[nb - 1]);
        double mlo[NP] = {INFINITY, INFINITY, INFINITY}, mhi[NP] = {-INFINITY, -INFINITY, -INFINITY};
        double slo[NP] = {INFINITY, INFINITY, INFINITY}, shi[NP] = {-INFINITY, -INFINITY, -INFINITY};
        double glo[NP] = {INFINITY, INFINITY, INFINITY}, ghi[NP] = {-INFINITY, -INFINITY, -INFINITY};
        double rlo[NP] = {INFINITY, INFINITY, INFINITY}, rhi[NP] = {-INFINITY, -INFINITY, -INFINITY};
        const char *top_small[NP] = {"", "", ""}, *top_large[NP] = {"", "", ""};
        char mem_at[NP][64], spd_at[NP][64];   /* batches in band, "" when none */
        char spd_edge[NP][64];                 /* batches whose speed-up straddles an edge */
        memset(mem_at, 0, sizeof mem_at);
        memset(spd_at, 0, sizeof spd_at);
        memset(spd_edge, 0, sizeof spd_edge);
        int measured = 0;   /* batches with a saving of both mixed precisions */
        int64_t b_lo = 0, b_hi = 0;
        for (int bi = 0; bi < nb; bi++) {
            const int64_t B = Bs[bi];
            const double b = (double)B;
            fig f[NP];
            memset(f, 0, sizeof f);
            mc_stats gr[NP];
            bool failed = false;
            for (int p = 0; p < NP && !failed; p++) {
                char var[48];
                snprintf(var, sizeof var, "%s_%s", sh->name, PN[p]);
                if (rig) {
                    gr[p] = mc_gemm_rig_rate(&run, &g, p, sh->width, B);
                    mc_emit(&run, var, "batch", b, "gemm_flop_rate", "FLOP/s", gr[p], "ok",
                            "one layer's forward GEMM alone, repeated in one CUDA graph, CUDA events");
                }
                /* where the time goes: seed 000's point, the MLP's largest batch */
                const bool prof = gpu && (sh->tfm ? B == SEED_BATCH : bi == nb - 1);
                f[p] = run_point(&run, sh, B, p, warm, reps, prof);
                failed = f[p].failed;
                if (failed) break;
                if (f[p].oom) {
                    mc_emit(&run, var, "batch", b, "peak_allocated", "bytes", mc_stats_one(NAN),
                            "oom", "the step ran out of memory");
                    continue;
                }
                mc_emit_value(&run, var, "batch", b, "peak_allocated", "bytes", (double)f[p].peak,
                              sh->tfm ? "max_memory_allocated of a step >= 3"
                                      : "max_memory_allocated of a step >= 2");
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
                    double flop;
                    if (sh->tfm) {
                        mc_tfm_config c = tfm_config(B, p);
                        flop = 6.0 * (double)mc_tfm_param_count(&c) * b * TFM_SEQ;
                    } else {
                        mc_workload_config c = mlp_config(sh, B, p);
                        flop = 6.0 * (double)mc_workload_param_count(&c) * b;
                    }
                    mc_emit(&run, var, "batch", b, "step_time", "s", f[p].t, "ok",
                            "CUDA events around the step");
                    mc_modes md = mc_modes_of(f[p].ts, (size_t)f[p].nts);
                    if (md.n == 2)
                        mc_emit_finding(&run, "%s B=%lld %s: the step time is bimodal, %.3g ms (%.0f%% "
                                        "of the measured steps) and %.3g ms (%.0f%%); the speed-up's "
                                        "interval reflects both.", sh->name, (long long)B, PN[p],
                                        1e3 * md.median[0], 100 * md.share[0], 1e3 * md.median[1],
                                        100 * md.share[1]);
                    mc_emit_value(&run, var, "batch", b, "step_flop_rate", "FLOP/s",
                                  flop / f[p].t.median,
                                  sh->tfm ? "6 * params * tokens (B * 100) / median step time; "
                                            "attention's own FLOPs not counted"
                                          : "6 * params * batch / median step time");
                }
            }
            if (failed) {
                for (int p = 0; p < NP; p++) free(f[p].ts);
                /* The same error at every point: recorded once, the model left out. */
                tfm_failed |= sh->tfm;
                break;
            }
            for (int p = 1; p < NP; p++)
                if (f[0].have_prof && f[p].have_prof) {
                    char cmp[512];
                    mc_emit_finding(&run, "%s B=%lld, where %s changes the GPU time against fp32 (one "
                                    "profiled step each, CUDA events around every GPU operation, "
                                    "build/workload --profile's split): %s", sh->name, (long long)B, PN[p],
                                    mc_prof_table_compare(cmp, sizeof cmp, "fp32", &f[0].prof, PN[p],
                                                          &f[p].prof, PROF_MIN_MS));
                }
            if (sh->tfm && B == SEED_BATCH) {
                memcpy(seed_fig, f, sizeof seed_fig);
                seed_seen = true;
            }
            int savings = 0;
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
                savings++;
                t->n_mem++;
                if (sv >= MEM_LO && sv <= MEM_HI) {
                    t->mem_in++;
                    append_batch(mem_at[p], sizeof mem_at[p], B);
                }
                mlo[p] = fmin(mlo[p], sv);
                mhi[p] = fmax(mhi[p], sv);
                rlo[p] = fmin(rlo[p], rv);
                rhi[p] = fmax(rhi[p], rv);
                if (!gpu) continue;
                double spd = f[0].t.median / f[p].t.median;
                double noise = hypot(mc_stats_noise(&f[0].t), mc_stats_noise(&f[p].t));
                mc_emit(&run, var, "batch", b, "speedup", "ratio", mc_stats_one(spd),
                        noise <= MC_VERDICT_MAX_NOISE ? "ok" : "noisy",
                        "t_fp32 / t_mixed (median step times)");
                /* The verdict judges the median ratio's uncertainty, not the ratio
                 * alone: one that straddles an edge decides nothing on any machine. */
                mc_band sb = mc_band_ratio_of(f[0].ts, (size_t)f[0].nts, f[p].ts, (size_t)f[p].nts,
                                              SPD_LO, SPD_HI);
                mc_emit_value(&run, var, "batch", b, "speedup_p10", "ratio", sb.p_low,
                              "10th percentile of t_fp32 / t_mixed over bootstrap resamples of "
                              "the median step times (band.h)");
                mc_emit_value(&run, var, "batch", b, "speedup_p90", "ratio", sb.p_high,
                              "90th percentile, as speedup_p10");
                if (sh->tfm && B == SEED_BATCH) {
                    seed_spd[p] = spd;
                    seed_band[p] = sb;
                }
                if (rig) {
                    double gs = gr[p].median / gr[0].median;
                    mc_emit_value(&run, var, "batch", b, "gemm_speedup", "ratio", gs,
                                  "GEMM FLOP/s mixed / fp32");
                    glo[p] = fmin(glo[p], gs);
                    ghi[p] = fmax(ghi[p], gs);
                }
                t->n_spd++;
                if (sb.place == MC_BAND_INSIDE) {
                    t->spd_in++;
                    append_batch(spd_at[p], sizeof spd_at[p], B);
                } else if (sb.place == MC_BAND_STRADDLES) {
                    t->spd_edge++;
                    append_batch(spd_edge[p], sizeof spd_edge[p], B);
                }
                slo[p] = fmin(slo[p], spd);
                shi[p] = fmax(shi[p], spd);
            }
            if (savings == NP - 1) {
                if (measured++ == 0) b_lo = B;
                b_hi = B;
            }
            for (int p = 0; p < NP; p++) free(f[p].ts);
        }
        if (measured > 0) {
            snprintf(range[si], sizeof range[si], "%s at B=%lld..%lld", sh->desc, (long long)b_lo,
                     (long long)b_hi);
            for (int p = 1; p < NP; p++) {
                char speed[300] = "";
                if (gpu && rig)
                    snprintf(speed, sizeof speed, "; step speed-up %.2fx..%.2fx, in band at B = %s, "
                             "straddling an edge (undecided) at B = %s (the GEMM alone "
                             "%.1fx..%.1fx)", slo[p], shi[p], spd_at[p][0] ? spd_at[p] : "none",
                             spd_edge[p][0] ? spd_edge[p] : "none", glo[p], ghi[p]);
                else if (gpu)
                    snprintf(speed, sizeof speed, "; step speed-up %.2fx..%.2fx, in band at B = %s, "
                             "straddling an edge (undecided) at B = %s", slo[p], shi[p],
                             spd_at[p][0] ? spd_at[p] : "none", spd_edge[p][0] ? spd_edge[p] : "none");
                mc_emit_finding(&run,
                    "%s (%s), %s vs fp32 over B=%lld..%lld: peak allocated saving %.1f%%..%.1f%%, "
                    "in band at B = %s; reserved saving %.1f%%..%.1f%%%s. At the peak the largest "
                    "category is %s at B=%lld and %s at B=%lld.",
                    sh->name, sh->desc, PN[p], (long long)Bs[0], (long long)Bs[nb - 1],
                    100 * mlo[p], 100 * mhi[p], mem_at[p][0] ? mem_at[p] : "none", 100 * rlo[p],
                    100 * rhi[p], speed, top_small[p], (long long)Bs[0], top_large[p],
                    (long long)Bs[nb - 1]);
            }
        }
        if (rig) mc_gemm_rig_destroy(&g);
    }

    /* Seed 000's own code: its model and input, fp32 against autocast + GradScaler. */
    char seed[600];
    const bool seed_ok = seed_seen && !seed_fig[0].oom && !seed_fig[1].oom && !seed_fig[2].oom;
    if (seed_ok) {
        double s16 = 1.0 - (double)seed_fig[1].peak / (double)seed_fig[0].peak;
        double sbf = 1.0 - (double)seed_fig[2].peak / (double)seed_fig[0].peak;
        char speed[240] = "";
        if (gpu)
            snprintf(speed, sizeof speed, "; step speed-up %.2fx (fp16; 10th-90th percentile "
                     "%.2f..%.2f, %s the band), %.2fx (bf16; %.2f..%.2f, %s)", seed_spd[1],
                     seed_band[1].p_low, seed_band[1].p_high, mc_band_place_name(seed_band[1].place),
                     seed_spd[2], seed_band[2].p_low, seed_band[2].p_high,
                     mc_band_place_name(seed_band[2].place));
        snprintf(seed, sizeof seed, "seed 000's own point (Transformer, input (%d, %d, %d)): peak "
                 "allocated %.1f MiB fp32, %.1f MiB fp16 (saving %.1f%%), %.1f MiB bf16 (%.1f%%)%s",
                 SEED_BATCH, TFM_SEQ, TFM_D_MODEL, seed_fig[0].peak / MIB, seed_fig[1].peak / MIB,
                 100 * s16, seed_fig[2].peak / MIB, 100 * sbf, speed);
        mc_emit_finding(&run, "Seed 000's own code: nn.Transformer(d_model=512, batch_first=True), "
                        "%s, input and target (%d, %d, %d): fp32 peaks at %.1f MiB (max_memory_allocated "
                        "of a steady step), autocast fp16 with GradScaler at %.1f MiB (%.1f%% less), "
                        "bf16 at %.1f MiB (%.1f%% less)%s. Its largest category at the peak is %s "
                        "(fp32) and %s (fp16).",
                        sgd_opt ? "SGD" : "Adam", SEED_BATCH, TFM_SEQ, TFM_D_MODEL,
                        seed_fig[0].peak / MIB, seed_fig[1].peak / MIB, 100 * s16,
                        seed_fig[2].peak / MIB, 100 * sbf, speed, top_category(seed_fig[0].cat),
                        top_category(seed_fig[1].cat));
    } else {
        snprintf(seed, sizeof seed, "seed 000's own point (Transformer, B=%d) not measured%s",
                 SEED_BATCH, tfm_failed ? ": the Transformer could not run (see the failed row)"
                                        : " (out of memory)");
    }
    mc_emit_finding(&run,
        "Why: mixed precision keeps fp32 master weights, fp32 .grad and fp32 optimizer state, and "
        "adds 16-bit casts of the weights for the forward and backward; only the activations "
        "between layers (and their gradients) halve, while the inputs, targets and the loss stay "
        "fp32. So memory falls only where activations dominate the peak (large batch, narrow "
        "layers) and can grow where weights do (the casts, and with Adam the optimizer step, which "
        "no precision touches, is the peak). Speed comes from tensor-core GEMMs, so it grows with "
        "the GEMMs' share of the step.");

    const int n_mem = tl[0].n_mem + tl[1].n_mem, mem_in = tl[0].mem_in + tl[1].mem_in;
    const int n_spd = tl[0].n_spd + tl[1].n_spd, spd_in = tl[0].spd_in + tl[1].spd_in;
    mc_verdict v;
    if (n_mem == 0) v = MC_INCONCLUSIVE;
    else if (gpu) {
        bool m = 2 * mem_in > n_mem, s = n_spd > 0 && 2 * spd_in > n_spd;
        v = m && s ? MC_HOLDS : (mem_in > 0 || spd_in > 0) ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    } else {
        v = 2 * mem_in > n_mem ? MC_HOLDS : mem_in > 0 ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    }
    /* Which model and range the verdict rests on. */
    char rests[600] = "";
    for (int si = 0; si < NSHAPE; si++) {
        if (!range[si][0]) continue;
        size_t u = strlen(rests);
        snprintf(rests + u, sizeof rests - u, "%s%s", u ? "; " : "", range[si]);
    }
    if (tfm_failed) {
        size_t u = strlen(rests);
        snprintf(rests + u, sizeof rests - u, "%snot the Transformer, which could not run",
                 u ? "; " : "");
    }
    char speed[400];
    if (gpu)
        snprintf(speed, sizeof speed, "speed-up in %.1f..%.1fx (its bootstrap 10th-90th "
                 "percentile inside) at %d of %d points (MLP %d of %d, Transformer %d of %d), "
                 "straddling an edge, so undecided and not in band, at %d (MLP %d, Transformer %d)",
                 SPD_LO, SPD_HI, spd_in, n_spd, tl[0].spd_in, tl[0].n_spd, tl[1].spd_in,
                 tl[1].n_spd, tl[0].spd_edge + tl[1].spd_edge, tl[0].spd_edge, tl[1].spd_edge);
    else
        snprintf(speed, sizeof speed, "speed not measured (model-only): memory half alone");
    mc_emit_verdict(&run, v, "%s; rests on %s: memory saving in %.0f..%.0f%% at %d of %d points "
                    "(MLP %d of %d, Transformer %d of %d); %s; %s.",
                    sgd_opt ? "SGD" : "Adam", rests[0] ? rests : "no point", 100 * MEM_LO,
                    100 * MEM_HI, mem_in, n_mem, tl[0].mem_in, tl[0].n_mem, tl[1].mem_in,
                    tl[1].n_mem, seed, speed);
    return mc_run_end(&run);
}
