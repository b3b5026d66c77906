/* c02_block_rounding: C02. What one request costs: the block the allocator
 * model hands out (allocated) and the segment it takes from the device
 * (reserved), over request sizes from 1 B to hundreds of MiB with every
 * boundary and its neighbours; on a GPU also what cudaMalloc itself charges
 * for that segment and for the bare request (cudaMemGetInfo drop / calls). */
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
    .claim = "C02",
    .key = "block_rounding",
    .title = "Block and segment sizes the caching allocator takes per request size",
    .seed_claim = "A 4-byte tensor makes the allocator take a 2 MB block from CUDA and hand out 512 "
                  "bytes; the rest stays reserved. Requests between 1 MB and 10 MB take 20 MB blocks.",
    .method = "Each request size (1 B .. 300 MiB, boundaries 512, 1 MiB, 10 MiB, 20 MiB and their "
              "neighbours) on a fresh allocator model: rounded size, block handed out (allocated), "
              "segment taken (reserved); two 4-byte tensors in a row; on a GPU the driver's used "
              "memory after the request (CUDA backend) and what cudaMalloc charges per call for the "
              "segment size and for the bare request size (cudaMemGetInfo free drop over K live "
              "allocations / K), over --repeats runs.",
    .verdict_rule = "holds if a 4-byte request gives 512 B allocated from a 2 MiB segment and every "
                    "request n with 1 MiB < n < 10 MiB takes a 20 MiB segment; holds-partly if one "
                    "half holds; does-not-hold if neither.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 3,
    .default_warmup = 0,
    .extra = NULL,
};

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)

/* The claim's numbers ("MB" as PyTorch prints it, MiB). */
#define CLAIM_TINY_REQUEST 4ULL            /* a 4-byte tensor */
#define CLAIM_TINY_ALLOCATED 512ULL        /* hands out 512 bytes */
#define CLAIM_TINY_SEGMENT (2 * MiB)       /* takes a 2 MB block */
#define CLAIM_RANGE_LO (1 * MiB)           /* requests between 1 MB ... */
#define CLAIM_RANGE_HI (10 * MiB)          /* ... and 10 MB ... */
#define CLAIM_RANGE_SEGMENT (20 * MiB)     /* ... take 20 MB blocks */

static const uint64_t SIZES[] = {
    1, 4, 511, 512, 513, 4 * KiB, 1000000, 1 * MiB - 1, 1 * MiB, 1 * MiB + 1, 2 * MiB, 4000000,
    8000000, 10000000, 10 * MiB - 512, 10 * MiB - 1, 10 * MiB, 10 * MiB + 1, 20 * MiB - 1, 20 * MiB, 20 * MiB + 1,
    25000000, 100 * MiB, 300 * MiB,
};
static const uint64_t QUICK_SIZES[] = {
    4, 513, 1 * MiB, 1 * MiB + 1, 4000000, 10 * MiB - 1, 10 * MiB + 1, 25000000,
};

/* Direct cudaMalloc charges: at most this many bytes live at once, and at
 * most this many calls per figure (bounds both memory and time). */
#define CHARGE_BUDGET (1024 * MiB)
#define CHARGE_KMAX_SEGMENT 16
#define CHARGE_KMAX_REQUEST 128

typedef struct {
    uint64_t request, rounded, rule_segment;
    uint64_t block, allocated, reserved;
    int64_t segments;
    bool oom;
} model_case;

static model_case model_one(mc_run *run, uint64_t n)
{
    model_case c = {.request = n, .rounded = ca_round_size(n)};
    c.rule_segment = ca_allocation_size(c.rounded);
    mc_probe p;
    mc_probe_open(&p, run->on_gpu, NULL);
    uint64_t addr = 0;
    if (ca_malloc(p.a, n, &addr) != CA_OK) {
        c.oom = true;
    } else {
        mc_probe_snap s = mc_probe_snapshot(&p);
        c.block = ca_block_size(p.a, addr);
        c.allocated = s.allocated;
        c.reserved = s.reserved;
        c.segments = s.segments;
    }
    const char *broken = mc_probe_check(&p);
    if (broken) mc_verify_failed(run, "sweep", "%s", broken);
    mc_probe_close(&p);
    return c;
}

/* Driver bytes in use after one request through the model on the CUDA
 * backend (cudaMemGetInfo free drop). */
