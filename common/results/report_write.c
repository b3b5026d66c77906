/* report_write.c: REPORT.md from a run read by run_read.h (report_write.h). */
#define _POSIX_C_SOURCE 200809L
#include "report_write.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* gpu_memory_bytes is in bytes; the report gives GiB. */
#define BYTES_PER_GIB 1073741824.0

static const char *meta(const mc_run_data *run, const char *key)
{
    const char *v = mc_run_meta(run, key);
    return v ? v : "";
}

static const char *verdict_of(const mc_run_experiment *e)
{
    const mc_result_row *v = mc_run_verdict(e);
    return v ? v->text[MC_COL_STATUS] : NULL;
}

/* What this run shows for e: its verdict row's note. */
static const char *shows_of(const mc_run_experiment *e)
{
    const mc_result_row *v = mc_run_verdict(e);
    return v ? v->text[MC_COL_NOTE] : NULL;
}

static bool is_waived(const mc_run_experiment *e)
{
    const char *v = verdict_of(e);
    return v && !strcmp(v, "waived");
}

/* A verdict computed on the allocator model (--model-only), not on a GPU. */
static bool is_model_only(const mc_run_experiment *e)
{
    const char *v = verdict_of(e);
    return v && strcmp(v, "waived") && e->has_run && !strcmp(e->mode, "model-only");
}

/* What a GPU run would measure here: waived, or left no verdict. */
static bool needs_gpu(const mc_run_experiment *e)
{
    return !is_model_only(e) && (!verdict_of(e) || is_waived(e));
}

/* A table cell: '|' would end it, so it is escaped. */
static void put_cell(FILE *fp, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputc('\\', fp);
        fputc(*s, fp);
    }
}

/* The verdict, or what happened to an experiment that left none. */
static void put_outcome(FILE *fp, const mc_run_experiment *e)
{
    const char *v = verdict_of(e);
    if (is_model_only(e))
        fprintf(fp, "%s (computed by the allocator model, no GPU)", v);
    else if (v)
        fputs(v, fp);
    else if (!e->has_run)
        fputs("not run", fp);
    else if (!strcmp(e->state, "interrupted"))
        fputs("interrupted", fp);
    else
        fprintf(fp, "%s (exit %d)", e->state, e->exit_code);
}

/* The note of run-all's gpu_shared row (another process on the GPU), or NULL. */
static const char *shared_of(const mc_run_experiment *e)
{
    for (size_t j = 0; j < e->nrows; j++)
        if (!strcmp(e->rows[j].text[MC_COL_METRIC], MC_GPU_SHARED_METRIC)) return e->rows[j].text[MC_COL_NOTE];
    return NULL;
}

static bool is_shared(const mc_run_experiment *e) { return shared_of(e) != NULL; }

/* The claims of the experiments that pass keep, joined by ", ". */
static void put_claims(FILE *fp, const mc_run_data *run, bool (*keep)(const mc_run_experiment *))
{
    const char *sep = "";
    for (size_t i = 0; i < run->nexp; i++) {
        if (!keep(&run->exp[i])) continue;
        fprintf(fp, "%s%s", sep, run->exp[i].claim);
        sep = ", ";
    }
}

static size_t count(const mc_run_data *run, bool (*keep)(const mc_run_experiment *))
{
    size_t n = 0;
    for (size_t i = 0; i < run->nexp; i++) n += keep(&run->exp[i]);
    return n;
}

static bool has_no_verdict(const mc_run_experiment *e) { return !verdict_of(e); }

/* ------------------------------------------------------------ the head */

/* Without a GPU: first what a GPU run would add. */
static void put_gpu_would_add(FILE *fp, const mc_run_data *run)
{
    size_t nw = count(run, needs_gpu), nm = count(run, is_model_only);
    fputs("**What a GPU run would add.**", fp);
    if (nw > 0) {
        bool many = nw > 1;
        fprintf(fp, " %zu claim%s need%s a GPU and %s waived or not run here: ", nw, many ? "s" : "",
                many ? "" : "s", many ? "were" : "was");
        put_claims(fp, run, needs_gpu);
        fprintf(fp, "; a GPU run measures %s and states %s verdict%s.", many ? "them" : "it",
                many ? "their" : "its", many ? "s" : "");
    }
    if (nm > 0) {
        fprintf(fp, " %zu verdict%s (", nm, nm > 1 ? "s" : "");
        put_claims(fp, run, is_model_only);
        fprintf(fp, ") %s computed by the allocator model with no GPU (`--model-only`); on a GPU the same "
                    "experiments also take real cudaMalloc segments and add the driver's memory figures and "
                    "the timings.", nm > 1 ? "were" : "was");
    }
    fputs("\n\n", fp);
}

