/* C19: fragmentation can leave enough free memory but no block big enough;
 * limiting block splitting (max_split_size_mb) helps.
 *
 * One fixed trace through the allocator model under a 2 GiB limit
 * (set_per_process_memory_fraction), run with and without max_split_size:
 * a 1.5 GiB tensor is allocated and freed, 16 medium tensors of 24-56 MiB
 * follow, every other one is freed, then 1 GiB is requested: more than any
 * cached block, less than all cached free memory. Without the split limit
 * the mediums are carved out of the cached 1.5 GiB block, and the live ones
 * pin it: the new segment the big request needs does not fit under the
 * limit, and emptying the cache cannot help. With it, a request below the
 * limit may not split an oversize block, so the mediums get segments of their
 * own and the big block is released when the limit is reached. The trace
 * runs on the CUDA backend (cudaMalloc underneath) and on the host backend
 * (the model alone), timed with the host clock per operation. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_cuda.h"
#include "alloc/alloc_host.h"
#include "alloc/alloc_model.h"
#include "check_cuda.h"
#include "clock.h"
#include "experiment.h"

static const mc_experiment EXP = {
    .claim = "C19",
    .key = "fragmentation",
    .title = "A fragmenting trace under a 2 GiB limit, with and without max_split_size (64 MiB)",
    .seed_claim = "Fragmentation can leave enough free memory but no block big enough; limiting "
                  "block splitting (max_split_size_mb) helps.",
    .method = "The allocator model with limit_bytes = 2 GiB, max_split_size unset or 64 MiB: allocate "
              "and free 1536 MiB; allocate 16 tensors of 24, 40, 56, 32 MiB (repeated); free the 1st, "
              "3rd, ... 15th; record cached free bytes, the largest free block and reserved; request "
              "1024 MiB; then free everything and empty_cache. Reported per configuration: whether "
              "the request succeeded, num_alloc_retries, num_ooms, peak reserved, segments asked of "
              "the device; the host clock around every ca_malloc / ca_free, on the CUDA backend "
              "(cudaMalloc/cudaFree underneath) and on the host backend (the model alone). Verified: "
              "the model's invariants after each run, the same outcome on every repeat and on both "
              "backends, nothing left reserved at the end.",
    .verdict_rule = "A: without the split limit the 1024 MiB request failed (OOM) or needed a retry "
                    "after emptying the cache, while cached free >= 1024 MiB and the largest free "
                    "block < 1024 MiB. B: with max_split_size it succeeded with fewer OOMs or retries, "
                    "or a lower peak reserved. Worse: more OOMs (or as many and more retries) with the "
                    "split limit. holds if A and B; holds-partly if one of them and not worse; "
                    "does-not-hold otherwise. Outcomes come from the CUDA backend (the host backend "
                    "with --model-only); the time cost is reported, not judged.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 5,
    .default_warmup = 1,
    .extra = NULL,
};

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define LIMIT (2 * GIB)              /* cfg.limit_bytes */
#define SPLIT (64 * MIB)             /* max_split_size_mb:64 */
#define FIRST (1536 * MIB)           /* allocated and freed first */
#define BIG (1024 * MIB)             /* the request that needs one block */
#define NMED 16
#define HOST_CAPACITY (80 * GIB)     /* only the limit binds on the host backend */
#define NEEDS (LIMIT + 512 * MIB)    /* free GPU memory the CUDA backend needs */
#define QUICK_REPEATS 2
#define NOPS (2 * (NMED + 2) + 1)    /* timed operations per trace, at most */

static const uint64_t MED[4] = {24 * MIB, 40 * MIB, 56 * MIB, 32 * MIB};

enum { NOSPLIT, SPLIT64, NCFG };
static const char *const CFG[NCFG] = {"no_split_limit", "max_split_64MiB"};
enum { CUDA, HOST, NBE };
static const char *const BE[NBE] = {"cuda", "host"};

