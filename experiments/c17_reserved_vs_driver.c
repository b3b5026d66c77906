/* C17: reserved = allocated + cached free; the GPU holds reserved + the
 * context; nvidia-smi shows reserved, not allocated.
 *
 * A fixed workload runs through the allocator model (CUDA backend; host
 * backend with --model-only). At 15 checkpoints it records the model's
 * allocated, reserved and cached free bytes, the driver's used memory
 * (cudaMemGetInfo total - free, device-wide) and nvidia-smi's figure for this
 * process, and compares them with the context baseline taken before the first
 * allocation. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc/alloc_cuda.h"
#include "alloc/alloc_host.h"
#include "alloc/alloc_model.h"
#include "check_cuda.h"
#include "clock.h"
#include "experiment.h"
#include "gpu.h"

static const mc_experiment EXP = {
    .claim = "C17",
    .key = "reserved_vs_driver",
    .title = "Allocated, reserved, cached free, the driver's used memory and nvidia-smi over a workload",
    .seed_claim = "Reserved = allocated + cached free; total used on the GPU = reserved + context; "
                  "nvidia-smi shows reserved, not allocated.",
    .method = "A fixed sequence through the allocator model on the CUDA backend (cudaMalloc per "
              "segment): 100 x 4,000,000 B, 8 x 64 MiB, 200 x 40 KiB, frees, 4 x (100 MiB + 1 B), "
              "30 x 4,000,000 B, empty_cache, 1 GiB, ... (15 checkpoints, about 2.3 GiB at the peak). "
              "At each: the model's allocated, reserved, requested and cached free bytes "
              "(ca_cached_free_bytes), cudaMemGetInfo total - free, and nvidia-smi's "
              "--query-compute-apps used_memory for this pid at ten checkpoints (--quick: three), "
              "read from NVML (nvidia-smi's source, bytes; nvidia-smi itself, whole MiB, where "
              "NVML cannot be loaded). "
              "Baselines: both device figures before the first allocation (the context). Verified: "
              "the model's invariants at every checkpoint. --model-only: the host backend, the "
              "model's part only.",
    .verdict_rule = "Three parts. (1) reserved == allocated + cached free, exactly, at every "
                    "checkpoint. (2) |driver used - baseline - reserved| <= 2 MiB x (segments + 1) at "
                    "every checkpoint. (3) nvidia-smi - its context figure is within that tolerance "
                    "+ 1 MiB (nvidia-smi reports whole MiB) of reserved at every sampled checkpoint, and "
                    "closer to reserved than to allocated where they differ by more than twice the "
                    "tolerance (at least one such checkpoint). holds if all three hold; holds-partly "
                    "if at least one holds (a part that cannot be measured, nvidia-smi hiding the pid "
                    "or --model-only, counts as not shown); does-not-hold if none holds.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 1,
    .default_warmup = 0,
    .extra = NULL,
};

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define HOST_CAPACITY (80 * GIB)  /* the simulated device of --model-only */
#define NEEDS (3 * GIB)           /* free device memory the workload needs */
#define MAXCP 16
#define T4 4000000ull             /* torch.randn(1000, 1000) in fp32, bytes */

typedef struct {
    const char *label;
    int64_t allocated, reserved, cached_free, requested, segments;
    long long driver_used;  /* total - free, bytes; -1 without a GPU */
    long long nvsmi;        /* this process, bytes; -1 unknown or not sampled */
    int sampled;            /* nvidia-smi asked at this checkpoint */
    int oom;                /* allocations refused since the previous checkpoint */
} checkpoint;

typedef struct {
    mc_run *run;
    ca_allocator *a;
    ca_host_device *host;   /* --model-only */
    checkpoint cp[MAXCP];
    int ncp, oom;
} work;

/* ----------------------------------------------------------- workload */

static void take(work *w, uint64_t bytes, uint64_t *addr, int n)
{
    for (int i = 0; i < n; i++)
        if (ca_malloc(w->a, bytes, &addr[i]) != CA_OK) { addr[i] = 0; w->oom++; }
}

/* Frees addr[first], addr[first + step], ... below n; ca_free(0) is a no-op. */
static void give(work *w, uint64_t *addr, int first, int step, int n)
{
    for (int i = first; i < n; i += step) {
        CHECK(ca_free(w->a, addr[i]) == 0, "freeing a live block");
        addr[i] = 0;
    }
}

