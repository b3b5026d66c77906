#define _POSIX_C_SOURCE 200809L
#include "experiment.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gpu.h"

/* ------------------------------------------------------------------ help */

void mc_print_help(const mc_experiment *e, const char *argv0, FILE *fp)
{
    fprintf(fp, "%s: %s %s\n\n", argv0, e->claim, e->title);
    fprintf(fp, "Claim (seeds): %s\nMeasures: %s\nVerdict: %s\n\n", e->seed_claim, e->method,
            e->verdict_rule);
    fprintf(fp, "Options:\n"
                "  --device N     CUDA device number (default 0)\n"
                "  --repeats N    timed samples per figure (default %d)\n"
                "  --warmup N     untimed runs before timing (default %d)\n"
                "  --quick        small sizes only, for a smoke test\n"
                "  --out DIR      write DIR/%s.csv (atomically) instead of CSV on stdout\n",
            e->default_repeats, e->default_warmup, e->key);
    if (e->flags & MC_EXP_MODEL_ONLY)
        fprintf(fp, "  --model-only   the allocator model on its host backend; no GPU needed\n");
    for (const mc_extra_opt *x = e->extra; x && x->name; x++) {
        const char *arg = x->kind == MC_OPT_FLAG ? "" : x->kind == MC_OPT_BYTES ? " BYTES"
                        : x->kind == MC_OPT_COUNT ? " N" : " VALUE";
        char left[64];
        snprintf(left, sizeof left, "--%s%s", x->name, arg);
        if (strlen(left) > 14)
            fprintf(fp, "  %s\n  %-14s %s\n", left, "", x->help);
        else
            fprintf(fp, "  %-14s %s\n", left, x->help);
    }
    fprintf(fp, "  --list         print this experiment's descriptor as one tab-separated line:\n"
                "                 claim, key, title, seed claim, method, verdict rule, mode\n"
                "                 (gpu, model-only or host; this one: %s) and what the\n"
                "                 verdict rule reads (memory or time; this one: %s)\n"
                "  --help         this text\n\n",
            mc_experiment_mode(e), mc_experiment_rule_reads(e));
    fprintf(fp, "Output: CSV (" MC_CSV_HEADER ").\n");
    if (e->flags & MC_EXP_NO_GPU)
        fprintf(fp, "Needs no GPU: runs the same with or without one (--device is ignored).\n"
                    "Exit: 0 ran, 1 verification failed, 2 usage, 77 waived (this machine cannot\n"
                    "show the claim, e.g. no room for its files).\n");
    else
        fprintf(fp, "Exit: 0 ran, 1 verification failed, 2 usage, 3 CUDA error, 77 waived (no GPU).\n");
}

const char *mc_experiment_mode(const mc_experiment *e)
{
    if (e->flags & MC_EXP_NO_GPU) return "host";
    return e->flags & MC_EXP_MODEL_ONLY ? "model-only" : "gpu";
}

const char *mc_experiment_rule_reads(const mc_experiment *e)
{
    return e->flags & MC_EXP_RULE_MEMORY ? "memory" : "time";
}

void mc_print_list(const mc_experiment *e, FILE *fp)
{
    fprintf(fp, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e->claim, e->key, e->title, e->seed_claim,
            e->method, e->verdict_rule, mc_experiment_mode(e), mc_experiment_rule_reads(e));
}

/* ----------------------------------------------------------------- rows */

/* Notes become one CSV line each: the report's scripts read line by line. */
static void flatten(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r') *s = ' ';
}

static void write_row(mc_run *run, const char *variant, const char *param, double pv,
                      const char *metric, const char *unit, mc_stats st, const char *status,
                      const char *note)
{
    mc_row r = {run->exp->claim, run->exp->key, variant ? variant : "", param ? param : "", pv,
                metric, unit ? unit : "", st, status, note ? note : ""};
    mc_csv_write_row(run->out.fp, &r);
    run->rows++;
}

void mc_emit(mc_run *run, const char *variant, const char *param, double pv, const char *metric,
             const char *unit, mc_stats st, const char *status, const char *note)
{
    write_row(run, variant, param, pv, metric, unit, st, status, note);
}

void mc_emit_value(mc_run *run, const char *variant, const char *param, double pv,
                   const char *metric, const char *unit, double value, const char *note)
{
    write_row(run, variant, param, pv, metric, unit, mc_stats_one(value), "ok", note);
}