typedef struct {
    int big_ok;
    int64_t ooms, retries, peak_reserved, device_alloc, device_free;
    int64_t reserved_before, segments_before; /* just before the big request */
    uint64_t free_before, largest_before;
} outcome;

typedef struct {
    outcome out;
    double *malloc_s, *free_s; /* per op, all repeats */
    int nm, nf;
    double trace_s[64], big_s[64];
} runs;

static runs R[NCFG][NBE];
static int have[NBE];

/* ------------------------------------------------------------- the trace */

static int timed_malloc(ca_allocator *a, uint64_t bytes, uint64_t *addr, runs *r, int keep)
{
    double t0 = mc_now_s();
    int rc = ca_malloc(a, bytes, addr);
    double t = mc_now_s() - t0;
    if (keep) r->malloc_s[r->nm++] = t;
    return rc;
}

static void timed_free(ca_allocator *a, uint64_t addr, runs *r, int keep)
{
    double t0 = mc_now_s();
    int rc = ca_free(a, addr);
    double t = mc_now_s() - t0;
    CHECK(rc == 0, "freeing a live block");
    if (keep) r->free_s[r->nf++] = t;
}

/* One run of the trace on a fresh allocator; rep < 0 is a warm-up. */
static outcome trace(mc_run *run, int c, int b, ca_backend be, int rep)
{
    runs *r = &R[c][b];
    int keep = rep >= 0;
    ca_config cfg = ca_config_default();
    cfg.limit_bytes = LIMIT;
    if (c == SPLIT64) cfg.max_split_size = SPLIT;
    ca_allocator *a = ca_create(&cfg, be);
    CHECK(a != NULL, "ca_create refused limit %llu, max_split_size %llu",
          (unsigned long long)cfg.limit_bytes, (unsigned long long)cfg.max_split_size);
    ca_set_debug(a, false);
    outcome o;
    memset(&o, 0, sizeof o);
    uint64_t first = 0, big = 0, med[NMED];

    double t0 = mc_now_s();
    CHECK(timed_malloc(a, FIRST, &first, r, keep) == CA_OK, "the first 1536 MiB under a 2 GiB limit");
    timed_free(a, first, r, keep);
    for (int i = 0; i < NMED; i++) {
        uint64_t bytes = MED[i % 4];
        CHECK(timed_malloc(a, bytes, &med[i], r, keep) == CA_OK, "medium tensor %d", i);
    }
    for (int i = 0; i < NMED; i += 2) timed_free(a, med[i], r, keep);
    const ca_stats *st = ca_get_stats(a);
    o.free_before = ca_cached_free_bytes(a);
    o.largest_before = ca_largest_free_block(a);
    o.reserved_before = st->reserved_bytes.current;
    o.segments_before = st->segment.current;
    double tb = mc_now_s();
    o.big_ok = ca_malloc(a, BIG, &big) == CA_OK;
    double big_s = mc_now_s() - tb;
    if (o.big_ok) timed_free(a, big, r, keep);
    for (int i = 1; i < NMED; i += 2) timed_free(a, med[i], r, keep);
    ca_empty_cache(a);
    double trace_s = mc_now_s() - t0;

    char err[256];
    st = ca_get_stats(a);
    if (ca_check_invariants(a, err, sizeof err) != 0)
        mc_verify_failed(run, CFG[c], "%s backend: %s", BE[b], err);
    if (st->reserved_bytes.current != 0 || st->allocated_bytes.current != 0)
        mc_verify_failed(run, CFG[c], "%s backend: %lld bytes reserved, %lld allocated after freeing "
                         "everything and empty_cache", BE[b], (long long)st->reserved_bytes.current,
                         (long long)st->allocated_bytes.current);
    o.ooms = st->num_ooms;
    o.retries = st->num_alloc_retries;
    o.peak_reserved = st->reserved_bytes.peak;
    o.device_alloc = st->num_device_alloc;
    o.device_free = st->num_device_free;
    ca_destroy(a);
    if (keep) {
        r->trace_s[rep] = trace_s;
        r->big_s[rep] = big_s;
    }
    return o;
}

