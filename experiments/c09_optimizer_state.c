/* c09_optimizer_state: C09. What Adam costs beside SGD and SGD with momentum,
 * through the allocator: the training workload (mlp.h, PyTorch 2.11's
 * request order, foreach optimizers) at a few widths, each optimizer's steady
 * step (step >= 2) and its first step (where the state is created), the
 * peak split by category and put per parameter. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "experiment.h"
#include "workload/mlp/mlp.h"

static int batch_opt = 512;
static int layers_opt = 4;

static const mc_extra_opt EXTRA[] = {
    {"batch", MC_OPT_COUNT, &batch_opt, "rows per step (default 512)"},
    {"layers", MC_OPT_COUNT, &layers_opt, "Linear layers, >= 2 (default 4)"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const char *validate(const mc_options *o)
{
    (void)o;
    return layers_opt < 2 || layers_opt > 64 ? "--layers must be from 2 to 64" : NULL;
}

static const mc_experiment EXP = {
    .claim = "C09",
    .key = "optimizer_state",
    .title = "Bytes per parameter of SGD, SGD+momentum and Adam through the allocator, over model width",
    .seed_claim = "Adam uses about 3x the memory of SGD.",
    .method = "The training workload (Linear+ReLU MLP, L=4 layers (--layers) of width H = 1024, "
              "2048, 4096, 8192 (--quick 1024, 2048), batch 512 (--batch), fp32, foreach optimizers as PyTorch 2.11 on "
              "CUDA) with SGD, SGD(momentum=0.9) and Adam; step 1 creates the optimizer state, then "
              "1 warm-up step and 3 measured steps (--repeats). Per step: max_memory_allocated (the "
              "peak, reset at the step's start), the live bytes of each category at that peak "
              "(weights, grads, optimizer state, the optimizer's foreach temporaries, activations, "
              "cuBLAS workspaces, other), and memory_allocated after zero_grad(set_to_none). Bytes "
              "are divided by the parameter count P. Allocator model over the CUDA backend on a "
              "GPU (step time from CUDA events), over the host backend with --model-only.",
    .verdict_rule = "r = Adam's steady peak allocated / SGD's at each width (steps >= 3, medians). "
                    "inconclusive if any run is out of memory; holds if 2.5 <= r <= 3.5 at every "
                    "width; does-not-hold if r <= 1.1 at some width; otherwise holds-partly, and the "
                    "note says which sub-measure is within 2.5-3.5x (grads+state, or memory "
                    "allocated between steps = weights+state+workspaces) at the largest width.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 3,
    .default_warmup = 1,
    .extra = EXTRA,
    .validate = validate,
};

static const int64_t WIDTHS[] = {1024, 2048, 4096, 8192};
static const int64_t WIDTHS_QUICK[] = {1024, 2048};
enum { NOPT = 3 };
static const mc_wl_optimizer OPTS[NOPT] = {MC_WL_SGD, MC_WL_MOMENTUM, MC_WL_ADAM};
#define RATIO_LO 2.5
#define RATIO_HI 3.5
#define NO_EFFECT 1.1 /* a peak ratio at or below this: Adam costs (almost) nothing extra */

/* One optimizer at one width. */
typedef struct {
    bool oom;
    double P;                       /* parameters */
    mc_workload_step_result s1;     /* step 1: the state is created */
    mc_workload_step_result last;   /* the last measured step */
    mc_stats peak, end, time;       /* over the measured steps */
    uint64_t state;                 /* optimizer bytes live after the last step (persistent) */
    double bpp[7];                  /* bytes/param at the steady peak, by CHART order below */
} fig;

/* The chart's categories, bottom to top; they sum to the peak. */
enum { B_WEIGHTS, B_GRADS, B_STATE, B_TEMPS, B_ACT, B_WS, B_OTHER, NB };
static const char *const BNAME[NB] = {"weights_bpp", "grads_bpp", "state_bpp", "temporaries_bpp",
                                      "activations_bpp", "workspace_bpp", "other_bpp"};