static void mark(work *w, const char *label, int sample_nvsmi)
{
    CHECK(w->ncp < MAXCP, "too many checkpoints");
    checkpoint *c = &w->cp[w->ncp++];
    const ca_stats *st = ca_get_stats(w->a);
    char err[256];
    c->label = label;
    c->allocated = st->allocated_bytes.current;
    c->reserved = st->reserved_bytes.current;
    c->requested = st->requested_bytes.current;
    c->segments = st->segment.current;
    c->cached_free = (int64_t)ca_cached_free_bytes(w->a);
    c->oom = w->oom;
    w->oom = 0;
    if (ca_check_invariants(w->a, err, sizeof err) != 0)
        mc_verify_failed(w->run, "model", "at checkpoint %d (%s): %s", w->ncp - 1, label, err);
    c->driver_used = c->nvsmi = -1;
    if (w->host) {
        if ((int64_t)ca_host_used(w->host) != c->reserved)
            mc_verify_failed(w->run, "model", "at checkpoint %d the host backend holds %llu bytes, "
                             "reserved is %lld", w->ncp - 1,
                             (unsigned long long)ca_host_used(w->host), (long long)c->reserved);
        return;
    }
    size_t fr = 0, total = 0;
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemGetInfo(&fr, &total));
    c->driver_used = (long long)(total - fr);
    c->sampled = sample_nvsmi;
    if (sample_nvsmi) {
        double t0 = mc_now_s();
        c->nvsmi = mc_nvsmi_process_used_bytes((int)getpid());
        mc_log(w->run, "checkpoint %d: the process figure (NVML or nvidia-smi) took %.3f s", w->ncp - 1,
               mc_now_s() - t0);
    }
}

/* nvidia-smi (the fallback where NVML cannot be loaded) takes a good fraction
 * of a second per call, so the process figure is asked at ten checkpoints
 * (three with --quick), among them those where reserved and allocated differ
 * by hundreds of MiB. */
enum { NEVER, FULL, ALWAYS };

static void workload(work *w, int quick)
{
    static uint64_t t4[130], b64[8], s40[200], c100[4], g1;
    int q = quick ? 1 : 0;
#define AT(label, when) mark(w, (label), (when) == ALWAYS || ((when) == FULL && !q))
    AT("before the first allocation (context only)", ALWAYS);
    take(w, T4, t4, 100);
    AT("100 x 4,000,000 B (1000x1000 fp32)", FULL);
    take(w, 64 * MIB, b64, 8);
    AT("+ 8 x 64 MiB", FULL);
    take(w, 40 * 1024, s40, 200);
    AT("+ 200 x 40 KiB (small pool)", NEVER);
    give(w, t4, 0, 2, 100);
    AT("freed every other 4,000,000 B tensor", FULL);
    give(w, b64, 0, 1, 8);
    AT("freed the 64 MiB tensors", ALWAYS);
    take(w, 100 * MIB + 1, c100, 4);
    AT("+ 4 x (100 MiB + 1 B)", NEVER);
    take(w, T4, t4 + 100, 30);
    AT("+ 30 x 4,000,000 B (into the freed slots)", NEVER);
    ca_empty_cache(w->a);
    AT("empty_cache", FULL);
    give(w, s40, 0, 1, 200);
    AT("freed the 40 KiB tensors", NEVER);
    take(w, GIB, &g1, 1);
    AT("+ 1 GiB", FULL);
    give(w, t4, 0, 1, 130);
    AT("freed every 4,000,000 B tensor", FULL);
    ca_empty_cache(w->a);
    AT("empty_cache", NEVER);
    give(w, c100, 0, 1, 4);
    give(w, &g1, 0, 1, 1);
    AT("freed the 100 MiB + 1 B and 1 GiB tensors", FULL);
    ca_empty_cache(w->a);
    AT("empty_cache", ALWAYS);
#undef AT
}

/* --------------------------------------------------------------- main */

