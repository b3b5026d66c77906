/* c16_max_allocated_vs_reserved: C16. max_memory_allocated() beside
 * memory_reserved() at every step of three deterministic workloads through
 * the allocator model (the C01 loop keeping every tensor, the C01 loop
 * freeing each, and a seeded mix of allocations, frees and empty_cache), with
 * the driver's used memory beside them on a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_probe.h"
#include "check.h"
#include "experiment.h"

static const mc_experiment EXP = {
    .claim = "C16",
    .key = "max_allocated_vs_reserved",
    .title = "max_memory_allocated vs memory_reserved, step by step over three workloads",
    .seed_claim = "max_memory_allocated shows the same as memory_reserved.",
    .method = "Three deterministic workloads through the allocator model (CUDA backend on a GPU, host "
              "backend with --model-only): keep_all (100 x 4,000,000 B kept), free_each (100 x "
              "allocate + free 4,000,000 B) and mixed (seeded allocations of 512 B..128 MiB, frees, "
              "an empty_cache every 100 operations); after every operation: allocated, peak "
              "allocated (max_memory_allocated), reserved, and on a GPU the driver's used memory "
              "(cudaMemGetInfo); steps where peak allocated equals reserved, and the gap "
              "reserved - peak allocated.",
    .verdict_rule = "Over every step after the first allocation of every workload: holds if peak "
                    "allocated equals reserved at every step, holds-partly if at some, does-not-hold "
                    "if at none.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 3,
    .default_warmup = 0,
    .extra = NULL,
};

#define MiB (1024ULL * 1024ULL)
#define TENSOR_BYTES 4000000ULL   /* the C01 tensor: 1000 x 1000 float32 */
#define LOOP_STEPS 100            /* the C01 loop */
#define MIX_OPS 400               /* mixed workload operations (--quick: MIX_OPS_QUICK) */
#define MIX_OPS_QUICK 120
#define MIX_LIVE_MAX 256          /* live tensors at most */
#define MIX_LIVE_BYTES (1024 * MiB) /* above this many live bytes, free instead */
#define MIX_EMPTY_EVERY 100       /* an empty_cache every this many operations */
#define MIX_SEED 0x9E3779B97F4A7C15ULL

enum { KEEP_ALL, FREE_EACH, MIXED, N_WL };
static const char *const WL[N_WL] = {"keep_all", "free_each", "mixed"};

typedef struct {
    uint64_t allocated, peak, reserved;
    int64_t driver;
} step_fig;

typedef struct {
    step_fig *s;
    int n;           /* steps recorded */
    int counted;     /* steps after the first allocation */
    int equal;       /* of those, peak allocated == reserved */
    int64_t max_gap, min_gap, final_gap;  /* reserved - peak allocated, bytes */
    int64_t max_driver_diff;              /* max |driver used - reserved| (GPU) */
    bool oom;
} trace;