static const char *const BNOTE[NB] = {
    "fp32 parameters at the steady peak, bytes per parameter",
    ".grad at the steady peak, bytes per parameter",
    "persistent optimizer state (momentum_buffer; exp_avg + exp_avg_sq), bytes per parameter",
    "the optimizer's foreach temporaries live at the peak (Adam's _foreach_sqrt), bytes per parameter",
    "activations live at the peak (inputs, layer outputs, their gradients), bytes per parameter",
    "cuBLAS/cuBLASLt workspaces, bytes per parameter",
    "scalars, reduction scratch and autocast casts at the peak, bytes per parameter"};

static mc_workload_config config(int64_t H, mc_wl_optimizer o)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = layers_opt;
    c.in = c.width = c.out = H;
    c.batch = batch_opt;
    c.optimizer = o;
    return c;
}

/* Runs 1 + warm-up + R steps; on a GPU checks each step's allocator figures
 * against the model-only run of the same configuration and the loss. */
static fig measure(mc_run *run, int64_t H, mc_wl_optimizer o)
{
    fig f;
    memset(&f, 0, sizeof f);
    mc_workload_config c = config(H, o);
    f.P = (double)mc_workload_param_count(&c);
    char err[256];
    mc_workload *w = mc_workload_create(&c, run->on_gpu, NULL, err, sizeof err);
    mc_workload *ref = run->on_gpu ? mc_workload_create(&c, false, NULL, err, sizeof err) : NULL;
    CHECK(w != NULL && (ref != NULL || !run->on_gpu), "workload: %s", err);
    const int W = run->opt.warmup, R = run->opt.repeats, S = 1 + W + R;
    double *pk = mc_xmalloc((size_t)R * 3 * sizeof *pk), *en = pk + R, *tm = pk + 2 * R;
    for (int s = 1; s <= S && !f.oom; s++) {
        mc_workload_step_result r, m;
        f.oom = mc_workload_step(w, &r) != MC_WL_OK;
        if (f.oom) break;
        uint64_t sum = 0;
        for (int k = 0; k < MC_WL_NCAT; k++) sum += r.peak_by_category[k];
        if (sum != r.peak_allocated)
            mc_verify_failed(run, mc_wl_optimizer_name(o), "width %lld step %d: categories sum "
                             "to %llu B, peak is %llu B", (long long)H, s,
                             (unsigned long long)sum, (unsigned long long)r.peak_allocated);
        if (ref) {
            mc_workload_step(ref, &m);
            if (m.peak_allocated != r.peak_allocated || m.allocated_end != r.allocated_end ||
                !isfinite(r.loss))
                mc_verify_failed(run, mc_wl_optimizer_name(o), "width %lld step %d: GPU peak %llu "
                                 "end %llu loss %g, model-only peak %llu end %llu", (long long)H,
                                 s, (unsigned long long)r.peak_allocated,
                                 (unsigned long long)r.allocated_end, r.loss,
                                 (unsigned long long)m.peak_allocated,
                                 (unsigned long long)m.allocated_end);
        }
        if (s == 1) f.s1 = r;
        if (s > 1 + W) {
            int i = s - 2 - W;
            pk[i] = (double)r.peak_allocated;
            en[i] = (double)r.allocated_end;
            tm[i] = r.step_time_s;
            f.last = r;
        }
    }
    if (!f.oom) {
        f.peak = mc_stats_of(pk, (size_t)R);
        f.end = mc_stats_of(en, (size_t)R);
        f.time = mc_stats_of(tm, (size_t)R);
        uint64_t live[MC_WL_NCAT];
        mc_workload_live_by_category(w, live);
        f.state = live[MC_WL_OPTIMIZER];
        const uint64_t *pc = f.last.peak_by_category;
        uint64_t opt = pc[MC_WL_OPTIMIZER], st = opt < f.state ? opt : f.state;
        const double b[NB] = {(double)pc[MC_WL_WEIGHTS], (double)pc[MC_WL_GRADS], (double)st,
                              (double)(opt - st), (double)pc[MC_WL_ACTIVATIONS],
                              (double)pc[MC_WL_WORKSPACE],
                              (double)(pc[MC_WL_OTHER] + pc[MC_WL_CASTS])};
        for (int k = 0; k < NB; k++) f.bpp[k] = b[k] / f.P;
    }
    free(pk);
    mc_workload_destroy(w);
    mc_workload_destroy(ref);
    return f;
}

