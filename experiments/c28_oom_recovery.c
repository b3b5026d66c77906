/* c28_oom_recovery: C28. After an out-of-memory error, does empty_cache()
 * and a retry recover, and does the empty_cache matter? PyTorch's malloc
 * (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc) already
 * does it before it raises: alloc_block fails, release_available_cached_blocks
 * (with max_split_size set), then release_cached_blocks (what empty_cache
 * calls) and alloc_block once more with isRetry (num_alloc_retries += 1);
 * only then num_ooms += 1 and OutOfMemoryError. So a manual empty_cache()
 * after the exception finds nothing the allocator's own retry would not
 * release, except where the memory is wanted by someone who does not ask
 * the caching allocator: another library's raw cudaMalloc, or another
 * process on the same device. Each scenario runs twice from a fresh
 * allocator: the same request again (retry_alone), and empty_cache() then
 * the same request (empty_cache_retry). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "alloc/alloc_cuda.h"
#include "alloc/alloc_host.h"
#include "alloc/alloc_model.h"
#include "alloc/alloc_probe.h"
#include "check.h"
#include "check_cuda.h"
#include "experiment.h"

static const mc_experiment EXP = {
    .claim = "C28",
    .key = "oom_recovery",
    .title = "OOM, then empty_cache() and the same request, against the same request alone",
    .seed_claim = "After an out-of-memory error, empty_cache() and a retry recover.",
    .method = "Through the allocator model (CUDA backend on a GPU; host backend with --model-only), "
              "five scenarios, each run twice from a fresh allocator: after the failing request "
              "(and the except clause), either the same request again (retry_alone) or "
              "empty_cache() then the same request (empty_cache_retry). Under a 1 GiB limit "
              "(set_per_process_memory_fraction): too_large (a 1.5 GiB request beside 200 MiB "
              "live); cached_only (800 MiB of free cached segments, then 400 MiB: the allocator's "
              "own retry serves it, no exception); pinned_fragments (100 x 8 MiB in 50 segments of "
              "20 MiB, every other one freed: 600 MiB free but every segment keeps a live block; "
              "then 100 MiB); freed_after_exception (the same, and the except clause drops the "
              "iteration's 50 remaining tensors before recovering). external_consumer: no limit; a "
              "device of 1 GiB shared with a consumer outside the caching allocator (another "
              "library's raw cudaMalloc or another process: on the host backend a second user of "
              "the simulated device; on a GPU a raw cudaMalloc, with the rest of the device held by "
              "a ballast): the allocator caches 600 MiB of free segments, then the outside consumer "
              "asks for 600 MiB. After every step: allocated, reserved, num_alloc_retries, "
              "num_ooms, the outside consumer's bytes, and whether the request succeeded. --quick "
              "runs the same (it is already small).",
    .verdict_rule = "Over the scenarios whose first request failed: recovered = the last request "
                    "succeeded; changed = empty_cache_retry's outcome differs from retry_alone's. "
                    "holds if empty_cache_retry recovers in every one and changed in every one; "
                    "does-not-hold if changed in none; otherwise holds-partly (the note names "
                    "where recovery happens and where the manual call is what recovers). "
                    "inconclusive if no scenario failed first.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 1,
    .default_warmup = 0,
    .extra = NULL,
};

#define MIB (1ULL << 20)
#define LIMIT_BYTES (1024 * MIB)   /* the set_per_process_memory_fraction cap, scenarios 1-4 */
#define DEVICE_BYTES (1024 * MIB)  /* the shared device of external_consumer */
#define FRAG_N 100                 /* pinned_fragments: tensors of FRAG_BYTES */
#define FRAG_BYTES (8 * MIB)       /* two per 20 MiB segment (kLargeBuffer), 4 MiB left over */

enum { S_TOO_LARGE, S_CACHED, S_PINNED, S_FREED, S_EXTERNAL, NSCEN };
static const char *const SCEN[NSCEN] = {"too_large", "cached_only", "pinned_fragments",
                                        "freed_after_exception", "external_consumer"};
enum { P_RETRY, P_EMPTY, NPATH };
static const char *const PATH[NPATH] = {"retry_alone", "empty_cache_retry"};

