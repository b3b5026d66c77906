/* c06_max_batch_search: C06. The largest batch of the suite's training
 * workload (common/workload.h) that fits under a memory cap, found three
 * ways with real out-of-memory failures: binary search (double, then
 * bisect), halving-on-OOM from a large batch, and a prediction from a
 * footprint fitted on two small batches; beside them, what scripts/whatif
 * --max-batch does for a user's snapshots: the request sequence traced at
 * two small batches, fitted over the batch and replayed through the
 * allocator model to find the largest that fits (trace/batch_fit.h), with
 * no out-of-memory trial at all. The answer is verified in fresh
 * workloads, and the monotonicity binary search assumes is checked around
 * it in the allocator model. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_model.h"
#include "check.h"
#include "clock.h"
#include "experiment.h"
#include "stats.h"
#include "trace/batch_fit.h"
#include "trace/replay.h"
#include "trace/trace.h"
#include "workload/mlp/mlp.h"

static uint64_t limit_opt = 0; /* 0: 2 GiB, or 512 MiB with --quick */

static const mc_extra_opt EXTRA[] = {
    {"limit", MC_OPT_BYTES, &limit_opt,
     "memory cap (set_per_process_memory_fraction's limit on reserved bytes; default 2 GiB, "
     "--quick 512 MiB)"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

#define MIN_LIMIT (256ull << 20) /* the workload's fixed part (~150 MiB) must fit */

static const char *validate_options(const mc_options *opt)
{
    (void)opt;
    return limit_opt && limit_opt < MIN_LIMIT ? "--limit must be at least 256 MiB" : NULL;
}

static const mc_experiment EXP = {
    .claim = "C06",
    .key = "max_batch_search",
    .title = "Largest batch under a memory cap: binary search over OOM vs halving vs a fitted prediction",
    .seed_claim = "The largest batch that fits can be found by binary search over OOM.",
    .method = "The training workload (Linear+ReLU MLP, L=4, in = width = out = 1024, Adam, fp32) "
              "under a cap (--limit, default 2 GiB, --quick 512 MiB: the allocator's limit on "
              "reserved bytes, as set_per_process_memory_fraction; CUDA backend on a GPU, host "
              "backend with --model-only). A trial = a fresh workload at batch b running steps 1 "
              "(creates Adam's state) and 2; it fits when both ran without OOM. Fresh per trial, as "
              "a robust search does: the workload's batch is fixed at creation and it cannot share "
              "an allocator, so the naive reuse of one model across attempts (whose OOMs empty the "
              "cache and may fragment it) is not built. Methods: binary search (b = 1, 2, 4, ... "
              "until an OOM, then bisect), halving (b = 2^20, halved after each OOM), prediction "
              "(peak allocated of step 2 fitted as a + s*b on b = 8 and 16, both doubled while the "
              "peak does not grow; predicted max = floor((cap - a)/s), then the prediction and "
              "its successor tried). Replay prediction (beside them, not a search over OOM): the request sequence "
              "traced at batches 8 and 16 (set-up and 2 steps, no cap), each request fitted as a + s*batch, "
              "and the largest batch whose replay through the allocator model under the cap refuses nothing "
              "(scripts/whatif --max-batch's method); its runs and the trials it saves against binary "
              "search are reported. Per method: trials, OOMs, host-clock time of its trials "
              "(creation included; median over --repeats searches, after --warmup untimed trials "
              "at batch 1024 that take CUDA's and cuBLAS's first-use costs), answer. Verified in fresh workloads: the answer fits and "
              "answer+1 does not. Checked in the model (host backend): fit or OOM at every batch "
              "within 64 of the answer (monotone?) and peak allocated/reserved over batch 1..2^20 "
              "without the cap (the chart's curve).",
    .verdict_rule = "does-not-hold if binary search's answer is not the maximum (it does not fit, "
                    "answer+1 fits, or a larger batch within 64 of it fits in the model). Otherwise "
                    "holds if it took at most 2*ceil(log2(answer+1)) + 2 trials and no other "
                    "method found the same maximum in fewer trials; holds-partly if the prediction "
                    "(exact: it fits and its successor does not) or halving found it in fewer "
                    "trials, or the search took more trials than that bound.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 1,
    .default_warmup = 1,
    .extra = EXTRA,
    .validate = validate_options,
};

#define WIDTH 1024
#define LAYERS 4
#define TRIAL_STEPS 2            /* step 1 makes Adam's state; step 2 is the steady state */
#define HALVING_START (1 << 20)  /* rows */
#define MAX_BATCH (1 << 24)      /* the workload's limit on a size */
#define FIT_LO 8
#define FIT_HI 16
#define NEIGHBOURS 64            /* batches either side of the answer checked in the model */
#define MAX_TRIALS 128
#define MIB (1024.0 * 1024.0)

typedef struct {
    int64_t batch;
    bool fits;
    uint64_t peak;  /* peak allocated of the last step run (step 2 when it fits) */
    double time_s;  /* host clock: create, steps, destroy */
} trial;

typedef struct {
    const char *name;
    trial t[MAX_TRIALS];
    int n, ooms;
    double time_s;
    int64_t answer;
} method;

static uint64_t g_limit;

/* The workload every trial trains, at batch b. */
static mc_workload_config config_at(int64_t b)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = LAYERS;
    c.in = c.width = c.out = WIDTH;
    c.batch = b;
    c.optimizer = MC_WL_ADAM;
    c.precision = MC_WL_FP32;
    return c;
}

/* A fresh workload at batch b under the cap (on_gpu: CUDA backend). */
static trial try_batch(mc_run *run, int64_t b, bool on_gpu, uint64_t limit)
{
    mc_workload_config c = config_at(b);
    c.alloc.limit_bytes = limit;
    char err[256];
    trial t = {.batch = b, .fits = true};
    double t0 = mc_now_s();
    mc_workload *w = mc_workload_create(&c, on_gpu, NULL, err, sizeof err);
    CHECK(w != NULL, "workload at batch %lld: %s", (long long)b, err);
    for (int s = 0; s < TRIAL_STEPS && t.fits; s++) {
        mc_workload_step_result r;
        t.fits = mc_workload_step(w, &r) == MC_WL_OK;
        t.peak = r.peak_allocated;
        if (t.fits && on_gpu && !isfinite(r.loss))
            mc_verify_failed(run, "loss", "batch %lld step %d: loss %g", (long long)b, r.step, r.loss);
    }
    char e2[256];
    if (ca_check_invariants(mc_workload_allocator(w), e2, sizeof e2) != 0)
        mc_verify_failed(run, "allocator", "batch %lld: invariants: %s", (long long)b, e2);
    mc_workload_destroy(w);
    t.time_s = mc_now_s() - t0;
    return t;
}

static bool attempt(mc_run *run, method *m, int64_t b)
{
    CHECK(m->n < MAX_TRIALS, "%s: more than %d trials", m->name, MAX_TRIALS);
    trial t = try_batch(run, b, run->on_gpu, g_limit);
    m->t[m->n++] = t;
    m->ooms += !t.fits;
    m->time_s += t.time_s;
    return t.fits;
}

/* ============================================================== the methods */

static void binary_search(mc_run *run, method *m)
{
    int64_t lo = 0, hi = 0, b = 1;
    while (b <= MAX_BATCH) {
        if (!attempt(run, m, b)) {
            hi = b;
            break;
        }
        lo = b;
        b *= 2;
    }
    if (hi == 0) {  /* nothing up to MAX_BATCH ran out of memory */
        m->answer = lo;
        return;
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (attempt(run, m, mid)) lo = mid;
        else hi = mid;
    }
    m->answer = lo;
}

static void halving(mc_run *run, method *m)
{
    int64_t b = HALVING_START;
    while (b >= 1 && !attempt(run, m, b)) b /= 2;
    m->answer = b;
}

typedef struct {
    int64_t b1, b2, predicted;
    double a, s;   /* peak = a + s * batch, bytes and bytes/row */
    bool ok;       /* a positive slope was found */
    bool exact;    /* predicted fits and predicted + 1 does not */
} fit;

static fit prediction(mc_run *run, method *m)
{
    fit f = {.b1 = FIT_LO, .b2 = FIT_HI};
    if (!attempt(run, m, f.b1)) return f;
    uint64_t p1 = m->t[m->n - 1].peak;
    while (f.b2 <= MAX_BATCH) {
        if (!attempt(run, m, f.b2)) return f;
        uint64_t p2 = m->t[m->n - 1].peak;
        if (p2 > p1) {
            f.s = (double)(p2 - p1) / (double)(f.b2 - f.b1);
            f.a = (double)p1 - f.s * (double)f.b1;
            break;
        }
        f.b1 = f.b2;  /* the peak is not the batch's yet (optimizer step): go larger */
        p1 = p2;
        f.b2 *= 2;
    }
    if (f.s <= 0) return f;
    f.ok = true;
    double pred = floor(((double)g_limit - f.a) / f.s);
    f.predicted = pred < 1 ? 1 : pred > MAX_BATCH - 1 ? MAX_BATCH - 1 : (int64_t)pred;
    bool fits = attempt(run, m, f.predicted);
    bool next = attempt(run, m, f.predicted + 1);
    f.exact = fits && !next;
    m->answer = fits ? f.predicted : 0;
    return f;
}

/* The workload's request sequence at batch b (set-up and TRIAL_STEPS
 * steps, no cap), parsed: what a user's snapshot of a small run holds. The
 * allocator model's host backend makes the requests the GPU run makes. */
static void trace_at(int64_t b, ca_trace *t)
{
    mc_workload_config c = config_at(b);
    c.trace_steps = TRIAL_STEPS;
    char *buf = NULL, err[256], name[32];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL, "open_memstream failed");
    mc_workload *w = mc_workload_create(&c, false, f, err, sizeof err);
    CHECK(w != NULL, "workload at batch %lld: %s", (long long)b, err);
    for (int s = 0; s < TRIAL_STEPS; s++) {
        mc_workload_step_result r;
        CHECK(mc_workload_step(w, &r) == MC_WL_OK, "batch %lld does not fit without a cap", (long long)b);
    }
    mc_workload_destroy(w);
    CHECK(fclose(f) == 0, "the trace of batch %lld could not be written", (long long)b);
    snprintf(name, sizeof name, "batch %lld", (long long)b);
    CHECK(ca_trace_parse(t, name, buf, len, err, sizeof err) == 0, "%s", err);
    free(buf);
}