static int same(const outcome *x, const outcome *y)
{
    return x->big_ok == y->big_ok && x->ooms == y->ooms && x->retries == y->retries &&
           x->peak_reserved == y->peak_reserved && x->reserved_before == y->reserved_before &&
           x->segments_before == y->segments_before && x->device_alloc == y->device_alloc &&
           x->device_free == y->device_free && x->free_before == y->free_before &&
           x->largest_before == y->largest_before;
}

/* Warm-ups, then the timed repeats, the two configurations taking turns so
 * neither is timed colder than the other. */
static void run_all(mc_run *run, int b, ca_backend be, int reps, int warm)
{
    for (int c = 0; c < NCFG; c++) {
        R[c][b].malloc_s = mc_xmalloc((size_t)reps * NOPS * sizeof(double));
        R[c][b].free_s = mc_xmalloc((size_t)reps * NOPS * sizeof(double));
    }
    for (int k = -warm; k < reps; k++)
        for (int c = 0; c < NCFG; c++) {
            runs *r = &R[c][b];
            outcome o = trace(run, c, b, be, k);
            if (k == -warm) r->out = o;
            else if (!same(&o, &r->out))
                mc_verify_failed(run, CFG[c], "%s backend: run %d ended differently from the first "
                                 "(OOMs %lld vs %lld, peak reserved %lld vs %lld)", BE[b], k,
                                 (long long)o.ooms, (long long)r->out.ooms,
                                 (long long)o.peak_reserved, (long long)r->out.peak_reserved);
        }
    have[b] = 1;
}

/* --------------------------------------------------------------- main */

static double mib(double b) { return b / (double)MIB; }