static void emit_fig(mc_run *run, const fig *f, mc_wl_optimizer o, int64_t H)
{
    const char *v = mc_wl_optimizer_name(o);
    const double pv = (double)H;
    if (f->oom) {
        mc_emit(run, v, "width", pv, "peak_allocated", "bytes", mc_stats_one(NAN), "oom",
                "out of memory during the run");
        return;
    }
    mc_emit_value(run, v, "width", pv, "params", "count", f->P, "parameters P = sum(in*out + out)");
    mc_emit(run, v, "width", pv, "peak_allocated", "bytes", f->peak, "ok",
            "max_memory_allocated() of the measured steady steps");
    mc_emit_value(run, v, "width", pv, "step1_peak_allocated", "bytes",
                  (double)f->s1.peak_allocated, "step 1: the optimizer state is created");
    mc_emit(run, v, "width", pv, "allocated_end", "bytes", f->end, "ok",
            "memory_allocated() after zero_grad(set_to_none=True): weights + state + workspaces");
    mc_emit_value(run, v, "width", pv, "peak_bpp", "bytes/param", f->peak.median / f->P,
                  "steady peak allocated per parameter");
    mc_emit_value(run, v, "width", pv, "end_bpp", "bytes/param", f->end.median / f->P,
                  "allocated between steps per parameter");
    for (int k = 0; k < NB; k++)
        mc_emit_value(run, v, "width", pv, BNAME[k], "bytes/param", f->bpp[k], BNOTE[k]);
    mc_emit_value(run, v, "width", pv, "grads_state_bpp", "bytes/param",
                  f->bpp[B_GRADS] + f->bpp[B_STATE], "gradient + persistent optimizer state at "
                  "the steady peak, bytes per parameter (fp32: SGD 4, momentum 8, Adam 12 expected)");
    if (run->on_gpu)
        mc_emit(run, v, "width", pv, "step_time", "s", f->time, "ok",
                "CUDA events around the step (the workload's)");
}

/* Ratios of one optimizer to SGD at one width. */
typedef struct {
    double peak, step1, end, grads_state, model_state;
} ratios;

static ratios ratio_of(const fig *a, const fig *sgd)
{
    ratios r;
    r.peak = a->peak.median / sgd->peak.median;
    r.step1 = (double)a->s1.peak_allocated / (double)sgd->s1.peak_allocated;
    r.end = a->end.median / sgd->end.median;
    /* Only where both peaks hold every gradient (grads = weights in fp32); with a batch so
     * large that a peak falls in the forward or mid-backward these sub-measures are NaN. */
    bool all_grads = a->bpp[B_GRADS] == a->bpp[B_WEIGHTS] && sgd->bpp[B_GRADS] == sgd->bpp[B_WEIGHTS];
    r.grads_state = all_grads ? (a->bpp[B_GRADS] + a->bpp[B_STATE]) / (sgd->bpp[B_GRADS] + sgd->bpp[B_STATE]) : NAN;
    r.model_state = all_grads ? (a->bpp[B_WEIGHTS] + a->bpp[B_GRADS] + a->bpp[B_STATE]) /
                                (sgd->bpp[B_WEIGHTS] + sgd->bpp[B_GRADS] + sgd->bpp[B_STATE]) : NAN;
    return r;
}