static int64_t tol_of(const checkpoint *c) { return (int64_t)(2 * MIB) * (c->segments + 1); }
static double mib(double b) { return b / (double)MIB; }
static long long absll(long long x) { return x < 0 ? -x : x; }

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    work w;
    memset(&w, 0, sizeof w);
    w.run = &run;
    ca_backend be;
    if (run.on_gpu) {
        size_t fr = 0, total = 0;
        CHECK_CUDA(cudaMemGetInfo(&fr, &total));
        if (fr < NEEDS)
            mc_run_waive(&run, "the workload needs %llu bytes free, the GPU has %llu",
                         (unsigned long long)NEEDS, (unsigned long long)fr);
        be = ca_cuda_backend();
    } else {
        w.host = ca_host_create(HOST_CAPACITY);
        CHECK(w.host != NULL, "ca_host_create");
        be = ca_host_backend(w.host);
    }
    w.a = ca_create(NULL, be);
    CHECK(w.a != NULL, "ca_create refused the default configuration");
    workload(&w, run.opt.quick);

    /* ---- checks ---- */
    const checkpoint *c0 = &w.cp[0];
    int ident = 0, drv = 0, smi_known = 0, smi_track = 0, smi_discr = 0, smi_closer = 0, ooms = 0;
    long long worst_drv = 0, worst_smi = 0;
    int k_gap = 0, k_smi = -1, asked = 0;
    for (int k = 0; k < w.ncp; k++) {
        const checkpoint *c = &w.cp[k];
        ooms += c->oom;
        asked += c->sampled;
        ident += c->reserved == c->allocated + c->cached_free;
        if (c->reserved - c->allocated > w.cp[k_gap].reserved - w.cp[k_gap].allocated) k_gap = k;
        if (!run.on_gpu) continue;
        long long d = c->driver_used - c0->driver_used - c->reserved;
        drv += absll(d) <= tol_of(c);
        if (absll(d) > absll(worst_drv)) worst_drv = d;
        if (k == 0 || c->nvsmi < 0 || c0->nvsmi < 0) continue;
        long long delta = c->nvsmi - c0->nvsmi, e = delta - c->reserved;
        long long tol = tol_of(c) + (long long)MIB;
        smi_known++;
        smi_track += absll(e) <= tol;
        if (absll(e) > absll(worst_smi)) worst_smi = e;
        if (c->reserved - c->allocated > 2 * tol) {
            smi_discr++;
            int closer = absll(e) < absll(delta - c->allocated);
            smi_closer += closer;
            if (k_smi < 0 || c->reserved - c->allocated > w.cp[k_smi].reserved - w.cp[k_smi].allocated)
                k_smi = k;
        }
    }

    /* ---- rows ---- */
    for (int k = 0; k < w.ncp; k++) {
        const checkpoint *c = &w.cp[k];
        char note[256];
        snprintf(note, sizeof note, "%s%s", c->label, c->oom ? "; some allocations were refused (oom)" : "");
        mc_emit_value(&run, "model", "checkpoint", k, "allocated_bytes", "bytes", (double)c->allocated, note);
        mc_emit_value(&run, "model", "checkpoint", k, "reserved_bytes", "bytes", (double)c->reserved, note);
        mc_emit_value(&run, "model", "checkpoint", k, "cached_free_bytes", "bytes", (double)c->cached_free, note);
        mc_emit_value(&run, "model", "checkpoint", k, "requested_bytes", "bytes", (double)c->requested, note);
        mc_emit_value(&run, "model", "checkpoint", k, "segments", "count", (double)c->segments, note);
        mc_emit_value(&run, "model", "checkpoint", k, "reserved_minus_allocated_minus_free", "bytes",
                      (double)(c->reserved - c->allocated - c->cached_free), note);
        if (!run.on_gpu) continue;
        mc_emit_value(&run, "driver", "checkpoint", k, "used_bytes", "bytes", (double)c->driver_used,
                      "cudaMemGetInfo total - free, whole device");
        mc_emit_value(&run, "driver", "checkpoint", k, "used_minus_baseline_bytes", "bytes",
                      (double)(c->driver_used - c0->driver_used), note);
        mc_emit_value(&run, "driver", "checkpoint", k, "minus_reserved_bytes", "bytes",
                      (double)(c->driver_used - c0->driver_used - c->reserved), note);
        if (c->nvsmi < 0) continue; /* not asked here, or no figure: a finding says which */
        mc_emit_value(&run, "nvidia-smi", "checkpoint", k, "process_bytes", "bytes", (double)c->nvsmi,
                      "--query-compute-apps used_memory for this pid (NVML, bytes; nvidia-smi, whole "
                      "MiB, where NVML cannot be loaded)");
        if (c0->nvsmi >= 0) {
            mc_emit_value(&run, "nvidia-smi", "checkpoint", k, "process_minus_context_bytes", "bytes",
                          (double)(c->nvsmi - c0->nvsmi), note);
            mc_emit_value(&run, "nvidia-smi", "checkpoint", k, "minus_reserved_bytes", "bytes",
                          (double)(c->nvsmi - c0->nvsmi - c->reserved), note);
        }
    }

    /* ---- findings ---- */
    const checkpoint *g = &w.cp[k_gap], *c1 = &w.cp[1];
    mc_emit_finding(&run, "reserved == allocated + cached free at %d of %d checkpoints. The widest gap: "
                    "checkpoint %d (%s), allocated %.1f MiB + cached free %.1f MiB = reserved %.1f MiB "
                    "in %lld segments.", ident, w.ncp, k_gap, g->label, mib(g->allocated),
                    mib(g->cached_free), mib(g->reserved), (long long)g->segments);
    uint64_t blk = ca_round_size(T4), seg = ca_allocation_size(blk), per = seg / blk;
    uint64_t rest = seg - per * blk;
    mc_emit_finding(&run, "allocated counts blocks, not requests: after checkpoint 1 the tensors asked for "
                    "%.1f MiB, allocated is %.1f MiB, reserved %.1f MiB. Each 4,000,000 B request takes a "
                    "%llu B block from a %.0f MiB segment; %llu fit, and the %llu B left over %s.",
                    mib(c1->requested), mib(c1->allocated), mib(c1->reserved), (unsigned long long)blk,
                    mib((double)seg), (unsigned long long)per, (unsigned long long)rest,
                    rest <= CA_SMALL_SIZE ? "goes with the last one (a remainder is split off only "
                    "above 1 MiB)" : "stays cached as a free block");
    if (ooms)
        mc_emit_finding(&run, "%d allocations of the workload were refused (out of memory): the "
                        "figures after them describe a smaller workload.", ooms);
    if (!run.on_gpu) {
        mc_emit_finding(&run, "--model-only: the host backend; the driver's and nvidia-smi's figures "
                        "were not measured.");
    } else {
        mc_emit_finding(&run, "Before the first allocation the device had %.1f MiB in use (this context, "
                        "the driver's own reservation and any other process). After that, driver used - "
                        "baseline matched reserved within 2 MiB x (segments + 1) at %d of %d checkpoints; "
                        "the largest difference was %lld bytes.", mib(c0->driver_used), drv, w.ncp,
                        worst_drv);
        if (c0->nvsmi < 0 || smi_known == 0)
            mc_emit_finding(&run, "nvidia-smi gave no usable figure for this process (pid %d) at the %d "
                            "checkpoints it was asked (one before the first allocation is needed): "
                            "missing, or a container hides host pids; the nvidia-smi part is not "
                            "measured.", (int)getpid(), asked);
        else if (k_smi >= 0) {
            const checkpoint *s = &w.cp[k_smi];
            mc_emit_finding(&run, "nvidia-smi charged this process %.0f MiB before any tensor (the "
                            "context). At checkpoint %d (%s) it showed %.0f MiB: context + reserved = "
                            "%.0f MiB, context + allocated = %.0f MiB. It tracked reserved at %d of %d "
                            "sampled checkpoints (largest difference %lld bytes).", mib(c0->nvsmi), k_smi,
                            s->label, mib(s->nvsmi), mib(c0->nvsmi + s->reserved),
                            mib(c0->nvsmi + s->allocated), smi_track, smi_known, worst_smi);
        } else {
            mc_emit_finding(&run, "nvidia-smi charged this process %.0f MiB before any tensor and tracked "
                            "context + reserved at %d of %d sampled checkpoints, but at none of them did "
                            "reserved and allocated differ enough to tell which one it shows.",
                            mib(c0->nvsmi), smi_track, smi_known);
        }
    }

    /* ---- verdict ---- */
    int p1 = ident == w.ncp;
    int p2 = run.on_gpu && drv == w.ncp;
    int p3 = run.on_gpu && smi_known > 0 && smi_track == smi_known && smi_discr > 0 &&
             smi_closer == smi_discr;
    int held = p1 + p2 + p3;
    mc_verdict v = held == 3 ? MC_HOLDS : held > 0 ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    char p2s[96], p3s[160];
    if (run.on_gpu) {
        snprintf(p2s, sizeof p2s, "%s (%d of %d checkpoints; worst %lld bytes)", p2 ? "holds" : "fails",
                 drv, w.ncp, worst_drv);
        if (smi_known == 0) snprintf(p3s, sizeof p3s, "not measured (nvidia-smi lists no figure for this pid)");
        else snprintf(p3s, sizeof p3s, "%s (tracked reserved at %d of %d sampled checkpoints, closer to "
                      "reserved than allocated at %d of %d that tell them apart)", p3 ? "holds" : "fails",
                      smi_track, smi_known, smi_closer, smi_discr);
    } else {
        snprintf(p2s, sizeof p2s, "not measured (--model-only)");
        snprintf(p3s, sizeof p3s, "not measured (--model-only)");
    }
    mc_emit_verdict(&run, v, "(1) reserved == allocated + cached free: %s (%d of %d checkpoints); "
                    "(2) driver used = context baseline + reserved: %s; (3) nvidia-smi shows context + "
                    "reserved, not allocated: %s", p1 ? "holds" : "fails", ident, w.ncp, p2s, p3s);

    ca_destroy(w.a);
    if (w.host) ca_host_destroy(w.host);
    return mc_run_end(&run);
}
