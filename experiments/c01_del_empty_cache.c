/* c01_del_empty_cache: C01. The seed's 100-step loop of 1000x1000 float32
 * tensors through the caching-allocator model, in three variants (keep every
 * tensor; del each; del each + empty_cache), with the driver's own used
 * memory beside the model's figures on a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_probe.h"
#include "check.h"
#include "clock.h"
#include "experiment.h"

static const mc_experiment EXP = {
    .claim = "C01",
    .key = "del_empty_cache",
    .title = "del + empty_cache vs keeping 100 tensors of 1000x1000 float32: peak allocated and reserved",
    .seed_claim = "Keeping 100 tensors of 1000x1000 float32 alive peaks at 400.00 MB allocated; "
                  "deleting each and emptying the cache keeps the peak at 3.81 MB.",
    .method = "100 requests of 4,000,000 B through the allocator model (CUDA backend: real cudaMalloc "
              "segments; --model-only: host backend) as keep_all, free_each (del) and "
              "free_each_empty_cache (del + empty_cache): peak/final allocated, reserved, segments; "
              "on a GPU the driver's used memory (cudaMemGetInfo delta) after each request and at the "
              "end, and the loop's time (host clock, runs without driver reads), over --repeats runs.",
    .verdict_rule = "The claim's two numbers (400.00 MiB keep-all, 3.81 MiB del+empty_cache; PyTorch's MB "
                    "is MiB) against the model's peak allocated: holds if both within 0.5%, holds-partly "
                    "if one, does-not-hold if neither.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 3,
    .default_warmup = 1,
    .extra = NULL,
};

#define STEPS 100                 /* the seed's loop */
#define TENSOR_BYTES 4000000ULL   /* torch.randn(1000, 1000): 1e6 float32 = 4,000,000 B */

/* The claim's numbers as the seed prints them: max_memory_allocated() / 2**20
 * with two decimals, labelled "MB" (so MiB). Claim constants, not measurements. */
#define CLAIM_KEEP_MIB 400.00
#define CLAIM_FREE_MIB 3.81
#define CLAIM_TOL 0.005           /* relative: the printed figures have 2 decimals */

enum { KEEP_ALL, FREE_EACH, FREE_EACH_EMPTY, N_VAR };
static const char *const VARIANT[N_VAR] = {"keep_all", "free_each", "free_each_empty_cache"};

typedef struct {
    mc_probe_snap end;      /* after the loop, before teardown */
    int64_t driver_peak;    /* max of driver_used after each request, bytes (GPU) */
    uint64_t first_block;   /* ca_block_size of the first tensor, bytes */
    uint64_t fifth_block;   /* keep_all: ca_block_size of the fifth tensor, bytes */
    double loop_s;          /* host clock, whole loop */
    bool oom;
} outcome;

/* One run of the loop on a fresh allocator. read_driver: cudaMemGetInfo after
 * every request (kept out of the timed runs). */
static outcome run_variant(mc_run *run, int v, bool read_driver)
{
    mc_probe p;
    mc_probe_open(&p, run->on_gpu, NULL);
    uint64_t addr[STEPS] = {0};
    outcome o = {0};
    double t0 = mc_now_s();
    for (int i = 0; i < STEPS; i++) {
        if (ca_malloc(p.a, TENSOR_BYTES, &addr[i]) != CA_OK) {
            o.oom = true;
            break;
        }
        if (i == 0) o.first_block = ca_block_size(p.a, addr[0]);
        if (i == 4 && v == KEEP_ALL) o.fifth_block = ca_block_size(p.a, addr[4]);
        if (read_driver && p.on_gpu) {
            int64_t used = mc_probe_driver_used(&p);
            if (used > o.driver_peak) o.driver_peak = used;
        }
        if (v != KEEP_ALL) CHECK(ca_free(p.a, addr[i]) == 0, "free of step %d", i);
        if (v == FREE_EACH_EMPTY) ca_empty_cache(p.a);
    }
    o.loop_s = mc_now_s() - t0;
    o.end = mc_probe_snapshot(&p);
    const char *broken = mc_probe_check(&p);
    if (broken) mc_verify_failed(run, VARIANT[v], "%s", broken);
    mc_probe_close(&p);
    return o;
}