/* ------------------------------------------------------------ the rig */

/* The allocator, and a consumer outside it on the same device. */
typedef struct {
    bool on_gpu;
    ca_host_device *host;  /* model-only: the simulated device */
    ca_allocator *a;
    void *ballast;         /* GPU, external_consumer: the device memory held back */
    uint64_t ext_addr;     /* the outside consumer's allocation, 0 if none */
    uint64_t ext_bytes;
} rig;

static void rig_open(rig *r, const mc_run *run, int scen)
{
    memset(r, 0, sizeof *r);
    r->on_gpu = run->on_gpu;
    ca_config cfg = ca_config_default();
    if (scen != S_EXTERNAL) cfg.limit_bytes = LIMIT_BYTES;
    ca_backend be;
    if (r->on_gpu) {
        be = ca_cuda_backend();
    } else {
        /* external_consumer: the device itself is the limit; otherwise an
         * 80 GB-class device under the allocator's 1 GiB cap. */
        r->host = ca_host_create(scen == S_EXTERNAL ? DEVICE_BYTES : MC_PROBE_HOST_CAPACITY);
        CHECK(r->host != NULL, "ca_host_create");
        be = ca_host_backend(r->host);
    }
    r->a = ca_create(&cfg, be);
    CHECK(r->a != NULL, "ca_create");
}

/* GPU only: holds all but DEVICE_BYTES of the device's free memory, so that
 * the allocator and the outside consumer share DEVICE_BYTES. 0, or -1 where
 * the driver would not give the ballast in one piece. */
static int rig_ballast(rig *r)
{
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (free_b <= DEVICE_BYTES + 64 * MIB) return -1;
    if (cudaMalloc(&r->ballast, free_b - DEVICE_BYTES) != cudaSuccess) {
        (void)cudaGetLastError(); /* cudaErrorMemoryAllocation is not sticky */
        r->ballast = NULL;
        return -1;
    }
    return 0;
}

/* The outside consumer's request: cudaMalloc on a GPU, the simulated device's
 * own allocation on the host backend. Nothing of the caching allocator runs:
 * no retry, no release of its cache. true if it got the memory. */