static void put_head(FILE *fp, const mc_run_data *run)
{
    const char *gpu = mc_run_meta(run, "gpu_name");
    fprintf(fp, "# memclaims report: %s\n\n", gpu ? gpu : "no GPU");
    if (strcmp(meta(run, "gpu_status"), "ok") && run->nexp > 0) put_gpu_would_add(fp, run);
    if (gpu)
        fprintf(fp, "%s, %.1f GiB, compute capability %s, driver %s, CUDA runtime %s. ", gpu,
                strtod(meta(run, "gpu_memory_bytes"), NULL) / BYTES_PER_GIB, meta(run, "compute_capability"),
                meta(run, "driver_version"), meta(run, "cuda_runtime_version"));
    else
        fprintf(fp, "No usable GPU: %s. ", meta(run, "gpu_status"));
    if (gpu && mc_run_meta(run, "half_attention")) /* runs from before it was recorded have none */
        fprintf(fp, "The Transformer's fp16/bf16 attention: %s. ", meta(run, "half_attention"));
    fprintf(fp, "Run %s on host %s", meta(run, "utc_time"), meta(run, "host"));
    if (mc_run_meta(run, "cpu_model")) /* runs from before it was recorded have none */
        fprintf(fp, " (%s, %s CPUs)", meta(run, "cpu_model"), meta(run, "cpu_count"));
    fprintf(fp, ", commit %.12s.\n\n", meta(run, "git_sha"));

    size_t waived = count(run, is_waived), missing = count(run, has_no_verdict);
    if (run->nexp > 0 && waived == run->nexp) {
        /* One reason stands for all: the last experiment's. */
        fprintf(fp, "**Every experiment was waived** (%s): nothing was measured. Run on a machine with a "
                    "CUDA GPU.\n\n", shows_of(&run->exp[run->nexp - 1]));
    } else if (waived > 0) {
        fprintf(fp, "**%zu of %zu experiments were waived** (", waived, run->nexp);
        const char *sep = "";
        for (size_t i = 0; i < run->nexp; i++) {
            if (!is_waived(&run->exp[i])) continue;
            fprintf(fp, "%s%s: %s", sep, run->exp[i].claim, shows_of(&run->exp[i]));
            sep = "; ";
        }
        fputs(").\n\n", fp);
    }
    if (missing > 0)
        fprintf(fp, "**%zu of %zu experiments have no verdict** (not run, interrupted or failed): see the "
                    "table and logs/.\n\n", missing, run->nexp);
    if (count(run, is_shared) > 0) {
        fputs("**Another process used the GPU while ", fp);
        put_claims(fp, run, is_shared);
        fputs(" ran**: their time figures may read slower than this GPU alone gives (under each claim: which "
              "process, when). Rerun them on an idle GPU (`scripts/run-all --only ...`).\n\n", fp);
    }
}

/* ------------------------------------------------------------ the table */

static bool has_beside(const mc_run_experiment *e)
{
    for (size_t j = 0; j < e->nrows; j++)
        if (!strcmp(e->rows[j].text[MC_COL_METRIC], MC_BESIDE_METRIC)) return true;
    return false;
}

/* PyTorch's sentence beside the suite's verdict (the MC_BESIDE_VERDICT_PARAM
 * summary row of run-all --pytorch), or NULL. */
static const char *beside_verdict_of(const mc_run_experiment *e)
{
    for (size_t j = 0; j < e->nrows; j++) {
        char *const *t = e->rows[j].text;
        if (!strcmp(t[MC_COL_METRIC], MC_BESIDE_METRIC) && !strcmp(t[MC_COL_PARAM], MC_BESIDE_VERDICT_PARAM))
            return t[MC_COL_NOTE];
    }
    return NULL;
}

static bool has_beside_verdict(const mc_run_experiment *e) { return beside_verdict_of(e) != NULL; }

/* The verdict table; where PyTorch set a sentence beside some verdict, a
 * fifth column "PyTorch beside" holds it (the verdict stays the suite's). */
static void put_table(FILE *fp, const mc_run_data *run)
{
    bool beside = count(run, has_beside_verdict) > 0;
    fprintf(fp, "| Claim | What the seeds say | What this %s shows | Verdict |%s\n",
            strcmp(meta(run, "gpu_status"), "ok") ? "run" : "GPU", beside ? " PyTorch beside |" : "");
    fprintf(fp, "|---|---|---|---|%s\n", beside ? "---|" : "");
    for (size_t i = 0; i < run->nexp; i++) {
        const mc_run_experiment *e = &run->exp[i];
        const char *shows = shows_of(e);
        fprintf(fp, "| %s | ", e->claim);
        put_cell(fp, e->seed_claim);
        fputs(" | ", fp);
        put_cell(fp, shows ? shows : "-");
        fputs(" | **", fp);
        if (is_model_only(e))
            fprintf(fp, "%s** (computed by the allocator model, no GPU) |", verdict_of(e));
        else {
            put_outcome(fp, e);
            fputs(is_shared(e) ? "** (GPU shared with another process) |" : "** |", fp);
        }
        if (beside) {
            const char *pt = beside_verdict_of(e);
            fputc(' ', fp);
            put_cell(fp, pt ? pt : "");
            fputs(" |", fp);
        }
        fputc('\n', fp);
    }
    fputs("\nVerdicts are computed by each experiment from its own figures, by the rule given below; "
          "every figure is in `<key>.csv` (median, min, max, mean, stdev, n).\n\n",
          fp);
    if (count(run, has_beside) > 0) {
        fputs("PyTorch measured the same points of ", fp);
        put_claims(fp, run, has_beside);
        fputs(" (`scripts/run-all --pytorch`, tests/torch/beside/): its figures are the rows of variant "
              "`pytorch:...` in the same CSV, set beside the suite's under each claim (\"PyTorch beside\"); "
              "the verdicts are the suite's alone.", fp);
        if (count(run, has_beside_verdict) > 0)
            fputs(" The column \"PyTorch beside\" sets PyTorch's key figure beside the suite's verdict, with "
                  "the regime where the two disagree.", fp);
        fputs("\n\n", fp);
    }
}

