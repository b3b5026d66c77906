/* experiment.h: the descriptor at the top of every experiment, and the run
 * that carries it through the fixed skeleton:
 *
 *   static const mc_experiment EXP = { .claim = "C03", .key = "...", ... };
 *   int main(int argc, char **argv) {
 *       mc_run run;
 *       mc_run_begin(&run, &EXP, argc, argv);   // parse, --help/--list, waive
 *       ... set up, warm up, measure, verify, mc_emit ...
 *       mc_emit_verdict(&run, verdict, "figures behind it");
 *       return mc_run_end(&run);                // commit CSV, exit code
 *   }
 *
 * --help and --list print from the descriptor, so nothing is said twice. */
#ifndef MC_EXPERIMENT_H
#define MC_EXPERIMENT_H

#include <stdbool.h>

#include "csv.h"
#include "options.h"
#include "stats.h"
#include "verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    MC_EXP_MODEL_ONLY = 1u << 0, /* accepts --model-only (host allocator backend) */
    MC_EXP_NO_GPU = 1u << 1,     /* needs no GPU: mc_run_begin neither opens one nor waives
                                    for want of one; the run is the same with or without */
    MC_EXP_RULE_MEMORY = 1u << 2 /* its verdict rule reads memory figures only (bytes, OOMs),
                                    no time: scripts/run-all may run it beside the experiments
                                    that need no GPU (its times, context only, may then read
                                    a little higher) */
};

typedef struct {
    const char *claim;         /* "C03" */
    const char *key;           /* "pinned_vs_pageable": CSV, chart and binary name */
    const char *title;         /* one line: what the experiment does */
    const char *seed_claim;    /* what the seeds say, paraphrased */
    const char *method;        /* what is measured, and with which clock */
    const char *verdict_rule;  /* how the verdict is computed from the figures */
    unsigned flags;            /* MC_EXP_* */
    int default_repeats;       /* --repeats default (>= 1) */
    int default_warmup;        /* --warmup default (>= 0) */
    const mc_extra_opt *extra; /* options of its own, or NULL */
    /* Checks the parsed options together (e.g. an extra option's range);
     * returns NULL, or a one-line message that mc_run_begin prints before
     * exiting with MC_EXIT_USAGE, before any output or GPU work. May be NULL. */
    const char *(*validate)(const mc_options *opt);
} mc_experiment;

typedef struct {
    const mc_experiment *exp;
    mc_options opt;
    mc_file out;
    bool on_gpu;          /* false in --model-only and for MC_EXP_NO_GPU */
    int verify_failures;  /* > 0 makes mc_run_end return MC_EXIT_VERIFY */
    int rows;
} mc_run;

/* Parses argv. --help and --list print and exit 0; a usage error prints one
 * line and exits 2. Opens the output (stdout or --out DIR/<key>.csv, written
 * atomically) and installs SIGINT/SIGTERM handlers that remove the temporary
 * file. Unless --model-only or MC_EXP_NO_GPU, opens the GPU; without one,
 * writes a `waived` verdict row with the reason and exits 77. Returns only to
 * run. */
void mc_run_begin(mc_run *run, const mc_experiment *exp, int argc, char **argv);

/* One measured figure. variant/param/note may be "" or NULL. */
void mc_emit(mc_run *run, const char *variant, const char *param, double param_value,
             const char *metric, const char *unit, mc_stats stats, const char *status,
             const char *note);

/* One single-valued figure (n = 1), status "ok". */
void mc_emit_value(mc_run *run, const char *variant, const char *param, double param_value,
                   const char *metric, const char *unit, double value, const char *note);

/* The verdict row: metric "verdict", the word in status, the figures behind
 * it (printf-style) in note. Also printed to stderr. */
void mc_emit_verdict(mc_run *run, mc_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A "why" line for the report: metric "finding", text in note. */
void mc_emit_finding(mc_run *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A verification failed: logs it, writes a row with status "failed" and makes
 * the exit code MC_EXIT_VERIFY. The run goes on. */
void mc_verify_failed(mc_run *run, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A workload's GPU run makes its host model's requests, so the peak
 * allocated is the model's. A block may still land elsewhere: the allocator
 * breaks ties between free blocks by address, and cudaMalloc's addresses are
 * not the host backend's (the Transformer's, 0.05% apart on the H100 and
 * 0.12% between an H100 and an H200). Within tol (relative) a difference is
 * a finding when note is true; past it, a failed verification. Returns
 * false when it failed. */
#define MC_PLACEMENT_TOL 0.002
bool mc_check_gpu_peak(mc_run *run, const char *what, unsigned long long gpu_peak,
                       unsigned long long model_peak, double tol, bool note);

/* This GPU cannot show the claim: writes the waived verdict row, commits the
 * CSV and exits 77. */
void mc_run_waive(mc_run *run, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));

/* Progress and diagnostics to stderr, prefixed with the claim ID. */
void mc_log(const mc_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Commits the CSV. Returns MC_EXIT_OK, MC_EXIT_VERIFY, or MC_EXIT_USAGE if
 * the output could not be written. */
int mc_run_end(mc_run *run);

/* Prints --help text (descriptor, options) to fp. */
void mc_print_help(const mc_experiment *exp, const char *argv0, FILE *fp);
/* What the experiment needs, from its flags: "host" (MC_EXP_NO_GPU: runs the
 * same with or without a GPU), "model-only" (MC_EXP_MODEL_ONLY: a GPU, or
 * --model-only on the allocator model without one), "gpu" (a GPU, else
 * waived). */
const char *mc_experiment_mode(const mc_experiment *exp);
/* What its verdict rule reads, from its flags: "memory" (MC_EXP_RULE_MEMORY)
 * or "time" (some figure of the rule is a time or a rate). */
const char *mc_experiment_rule_reads(const mc_experiment *exp);
/* Prints the descriptor as one line: claim, key, title, seed_claim, method,
 * verdict_rule, mode (mc_experiment_mode), rule reads
 * (mc_experiment_rule_reads), separated by tabs. scripts/run-all takes the
 * last two from it and writes the first six to experiments.tsv. */
void mc_print_list(const mc_experiment *exp, FILE *fp);

#ifdef __cplusplus
}
#endif
#endif
