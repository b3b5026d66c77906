/* c15_empty_cache_live: C15. What empty_cache releases when some blocks are
 * live and some free: the same 21 tensors over 6 segments, then three sets of
 * survivors (none, some, one in every segment), empty_cache, and the model's
 * reserved/allocated with the driver's used memory before and after. On a GPU
 * the live blocks hold a pattern that must read back intact afterwards. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "alloc/alloc_probe.h"
#include "check.h"
#include "check_cuda.h"
#include "experiment.h"

static const mc_experiment EXP = {
    .claim = "C15",
    .key = "empty_cache_live",
    .title = "empty_cache with live and free blocks: what it releases, and whether reserved drops",
    .seed_claim = "empty_cache only frees idle blocks and does not reduce memory_reserved.",
    .method = "21 tensors (8 x 200,000 B, 10 x 4,000,000 B, 2 x 12 MiB, 1 x 64 MiB: 6 segments) through "
              "the allocator model (CUDA backend on a GPU, host backend with --model-only); three "
              "scenarios free different tensors (all_freed; mixed: some segments wholly free, others "
              "partly live; all_live: a live block in every segment), then empty_cache: allocated, "
              "reserved, segments, cached free bytes before and after; on a GPU the driver's used "
              "memory (cudaMemGetInfo) before and after, and a pattern in every live block read back "
              "afterwards.",
    .verdict_rule = "does-not-hold if empty_cache freed a live block in any scenario; holds if it "
                    "freed none and reserved did not drop in any scenario; holds-partly if it freed "
                    "none but reserved dropped in some scenario.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 3,
    .default_warmup = 0,
    .extra = NULL,
};

#define MiB (1024ULL * 1024ULL)
#define PATTERN_BYTES 4096ULL  /* bytes of each live block written and read back (GPU) */

/* Allocated in this order on a fresh allocator. With PyTorch's rules: the
 * small ones share one 2 MiB segment, five 4,000,000 B tensors fill each of
 * two 20 MiB segments, each 12 MiB tensor and the 64 MiB one get a segment of
 * their own: 6 segments, 130 MiB. */
static const uint64_t REQ[] = {
    200000, 200000, 200000, 200000, 200000, 200000, 200000, 200000,     /* 0-7 */
    4000000, 4000000, 4000000, 4000000, 4000000,                        /* 8-12 */
    4000000, 4000000, 4000000, 4000000, 4000000,                        /* 13-17 */
    12 * MiB, 12 * MiB,                                                 /* 18-19 */
    64 * MiB,                                                           /* 20 */
};
#define NREQ ((int)(sizeof REQ / sizeof *REQ))

typedef struct {
    const char *name;
    const char *what;
    int keep[8];  /* indices into REQ that stay live; -1 ends */
} scenario;

static const scenario SCEN[] = {
    {"all_freed", "every tensor freed", {-1}},
    {"mixed", "one small, the last 4,000,000 B and the second 12 MiB tensor live", {0, 17, 19, -1}},
    {"all_live", "one live tensor in every segment", {0, 8, 13, 18, 19, 20, -1}},
};
#define NSCEN ((int)(sizeof SCEN / sizeof *SCEN))

typedef struct {
    mc_probe_snap before, after;
    uint64_t cached_before, cached_after;  /* ca_cached_free_bytes */
    int live;                              /* live blocks at empty_cache */
    int live_lost;                         /* live blocks whose size changed or vanished */
    int pattern_bad;                       /* live blocks whose pattern did not read back (GPU) */
    bool oom;
} outcome;

static bool kept(const scenario *s, int i)
{
    for (int k = 0; s->keep[k] >= 0; k++)
        if (s->keep[k] == i) return true;
    return false;
}

static uint64_t pattern_len(uint64_t bytes)
{
    return bytes < PATTERN_BYTES ? bytes : PATTERN_BYTES;
}

/* Writes byte (0x40 + i) into the first bytes of live block i (GPU). */
static void write_pattern(uint64_t addr, int i, uint64_t bytes)
{
    CHECK_CUDA(cudaMemset((void *)(uintptr_t)addr, 0x40 + i, pattern_len(bytes)));
}

