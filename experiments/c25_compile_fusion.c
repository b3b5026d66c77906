/* c25_compile_fusion: C25. What fusing a Transformer's elementwise chains
 * saves, memory and time: the suite's Transformer trained eagerly (one
 * kernel per op, PyTorch 2.11's requests) against the same model with its
 * chains in one kernel each (build/workload --fused: tfm_fused_ops.c),
 * what torch.compile's Inductor does with them; PyTorch's own eager and
 * torch.compile figures for the same models, recorded on the device by
 * tests/torch/compile_reference.py, beside them. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band.h"
#include "check.h"
#include "results/csv_read.h"
#include "experiment.h"
#include "support/steady.h"
#include "workload/transformer/tfm.h"

static const char *pytorch_dir = NULL; /* NULL: tests/fixtures/compile */

static const mc_extra_opt EXTRA[] = {
    {"pytorch", MC_OPT_STRING, &pytorch_dir,
     "folder of compile_reference.py's output (summary.csv) to set beside the suite's figures "
     "(default tests/fixtures/compile, the committed record)"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const mc_experiment EXP = {
    .claim = "C25",
    .key = "compile_fusion",
    .title = "The Transformer's elementwise chains fused into single kernels vs eager's separate ops: "
             "peak allocated and step time",
    .seed_claim = "torch.compile optimises graph execution and reduces temporary tensors.",
    .method = "Two models of tests/torch/compile_configs.txt: seed 000's nn.Transformer(d_model=512, "
              "batch_first=True; built on the host and moved (.cuda()) as the seed builds it) on (32, 100, 512) under fp16 autocast with Adam, and an fp32 "
              "nn.TransformerEncoder (d_model 256, 8 heads, 3 layers, ff 1024) on (16, 128, 256) "
              "with AdamW; the first also at batch 128 (not with --quick). Each trained eagerly "
              "(PyTorch 2.11's ops and requests) and --fused: the FFN's activation+dropout and each "
              "sublayer's dropout+residual add in one kernel, keeping a byte per element instead of "
              "an activation's output and a mask (attention is one fused kernel in both, as SDPA). "
              "Peak allocated of the steady step (step 3) through the allocator model; on a GPU the "
              "same over the CUDA backend (checked equal), the step time (CUDA events, median of "
              "--repeats steps after --warmup and the first 3), and eager's and fused's losses "
              "compared (the same data, weights and dropout streams: the same values), every timed "
              "step's time kept for the verdict. PyTorch's "
              "own eager and torch.compile (default mode) figures, medians of compile_reference.py's "
              "steps after its compile steps, are read from --pytorch.",
    .verdict_rule = "Per model: s = 1 - peak(fused) / peak(eager), and on a GPU speed-up = "
                    "median step time eager / fused, judged by its uncertainty: the 10th-90th "
                    "percentile of that ratio over bootstrap resamples of each side's step times "
                    "(band.h). faster if that interval lies at or above 1.05; not faster if it lies "
                    "at or below 1.02; an interval that straddles 1.05 or 1.02 establishes neither (the "
                    "verdict names it), so a model whose median speed-up is near an edge reads the "
                    "same on every machine. holds if s >= 0.05 and faster for every model; "
                    "does-not-hold if s < 0.01 and (no GPU or not faster) for every model; "
                    "otherwise holds-partly (without a GPU the time is not measured, so at most "
                    "holds-partly). inconclusive if a run is out of memory. Step times with two "
                    "modes are reported as both modes and their shares. PyTorch's torch.compile "
                    "figures are reported beside, not part of the rule (another machine's record).",
    .flags = MC_EXP_MODEL_ONLY,
    .default_repeats = 10,
    .default_warmup = 2,
    .extra = EXTRA,
    .validate = NULL,
};

#define STEADY_STEP MC_TFM_STEADY_STEP
#define MEM_SAVES 0.05     /* s at or above: the fused chains reduce the peak */
#define SPEEDS 1.05        /* speed-up at or above: faster */
#define NO_MEM 0.01
#define NO_SPEED 1.02
#define PROF_MIN_MS 0.05   /* a kind's time changed by less: not listed */

typedef struct {
    const char *name;      /* compile_configs.txt's */
    int64_t batch;
    bool quick;            /* in --quick */
} model_point;

static const model_point POINTS[] = {
    {"seed_t512_bf_adam_fp16", 32, true},
    {"enc_adamw_fp32", 16, true},
    {"seed_t512_bf_adam_fp16", 128, false},
};
#define NPOINT ((int)(sizeof POINTS / sizeof *POINTS))

static mc_tfm_config config_of(const model_point *m, bool fused)
{
    mc_tfm_config c = mc_tfm_config_default();
    if (!strcmp(m->name, "seed_t512_bf_adam_fp16")) {
        c = mc_tfm_seed000_amp(m->batch, MC_WL_FP16);
    } else {
        c.arch = MC_TFM_ENCODER;
        c.d_model = 256;
        c.heads = 8;
        c.enc_layers = 3;
        c.ff = 1024;
        c.seq = 128;
        c.optimizer = MC_WL_ADAMW;
        c.precision = MC_WL_FP32;
    }
    c.batch = m->batch;
    c.fused = fused;
    c.seed = 25;
    return c;
}

typedef mc_tfm_figures fig;

static fig run_model(mc_run *run, const model_point *m, bool fused, bool on_gpu)
{
    const mc_tfm_config c = config_of(m, fused);
    char what[96];
    snprintf(what, sizeof what, "%s %s%s", m->name, fused ? "fused" : "eager", on_gpu ? "" : " (host model)");
    return mc_tfm_measure_run(run, &c, on_gpu, what);
}

/* ------------------------------------------------------------ PyTorch's record */

typedef struct {
    bool have;
    double t, peak; /* median step time (s), median peak allocated (bytes) */
    char status[32];
} pt_fig;

/* Whether dir holds PyTorch's trace of name's eager run (NAME.eager.trace). */
static bool trace_exists(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.eager.trace", dir, name);
    FILE *fp = fopen(path, "r");
    if (fp) fclose(fp);
    return fp != NULL;
}

/* summary.csv of compile_reference.py: name, mode, then SUMMARY_KEYS. */
static void read_pytorch(const char *dir, const char *name, pt_fig out[2])
{
    memset(out, 0, 2 * sizeof *out);
    char path[1024];
    snprintf(path, sizeof path, "%s/summary.csv", dir);
    FILE *fp = fopen(path, "r");
    if (!fp) return;
    char line[4096], *f[64];
    int i_name = -1, i_mode = -1, i_status = -1, i_t = -1, i_peak = -1;
    bool header = true;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        int n = mc_csv_split(line, f, 64);
        if (n < 0) continue;
        if (header) {
            for (int k = 0; k < n; k++) {
                if (!strcmp(f[k], "name")) i_name = k;
                else if (!strcmp(f[k], "mode")) i_mode = k;
                else if (!strcmp(f[k], "status")) i_status = k;
                else if (!strcmp(f[k], "step_time_median_s")) i_t = k;
                else if (!strcmp(f[k], "peak_allocated_median")) i_peak = k;
            }
            header = false;
            if (i_name < 0 || i_mode < 0 || i_status < 0 || i_t < 0 || i_peak < 0) break;
            continue;
        }
        if (n <= i_peak || n <= i_t || strcmp(f[i_name], name)) continue;
        int mode = !strcmp(f[i_mode], "eager") ? 0 : !strcmp(f[i_mode], "compile") ? 1 : -1;
        if (mode < 0) continue;
        pt_fig *p = &out[mode];
        snprintf(p->status, sizeof p->status, "%s", f[i_status]);
        p->have = !strcmp(f[i_status], "ok") && mc_csv_parse_number(f[i_t], &p->t) &&
                  mc_csv_parse_number(f[i_peak], &p->peak);
    }
    fclose(fp);
}

/* ------------------------------------------------------------ the time's judgement */

/* One finding when a variant's step times have two modes (band.h): their
 * median then depends on the shares, which differ from run to run. */
static void modes_finding(mc_run *run, const char *what, const fig *f)
{
    const mc_modes md = mc_modes_of(f->times, (size_t)f->ntimes);
    if (md.n == 2)
        mc_emit_finding(run, "%s: step time is bimodal over %d timed steps: %.3f ms (%.0f%%) and "
                        "%.3f ms (%.0f%%)", what, f->ntimes, 1e3 * md.median[0], 100.0 * md.share[0],
                        1e3 * md.median[1], 100.0 * md.share[1]);
}

/* ------------------------------------------------------------ output */

static void emit_fig(mc_run *run, const char *v, int64_t B, const fig *f)
{
    const double pv = (double)B;
    if (f->oom) {
        mc_emit(run, v, "batch", pv, "peak_allocated", "bytes", mc_stats_one(NAN), "oom",
                "out of memory in the first steps");
        return;
    }
    mc_emit_value(run, v, "batch", pv, "peak_allocated", "bytes", (double)f->peak,
                  "max_memory_allocated() of step 3 (peak reset at each step's start)");
    mc_emit_value(run, v, "batch", pv, "peak_activations", "bytes", (double)f->peak_act,
                  "activations live at that peak");
    if (run->on_gpu)
        mc_emit(run, v, "batch", pv, "step_time", "s", f->time, "ok",
                "CUDA events around the step, after the warm-up");
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const char *dir = pytorch_dir ? pytorch_dir : "tests/fixtures/compile";
    int n_mem = 0, n_speed = 0, n_none = 0, points = 0;
    bool oom = false;
    char per[1024] = "";
    size_t used = 0;
    for (int i = 0; i < NPOINT; i++) {
        const model_point *m = &POINTS[i];
        if (run.opt.quick && !m->quick) continue;
        mc_log(&run, "%s, batch %lld: eager, then fused", m->name, (long long)m->batch);
        fig f[2];
        for (int fused = 0; fused < 2; fused++) {
            f[fused] = run_model(&run, m, fused, run.on_gpu);
            if (run.on_gpu && !f[fused].oom) { /* the GPU run takes the model's blocks: the model's peak */
                const mc_tfm_config c = config_of(m, fused);
                char what[96];
                snprintf(what, sizeof what, "%s %s", m->name, fused ? "fused" : "eager");
                if (f[fused].skipped) /* the host model never skips: their requests part */
                    mc_verify_failed(&run, what, "GradScaler skipped %d GPU steps", f[fused].skipped);
                else
                    mc_tfm_check_gpu_peak(&run, &c, &f[fused], what, true);
            }
            char v[96];
            snprintf(v, sizeof v, "%s/%s", m->name, fused ? "fused" : "eager");
            emit_fig(&run, v, m->batch, &f[fused]);
        }
        if (f[0].oom || f[1].oom) {
            oom = true;
            mc_tfm_figures_free(&f[0]);
            mc_tfm_figures_free(&f[1]);
            continue;
        }
        if (run.on_gpu) /* the same data, weights and dropout streams: the same losses */
            for (int s = 0; s < STEADY_STEP; s++) {
                const double tol = strstr(m->name, "fp16") ? 1e-2 : 1e-4;
                const double d = fabs(f[0].loss[s] - f[1].loss[s]) / fabs(f[0].loss[s]);
                if (!(d <= tol))
                    mc_verify_failed(&run, m->name, "step %d: eager loss %.7g, fused %.7g (relative %.2g)", s + 1,
                                     f[0].loss[s], f[1].loss[s], d);
            }
        const double s = 1.0 - (double)f[1].peak / (double)f[0].peak;
        const double sp = run.on_gpu ? f[0].time.median / f[1].time.median : NAN;
        /* The speed-up's uncertainty against each threshold (open above or
         * below): inside = established; straddling = neither side. */
        mc_band fast = {0}, slow = {0};
        if (run.on_gpu) { /* no timed step on a side (an OOM there): nothing established */
            const bool timed = f[0].ntimes > 0 && f[1].ntimes > 0;
            fast = mc_band_ratio_of(f[0].times, timed ? (size_t)f[0].ntimes : 0, f[1].times,
                                    timed ? (size_t)f[1].ntimes : 0, SPEEDS, INFINITY);
            slow = mc_band_ratio_of(f[0].times, timed ? (size_t)f[0].ntimes : 0, f[1].times,
                                    timed ? (size_t)f[1].ntimes : 0, 0.0, NO_SPEED);
            for (int fused = 0; fused < 2; fused++) {
                char what[96];
                snprintf(what, sizeof what, "%s B=%lld %s", m->name, (long long)m->batch,
                         fused ? "fused" : "eager");
                modes_finding(&run, what, &f[fused]);
            }
            if (f[0].have_prof && f[1].have_prof) {
                char cmp[512];
                mc_emit_finding(&run, "%s B=%lld, where fusion changes the GPU time (one profiled step "
                                "each, CUDA events around every GPU operation, build/workload "
                                "--profile's split): %s", m->name, (long long)m->batch,
                                mc_prof_table_compare(cmp, sizeof cmp, "eager", &f[0].prof, "fused",
                                                      &f[1].prof, PROF_MIN_MS));
            }
            if (fast.place == MC_BAND_STRADDLES || slow.place == MC_BAND_STRADDLES)
                mc_emit_finding(&run, "%s B=%lld: speed-up %.3fx (median), its 10th-90th percentile "
                                "%.3f-%.3fx straddles %.2f: the measurement cannot tell (%.0f%% of "
                                "resampled speed-ups at or above %.2f, %.0f%% at or below %.2f)",
                                m->name, (long long)m->batch, sp, fast.p_low, fast.p_high,
                                fast.place == MC_BAND_STRADDLES ? SPEEDS : NO_SPEED, 100.0 * fast.inside,
                                SPEEDS, 100.0 * slow.inside, NO_SPEED);
        }
        const bool is_fast = run.on_gpu && fast.place == MC_BAND_INSIDE;
        const bool not_fast = run.on_gpu && slow.place == MC_BAND_INSIDE;
        mc_emit_value(&run, m->name, "batch", (double)m->batch, "peak_saving", "fraction", s,
                      "1 - peak(fused) / peak(eager)");
        if (run.on_gpu)
            mc_emit_value(&run, m->name, "batch", (double)m->batch, "speedup", "ratio", sp,
                          "median step time eager / fused");
        points++;
        n_mem += s >= MEM_SAVES;
        n_speed += is_fast;
        n_none += s < NO_MEM && (!run.on_gpu || not_fast);
        used += (size_t)snprintf(per + used, sizeof per - used, "%s%s B=%lld: peak -%.1f%%%s", used ? "; " : "",
                                 m->name, (long long)m->batch, 100 * s, "");
        if (run.on_gpu && used < sizeof per) {
            char where[64];
            if (is_fast) snprintf(where, sizeof where, "at or above %.2f", SPEEDS);
            else if (not_fast) snprintf(where, sizeof where, "at or below %.2f", NO_SPEED);
            else if (fast.place == MC_BAND_STRADDLES) snprintf(where, sizeof where, "straddles %.2f", SPEEDS);
            else if (slow.place == MC_BAND_STRADDLES) snprintf(where, sizeof where, "straddles %.2f", NO_SPEED);
            else snprintf(where, sizeof where, "between %.2f and %.2f", NO_SPEED, SPEEDS);
            used += (size_t)snprintf(per + used, sizeof per - used,
                                     ", %.2fx faster (10th-90th percentile %.2f-%.2fx: %s)", sp, fast.p_low,
                                     fast.p_high, where);
        }
        if (used >= sizeof per) used = sizeof per - 1;

        /* PyTorch's own, when recorded for this model (batch as in compile_configs.txt) */
        pt_fig pt[2];
        read_pytorch(dir, m->name, pt);
        static const char *const pmode[2] = {"pytorch_eager", "pytorch_compile"};
        for (int k = 0; k < 2; k++) { /* recorded at compile_configs.txt's batch: the --quick points' */
            char v[96];
            snprintf(v, sizeof v, "%s/%s", m->name, pmode[k]);
            if (!pt[k].have || !m->quick) continue;
            mc_emit_value(&run, v, "batch", (double)m->batch, "peak_allocated", "bytes", pt[k].peak,
                          "PyTorch's record (compile_reference.py summary.csv, median after compile steps)");
            mc_emit_value(&run, v, "batch", (double)m->batch, "step_time", "s", pt[k].t,
                          "PyTorch's record, median step time (another process, maybe another GPU)");
        }
        if (pt[0].have && m->quick) { /* the same model, batch and step: the same eager peak */
            const bool same = (double)f[0].peak == pt[0].peak;
            char why[320] = "";
            if (!same && trace_exists(dir, m->name))
                snprintf(why, sizeof why, " (%+.3f%%; PyTorch's trace of that run, %s.eager.trace there, has the "
                                          "same requests, its segments placed elsewhere by the recording GPU's "
                                          "driver: make test checks this for tests/fixtures/compile)",
                         100.0 * ((double)f[0].peak / pt[0].peak - 1), m->name);
            else if (!same)
                snprintf(why, sizeof why, " (%+.3f%%; no trace of PyTorch's run names the cause)",
                         100.0 * ((double)f[0].peak / pt[0].peak - 1));
            mc_emit_finding(&run, "%s: the suite's eager peak %llu B %s PyTorch's recorded eager peak %.0f B%s", m->name,
                            (unsigned long long)f[0].peak, same ? "equals" : "differs from", pt[0].peak, why);
        }
        if (pt[0].have && pt[1].have && m->quick)
            mc_emit_finding(&run, "%s: PyTorch's own torch.compile (recorded in %s) gives peak %.1f MiB vs "
                                  "eager %.1f MiB (%+.1f%%) and step %.2f ms vs %.2f ms (%.2fx)",
                            m->name, dir, pt[1].peak / 1048576.0, pt[0].peak / 1048576.0,
                            100.0 * (pt[1].peak / pt[0].peak - 1.0), 1e3 * pt[1].t, 1e3 * pt[0].t,
                            pt[0].t / pt[1].t);
        else if (m->quick)
            mc_emit_finding(&run, "%s: no torch.compile record in %s (eager %s, compile %s): "
                                  "tests/torch/compile_reference.py makes one on a GPU",
                            m->name, dir, pt[0].status[0] ? pt[0].status : "missing",
                            pt[1].status[0] ? pt[1].status : "missing");
        mc_tfm_figures_free(&f[0]);
        mc_tfm_figures_free(&f[1]);
    }
    mc_verdict v;
    if (oom || points == 0) v = MC_INCONCLUSIVE;
    else if (run.on_gpu && n_mem == points && n_speed == points) v = MC_HOLDS;
    else if (n_none == points) v = MC_DOES_NOT_HOLD;
    else v = MC_HOLDS_PARTLY;
    mc_emit_verdict(&run, v, "the suite's Transformer, eager vs fused chains (%d models): %s%s", points, per,
                    run.on_gpu ? "" : "; time not measured (model-only)");
    return mc_run_end(&run);
}