typedef struct {
    int64_t answer;
    int runs, replays;
    size_t nonaffine;
    size_t ops_small;  /* operations of the traced small runs */
    double time_s;     /* host clock: the two traced runs, the fit, the search */
} replay_pred;

static replay_pred replay_prediction(void)
{
    replay_pred p = {.runs = 2};
    double t0 = mc_now_s();
    ca_trace t[2];
    trace_at(FIT_LO, &t[0]);
    trace_at(FIT_HI, &t[1]);
    const ca_trace *tp[2] = {&t[0], &t[1]};
    const int64_t batches[2] = {FIT_LO, FIT_HI};
    const char *names[2] = {"batch 8", "batch 16"};
    ca_batch_fit f;
    char err[256];
    CHECK(ca_batch_fit_build(&f, tp, batches, names, 2, err, sizeof err) == 0, "%s", err);
    ca_config cfg = f.tmpl.cfg;
    cfg.limit_bytes = g_limit;
    ca_trace work;
    ca_batch_work(&f, &work);
    ca_max_batch_result r;
    CHECK(ca_max_batch(&f, &work, &cfg, CA_REPLAY_DEFAULT_CAPACITY, &r, err, sizeof err) == 0, "%s", err);
    p.answer = r.max_batch;
    p.replays = r.replays;
    p.nonaffine = f.n_nonaffine;
    p.ops_small = t[0].n_ops;
    ca_trace_free(&work);
    ca_batch_fit_free(&f);
    ca_trace_free(&t[0]);
    ca_trace_free(&t[1]);
    p.time_s = mc_now_s() - t0;
    return p;
}