static bool same_accounting(const mc_probe_snap *a, const mc_probe_snap *b)
{
    return a->peak_allocated == b->peak_allocated && a->allocated == b->allocated &&
           a->reserved == b->reserved && a->peak_reserved == b->peak_reserved &&
           a->segments == b->segments && a->segments_made == b->segments_made;
}

static bool near_claim(double measured_mib, double claim_mib)
{
    return fabs(measured_mib / claim_mib - 1.0) <= CLAIM_TOL;
}

/* What the rules alone predict for keep_all: r = round_size(4e6); each
 * segment of get_allocation_size(r) holds k blocks; the last one is split
 * only if what is left after it is > 1 MiB, otherwise it takes that too. */
static void explain_keep_all(mc_run *run, const outcome *keep)
{
    uint64_t r = ca_round_size(TENSOR_BYTES);
    uint64_t seg = ca_allocation_size(r);
    uint64_t k = seg / r, rem = seg - k * r;
    bool whole = rem <= CA_SMALL_SIZE; /* should_split: large remainder must be > kSmallSize */
    uint64_t full = STEPS / k, part = STEPS % k;
    uint64_t predicted = whole ? full * seg + part * r : (uint64_t)STEPS * r;
    uint64_t nseg = full + (part ? 1 : 0);
    mc_emit_finding(run,
        "Why %.2f MiB and not %.2f MiB: %llu B rounds to %llu B (multiple of %llu); below 10 MiB it "
        "takes a %llu B (%.0f MiB) segment; %llu blocks fit (%llu x %llu B), leaving %llu B, which is "
        "%s 1 MiB, so the %lluth block %s (the model gave the fifth tensor a %llu B block); %d tensors "
        "fill %llu segments: the rules predict %llu B allocated, the model reports %llu B.",
        MC_MIB(keep->end.peak_allocated), MC_MIB(STEPS * TENSOR_BYTES),
        (unsigned long long)TENSOR_BYTES, (unsigned long long)r,
        (unsigned long long)CA_MIN_BLOCK_SIZE, (unsigned long long)seg, MC_MIB(seg),
        (unsigned long long)k, (unsigned long long)k, (unsigned long long)r, (unsigned long long)rem,
        whole ? "not >" : ">", (unsigned long long)k,
        whole ? "is not split and takes the remainder whole" : "is split off it",
        (unsigned long long)keep->fifth_block, STEPS, (unsigned long long)nseg,
        (unsigned long long)predicted, (unsigned long long)keep->end.peak_allocated);
    if (predicted != keep->end.peak_allocated)
        mc_verify_failed(run, "keep_all_rounding",
                         "the size rules predict %llu B allocated, the model reports %llu B",
                         (unsigned long long)predicted,
                         (unsigned long long)keep->end.peak_allocated);
}

/* Rows of one variant: accounting from the first run (verified identical in
 * every run), driver figures and loop time as statistics over the runs. */