static bool pattern_ok(uint64_t addr, int i, uint64_t bytes)
{
    unsigned char buf[PATTERN_BYTES];
    uint64_t n = pattern_len(bytes);
    CHECK_CUDA(cudaMemcpy(buf, (const void *)(uintptr_t)addr, n, cudaMemcpyDeviceToHost));
    for (uint64_t j = 0; j < n; j++)
        if (buf[j] != (unsigned char)(0x40 + i)) return false;
    return true;
}

static outcome run_scenario(mc_run *run, const scenario *s)
{
    outcome o = {0};
    mc_probe p;
    mc_probe_open(&p, run->on_gpu, NULL);
    uint64_t addr[NREQ] = {0}, block[NREQ] = {0};
    for (int i = 0; i < NREQ && !o.oom; i++) {
        if (ca_malloc(p.a, REQ[i], &addr[i]) != CA_OK) o.oom = true;
        else block[i] = ca_block_size(p.a, addr[i]);
    }
    if (o.oom) {
        mc_probe_close(&p);
        return o;
    }
    for (int i = 0; i < NREQ; i++) {
        if (kept(s, i)) {
            o.live++;
            if (p.on_gpu) write_pattern(addr[i], i, REQ[i]);
        } else {
            CHECK(ca_free(p.a, addr[i]) == 0, "free of tensor %d", i);
        }
    }
    if (p.on_gpu) CHECK_CUDA(cudaDeviceSynchronize());
    o.before = mc_probe_snapshot(&p);
    o.cached_before = ca_cached_free_bytes(p.a);

    ca_empty_cache(p.a);

    o.after = mc_probe_snapshot(&p);
    o.cached_after = ca_cached_free_bytes(p.a);
    const char *broken = mc_probe_check(&p);
    if (broken) mc_verify_failed(run, s->name, "%s", broken);
    for (int i = 0; i < NREQ; i++) {
        if (!kept(s, i)) continue;
        if (ca_block_size(p.a, addr[i]) != block[i]) o.live_lost++;
        else if (p.on_gpu && !pattern_ok(addr[i], i, REQ[i])) o.pattern_bad++;
    }
    for (int i = 0; i < NREQ; i++)
        if (kept(s, i) && ca_block_size(p.a, addr[i]) != 0) ca_free(p.a, addr[i]);
    mc_probe_close(&p);
    return o;
}

static bool same_model(const outcome *a, const outcome *b)
{
    return a->before.reserved == b->before.reserved && a->after.reserved == b->after.reserved &&
           a->before.allocated == b->before.allocated && a->after.allocated == b->after.allocated &&
           a->before.segments == b->before.segments && a->after.segments == b->after.segments;
}