static bool rig_external_malloc(rig *r, uint64_t bytes)
{
    if (r->on_gpu) {
        void *p = NULL;
        if (cudaMalloc(&p, bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            return false;
        }
        r->ext_addr = (uint64_t)(uintptr_t)p;
    } else {
        ca_backend be = ca_host_backend(r->host);
        if (be.dev_malloc(be.ctx, bytes, &r->ext_addr) != 0) return false;
    }
    r->ext_bytes = bytes;
    return true;
}

static void rig_close(rig *r)
{
    if (r->ext_addr) {
        if (r->on_gpu) CHECK_CUDA(cudaFree((void *)(uintptr_t)r->ext_addr));
        else {
            ca_backend be = ca_host_backend(r->host);
            be.dev_free(be.ctx, r->ext_addr, r->ext_bytes);
        }
    }
    ca_destroy(r->a);
    if (r->ballast) CHECK_CUDA(cudaFree(r->ballast));
    if (r->host) ca_host_destroy(r->host);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------ one run */

#define MAX_STEPS 6

typedef struct {
    const char *name;      /* "set-up", "request", "except", "empty_cache", "retry" */
    int64_t allocated, reserved, retries, ooms;
    uint64_t ext_bytes;
    int ok;                /* the step's request succeeded (1), failed (0); -1 no request */
} step_fig;

typedef struct {
    bool skipped;          /* GPU: no ballast; the scenario could not be set up */
    int n;
    step_fig st[MAX_STEPS];
    bool first_ok, last_ok;
    char invariant[160];   /* a broken allocator invariant, "" if none */
} run_fig;

static void record(run_fig *f, const rig *r, const char *name, int ok)
{
    CHECK(f->n < MAX_STEPS, "too many steps");
    const ca_stats *s = ca_get_stats(r->a);
    step_fig *x = &f->st[f->n++];
    x->name = name;
    x->allocated = s->allocated_bytes.current;
    x->reserved = s->reserved_bytes.current;
    x->retries = s->num_alloc_retries;
    x->ooms = s->num_ooms;
    x->ext_bytes = r->ext_bytes;
    x->ok = ok;
    if (!f->invariant[0] && ca_check_invariants(r->a, f->invariant, sizeof f->invariant) != 0 &&
        !f->invariant[0])
        snprintf(f->invariant, sizeof f->invariant, "broken");
}

static void must_alloc(ca_allocator *a, uint64_t bytes, uint64_t *addr)
{
    CHECK(ca_malloc(a, bytes, addr) == CA_OK, "set-up request of %llu B refused",
          (unsigned long long)bytes);
}

/* The scenario's request: through the allocator, or the outside consumer's. */
static bool request(rig *r, int scen, uint64_t *addr)
{
    static const uint64_t BYTES[NSCEN] = {1536 * MIB, 400 * MIB, 100 * MIB, 100 * MIB, 600 * MIB};
    if (scen == S_EXTERNAL) return rig_external_malloc(r, BYTES[scen]);
    return ca_malloc(r->a, BYTES[scen], addr) == CA_OK;
}

static run_fig run_scenario(const mc_run *run, int scen, int path)
{
    run_fig f;
    memset(&f, 0, sizeof f);
    rig r;
    rig_open(&r, run, scen);
    if (scen == S_EXTERNAL && r.on_gpu && rig_ballast(&r) != 0) {
        f.skipped = true;
        rig_close(&r);
        return f;
    }
    uint64_t keep[FRAG_N] = {0}, got = 0;
    switch (scen) {
    case S_TOO_LARGE: /* the model's weights, say */
        must_alloc(r.a, 200 * MIB, &keep[0]);
        break;
    case S_CACHED: /* a previous iteration's tensors, freed: whole cached segments */
    case S_EXTERNAL:
        for (int i = 0; i < (scen == S_CACHED ? 8 : 6); i++) must_alloc(r.a, 100 * MIB, &keep[i]);
        for (int i = 0; i < 8; i++) CHECK(ca_free(r.a, keep[i]) == 0, "free");
        memset(keep, 0, sizeof keep);
        break;
    case S_PINNED:
    case S_FREED: /* every other 8 MiB tensor freed: each segment keeps one live block */
        for (int i = 0; i < FRAG_N; i++) must_alloc(r.a, FRAG_BYTES, &keep[i]);
        for (int i = 1; i < FRAG_N; i += 2) {
            CHECK(ca_free(r.a, keep[i]) == 0, "free");
            keep[i] = 0;
        }
        break;
    }
    record(&f, &r, "set-up", -1);
    f.first_ok = request(&r, scen, &got);
    record(&f, &r, "request", f.first_ok);
    bool ok = f.first_ok;
    if (!ok) {
        if (scen == S_FREED) { /* the except clause: the iteration's tensors go */
            for (int i = 0; i < FRAG_N; i++) {
                CHECK(ca_free(r.a, keep[i]) == 0, "free");
                keep[i] = 0;
            }
            record(&f, &r, "except", -1);
        }
        if (path == P_EMPTY) {
            ca_empty_cache(r.a);
            record(&f, &r, "empty_cache", -1);
        }
        ok = request(&r, scen, &got);
        record(&f, &r, "retry", ok);
    }
    f.last_ok = ok;
    rig_close(&r);
    return f;
}

/* ------------------------------------------------------------ rows */

static void emit_run(mc_run *run, int scen, int path, const run_fig *f)
{
    char v[64];
    snprintf(v, sizeof v, "%s/%s", SCEN[scen], PATH[path]);
    if (f->skipped) {
        mc_emit(run, v, "step", 0, "request_ok", "bool", mc_stats_one(NAN), "waived",
                "the GPU would not give the ballast that leaves 1 GiB shared");
        return;
    }
    for (int k = 0; k < f->n; k++) {
        const step_fig *s = &f->st[k];
        const double pv = k + 1;
        mc_emit_value(run, v, "step", pv, "allocated", "bytes", (double)s->allocated, s->name);
        mc_emit_value(run, v, "step", pv, "reserved", "bytes", (double)s->reserved, s->name);
        mc_emit_value(run, v, "step", pv, "num_alloc_retries", "count", (double)s->retries, s->name);
        mc_emit_value(run, v, "step", pv, "num_ooms", "count", (double)s->ooms, s->name);
        mc_emit_value(run, v, "step", pv, "outside_bytes", "bytes", (double)s->ext_bytes, s->name);
        if (s->ok >= 0)
            mc_emit_value(run, v, "step", pv, "request_ok", "bool", s->ok, s->name);
    }
}

static const step_fig *find_step(const run_fig *f, const char *name)
{
    for (int k = 0; k < f->n; k++)
        if (strcmp(f->st[k].name, name) == 0) return &f->st[k];
    return NULL;
}

/* Why the outcome is what it is, from the recorded figures. */
static void explain(mc_run *run, int scen, const run_fig *ra, const run_fig *re)
{
    const step_fig *req = find_step(ra, "request"), *set = find_step(ra, "set-up");
    const step_fig *ec = find_step(re, "empty_cache"), *ec_before = ec ? ec - 1 : NULL;
    const step_fig *rr = find_step(ra, "retry"), *er = find_step(re, "retry");
    if (scen == S_CACHED) {
        mc_emit_finding(run, "cached_only: the 400 MiB request succeeded at once (%.0f MiB "
                        "reserved and free before it): alloc_block failed under the limit, the "
                        "allocator released its cached segments itself and tried again "
                        "(num_alloc_retries %lld -> %lld, num_ooms %lld): no exception, so nothing "
                        "for empty_cache to recover from.", MC_MIB(set->reserved),
                        (long long)set->retries, (long long)req->retries, (long long)req->ooms);
        return;
    }
    if (scen == S_EXTERNAL) {
        mc_emit_finding(run, "external_consumer: the caching allocator held %.0f MiB reserved "
                        "(%.0f MiB allocated) of the shared %.0f MiB when the outside consumer "
                        "asked for 600 MiB and failed; its failure runs none of the caching "
                        "allocator's code (num_alloc_retries %lld, num_ooms %lld throughout), so "
                        "the cache stays. Retried alone it fails again (%s); after empty_cache "
                        "(reserved %.0f -> %.0f MiB) it %s.", MC_MIB(req->reserved),
                        MC_MIB(req->allocated), MC_MIB(DEVICE_BYTES), (long long)req->retries,
                        (long long)req->ooms, rr && rr->ok ? "ok" : "OOM",
                        ec_before ? MC_MIB(ec_before->reserved) : NAN,
                        ec ? MC_MIB(ec->reserved) : NAN, er && er->ok ? "succeeds" : "fails too");
        return;
    }
    mc_emit_finding(run, "%s: the failing request counted num_alloc_retries %lld -> %lld and "
                    "num_ooms %lld -> %lld: the allocator had already called "
                    "release_cached_blocks and retried before raising; reserved %.0f MiB, "
                    "allocated %.0f MiB after it. empty_cache then took reserved from %.0f to "
                    "%.0f MiB. The retry alone %s (retries %lld, ooms %lld after it); "
                    "empty_cache + retry %s (retries %lld, ooms %lld).", SCEN[scen],
                    (long long)set->retries, (long long)req->retries, (long long)set->ooms,
                    (long long)req->ooms, MC_MIB(req->reserved), MC_MIB(req->allocated),
                    ec_before ? MC_MIB(ec_before->reserved) : NAN, ec ? MC_MIB(ec->reserved) : NAN,
                    rr && rr->ok ? "succeeds" : "fails", rr ? (long long)rr->retries : -1LL,
                    rr ? (long long)rr->ooms : -1LL, er && er->ok ? "succeeds" : "fails",
                    er ? (long long)er->retries : -1LL, er ? (long long)er->ooms : -1LL);
}

/* What the reference's malloc implies, checked on the model's figures: a
 * request through the allocator that fails has counted exactly one retry
 * and one OOM; empty_cache right after such a failure releases nothing. */
static void verify_run(mc_run *run, int scen, int path, const run_fig *f)
{
    char v[64];
    snprintf(v, sizeof v, "%s/%s", SCEN[scen], PATH[path]);
    if (f->invariant[0]) mc_verify_failed(run, v, "allocator invariant: %s", f->invariant);
    const step_fig *req = find_step(f, "request"), *set = find_step(f, "set-up");
    if (scen == S_EXTERNAL) {
        if (req->retries != set->retries || req->ooms != set->ooms)
            mc_verify_failed(run, v, "the outside consumer's request changed the allocator's "
                             "counters");
        return;
    }
    if (!f->first_ok && (req->retries != set->retries + 1 || req->ooms != set->ooms + 1))
        mc_verify_failed(run, v, "a failed request counted %lld retries and %lld OOMs, not 1 and 1",
                         (long long)(req->retries - set->retries), (long long)(req->ooms - set->ooms));
    const step_fig *ec = find_step(f, "empty_cache");
    if (ec && scen != S_FREED && ec->reserved != (ec - 1)->reserved)
        mc_verify_failed(run, v, "empty_cache right after a failed request released %lld B: "
                         "release_cached_blocks had run already",
                         (long long)((ec - 1)->reserved - ec->reserved));
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    run_fig F[NSCEN][NPATH];
    for (int s = 0; s < NSCEN; s++)
        for (int p = 0; p < NPATH; p++) {
            F[s][p] = run_scenario(&run, s, p);
            emit_run(&run, s, p, &F[s][p]);
            if (!F[s][p].skipped) verify_run(&run, s, p, &F[s][p]);
        }

    int failed_first = 0, recovered = 0, changed = 0;
    char rec[256] = "", chg[256] = "", same[256] = "";
    for (int s = 0; s < NSCEN; s++) {
        const run_fig *ra = &F[s][P_RETRY], *re = &F[s][P_EMPTY];
        if (ra->skipped || re->skipped) continue;
        explain(&run, s, ra, re);
        mc_emit_value(&run, SCEN[s], "", 0, "first_request_ok", "bool", ra->first_ok, "1 if the scenario's first request succeeded");
        mc_emit_value(&run, SCEN[s], "", 0, "retry_alone_ok", "bool", ra->last_ok,
                      "1 if the last request of retry_alone succeeded");
        mc_emit_value(&run, SCEN[s], "", 0, "empty_cache_retry_ok", "bool", re->last_ok,
                      "1 if the last request of empty_cache_retry succeeded");
        const step_fig *ec = find_step(re, "empty_cache");
        if (ec) {
            mc_emit_value(&run, SCEN[s], "", 0, "reserved_before_empty_cache", "bytes",
                          (double)(ec - 1)->reserved, "empty_cache_retry: reserved before the manual call");
            mc_emit_value(&run, SCEN[s], "", 0, "reserved_after_empty_cache", "bytes",
                          (double)ec->reserved, "empty_cache_retry: reserved after it");
        }
        if (ra->first_ok) continue;
        failed_first++;
        bool ch = ra->last_ok != re->last_ok;
        recovered += re->last_ok;
        changed += ch;
        mc_emit_value(&run, SCEN[s], "", 0, "outcome_changed", "bool", ch,
                      "1 if empty_cache_retry's outcome differs from retry_alone's");
        char *dst = ch ? chg : re->last_ok ? rec : same;
        size_t used = strlen(dst);
        snprintf(dst + used, 256 - used, "%s%s", used ? ", " : "", SCEN[s]);
    }

    mc_verdict v;
    if (failed_first == 0) v = MC_INCONCLUSIVE;
    else if (recovered == failed_first && changed == failed_first) v = MC_HOLDS;
    else if (changed == 0) v = MC_DOES_NOT_HOLD;
    else v = MC_HOLDS_PARTLY;
    mc_emit_verdict(&run, v,
        "Of %d scenarios whose first request failed, empty_cache + retry recovered in %d and "
        "changed the outcome in %d. Recovered only with the manual empty_cache: %s. Recovered "
        "either way (the allocator's own release_cached_blocks + retry, num_alloc_retries): %s. "
        "Failed either way: %s. PyTorch's malloc has already emptied the cache before it raises, "
        "so empty_cache matters only for memory wanted outside the caching allocator.",
        failed_first, recovered, changed, chg[0] ? chg : "none", rec[0] ? rec : "none",
        same[0] ? same : "none");
    return mc_run_end(&run);
}