static void emit_variant(mc_run *run, int v, const outcome *o, int n, const double *drv_peak,
                         const double *drv_end, const double *loop_s)
{
    const char *name = VARIANT[v];
    const mc_probe_snap *e = &o[0].end;
    mc_emit_value(run, name, "", 0, "peak_allocated", "bytes", (double)e->peak_allocated,
                  "max_memory_allocated()");
    mc_emit_value(run, name, "", 0, "allocated_end", "bytes", (double)e->allocated, "");
    mc_emit_value(run, name, "", 0, "reserved_end", "bytes", (double)e->reserved, "");
    mc_emit_value(run, name, "", 0, "peak_reserved", "bytes", (double)e->peak_reserved, "");
    mc_emit_value(run, name, "", 0, "peak_requested", "bytes", (double)e->peak_requested,
                  "bytes the tensors asked for");
    mc_emit_value(run, name, "", 0, "segments_end", "count", (double)e->segments, "");
    mc_emit_value(run, name, "", 0, "segments_made", "count", (double)e->segments_made,
                  "cudaMalloc calls for segments");
    if (!run->on_gpu) return;
    mc_emit(run, name, "", 0, "driver_used_peak", "bytes", mc_stats_of(drv_peak, (size_t)n), "ok",
            "cudaMemGetInfo free drop after each request, max over the loop");
    mc_emit(run, name, "", 0, "driver_used_end", "bytes", mc_stats_of(drv_end, (size_t)n), "ok",
            "cudaMemGetInfo free drop after the loop");
    mc_emit(run, name, "", 0, "loop_time_host", "s", mc_stats_of(loop_s, (size_t)n), "ok",
            "host clock, 100 steps, runs without driver reads");
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    /* Model-only figures are exact: one run; --quick: one run on the GPU too. */
    int R = run.on_gpu && !run.opt.quick ? run.opt.repeats : 1;
    int warmup = run.on_gpu && !run.opt.quick ? run.opt.warmup : 0;

    for (int w = 0; w < warmup; w++)
        for (int v = 0; v < N_VAR; v++) run_variant(&run, v, false);

    outcome *o[N_VAR];
    double *drv_peak[N_VAR], *drv_end[N_VAR], *loop_s[N_VAR];
    for (int v = 0; v < N_VAR; v++) {
        o[v] = mc_xmalloc((size_t)R * sizeof **o);
        drv_peak[v] = mc_xmalloc((size_t)R * sizeof(double));
        drv_end[v] = mc_xmalloc((size_t)R * sizeof(double));
        loop_s[v] = mc_xmalloc((size_t)R * sizeof(double));
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < N_VAR; v++) {
            o[v][r] = run_variant(&run, v, true);
            drv_peak[v][r] = (double)o[v][r].driver_peak;
            drv_end[v][r] = (double)o[v][r].end.driver_used;
            loop_s[v][r] = run.on_gpu ? run_variant(&run, v, false).loop_s : 0.0;
            if (r > 0 && !same_accounting(&o[v][r].end, &o[v][0].end))
                mc_verify_failed(&run, VARIANT[v], "run %d gave other accounting than run 1 "
                                 "(peak allocated %llu vs %llu B)", r + 1,
                                 (unsigned long long)o[v][r].end.peak_allocated,
                                 (unsigned long long)o[v][0].end.peak_allocated);
        }

    bool oom = false;
    for (int v = 0; v < N_VAR; v++) {
        if (o[v][0].oom) {
            oom = true;
            mc_emit(&run, VARIANT[v], "", 0, "peak_allocated", "bytes", mc_stats_one(NAN), "oom",
                    "the allocator could not get a segment");
            continue;
        }
        emit_variant(&run, v, o[v], R, drv_peak[v], drv_end[v], loop_s[v]);
    }
    mc_emit_value(&run, VARIANT[KEEP_ALL], "", 0, "claimed_peak_allocated", "bytes",
                  CLAIM_KEEP_MIB * 1048576.0, "the seed's 400.00 MB (MiB)");
    mc_emit_value(&run, VARIANT[FREE_EACH_EMPTY], "", 0, "claimed_peak_allocated", "bytes",
                  CLAIM_FREE_MIB * 1048576.0, "the seed's 3.81 MB (MiB)");

    /* The seed's program as it prints (REPORT.md sets the three figures side
     * by side): unoptimized() returns keep_all's peak, optimized() the
     * largest memory_allocated() of free_each_empty_cache, its peak. */
    static const char *const program[2] = {"seed 000 program: unoptimized()", "seed 000 program: optimized()"};
    const int of[2] = {KEEP_ALL, FREE_EACH_EMPTY};
    const double printed[2] = {CLAIM_KEEP_MIB, CLAIM_FREE_MIB};
    for (int i = 0; i < 2; i++) {
        mc_emit_value(&run, program[i], "", 0, "seed_printed", "bytes", printed[i] * 1048576.0,
                      "what the seed printed, MB = MiB");
        if (!o[of[i]][0].oom)
            mc_emit_value(&run, program[i], "", 0, "seed_program", "bytes",
                          (double)o[of[i]][0].end.peak_allocated, "what the function returns");
    }

    if (oom) {
        mc_emit_verdict(&run, MC_INCONCLUSIVE, "the loop ran out of memory; no peak to compare");
        return mc_run_end(&run);
    }

    const outcome *k = &o[KEEP_ALL][0], *f = &o[FREE_EACH][0], *fe = &o[FREE_EACH_EMPTY][0];
    mc_emit_finding(&run,
        "keep_all: peak allocated %llu B = %.2f MiB = %lld segments x %.0f MiB (reserved %llu B); "
        "the tensors requested %llu B = %.2f MiB (%d x %llu B).",
        (unsigned long long)k->end.peak_allocated, MC_MIB(k->end.peak_allocated),
        (long long)k->end.segments,
        k->end.segments ? MC_MIB(k->end.reserved) / (double)k->end.segments : 0.0,
        (unsigned long long)k->end.reserved, (unsigned long long)k->end.peak_requested,
        MC_MIB(k->end.peak_requested), STEPS, (unsigned long long)TENSOR_BYTES);
    explain_keep_all(&run, k);
    mc_emit_finding(&run,
        "del alone gives the low peak: free_each peaks at %llu B = %.2f MiB and free_each_empty_cache "
        "at %llu B = %.2f MiB (one %llu B block live at a time); empty_cache changes reserved, not "
        "allocated: reserved after the loop is %llu B (%.2f MiB) with del only, %llu B with "
        "empty_cache.",
        (unsigned long long)f->end.peak_allocated, MC_MIB(f->end.peak_allocated),
        (unsigned long long)fe->end.peak_allocated, MC_MIB(fe->end.peak_allocated),
        (unsigned long long)f->first_block, (unsigned long long)f->end.reserved,
        MC_MIB(f->end.reserved), (unsigned long long)fe->end.reserved);
    if (run.on_gpu) {
        mc_stats tf = mc_stats_of(loop_s[FREE_EACH], (size_t)R);
        mc_stats tfe = mc_stats_of(loop_s[FREE_EACH_EMPTY], (size_t)R);
        mc_emit_finding(&run,
            "empty_cache's cost: %lld segments made (cudaMalloc + cudaFree each step) against %lld "
            "with del only; the loop took %.3f ms against %.3f ms (host clock, median of %d).",
            (long long)fe->end.segments_made, (long long)f->end.segments_made, tfe.median * 1e3,
            tf.median * 1e3, R);
        for (int v = 0; v < N_VAR; v++) {
            mc_stats dp = mc_stats_of(drv_peak[v], (size_t)R);
            const mc_probe_snap *e = &o[v][0].end;
            mc_emit_finding(&run,
                "driver, %s: used %.0f B (%.2f MiB) at the peak against the model's peak reserved "
                "%llu B (difference %.0f B); %.0f B after the loop against reserved %llu B.",
                VARIANT[v], dp.median, dp.median / 1048576.0, (unsigned long long)e->peak_reserved,
                dp.median - (double)e->peak_reserved,
                mc_stats_of(drv_end[v], (size_t)R).median, (unsigned long long)e->reserved);
        }
    }

    double keep_mib = MC_MIB(k->end.peak_allocated), free_mib = MC_MIB(fe->end.peak_allocated);
    bool keep_ok = near_claim(keep_mib, CLAIM_KEEP_MIB), free_ok = near_claim(free_mib, CLAIM_FREE_MIB);
    mc_verdict verdict = keep_ok && free_ok ? MC_HOLDS : (keep_ok || free_ok) ? MC_HOLDS_PARTLY
                                                                                : MC_DOES_NOT_HOLD;
    mc_emit_verdict(&run, verdict,
        "keep_all peaks at %.2f MiB (claim %.2f: %s), del + empty_cache at %.2f MiB (claim %.2f: %s); "
        "del alone already peaks at %.2f MiB, empty_cache only takes reserved from %.2f to %.2f MiB "
        "after the loop; keep_all is %.2f MiB, not %d x %.2f MiB, because each tensor is a %llu B "
        "block in %lld segments allocated in full.",
        keep_mib, CLAIM_KEEP_MIB, keep_ok ? "match" : "differs", free_mib, CLAIM_FREE_MIB,
        free_ok ? "match" : "differs", MC_MIB(f->end.peak_allocated), MC_MIB(f->end.reserved),
        MC_MIB(fe->end.reserved), keep_mib, STEPS, MC_MIB(TENSOR_BYTES),
        (unsigned long long)k->first_block, (long long)k->end.segments);

    for (int v = 0; v < N_VAR; v++) {
        free(o[v]);
        free(drv_peak[v]);
        free(drv_end[v]);
        free(loop_s[v]);
    }
    return mc_run_end(&run);
}