/* Seconds in the unit that reads best. */
static const char *time_str(double s, char *buf, size_t len)
{
    if (s >= 1e-3) snprintf(buf, len, "%.2f ms", s * 1e3);
    else if (s >= 1e-6) snprintf(buf, len, "%.1f us", s * 1e6);
    else snprintf(buf, len, "%.0f ns", s * 1e9);
    return buf;
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    int reps = run.opt.quick && run.opt.repeats > QUICK_REPEATS ? QUICK_REPEATS : run.opt.repeats;
    if (reps > 64) reps = 64;
    int warm = run.opt.warmup < 1 ? 1 : run.opt.warmup; /* the first run is the reference outcome */

    ca_host_device *hd = ca_host_create(HOST_CAPACITY);
    CHECK(hd != NULL, "ca_host_create");
    run_all(&run, HOST, ca_host_backend(hd), reps, warm);
    if (run.on_gpu) {
        size_t fr = 0, total = 0;
        CHECK_CUDA(cudaMemGetInfo(&fr, &total));
        if (fr < NEEDS)
            mc_run_waive(&run, "the trace needs %llu bytes free on the GPU, it has %llu",
                         (unsigned long long)NEEDS, (unsigned long long)fr);
        run_all(&run, CUDA, ca_cuda_backend(), reps, warm);
        for (int c = 0; c < NCFG; c++)
            if (!same(&R[c][CUDA].out, &R[c][HOST].out))
                mc_verify_failed(&run, CFG[c], "the CUDA and host backends disagree: OOMs %lld vs "
                                 "%lld, peak reserved %lld vs %lld", (long long)R[c][CUDA].out.ooms,
                                 (long long)R[c][HOST].out.ooms, (long long)R[c][CUDA].out.peak_reserved,
                                 (long long)R[c][HOST].out.peak_reserved);
    }
    int pb = run.on_gpu ? CUDA : HOST; /* the backend the outcome is read from */

    /* ---- rows ---- */
    char note[256];
    snprintf(note, sizeof note, "%s backend; limit %llu bytes", BE[pb], (unsigned long long)LIMIT);
    for (int c = 0; c < NCFG; c++) {
        const outcome *o = &R[c][pb].out;
        mc_emit_value(&run, CFG[c], "", 0, "max_split_size_bytes", "bytes",
                      c == SPLIT64 ? (double)SPLIT : 0.0,
                      c == SPLIT64 ? "max_split_size_mb:64" : "0: unset (unlimited)");
        mc_emit_value(&run, CFG[c], "", 0, "limit_bytes", "bytes", (double)LIMIT,
                      "cfg.limit_bytes, as set_per_process_memory_fraction leaves it");
        mc_emit_value(&run, CFG[c], "", 0, "cached_free_before_big", "bytes", (double)o->free_before, note);
        mc_emit_value(&run, CFG[c], "", 0, "largest_free_before_big", "bytes", (double)o->largest_before, note);
        mc_emit_value(&run, CFG[c], "", 0, "reserved_before_big", "bytes", (double)o->reserved_before, note);
        mc_emit_value(&run, CFG[c], "", 0, "big_request", "bytes", (double)BIG, note);
        mc_emit_value(&run, CFG[c], "", 0, "big_request_ok", "bool", o->big_ok, note);
        mc_emit_value(&run, CFG[c], "", 0, "num_alloc_retries", "count", (double)o->retries, note);
        mc_emit_value(&run, CFG[c], "", 0, "num_ooms", "count", (double)o->ooms, note);
        mc_emit_value(&run, CFG[c], "", 0, "peak_reserved", "bytes", (double)o->peak_reserved, note);
        mc_emit_value(&run, CFG[c], "", 0, "device_mallocs", "count", (double)o->device_alloc,
                      "segments asked of the device in one trace");
        for (int b = 0; b < NBE; b++) {
            if (!have[b]) continue;
            runs *r = &R[c][b];
            char v[64];
            snprintf(v, sizeof v, "%s@%s", CFG[c], BE[b]);
            const char *how = b == CUDA ? "host clock; cudaMalloc/cudaFree underneath"
                                        : "host clock; the model alone (host backend)";
            mc_emit(&run, v, "", 0, "ca_malloc_latency", "s", mc_stats_of(r->malloc_s, (size_t)r->nm),
                    "ok", how);
            mc_emit(&run, v, "", 0, "ca_free_latency", "s", mc_stats_of(r->free_s, (size_t)r->nf), "ok", how);
            mc_emit(&run, v, "", 0, "big_request_latency", "s", mc_stats_of(r->big_s, (size_t)reps), "ok", how);
            mc_emit(&run, v, "", 0, "trace_time", "s", mc_stats_of(r->trace_s, (size_t)reps), "ok",
                    "the whole trace, empty_cache included; host clock");
        }
    }

    /* ---- findings ---- */
    const outcome *n = &R[NOSPLIT][pb].out, *s = &R[SPLIT64][pb].out;
    mc_emit_finding(&run, "Without a split limit (%s backend): before the %.0f MiB request, reserved "
                    "was %.0f MiB in %lld segment(s), %.0f MiB of it cached free, the largest free block "
                    "%.0f MiB; a new %.0f MiB segment on top %s the %.0f MiB limit. The request %s "
                    "(num_alloc_retries %lld, num_ooms %lld)%s.", BE[pb], mib(BIG),
                    mib(n->reserved_before), (long long)n->segments_before, mib(n->free_before),
                    mib(n->largest_before), mib(BIG),
                    n->reserved_before + (int64_t)BIG > (int64_t)LIMIT ? "exceeds" : "fits under",
                    mib(LIMIT), n->big_ok ? "succeeded" : "failed with OOM", (long long)n->retries,
                    (long long)n->ooms, !n->big_ok && n->retries > 0 && n->segments_before == 1
                    ? ": the cache was emptied and the request retried, but empty_cache releases only "
                      "whole free segments, and the live mediums sit in the one segment that holds "
                      "the free memory" : "");
    mc_emit_finding(&run, "With max_split_size 64 MiB a request below 64 MiB may not split an oversize "
                    "(>= 64 MiB) cached block: before the %.0f MiB request, reserved was %.0f MiB in "
                    "%lld segments (%lld asked of the device in the trace vs %lld without the limit), "
                    "%.0f MiB cached free, largest block %.0f MiB. The request %s (retries %lld, OOMs "
                    "%lld); peak reserved %.0f MiB vs %.0f MiB without the limit.", mib(BIG),
                    mib(s->reserved_before), (long long)s->segments_before, (long long)s->device_alloc,
                    (long long)n->device_alloc, mib(s->free_before), mib(s->largest_before),
                    s->big_ok ? "succeeded" : "failed with OOM", (long long)s->retries, (long long)s->ooms,
                    mib(s->peak_reserved), mib(n->peak_reserved));
    for (int b = 0; b < NBE; b++) {
        if (!have[b]) continue;
        mc_stats tn = mc_stats_of(R[NOSPLIT][b].trace_s, (size_t)reps);
        mc_stats ts = mc_stats_of(R[SPLIT64][b].trace_s, (size_t)reps);
        mc_stats mn = mc_stats_of(R[NOSPLIT][b].malloc_s, (size_t)R[NOSPLIT][b].nm);
        mc_stats ms = mc_stats_of(R[SPLIT64][b].malloc_s, (size_t)R[SPLIT64][b].nm);
        char a1[32], a2[32], a3[32], a4[32], a5[32], a6[32];
        mc_emit_finding(&run, "Time cost, %s: the whole trace took %s without the split limit and %s "
                        "with it (%.2fx); ca_malloc median %s vs %s, slowest %s vs %s.",
                        b == CUDA ? "CUDA backend (cudaMalloc/cudaFree underneath)"
                                  : "the model alone (host backend)",
                        time_str(tn.median, a1, sizeof a1), time_str(ts.median, a2, sizeof a2),
                        ts.median / tn.median, time_str(mn.median, a3, sizeof a3),
                        time_str(ms.median, a4, sizeof a4), time_str(mn.max, a5, sizeof a5),
                        time_str(ms.max, a6, sizeof a6));
    }

    /* ---- verdict ---- */
    int a_ = (!n->big_ok || n->retries > 0) && n->free_before >= BIG && n->largest_before < BIG;
    int b_ = s->big_ok && (s->ooms < n->ooms || s->retries < n->retries ||
                           s->peak_reserved < n->peak_reserved);
    int worse = s->ooms > n->ooms || (s->ooms == n->ooms && s->retries > n->retries);
    mc_verdict v = a_ && b_ ? MC_HOLDS : (a_ || b_) && !worse ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    mc_emit_verdict(&run, v, "%s backend, limit %.0f MiB, request %.0f MiB. Without split limit: cached "
                    "free %.0f MiB, largest block %.0f MiB, request %s, retries %lld, OOMs %lld (A: %s). "
                    "max_split_size 64 MiB: request %s, retries %lld, OOMs %lld, peak reserved %.0f vs "
                    "%.0f MiB (B: %s)%s", BE[pb], mib(LIMIT), mib(BIG), mib(n->free_before),
                    mib(n->largest_before), n->big_ok ? "ok" : "OOM", (long long)n->retries,
                    (long long)n->ooms, a_ ? "shown" : "not shown", s->big_ok ? "ok" : "OOM",
                    (long long)s->retries, (long long)s->ooms, mib(s->peak_reserved),
                    mib(n->peak_reserved), b_ ? "shown" : "not shown",
                    worse ? "; the split limit made it worse" : "");

    for (int c = 0; c < NCFG; c++)
        for (int b = 0; b < NBE; b++) {
            free(R[c][b].malloc_s);
            free(R[c][b].free_s);
        }
    ca_host_destroy(hd);
    return mc_run_end(&run);
}