static double model_driver_used(mc_run *run, uint64_t n)
{
    mc_probe p;
    mc_probe_open(&p, run->on_gpu, NULL);
    uint64_t addr = 0;
    double used = NAN;
    if (ca_malloc(p.a, n, &addr) == CA_OK) used = (double)mc_probe_driver_used(&p);
    mc_probe_close(&p);
    return used;
}

static int pick_k(uint64_t bytes, int kmax)
{
    uint64_t room = mc_driver_free_bytes() / 2;
    uint64_t cap = (room < CHARGE_BUDGET ? room : CHARGE_BUDGET) / (bytes ? bytes : 1);
    return cap < 2 ? 2 : cap > (uint64_t)kmax ? kmax : (int)cap;
}

/* What cudaMalloc charges per call for `bytes`: the drop of cudaMemGetInfo's
 * free bytes over k live allocations, / k. NaN if the device ran out. */
static double driver_charge(uint64_t bytes, int k)
{
    void **ptr = mc_xmalloc((unsigned long long)k * sizeof *ptr);
    uint64_t free0 = mc_driver_free_bytes();
    int got = 0;
    bool oom = false;
    for (; got < k; got++) {
        cudaError_t e = cudaMalloc(&ptr[got], bytes);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError(); /* clear it; an OOM is a result here */
            oom = true;
            break;
        }
        CHECK_CUDA(e);
    }
    uint64_t free1 = mc_driver_free_bytes();
    for (int i = 0; i < got; i++) CHECK_CUDA(cudaFree(ptr[i]));
    free(ptr);
    return oom ? NAN : ((double)free0 - (double)free1) / k;
}

/* Repeated driver figures of one size: stats over R runs; status oom when
 * any was. Returns the median (NaN after an oom). */
static double emit_driver(mc_run *run, const char *variant, uint64_t n, const char *metric,
                          const double *x, int R, const char *note)
{
    bool oom = false;
    for (int r = 0; r < R; r++) oom |= isnan(x[r]);
    mc_stats st = oom ? mc_stats_one(NAN) : mc_stats_of(x, (size_t)R);
    mc_emit(run, variant, "request_bytes", (double)n, metric, "bytes", st, oom ? "oom" : "ok", note);
    return st.median;
}

/* What the driver said over the sweep (GPU). */
typedef struct {
    int sizes;              /* sizes measured */
    int seg_exact;          /* cudaMalloc(segment) charged exactly the segment size */
    double model_diff_max;  /* max |driver used - model reserved|, bytes */
    double tiny_charge;     /* per bare cudaMalloc(4 B), bytes */
    int tiny_k;
} driver_summary;

static void emit_model(mc_run *run, const model_case *c)
{
    double n = (double)c->request;
    if (c->oom) {
        mc_emit(run, "model", "request_bytes", n, "allocated_bytes", "bytes", mc_stats_one(NAN),
                "oom", "");
        return;
    }
    char note[160];
    snprintf(note, sizeof note, "%s pool; block %llu B", c->rounded <= CA_SMALL_SIZE ? "small" : "large",
             (unsigned long long)c->block);
    mc_emit_value(run, "model", "request_bytes", n, "rounded_bytes", "bytes", (double)c->rounded,
                  "round_size");
    mc_emit_value(run, "model", "request_bytes", n, "segment_rule_bytes", "bytes",
                  (double)c->rule_segment, "get_allocation_size");
    mc_emit_value(run, "model", "request_bytes", n, "allocated_bytes", "bytes",
                  (double)c->allocated, note);
    mc_emit_value(run, "model", "request_bytes", n, "reserved_bytes", "bytes", (double)c->reserved,
                  "");
    mc_emit_value(run, "model", "request_bytes", n, "segments", "count", (double)c->segments, "");
}

/* The rule, stated from ca_allocation_size alone: scan every rounded size
 * (multiples of 512) up to 12 MiB and print each range of requests that
 * gets the same segment size. Sets [*lo20, *hi20] to the first range that
 * gets the claim's segment size (0, 0 if none). */