void mc_emit_verdict(mc_run *run, mc_verdict v, const char *fmt, ...)
{
    char note[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
    flatten(note);
    mc_stats none = {0};
    write_row(run, "", "", 0, "verdict", "", none, mc_verdict_word(v), note);
    mc_log(run, "verdict %s: %s", mc_verdict_word(v), note);
}

void mc_emit_finding(mc_run *run, const char *fmt, ...)
{
    char note[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
    flatten(note);
    mc_stats none = {0};
    write_row(run, "", "", 0, "finding", "", none, "ok", note);
}

void mc_verify_failed(mc_run *run, const char *what, const char *fmt, ...)
{
    char note[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
    mc_stats none = {0};
    write_row(run, what, "", 0, "verification", "", none, "failed", note);
    mc_log(run, "VERIFICATION FAILED (%s): %s", what, note);
    run->verify_failures++;
}

bool mc_check_gpu_peak(mc_run *run, const char *what, unsigned long long gpu_peak,
                       unsigned long long model_peak, double tol, bool note)
{
    const double d = model_peak ? fabs((double)gpu_peak - (double)model_peak) / (double)model_peak : 1.0;
    if (d > tol) {
        mc_verify_failed(run, what, "GPU peak %llu B, model-only %llu B (%.3g%% apart, limit %.3g%%)",
                         gpu_peak, model_peak, 100 * d, 100 * tol);
        return false;
    }
    if (d > 0 && note)
        mc_emit_finding(run, "%s: the GPU's peak is %llu B, the host model's %llu B (%.3f%%): the same "
                             "requests, a block placed elsewhere among real addresses",
                        what, gpu_peak, model_peak, 100 * d);
    return true;
}

void mc_log(const mc_run *run, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "[%s] ", run->exp->claim);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ------------------------------------------------------------ lifecycle */

static void on_signal(int sig)
{
    mc_file_abort_from_signal();
    signal(sig, SIG_DFL);
    raise(sig);
}

int mc_run_end(mc_run *run)
{
    if (mc_file_commit(&run->out) != 0) {
        fprintf(stderr, "[%s] cannot write %s.csv: %s\n", run->exp->claim, run->exp->key,
                strerror(errno));
        return MC_EXIT_USAGE;
    }
    return run->verify_failures ? MC_EXIT_VERIFY : MC_EXIT_OK;
}

void mc_run_waive(mc_run *run, const char *fmt, ...)
{
    char reason[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    mc_stats none = {0};
    write_row(run, "", "", 0, "verdict", "", none, "waived", reason);
    mc_log(run, "waived: %s", reason);
    int rc = mc_run_end(run);
    exit(rc == MC_EXIT_OK ? MC_EXIT_WAIVED : rc);
}

void mc_run_begin(mc_run *run, const mc_experiment *e, int argc, char **argv)
{
    memset(run, 0, sizeof *run);
    run->exp = e;
    char err[256];
    int rc = mc_options_parse(&run->opt, argc, argv, e->default_repeats, e->default_warmup,
                              (e->flags & MC_EXP_MODEL_ONLY) != 0, e->extra, err, sizeof err);
    if (rc) {
        fprintf(stderr, "%s: %s\n", argv[0], err);
        exit(rc);
    }
    if (run->opt.help) {
        mc_print_help(e, argv[0], stdout);
        exit(MC_EXIT_OK);
    }
    if (run->opt.list) {
        mc_print_list(e, stdout);
        exit(MC_EXIT_OK);
    }
    const char *bad = e->validate ? e->validate(&run->opt) : NULL;
    if (bad) {
        fprintf(stderr, "%s: %s\n", argv[0], bad);
        exit(MC_EXIT_USAGE);
    }
    char name[256];
    snprintf(name, sizeof name, "%s.csv", e->key);
    if (mc_file_open(&run->out, run->opt.out_dir, name) != 0) {
        fprintf(stderr, "%s: cannot write in --out '%s': %s\n", argv[0], run->opt.out_dir,
                strerror(errno));
        exit(MC_EXIT_USAGE);
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    mc_csv_write_header(run->out.fp);

    if (run->opt.model_only || (e->flags & MC_EXP_NO_GPU)) return;
    char reason[512];
    if (!mc_gpu_open(run->opt.device, reason, sizeof reason)) mc_run_waive(run, "%s", reason);
    run->on_gpu = true;
}