static uint64_t xorshift64(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A request size: exponent uniform in [9, 27), mantissa uniform: 512 B to
 * 128 MiB, as many tiny as huge requests; integers only, so every machine
 * draws the same sequence. */
static uint64_t mix_size(uint64_t *x)
{
    unsigned e = 9 + (unsigned)(xorshift64(x) % 18);
    return (1ULL << e) + xorshift64(x) % (1ULL << e);
}

static void record(const mc_probe *p, trace *t)
{
    mc_probe_snap s = mc_probe_snapshot(p);
    t->s[t->n++] = (step_fig){s.allocated, s.peak_allocated, s.reserved, s.driver_used};
}

static trace run_workload(mc_run *run, int wl, int mix_ops)
{
    int cap = wl == MIXED ? mix_ops : 2 * LOOP_STEPS;
    trace t = {.s = mc_xmalloc((size_t)cap * sizeof *t.s)};
    mc_probe p;
    mc_probe_open(&p, run->on_gpu, NULL);
    if (wl != MIXED) {
        for (int i = 0; i < LOOP_STEPS; i++) {
            uint64_t a;
            if (ca_malloc(p.a, TENSOR_BYTES, &a) != CA_OK) { t.oom = true; break; }
            record(&p, &t);
            if (wl == FREE_EACH) {
                CHECK(ca_free(p.a, a) == 0, "free of step %d", i);
                record(&p, &t);
            }
        }
    } else {
        uint64_t x = MIX_SEED, live[MIX_LIVE_MAX], live_bytes[MIX_LIVE_MAX], total = 0;
        int nlive = 0;
        for (int op = 1; op <= mix_ops && !t.oom; op++) {
            bool do_alloc = nlive == 0 || (nlive < MIX_LIVE_MAX && total < MIX_LIVE_BYTES &&
                                           xorshift64(&x) % 100 < 60);
            if (op % MIX_EMPTY_EVERY == 0) {
                ca_empty_cache(p.a);
            } else if (do_alloc) {
                uint64_t n = mix_size(&x);
                if (ca_malloc(p.a, n, &live[nlive]) != CA_OK) { t.oom = true; break; }
                live_bytes[nlive++] = n;
                total += n;
            } else {
                int k = (int)(xorshift64(&x) % (uint64_t)nlive);
                CHECK(ca_free(p.a, live[k]) == 0, "free at op %d", op);
                total -= live_bytes[k];
                live[k] = live[--nlive];
                live_bytes[k] = live_bytes[nlive];
            }
            record(&p, &t);
        }
    }
    const char *broken = mc_probe_check(&p);
    if (broken) mc_verify_failed(run, WL[wl], "%s", broken);
    mc_probe_close(&p);

    bool started = false;
    for (int i = 0; i < t.n; i++) {
        const step_fig *f = &t.s[i];
        started |= f->peak > 0;
        if (!started) continue;
        int64_t gap = (int64_t)f->reserved - (int64_t)f->peak;
        if (t.counted == 0 || gap > t.max_gap) t.max_gap = gap;
        if (t.counted == 0 || gap < t.min_gap) t.min_gap = gap;
        t.final_gap = gap;
        t.counted++;
        t.equal += gap == 0;
        int64_t dd = llabs(f->driver - (int64_t)f->reserved);
        if (dd > t.max_driver_diff) t.max_driver_diff = dd;
    }
    return t;
}

/* The first few steps (1-based) where peak allocated == reserved, as text. */
static void equal_steps_text(const trace *t, char *buf, size_t len)
{
    size_t used = 0;
    int shown = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->n && shown < 6; i++)
        if (t->s[i].peak > 0 && t->s[i].peak == t->s[i].reserved) {
            used += (size_t)snprintf(buf + used, len - used, "%s%d", shown ? ", " : "", i + 1);
            shown++;
            if (used >= len) return;
        }
    if (shown == 6 && t->equal > 6) snprintf(buf + used, len - used, ", ...");
}

static void emit_steps(mc_run *run, int wl, const trace *t)
{
    for (int i = 0; i < t->n; i++) {
        const step_fig *f = &t->s[i];
        double step = i + 1;
        mc_emit_value(run, WL[wl], "step", step, "allocated", "bytes", (double)f->allocated, "");
        mc_emit_value(run, WL[wl], "step", step, "peak_allocated", "bytes", (double)f->peak,
                      "max_memory_allocated()");
        mc_emit_value(run, WL[wl], "step", step, "reserved", "bytes", (double)f->reserved,
                      "memory_reserved()");
        if (run->on_gpu)
            mc_emit_value(run, WL[wl], "step", step, "driver_used", "bytes", (double)f->driver,
                          "cudaMemGetInfo free drop since the allocator was made");
    }
}

/* Summary figures over R runs (equal on the host backend; on a GPU segment
 * addresses can change best-fit ties in the mixed workload). */