/* ============================================================== output */

static void emit_method(mc_run *run, const method *m, const double *times, int reps)
{
    for (int i = 0; i < m->n; i++) {
        const trial *t = &m->t[i];
        char note[96];
        if (t->fits) snprintf(note, sizeof note, "fits; peak allocated %.1f MiB", t->peak / MIB);
        else snprintf(note, sizeof note, "OOM");
        mc_emit(run, m->name, "batch", (double)t->batch, "trial", "index", mc_stats_one(i + 1),
                t->fits ? "ok" : "oom", note);
    }
    mc_emit_value(run, m->name, "", 0, "trials", "count", m->n, "fresh workloads tried");
    mc_emit_value(run, m->name, "", 0, "ooms", "count", m->ooms, "trials that ran out of memory");
    mc_emit(run, m->name, "", 0, "search_time", "s", mc_stats_of(times, (size_t)reps), "ok",
            run->on_gpu ? "host clock over its trials (creation, 2 steps, teardown)"
                        : "host clock over its trials (model-only: allocator simulation)");
    mc_emit_value(run, m->name, "", 0, "answer", "rows", (double)m->answer, "largest batch it found");
}

static int ceil_log2(int64_t x)
{
    int k = 0;
    while ((1LL << k) < x) k++;
    return k;
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    g_limit = limit_opt ? limit_opt : run.opt.quick ? (512ull << 20) : (2ull << 30);
    mc_log(&run, "cap %.0f MiB; a trial is a fresh workload running %d steps", g_limit / MIB,
           TRIAL_STEPS);
    mc_emit_value(&run, "", "", 0, "limit_bytes", "bytes", (double)g_limit,
                  "cap on reserved bytes (set_per_process_memory_fraction)");

    for (int w = 0; w < run.opt.warmup; w++) try_batch(&run, 1024, run.on_gpu, g_limit);
    /* The trials are the same in every repeat (checked); the first one's are reported. */
    static method bs, hv, pr, vf = {.name = "verify"}, again;
    const int reps = run.opt.repeats;
    double *tm = mc_xmalloc(3 * (size_t)reps * sizeof *tm);
    fit f = {0};
    for (int r = 0; r < reps; r++) {
        method *m[3] = {r ? &again : &bs, r ? &again : &hv, r ? &again : &pr};
        const char *nm[3] = {"binary_search", "halving", "prediction"};
        for (int i = 0; i < 3; i++) {
            memset(m[i], 0, sizeof *m[i]);
            m[i]->name = nm[i];
            if (i == 0) binary_search(&run, m[i]);
            else if (i == 1) halving(&run, m[i]);
            else f = prediction(&run, m[i]);
            tm[i * reps + r] = m[i]->time_s;
            const method *first = i == 0 ? &bs : i == 1 ? &hv : &pr;
            if (r && (m[i]->n != first->n || m[i]->answer != first->answer))
                mc_verify_failed(&run, nm[i], "repeat %d took %d trials to %lld rows, the first %d "
                                 "to %lld", r + 1, m[i]->n, (long long)m[i]->answer, first->n,
                                 (long long)first->answer);
        }
    }
    emit_method(&run, &bs, tm, reps);
    emit_method(&run, &hv, tm + reps, reps);
    emit_method(&run, &pr, tm + 2 * reps, reps);

    /* The answer, again, in fresh workloads: it fits, its successor does not. */
    const int64_t ans = bs.answer;
    bool ans_fits = ans >= 1 && attempt(&run, &vf, ans);
    const bool capped = ans < MAX_BATCH;   /* otherwise the cap never bound */
    bool next_fits = capped && attempt(&run, &vf, ans + 1);
    bool verified = (ans == 0 || ans_fits) && !next_fits;
    vf.answer = verified ? ans : 0;
    emit_method(&run, &vf, &vf.time_s, 1);
    free(tm);
    mc_emit_value(&run, "verify", "", 0, "verified", "bool", verified,
                  "answer fits and answer+1 runs out of memory, in fresh workloads");
    /* The replay prediction: two small traced runs, no OOM trial. */
    const replay_pred rp = replay_prediction();
    mc_emit_value(&run, "replay_prediction", "", 0, "answer", "rows", (double)rp.answer,
                  "largest batch whose replay of the trace fitted on batches 8 and 16 fits the cap");
    mc_emit_value(&run, "replay_prediction", "", 0, "runs", "count", rp.runs,
                  "small runs traced (batches 8 and 16), none running out of memory");
    mc_emit_value(&run, "replay_prediction", "", 0, "saved_trials", "count", bs.n - rp.runs,
                  "binary search's trials less the traced runs");
    mc_emit_value(&run, "replay_prediction", "", 0, "replays", "count", rp.replays,
                  "replays of the fitted trace through the allocator model");
    mc_emit_value(&run, "replay_prediction", "", 0, "nonaffine_requests", "count", (double)rp.nonaffine,
                  "requests whose size is not a + s*batch");
    mc_emit_value(&run, "replay_prediction", "", 0, "error", "rows", (double)(rp.answer - ans),
                  "replay prediction - binary search's verified answer");
    mc_emit_value(&run, "replay_prediction", "", 0, "time", "s", rp.time_s,
                  "host clock: two traced runs (host backend), the fit, the replays");
    /* Why it may part from the answer: the program's requests at the answer,
     * traced, against the small runs' (a fit cannot know requests that only
     * a larger batch makes: PyTorch's reductions take a buffer once the rows
     * are many). */
    size_t ops_at_answer = rp.ops_small;
    if (ans >= 1) {
        ca_trace ta;
        trace_at(ans, &ta);
        ops_at_answer = ta.n_ops;
        ca_trace_free(&ta);
    }
    mc_emit_value(&run, "replay_prediction", "", 0, "extra_ops_at_answer", "count",
                  (double)ops_at_answer - (double)rp.ops_small,
                  "operations the program makes at the answer beyond those of the small runs");

    /* Monotonicity around the answer, in the model (host backend, cheap). */
    int larger_fit = 0, smaller_oom = 0;
    for (int64_t b = ans - NEIGHBOURS; b <= ans + NEIGHBOURS; b++) {
        if (b < 1 || b > MAX_BATCH) continue;
        trial t = try_batch(&run, b, false, g_limit);
        mc_emit(&run, "neighbourhood", "batch", (double)b, "fits", "bool",
                mc_stats_one(t.fits), t.fits ? "ok" : "oom", "allocator model under the cap");
        larger_fit += b > ans && t.fits;
        smaller_oom += b <= ans && !t.fits;
    }
    /* The footprint over batch, without the cap (the chart's curve). */
    int non_monotone_peak = 0;
    uint64_t prev = 0;
    for (int j = 0; j <= 40; j++) {
        int64_t b = (int64_t)llround(pow(2.0, j / 2.0));
        trial t = try_batch(&run, b, false, CA_UNLIMITED);
        CHECK(t.fits, "batch %lld does not fit the simulated device without a cap", (long long)b);
        mc_emit_value(&run, "model_curve", "batch", (double)b, "peak_allocated", "bytes",
                      (double)t.peak, "step 2, no cap, allocator model");
        non_monotone_peak += t.peak < prev;
        prev = t.peak;
    }

    if (f.ok) {
        mc_emit_value(&run, "prediction", "", 0, "fit_intercept", "bytes", f.a, "a in a + s*batch");
        mc_emit_value(&run, "prediction", "", 0, "fit_slope", "bytes/row", f.s, "s in a + s*batch");
        mc_emit_value(&run, "prediction", "", 0, "fit_batch_lo", "rows", (double)f.b1, "");
        mc_emit_value(&run, "prediction", "", 0, "fit_batch_hi", "rows", (double)f.b2, "");
        mc_emit_value(&run, "prediction", "", 0, "predicted", "rows", (double)f.predicted,
                      "floor((cap - a) / s)");
        mc_emit_value(&run, "prediction", "", 0, "prediction_error", "rows",
                      (double)(f.predicted - ans), "predicted - binary search's verified answer");
    }

    int bound = 2 * ceil_log2(ans + 1) + 2;
    mc_emit_finding(&run,
        "Binary search: %d trials (%d OOMs, %.3f s host clock) found %lld rows under the %.0f MiB "
        "cap; O(log) bound 2*ceil(log2(answer+1)) + 2 = %d. Verified in fresh workloads: %lld %s, "
        "%lld %s.",
        bs.n, bs.ooms, bs.time_s, (long long)ans, g_limit / MIB, bound, (long long)ans,
        ans_fits ? "fits" : "does not fit", (long long)(ans + 1), next_fits ? "fits" : "OOMs");
    mc_emit_finding(&run,
        "Halving from %d rows: %d trials (%d OOMs, %.3f s) stopped at %lld rows, %.1f%% of the "
        "maximum: halving lands on start/2^k, which is the maximum only by chance.",
        HALVING_START, hv.n, hv.ooms, hv.time_s, (long long)hv.answer,
        ans ? 100.0 * (double)hv.answer / (double)ans : 0.0);
    /* Why the prediction is off: the slope near the answer, from binary search's own fitting
     * trials (the largest at or below 2/3 of the answer, and the answer), and the headroom
     * between peak allocated and the cap at the answer (the cap binds reserved bytes). */
    const trial *mid = NULL, *top = NULL;
    for (int i = 0; i < bs.n; i++) {
        const trial *t = &bs.t[i];
        if (t->fits && t->batch == ans) top = t;
        if (t->fits && 3 * t->batch <= 2 * ans && (!mid || t->batch > mid->batch)) mid = t;
    }
    double slope_near = mid && top ? ((double)top->peak - (double)mid->peak) /
                                         (double)(top->batch - mid->batch) : NAN;
    double headroom = top ? (double)g_limit - (double)top->peak : NAN;
    if (f.ok)
        mc_emit_finding(&run,
            "Prediction: peak allocated of step 2 = %.1f MiB + %.1f KiB x batch, fitted on %lld and "
            "%lld rows (%s), predicts %lld rows (%+lld vs the maximum): %s; %d trials, %d OOMs, "
            "%.3f s. Near the maximum the peak grows %.1f KiB per row (%lld..%lld rows), and at "
            "the maximum peak allocated is %.1f MiB below the cap, which binds reserved bytes "
            "(segments, 2 MiB rounding, cached blocks).",
            f.a / MIB, f.s / 1024.0, (long long)f.b1, (long long)f.b2,
            f.b1 == FIT_LO ? "the first pair" : "the peak did not grow below that",
            (long long)f.predicted, (long long)(f.predicted - ans),
            f.exact ? "exact (it fits, the next does not)" : "not exact", pr.n, pr.ooms, pr.time_s,
            slope_near / 1024.0, mid ? (long long)mid->batch : 0LL, (long long)ans, headroom / MIB);
    else
        mc_emit_finding(&run, "Prediction: no batch up to %lld gave a growing peak to fit (%d "
                        "trials): no prediction.", (long long)f.b2, pr.n);
    char why[320] = "At the answer the program makes the small runs' requests, resized.";
    if (ops_at_answer != rp.ops_small)
        snprintf(why, sizeof why, "At the answer the program makes %zu operations where the small runs made "
                 "%zu: requests a small batch never makes (PyTorch's reductions take a buffer and semaphores "
                 "once the rows are many), which no fit over small runs can know.", ops_at_answer, rp.ops_small);
    mc_emit_finding(&run,
        "Replay prediction (scripts/whatif --max-batch's method): the requests of two small runs "
        "(batches 8 and 16, %zu of them not a + s*batch) fitted over the batch and replayed under the cap "
        "give %lld rows (%s binary search's %lld) in %d replays, %.3f s; it ran %d small runs and no "
        "OOM trial where binary search ran %d trials (%d OOMs): %d trials fewer%s. %s",
        rp.nonaffine, (long long)rp.answer, rp.answer == ans ? "equal to" : "NOT equal to", (long long)ans,
        rp.replays, rp.time_s, rp.runs, bs.n, bs.ooms, bs.n - rp.runs,
        rp.answer == ans ? ", the same answer" : ", but not the answer: nothing is saved by a wrong one",
        why);
    mc_emit_finding(&run,
        "Monotonicity (allocator model under the cap, batches %lld..%lld): %d larger batch(es) "
        "fit, %d smaller one(s) OOM; peak allocated without the cap fell %d time(s) over 41 batches "
        "from 1 to 2^20. Each trial is a fresh workload, so no OOM's emptied or fragmented cache "
        "carries into the next trial.",
        (long long)(ans > NEIGHBOURS ? ans - NEIGHBOURS : 1), (long long)(ans + NEIGHBOURS),
        larger_fit, smaller_oom, non_monotone_peak);

    mc_verdict v;
    bool cheaper_pred = f.ok && f.exact && f.predicted == ans && pr.n < bs.n;
    bool cheaper_halv = hv.answer == ans && hv.n < bs.n;
    if (!capped) v = MC_INCONCLUSIVE;
    else if (!verified || larger_fit > 0) v = MC_DOES_NOT_HOLD;
    else if (cheaper_pred || cheaper_halv || bs.n > bound) v = MC_HOLDS_PARTLY;
    else v = MC_HOLDS;
    mc_emit_verdict(&run, v,
        "cap %.0f MiB: binary search %lld rows in %d trials (bound %d), %s; larger batches fitting "
        "near it: %d. Halving %lld rows in %d trials; prediction %lld rows (%s) in %d trials%s%s.",
        g_limit / MIB, (long long)ans, bs.n, bound, verified ? "verified" : "NOT verified",
        larger_fit, (long long)hv.answer, hv.n, (long long)f.predicted,
        !f.ok ? "no fit" : f.exact ? "exact" : "not exact", pr.n,
        capped ? "" : "; no batch up to 2^24 rows ran out of memory: the cap never bound",
        run.on_gpu ? "" : "; model-only (host backend)");
    return mc_run_end(&run);
}