static void emit_rule_ranges(mc_run *run, uint64_t *lo20, uint64_t *hi20)
{
    *lo20 = *hi20 = 0;
    char text[1024];
    size_t len = 0;
    uint64_t lo = 1, seg = ca_allocation_size(ca_round_size(1));
    for (uint64_t r = CA_MIN_BLOCK_SIZE;; r += CA_MIN_BLOCK_SIZE) {
        bool end = r > 12 * MiB;
        uint64_t s = end ? 0 : ca_allocation_size(r);
        if (s != seg) {
            uint64_t hi = r - CA_MIN_BLOCK_SIZE; /* the largest request rounded below r */
            len += (size_t)snprintf(text + len, sizeof text - len, "%s[%llu, %llu] B -> %llu B (%.0f MiB)",
                                    len ? "; " : "", (unsigned long long)lo, (unsigned long long)hi,
                                    (unsigned long long)seg, MC_MIB(seg));
            if (seg == CLAIM_RANGE_SEGMENT && *hi20 == 0) {
                *lo20 = lo;
                *hi20 = hi;
            }
            if (end || len >= sizeof text) break;
            lo = hi + 1;
            seg = s;
        }
    }
    mc_emit_finding(run, "The segment a request takes on an empty cache (round_size, then "
                    "get_allocation_size): %s; above 10 MiB the rounded size rounded up to 2 MiB.", text);
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const uint64_t *sizes = run.opt.quick ? QUICK_SIZES : SIZES;
    int nsizes = run.opt.quick ? (int)(sizeof QUICK_SIZES / sizeof *QUICK_SIZES)
                               : (int)(sizeof SIZES / sizeof *SIZES);
    int R = run.on_gpu && !run.opt.quick ? run.opt.repeats : 1;
    double *x = mc_xmalloc((size_t)R * sizeof *x);

    for (int w = 0; w < run.opt.warmup && run.on_gpu; w++)
        for (int i = 0; i < nsizes; i++) (void)model_driver_used(&run, sizes[i]);

    /* ------------------------------------------------------------ sweep */
    model_case tiny = {0};
    int in_range = 0, range_held = 0;
    char misses[512] = "";
    size_t mlen = 0;
    driver_summary ds = {.tiny_charge = NAN};
    for (int i = 0; i < nsizes; i++) {
        uint64_t n = sizes[i];
        model_case c = model_one(&run, n);
        emit_model(&run, &c);
        if (n == CLAIM_TINY_REQUEST) tiny = c;
        if (n > CLAIM_RANGE_LO && n < CLAIM_RANGE_HI) {
            in_range++;
            if (!c.oom && c.reserved == CLAIM_RANGE_SEGMENT && c.segments == 1) range_held++;
            else if (mlen < sizeof misses - 1)
                mlen += (size_t)snprintf(misses + mlen, sizeof misses - mlen,
                                         "%s%llu B -> %llu B segment", mlen ? ", " : "",
                                         (unsigned long long)n, (unsigned long long)c.reserved);
        }
        if (!c.oom && c.block > c.rounded)
            mc_emit_finding(&run, "%llu B rounds to %llu B, but the %llu B segment's remainder of %llu B "
                            "is not > 1 MiB, so the whole %llu B block is handed out and counted as "
                            "allocated.", (unsigned long long)n, (unsigned long long)c.rounded,
                            (unsigned long long)c.reserved, (unsigned long long)(c.block - c.rounded),
                            (unsigned long long)c.block);
        if (!run.on_gpu) continue;

        for (int r = 0; r < R; r++) x[r] = model_driver_used(&run, n);
        double used = emit_driver(&run, "model", n, "driver_used_bytes", x, R,
                                  "cudaMemGetInfo free drop with the request live (CUDA backend)");
        uint64_t seg = c.rule_segment;
        int k = pick_k(seg, CHARGE_KMAX_SEGMENT);
        for (int r = 0; r < R; r++) x[r] = driver_charge(seg, k);
        char note[160];
        snprintf(note, sizeof note, "cudaMalloc(%llu B) x %d: free drop / %d",
                 (unsigned long long)seg, k, k);
        double seg_charge = emit_driver(&run, "cudaMalloc_segment", n, "driver_bytes_per_call", x,
                                        R, note);
        k = pick_k(n, CHARGE_KMAX_REQUEST);
        for (int r = 0; r < R; r++) x[r] = driver_charge(n, k);
        snprintf(note, sizeof note, "cudaMalloc(%llu B) x %d: free drop / %d", (unsigned long long)n,
                 k, k);
        double bare = emit_driver(&run, "cudaMalloc_request", n, "driver_bytes_per_call", x, R, note);
        ds.sizes++;
        ds.seg_exact += seg_charge == (double)seg;
        if (!c.oom && fabs(used - (double)c.reserved) > ds.model_diff_max)
            ds.model_diff_max = fabs(used - (double)c.reserved);
        if (n == CLAIM_TINY_REQUEST) {
            ds.tiny_charge = bare;
            ds.tiny_k = k;
        }
    }

    /* --------------------------------------- a second tiny tensor */
    mc_probe p;
    mc_probe_open(&p, run.on_gpu, NULL);
    uint64_t a1 = 0, a2 = 0;
    CHECK(ca_malloc(p.a, CLAIM_TINY_REQUEST, &a1) == CA_OK, "first 4-byte tensor");
    mc_probe_snap s1 = mc_probe_snapshot(&p);
    CHECK(ca_malloc(p.a, CLAIM_TINY_REQUEST, &a2) == CA_OK, "second 4-byte tensor");
    mc_probe_snap s2 = mc_probe_snapshot(&p);
    const char *broken = mc_probe_check(&p);
    if (broken) mc_verify_failed(&run, "two_small", "%s", broken);
    mc_probe_close(&p);
    mc_emit_value(&run, "two_small", "tensors", 1, "allocated_bytes", "bytes", (double)s1.allocated, "");
    mc_emit_value(&run, "two_small", "tensors", 1, "reserved_bytes", "bytes", (double)s1.reserved, "");
    mc_emit_value(&run, "two_small", "tensors", 2, "allocated_bytes", "bytes", (double)s2.allocated, "");
    mc_emit_value(&run, "two_small", "tensors", 2, "reserved_bytes", "bytes", (double)s2.reserved, "");
    mc_emit_value(&run, "two_small", "tensors", 2, "segments", "count", (double)s2.segments, "");
    if (run.on_gpu)
        mc_emit_value(&run, "two_small", "tensors", 2, "driver_used_bytes", "bytes",
                      (double)s2.driver_used, "cudaMemGetInfo free drop, both live");
    bool shared = s2.segments == s1.segments && s2.reserved == s1.reserved;
    mc_emit_finding(&run, "A second 4-byte tensor %s: allocated "
                    "%llu -> %llu B, reserved %llu -> %llu B, %lld segment(s); the second block sits "
                    "%lld B after the first.",
                    shared ? "is carved from the first one's segment" : "takes a segment of its own",
                    (unsigned long long)s1.allocated,
                    (unsigned long long)s2.allocated, (unsigned long long)s1.reserved,
                    (unsigned long long)s2.reserved, (long long)s2.segments,
                    (long long)(a2 - a1));
    uint64_t lo20, hi20;
    emit_rule_ranges(&run, &lo20, &hi20);
    if (run.on_gpu)
        mc_emit_finding(&run, "Driver: cudaMalloc of the segment size was charged exactly that size "
                        "(cudaMemGetInfo free drop / calls) for %d of %d sizes; the driver's used "
                        "memory with one request live through the model differed from the model's "
                        "reserved by at most %.0f B; a bare cudaMalloc(4 B) cost %.0f B per call "
                        "(free drop over %d calls / %d).",
                        ds.seg_exact, ds.sizes, ds.model_diff_max, ds.tiny_charge, ds.tiny_k,
                        ds.tiny_k);

    /* ------------------------------------------------------------ verdict */
    bool tiny_held = !tiny.oom && tiny.allocated == CLAIM_TINY_ALLOCATED &&
                     tiny.reserved == CLAIM_TINY_SEGMENT && tiny.segments == 1;
    bool range_all = in_range > 0 && range_held == in_range;
    mc_verdict v = tiny_held && range_all ? MC_HOLDS : (tiny_held || range_all) ? MC_HOLDS_PARTLY
                                                                                 : MC_DOES_NOT_HOLD;
    mc_emit_verdict(&run, v,
        "4 B: %llu B allocated from a %llu B segment (claim %llu B from %.0f MiB: %s); requests "
        "between %.0f and %.0f MiB: %d of %d swept sizes took a %.0f MiB segment%s%s%s; the rule "
        "gives it to requests of %llu to %llu B.",
        (unsigned long long)tiny.allocated, (unsigned long long)tiny.reserved,
        (unsigned long long)CLAIM_TINY_ALLOCATED, MC_MIB(CLAIM_TINY_SEGMENT),
        tiny_held ? "holds" : "differs", MC_MIB(CLAIM_RANGE_LO), MC_MIB(CLAIM_RANGE_HI), range_held,
        in_range, MC_MIB(CLAIM_RANGE_SEGMENT), mlen ? " (not: " : "", misses, mlen ? ")" : "",
        (unsigned long long)lo20, (unsigned long long)hi20);
    free(x);
    return mc_run_end(&run);
}