static void emit_summary(mc_run *run, int wl, const trace *t, int R)
{
    double *x = mc_xmalloc((size_t)R * sizeof *x);
#define SUMMARY(metric, unit, field, note)                                              \
    do {                                                                                \
        for (int r = 0; r < R; r++) x[r] = (double)t[r].field;                          \
        mc_emit(run, WL[wl], "", 0, metric, unit, mc_stats_of(x, (size_t)R), "ok", note); \
    } while (0)
    SUMMARY("steps_counted", "count", counted, "steps after the first allocation");
    SUMMARY("steps_equal", "count", equal, "steps where peak allocated == reserved");
    SUMMARY("max_gap", "bytes", max_gap, "max of reserved - peak allocated");
    SUMMARY("min_gap", "bytes", min_gap, "min of reserved - peak allocated");
    SUMMARY("final_gap", "bytes", final_gap, "reserved - peak allocated after the last step");
    if (run->on_gpu)
        SUMMARY("max_driver_minus_reserved", "bytes", max_driver_diff,
                "max |driver used - reserved| over the steps");
#undef SUMMARY
    free(x);
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    int R = run.on_gpu && !run.opt.quick ? run.opt.repeats : 1;
    int mix_ops = run.opt.quick ? MIX_OPS_QUICK : MIX_OPS;
    for (int w = 0; w < run.opt.warmup && run.on_gpu; w++)
        for (int wl = 0; wl < N_WL; wl++) free(run_workload(&run, wl, mix_ops).s);

    int equal = 0, counted = 0;
    bool oom = false;
    char per_wl[512] = "";
    size_t plen = 0;
    int64_t max_gap = 0, min_gap = 0;
    for (int wl = 0; wl < N_WL; wl++) {
        trace *t = mc_xmalloc((size_t)R * sizeof *t);
        for (int r = 0; r < R; r++) t[r] = run_workload(&run, wl, mix_ops);
        emit_steps(&run, wl, &t[0]);
        if (t[0].oom) {
            oom = true;
            mc_emit(&run, WL[wl], "", 0, "steps_counted", "count", mc_stats_one(t[0].counted), "oom",
                    "the workload ran out of memory");
        }
        emit_summary(&run, wl, t, R);
        equal += t[0].equal;
        counted += t[0].counted;
        if (t[0].max_gap > max_gap) max_gap = t[0].max_gap;
        if (t[0].min_gap < min_gap) min_gap = t[0].min_gap;
        char steps[96];
        equal_steps_text(&t[0], steps, sizeof steps);
        mc_emit_finding(&run,
            "%s: max_memory_allocated equals memory_reserved at %d of %d steps%s%s%s; reserved - peak "
            "allocated ranges from %lld to %lld B (%.2f to %.2f MiB), %lld B after the last step "
            "(run 1 of %d).",
            WL[wl], t[0].equal, t[0].counted, t[0].equal ? " (steps " : "", steps,
            t[0].equal ? ")" : "", (long long)t[0].min_gap, (long long)t[0].max_gap,
            (double)t[0].min_gap / MiB, (double)t[0].max_gap / MiB, (long long)t[0].final_gap, R);
        if (run.on_gpu)
            mc_emit_finding(&run, "%s, driver: used memory differs from the model's reserved by at "
                            "most %lld B at any step.", WL[wl], (long long)t[0].max_driver_diff);
        plen += (size_t)snprintf(per_wl + plen, plen < sizeof per_wl ? sizeof per_wl - plen : 0,
                                 "%s%s %d/%d", plen ? ", " : "", WL[wl], t[0].equal, t[0].counted);
        for (int r = 0; r < R; r++) free(t[r].s);
        free(t);
    }
    mc_emit_finding(&run, "Why they differ: max_memory_allocated is the high-water mark of the blocks "
                    "handed to tensors; memory_reserved is the segments held now, which also hold "
                    "cached free blocks and unsplit tails. They meet only at steps where every reserved "
                    "byte is in a live block at the high-water mark, and reserved falls below the peak "
                    "once frees and empty_cache return segments (lowest gap over the workloads: %lld B).",
                    (long long)min_gap);

    mc_verdict v = oom ? MC_INCONCLUSIVE : mc_verdict_share(equal, counted);
    mc_emit_verdict(&run, v,
        "peak allocated == reserved at %d of %d steps after the first allocation (%s); reserved "
        "exceeded peak allocated by up to %lld B (%.2f MiB).",
        equal, counted, per_wl, (long long)max_gap, (double)max_gap / MiB);
    return mc_run_end(&run);
}