static void emit_ratios(mc_run *run, const char *v, int64_t H, const ratios *r)
{
    const double pv = (double)H;
    mc_emit_value(run, v, "width", pv, "peak_ratio", "ratio", r->peak,
                  "steady peak allocated over SGD's (steps >= 3)");
    mc_emit_value(run, v, "width", pv, "step1_peak_ratio", "ratio", r->step1,
                  "step 1 (state creation) peak allocated over SGD's");
    mc_emit_value(run, v, "width", pv, "end_ratio", "ratio", r->end,
                  "memory_allocated between steps over SGD's");
    mc_emit_value(run, v, "width", pv, "grads_state_ratio", "ratio", r->grads_state,
                  "(grads + persistent state) at the peak over SGD's; empty where a peak does "
                  "not hold every gradient");
    mc_emit_value(run, v, "width", pv, "model_state_ratio", "ratio", r->model_state,
                  "(weights + grads + persistent state) at the peak over SGD's");
}

static bool in_band(double x) { return x >= RATIO_LO && x <= RATIO_HI; }

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const int64_t *widths = run.opt.quick ? WIDTHS_QUICK : WIDTHS;
    const int NW = run.opt.quick ? 2 : 4;
    fig(*F)[NOPT] = mc_xmalloc((size_t)NW * sizeof *F);
    bool oom = false;
    for (int i = 0; i < NW; i++)
        for (int j = 0; j < NOPT; j++) {
            mc_log(&run, "width %lld, %s", (long long)widths[i], mc_wl_optimizer_name(OPTS[j]));
            F[i][j] = measure(&run, widths[i], OPTS[j]);
            emit_fig(&run, &F[i][j], OPTS[j], widths[i]);
            oom |= F[i][j].oom;
        }

    int in_band_n = 0, no_effect = 0;
    double rmin = INFINITY, rmax = -INFINITY;
    ratios last = {0};
    char per_w[512] = "";
    size_t used = 0;
    for (int i = 0; i < NW && !oom; i++) {
        const fig *sgd = &F[i][0], *mom = &F[i][1], *adam = &F[i][2];
        ratios ra = ratio_of(adam, sgd), rm = ratio_of(mom, sgd);
        emit_ratios(&run, "adam_vs_sgd", widths[i], &ra);
        emit_ratios(&run, "momentum_vs_sgd", widths[i], &rm);
        in_band_n += in_band(ra.peak);
        no_effect += ra.peak <= NO_EFFECT;
        rmin = fmin(rmin, ra.peak);
        rmax = fmax(rmax, ra.peak);
        last = ra;
        used += (size_t)snprintf(per_w + used, used < sizeof per_w ? sizeof per_w - used : 0,
                                 "%sH=%lld %.2fx", i ? ", " : "", (long long)widths[i], ra.peak);
        mc_emit_finding(&run,
            "H=%lld (P=%.0f): bytes/param at the steady peak, weights+grads+state+temporaries"
            "+activations+workspace+other: SGD %.2f+%.2f+%.2f+%.2f+%.2f+%.2f+%.2f = %.2f; "
            "momentum %.2f+%.2f+%.2f+%.2f+%.2f+%.2f+%.2f = %.2f; Adam %.2f+%.2f+%.2f+%.2f+%.2f"
            "+%.2f+%.2f = %.2f. Peak Adam/SGD %.2fx (step 1, state created: %.2fx), "
            "momentum/SGD %.2fx.", (long long)widths[i], sgd->P,
            sgd->bpp[0], sgd->bpp[1], sgd->bpp[2], sgd->bpp[3], sgd->bpp[4], sgd->bpp[5],
            sgd->bpp[6], sgd->peak.median / sgd->P, mom->bpp[0], mom->bpp[1], mom->bpp[2],
            mom->bpp[3], mom->bpp[4], mom->bpp[5], mom->bpp[6], mom->peak.median / mom->P,
            adam->bpp[0], adam->bpp[1], adam->bpp[2], adam->bpp[3], adam->bpp[4], adam->bpp[5],
            adam->bpp[6], adam->peak.median / adam->P, ra.peak, ra.step1, rm.peak);
        if (run.on_gpu)
            mc_emit_finding(&run, "H=%lld step time (events, median): SGD %.3f ms, momentum %.3f "
                            "ms, Adam %.3f ms.", (long long)widths[i], 1e3 * sgd->time.median,
                            1e3 * mom->time.median, 1e3 * adam->time.median);
    }
    if (oom) {
        mc_emit_verdict(&run, MC_INCONCLUSIVE, "a run was out of memory; no ratio at every width");
        free(F);
        return mc_run_end(&run);
    }
    const fig *big_s = &F[NW - 1][0], *big_a = &F[NW - 1][2];
    /* Where Adam's peak lies: at its update (the foreach temporaries live) or in the backward. */
    char where[160];
    if (big_a->bpp[B_TEMPS] > 0)
        snprintf(where, sizeof where, "Adam's peak is at its update, where _foreach_sqrt adds %.2f "
                 "B/param", big_a->bpp[B_TEMPS]);
    else
        snprintf(where, sizeof where, "Adam's peak is in the forward/backward, with %.2f B/param of "
                 "activations", big_a->bpp[B_ACT]);
    mc_emit_finding(&run,
        "What \"3x\" can mean, at H=%lld: persistent state Adam %.2f vs SGD %.2f B/param (Adam's "
        "state is %.2fx its fp32 weights); grads+state at the peak %.2f vs %.2f (%.2fx; NaN if a "
        "peak lacks some gradients); weights+grads+state %.2f vs %.2f (%.2fx); Adam's "
        "weights+grads+state over SGD's weights alone %.2fx; memory_allocated between steps "
        "(weights+state+workspaces, grads freed by zero_grad) %.2fx; the whole steady peak %.2fx: "
        "%s, while SGD's peak holds %.2f B/param of activations and %.2f of workspaces.",
        (long long)widths[NW - 1], big_a->bpp[B_STATE], big_s->bpp[B_STATE],
        big_a->bpp[B_STATE] / big_a->bpp[B_WEIGHTS], big_a->bpp[B_GRADS] + big_a->bpp[B_STATE], big_s->bpp[B_GRADS] + big_s->bpp[B_STATE],
        last.grads_state, big_a->bpp[B_WEIGHTS] + big_a->bpp[B_GRADS] + big_a->bpp[B_STATE],
        big_s->bpp[B_WEIGHTS] + big_s->bpp[B_GRADS] + big_s->bpp[B_STATE], last.model_state,
        (big_a->bpp[B_WEIGHTS] + big_a->bpp[B_GRADS] + big_a->bpp[B_STATE]) / big_s->bpp[B_WEIGHTS],
        last.end, last.peak, where, big_s->bpp[B_ACT], big_s->bpp[B_WS]);

    mc_verdict v;
    char sub[256] = "";
    if (in_band(last.grads_state))
        snprintf(sub, sizeof sub, "; within 2.5-3.5x at H=%lld: grads+state %.2fx",
                 (long long)widths[NW - 1], last.grads_state);
    if (in_band(last.end))
        snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "%s memory allocated between steps "
                 "%.2fx", sub[0] ? "," : "; within 2.5-3.5x:", last.end);
    if (in_band_n == NW) v = MC_HOLDS;
    else if (no_effect > 0) v = MC_DOES_NOT_HOLD;
    else v = MC_HOLDS_PARTLY;
    mc_emit_verdict(&run, v,
        "steady peak allocated Adam/SGD %s (range %.2f-%.2fx, in 2.5-3.5x at %d of %d widths)%s; "
        "weights+grads+state %.2fx at H=%lld.", per_w, rmin, rmax, in_band_n, NW, sub,
        last.model_state, (long long)widths[NW - 1]);
    free(F);
    return mc_run_end(&run);
}