/* ------------------------------------------------------------ per claim */

/* The median of the row of (variant, metric), or NULL. */
static const char *median_of(const mc_run_experiment *e, const char *variant, const char *metric)
{
    for (size_t j = 0; j < e->nrows; j++) {
        char *const *t = e->rows[j].text;
        if (!strcmp(t[MC_COL_VARIANT], variant) && !strcmp(t[MC_COL_METRIC], metric) && t[MC_COL_MEDIAN][0])
            return t[MC_COL_MEDIAN];
    }
    return NULL;
}

static void put_mib(FILE *fp, const char *bytes)
{
    if (bytes) fprintf(fp, " %.2f MB |", strtod(bytes, NULL) / (1024.0 * 1024.0));
    else fputs(" not run |", fp);
}

/* A seed's program as written (rows seed_printed and seed_program, and
 * PyTorch's seed_program beside): the three figures side by side, in the
 * seed's MB (MiB, as its /1024**2). */
static void put_seed_programs(FILE *fp, const mc_run_experiment *e)
{
    bool head = false;
    for (size_t j = 0; j < e->nrows; j++) {
        char *const *t = e->rows[j].text;
        if (strcmp(t[MC_COL_METRIC], "seed_printed") || !t[MC_COL_MEDIAN][0]) continue;
        if (!head) {
            fputs("\n| The seed's code | The seed printed | PyTorch on this GPU | The suite |\n"
                  "|---|---|---|---|\n", fp);
            head = true;
        }
        char pt[256];
        snprintf(pt, sizeof pt, "pytorch:%s", t[MC_COL_VARIANT]);
        fputs("| ", fp);
        put_cell(fp, t[MC_COL_VARIANT]);
        fputs(" |", fp);
        put_mib(fp, t[MC_COL_MEDIAN]);
        put_mib(fp, median_of(e, pt, "seed_program"));
        put_mib(fp, median_of(e, t[MC_COL_VARIANT], "seed_program"));
        fputc('\n', fp);
    }
    if (head) fputc('\n', fp);
}

static void put_claim(FILE *fp, const mc_run_experiment *e)
{
    fprintf(fp, "\n### %s %s: ", e->claim, e->title);
    put_outcome(fp, e);
    fprintf(fp, "\n\nMeasured: %s Rule: %s\n\n", e->method, e->rule);
    put_seed_programs(fp, e);
    for (size_t j = 0; j < e->nrows; j++)
        if (!strcmp(e->rows[j].text[MC_COL_METRIC], "finding")) fprintf(fp, "- %s\n", e->rows[j].text[MC_COL_NOTE]);
    for (size_t j = 0; j < e->nrows; j++) {
        char *const *t = e->rows[j].text;
        if (!strcmp(t[MC_COL_METRIC], "verification") && !strcmp(t[MC_COL_STATUS], "failed"))
            fprintf(fp, "- **verification failed**: %s: %s\n", t[MC_COL_VARIANT], t[MC_COL_NOTE]);
    }
    /* PyTorch's counterpart (scripts/run-all --pytorch): its figures beside
     * the suite's, each in one summary row's note; not part of the verdict. */
    for (size_t j = 0; j < e->nrows; j++) {
        char *const *t = e->rows[j].text;
        if (strcmp(t[MC_COL_METRIC], MC_BESIDE_METRIC)) continue;
        if (!strcmp(t[MC_COL_STATUS], "failed")) fprintf(fp, "- **PyTorch beside failed**: %s\n", t[MC_COL_NOTE]);
        else fprintf(fp, "- PyTorch beside: %s\n", t[MC_COL_NOTE]);
    }
    if (is_shared(e)) fprintf(fp, "- **GPU shared**: %s\n", shared_of(e));
    if (e->has_chart) fprintf(fp, "\n![%s](%s.png)\n", e->key, e->key);
    if (e->has_run) fprintf(fp, "\n`%s.csv`, log `logs/%s.log`, %s s.\n", e->key, e->key, e->seconds_text);
}

void mc_report_write(FILE *fp, const mc_run_data *run)
{
    put_head(fp, run);
    put_table(fp, run);
    fputs("## Why, claim by claim\n", fp);
    for (size_t i = 0; i < run->nexp; i++) put_claim(fp, &run->exp[i]);
}