static void emit_scenario(mc_run *run, const scenario *s, const outcome *o, int R)
{
    const char *v = s->name;
    const outcome *f = &o[0];
    mc_emit_value(run, v, "", 0, "reserved_before", "bytes", (double)f->before.reserved, s->what);
    mc_emit_value(run, v, "", 0, "reserved_after", "bytes", (double)f->after.reserved, "");
    mc_emit_value(run, v, "", 0, "allocated_before", "bytes", (double)f->before.allocated, "");
    mc_emit_value(run, v, "", 0, "allocated_after", "bytes", (double)f->after.allocated, "");
    mc_emit_value(run, v, "", 0, "segments_before", "count", (double)f->before.segments, "");
    mc_emit_value(run, v, "", 0, "segments_after", "count", (double)f->after.segments, "");
    mc_emit_value(run, v, "", 0, "cached_free_before", "bytes", (double)f->cached_before,
                  "free blocks held in the pools");
    mc_emit_value(run, v, "", 0, "cached_free_after", "bytes", (double)f->cached_after, "");
    mc_emit_value(run, v, "", 0, "live_blocks", "count", (double)f->live, "");
    if (!run->on_gpu) return;
    double *b = mc_xmalloc((size_t)R * sizeof *b), *a = mc_xmalloc((size_t)R * sizeof *a);
    for (int r = 0; r < R; r++) {
        b[r] = (double)o[r].before.driver_used;
        a[r] = (double)o[r].after.driver_used;
    }
    mc_emit(run, v, "", 0, "driver_used_before", "bytes", mc_stats_of(b, (size_t)R), "ok",
            "cudaMemGetInfo free drop since the allocator was made");
    mc_emit(run, v, "", 0, "driver_used_after", "bytes", mc_stats_of(a, (size_t)R), "ok", "");
    mc_emit_finding(run, "%s, driver: used %.0f B before and %.0f B after empty_cache (released "
                    "%.0f B; the model released %llu B of reserved; medians of %d).",
                    v, mc_stats_of(b, (size_t)R).median, mc_stats_of(a, (size_t)R).median,
                    mc_stats_of(b, (size_t)R).median - mc_stats_of(a, (size_t)R).median,
                    (unsigned long long)(f->before.reserved - f->after.reserved), R);
    free(b);
    free(a);
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    int R = run.on_gpu && !run.opt.quick ? run.opt.repeats : 1;
    for (int w = 0; w < run.opt.warmup && run.on_gpu; w++)
        for (int s = 0; s < NSCEN; s++) run_scenario(&run, &SCEN[s]);

    outcome *o = mc_xmalloc((size_t)NSCEN * (size_t)R * sizeof *o);
    int live_lost = 0, dropped = 0, complete = 0;
    char drops[512] = "";
    size_t dlen = 0;
    for (int s = 0; s < NSCEN; s++) {
        outcome *os = &o[s * R];
        for (int r = 0; r < R; r++) {
            os[r] = run_scenario(&run, &SCEN[s]);
            if (r > 0 && !same_model(&os[r], &os[0]))
                mc_verify_failed(&run, SCEN[s].name, "run %d gave other model figures than run 1", r + 1);
            if (os[r].pattern_bad)
                mc_verify_failed(&run, SCEN[s].name, "%d live block(s) lost their contents after "
                                 "empty_cache", os[r].pattern_bad);
            live_lost += os[r].live_lost;
        }
        if (os[0].oom) {
            mc_emit(&run, SCEN[s].name, "", 0, "reserved_before", "bytes", mc_stats_one(NAN), "oom",
                    "the allocator could not get a segment");
            continue;
        }
        complete++;
        emit_scenario(&run, &SCEN[s], os, R);
        const outcome *f = &os[0];
        uint64_t released = f->before.reserved - f->after.reserved;
        if (f->after.reserved < f->before.reserved) {
            dropped++;
            dlen += (size_t)snprintf(drops + dlen, dlen < sizeof drops ? sizeof drops - dlen : 0,
                                     "%s%s %llu -> %llu B", dlen ? ", " : "", SCEN[s].name,
                                     (unsigned long long)f->before.reserved,
                                     (unsigned long long)f->after.reserved);
        }
        mc_emit_finding(&run,
            "%s (%s): %d live block(s), %llu B allocated, in %lld segments holding %llu B; "
            "empty_cache released %lld segment(s) = %llu B (%.2f MiB) that were wholly free and kept "
            "%llu B of free cached blocks reserved inside segments with a live block; allocated "
            "%llu -> %llu B, reserved %llu -> %llu B.",
            SCEN[s].name, SCEN[s].what, f->live, (unsigned long long)f->before.allocated,
            (long long)f->before.segments, (unsigned long long)f->before.reserved,
            (long long)(f->before.segments - f->after.segments), (unsigned long long)released,
            MC_MIB(released), (unsigned long long)f->cached_after,
            (unsigned long long)f->before.allocated, (unsigned long long)f->after.allocated,
            (unsigned long long)f->before.reserved, (unsigned long long)f->after.reserved);
    }

    mc_verdict v;
    if (complete < NSCEN) v = MC_INCONCLUSIVE;
    else if (live_lost > 0) v = MC_DOES_NOT_HOLD;
    else if (dropped == 0) v = MC_HOLDS;
    else v = MC_HOLDS_PARTLY;
    mc_emit_verdict(&run, v,
        "empty_cache freed %d live block(s) over %d scenario run(s) (the first half %s); reserved "
        "dropped in %d of %d scenarios%s%s%s (the second half, 'does not reduce memory_reserved', "
        "%s): it releases every wholly free segment and keeps any segment with a live block.",
        live_lost, NSCEN * R, live_lost ? "fails" : "holds", dropped, complete, dlen ? " (" : "",
        drops, dlen ? ")" : "", dropped ? "fails when a whole segment is free" : "holds here");
    free(o);
    return mc_run_end(&run);
}
