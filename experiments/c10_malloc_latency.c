/* C10: does cudaMalloc cost about 1 ms, and is that why a caching allocator
 * exists?
 *
 * Host latency (monotonic clock; these are API calls, no events) of
 * cudaMalloc and of cudaFree, each call timed on its own, over sizes from
 * 512 B to 16 GiB; of a cached hit in the allocator model over the CUDA
 * backend (ca_malloc / ca_free served from blocks the cache already holds);
 * and of cudaMallocAsync / cudaFreeAsync from the device's default memory
 * pool told to keep its memory. Also: the first cudaMalloc of the process,
 * and cudaMalloc / cudaFree while a kernel runs (does the call wait for the
 * device?). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_cuda.h"
#include "alloc/alloc_model.h"
#include "check_cuda.h"
#include "clock.h"
#include "experiment.h"
#include "gate.h"

static const mc_experiment EXP = {
    .claim = "C10",
    .key = "malloc_latency",
    .title = "cudaMalloc/cudaFree latency over sizes vs a caching allocator's hit and cudaMallocAsync",
    .seed_claim = "cudaMalloc costs about 1 ms, which is why a caching allocator exists.",
    .method = "Host monotonic clock around each call. cudaMalloc then cudaFree of a fresh block, each "
              "timed alone, at 512 B, 64 KiB, 2 MiB, 20 MiB, 256 MiB, 1 GiB, 4 GiB, 16 GiB (--quick: "
              "to 256 MiB; at most 4 repeats and 1 warm-up from 1 GiB; a size is an `oom` row when "
              "cudaMemGetInfo leaves less than 256 MiB beside it). The first cudaMalloc of the process "
              "is reported apart. Cached hit: the allocator model on the CUDA backend holds K freed "
              "blocks of the size (K = 1 GiB / size, 1..256); K ca_malloc then K ca_free are timed as "
              "two batches, per op. cudaMallocAsync/cudaFreeAsync on a stream from the default pool "
              "with release threshold UINT64_MAX: each host call, and the round trip with "
              "cudaStreamSynchronize. cudaMalloc and cudaFree of 2 MiB while a 5 ms kernel runs. "
              "Verified: pointers non-null and 256-B aligned, device free memory drops by the size "
              "(>= 256 MiB), cached hits ask the device for nothing, the pool keeps its memory.",
    .verdict_rule = "T = median over sizes >= 2 MiB of the per-size median cudaMalloc latency; H = "
                    "median over the same sizes of cudaMalloc / cached-hit ca_malloc latency. holds "
                    "if 0.3 ms <= T <= 3 ms (about 1 ms, within ~3x) and H >= 10; holds-partly if only "
                    "one of the two (typically: cudaMalloc is >= 10x a cached hit, so the reason for "
                    "the cache stands, but it does not cost about 1 ms); does-not-hold if neither; "
                    "inconclusive if no size >= 2 MiB could be allocated.",
    .flags = 0,
    .default_repeats = 10,
    .default_warmup = 2,
    .extra = NULL,
};

#define KIB (1ull << 10)
#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define HEADROOM (256 * MIB)   /* left free beside each allocation */
#define BIG_REPEATS 4          /* at >= 1 GiB */
#define HIT_BYTES GIB          /* device memory the cached-hit test may hold */
#define HIT_MAX_K 256          /* blocks per cached-hit batch */
#define HIT_MAX_SIZE (256 * MIB)
#define VERDICT_MIN (2 * MIB)
#define VERIFY_MIN (256 * MIB) /* free memory must drop by the size from here */
#define BUSY_S 0.005           /* the kernel in flight, seconds */
#define BUSY_SIZE (2 * MIB)

static const uint64_t SIZES[] = {512, 64 * KIB, 2 * MIB, 20 * MIB, 256 * MIB, GIB, 4 * GIB, 16 * GIB};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))
#define QUICK_NSIZES 5

enum { MALLOC, FREE, AMALLOC, AFREE, AROUND, HIT_MALLOC, HIT_FREE, NMETH };
static const char *const METH[NMETH] = {
    "cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync", "cudaMallocAsync+cudaFreeAsync+sync",
    "ca_malloc_cached", "ca_free_cached"};

static mc_stats lat[NMETH][NSIZES];
static const char *status[NMETH][NSIZES]; /* NULL: not measured */

/* ------------------------------------------------------------ helpers */

static const char *size_str(uint64_t b, char *buf, size_t len)
{
    if (b >= GIB && b % GIB == 0) snprintf(buf, len, "%llu GiB", (unsigned long long)(b >> 30));
    else if (b >= MIB && b % MIB == 0) snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
    else if (b >= KIB && b % KIB == 0) snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
    else snprintf(buf, len, "%llu B", (unsigned long long)b);
    return buf;
}

/* Seconds in the unit that reads best. */
static const char *time_str(double s, char *buf, size_t len)
{
    if (s >= 1e-3) snprintf(buf, len, "%.2f ms", s * 1e3);
    else if (s >= 1e-6) snprintf(buf, len, "%.1f us", s * 1e6);
    else snprintf(buf, len, "%.0f ns", s * 1e9);
    return buf;
}


static uint64_t free_bytes(void)
{
    size_t fr = 0, total = 0;
    CHECK_CUDA(cudaMemGetInfo(&fr, &total));
    return fr;
}

static void check_ptr(mc_run *run, const char *what, const void *p, uint64_t bytes)
{
    if (!p || ((uintptr_t)p & 255u) != 0)
        mc_verify_failed(run, what, "%s of %llu bytes returned %p (null or not 256-B aligned)", what,
                         (unsigned long long)bytes, p);
}

/* "512 B: 3.1 us; 64 KiB: ..." for the measured sizes of method m. */
static void series_str(int m, int n, char *buf, size_t len)
{
    char sz[32], t[32];
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++) {
        if (!status[m][i] || strcmp(status[m][i], "ok") != 0) continue;
        at += (size_t)snprintf(buf + at, len - at, "%s%s %s", at ? ", " : "",
                               size_str(SIZES[i], sz, sizeof sz), time_str(lat[m][i].median, t, sizeof t));
    }
}

static int ok(int m, int i) { return status[m][i] && strcmp(status[m][i], "ok") == 0; }

/* ------------------------------------------------------- measurements */

/* cudaMalloc / cudaFree of a fresh block, each call timed alone. */
static void plain(mc_run *run, int i, int reps, int warm, double *xm, double *xf)
{
    uint64_t bytes = SIZES[i];
    void *p = NULL;
    /* Untimed: is the memory real? The driver sub-allocates small blocks
     * from chunks it already holds, and may keep freed chunks a while, so
     * only sizes >= VERIFY_MIN must show. */
    uint64_t before = free_bytes();
    if (!CUDA_OK_OR_OOM(cudaMalloc(&p, bytes))) { status[MALLOC][i] = status[FREE][i] = "oom"; return; }
    uint64_t after = free_bytes();
    check_ptr(run, "cudaMalloc", p, bytes);
    if (bytes >= VERIFY_MIN && before - after < bytes)
        mc_verify_failed(run, "cudaMalloc", "free device memory fell by %llu bytes for a %llu-byte "
                         "cudaMalloc", (unsigned long long)(before - after), (unsigned long long)bytes);
    CHECK_CUDA(cudaFree(p));
    for (int r = -warm; r < reps; r++) {
        double t0 = mc_now_s();
        cudaError_t e = cudaMalloc(&p, bytes);
        double t1 = mc_now_s();
        if (!CUDA_OK_OR_OOM(e)) { status[MALLOC][i] = status[FREE][i] = "oom"; return; }
        CHECK_CUDA(cudaFree(p));
        double t2 = mc_now_s();
        check_ptr(run, "cudaMalloc", p, bytes);
        if (r >= 0) { xm[r] = t1 - t0; xf[r] = t2 - t1; }
    }
    lat[MALLOC][i] = mc_stats_of(xm, (size_t)reps);
    lat[FREE][i] = mc_stats_of(xf, (size_t)reps);
    status[MALLOC][i] = status[FREE][i] = "ok";
}

/* K blocks of the size cached in the model, then K hits and K frees timed
 * as two batches; the device must not be asked for anything meanwhile. */
static void cached(mc_run *run, int i, int reps, int warm, double *xm, double *xf)
{
    uint64_t bytes = SIZES[i];
    uint64_t k = HIT_BYTES / bytes;
    if (k < 1) k = 1;
    if (k > HIT_MAX_K) k = HIT_MAX_K;
    ca_allocator *a = ca_create(NULL, ca_cuda_backend());
    CHECK(a != NULL, "ca_create refused the default configuration");
    ca_set_debug(a, false); /* time the allocator, not its self-check */
    uint64_t addr[HIT_MAX_K];
    for (uint64_t j = 0; j < k; j++)
        if (ca_malloc(a, bytes, &addr[j]) != CA_OK) {
            for (uint64_t q = 0; q < j; q++) ca_free(a, addr[q]);
            ca_destroy(a);
            status[HIT_MALLOC][i] = status[HIT_FREE][i] = "oom";
            return;
        }
    for (uint64_t j = 0; j < k; j++) CHECK(ca_free(a, addr[j]) == 0, "ca_free of a live block");
    const ca_stats *st = ca_get_stats(a);
    int64_t dev0 = st->num_device_alloc, res0 = st->reserved_bytes.current;
    for (int r = -warm; r < reps; r++) {
        int bad = 0;
        double t0 = mc_now_s();
        for (uint64_t j = 0; j < k; j++) bad |= ca_malloc(a, bytes, &addr[j]);
        double t1 = mc_now_s();
        for (uint64_t j = 0; j < k; j++) bad |= ca_free(a, addr[j]);
        double t2 = mc_now_s();
        CHECK(bad == 0, "a cached hit of %llu bytes failed", (unsigned long long)bytes);
        if (r >= 0) { xm[r] = (t1 - t0) / (double)k; xf[r] = (t2 - t1) / (double)k; }
    }
    st = ca_get_stats(a);
    if (st->num_device_alloc != dev0 || st->reserved_bytes.current != res0)
        mc_verify_failed(run, "ca_malloc_cached", "at %llu bytes the timed hits asked the device for "
                         "%lld segments (reserved %lld -> %lld bytes): not all were cache hits",
                         (unsigned long long)bytes, (long long)(st->num_device_alloc - dev0),
                         (long long)res0, (long long)st->reserved_bytes.current);
    lat[HIT_MALLOC][i] = mc_stats_of(xm, (size_t)reps);
    lat[HIT_FREE][i] = mc_stats_of(xf, (size_t)reps);
    status[HIT_MALLOC][i] = status[HIT_FREE][i] = "ok";
    ca_destroy(a);
}

/* cudaMallocAsync / cudaFreeAsync from a pool that keeps its memory. */
static void pooled(mc_run *run, cudaMemPool_t pool, cudaStream_t s, int i, int reps, int warm,
                   double *xm, double *xf, double *xr)
{
    uint64_t bytes = SIZES[i];
    void *p = NULL;
    if (warm < 1) warm = 1; /* the first call grows the pool: never time it */
    for (int r = -warm; r < reps; r++) {
        double t0 = mc_now_s();
        cudaError_t e = cudaMallocAsync(&p, bytes, s);
        double t1 = mc_now_s();
        if (!CUDA_OK_OR_OOM(e)) { status[AMALLOC][i] = status[AFREE][i] = status[AROUND][i] = "oom"; break; }
        CHECK_CUDA(cudaFreeAsync(p, s));
        double t2 = mc_now_s();
        CHECK_CUDA(cudaStreamSynchronize(s));
        double t3 = mc_now_s();
        check_ptr(run, "cudaMallocAsync", p, bytes);
        if (r >= 0) { xm[r] = t1 - t0; xf[r] = t2 - t1; xr[r] = t3 - t0; }
    }
    if (!status[AMALLOC][i]) {
        uint64_t kept = 0; /* cuuint64_t in cuda.h: a uint64_t */
        CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &kept));
        if (kept < bytes)
            mc_verify_failed(run, "cudaMallocAsync", "the pool kept %llu bytes after %llu-byte "
                             "allocations: it released its memory", (unsigned long long)kept,
                             (unsigned long long)bytes);
        lat[AMALLOC][i] = mc_stats_of(xm, (size_t)reps);
        lat[AFREE][i] = mc_stats_of(xf, (size_t)reps);
        lat[AROUND][i] = mc_stats_of(xr, (size_t)reps);
        status[AMALLOC][i] = status[AFREE][i] = status[AROUND][i] = "ok";
    }
    CHECK_CUDA(cudaMemPoolTrimTo(pool, 0)); /* give the memory back before the next size */
}

/* cudaMalloc and cudaFree of BUSY_SIZE while a BUSY_S kernel runs. */
static void busy(int reps, cudaStream_t s, double *xm, double *xf, double *xk)
{
    void *p = NULL;
    for (int r = 0; r < reps; r++) {
        double t0 = mc_now_s();
        mc_launch_busy_kernel(BUSY_S, s);
        CHECK_CUDA(cudaStreamSynchronize(s));
        xk[r] = mc_now_s() - t0;

        CHECK_CUDA(cudaMalloc(&p, BUSY_SIZE));
        mc_launch_busy_kernel(BUSY_S, s);
        t0 = mc_now_s();
        CHECK_CUDA(cudaFree(p));
        xf[r] = mc_now_s() - t0;
        CHECK_CUDA(cudaStreamSynchronize(s));

        mc_launch_busy_kernel(BUSY_S, s);
        t0 = mc_now_s();
        CHECK_CUDA(cudaMalloc(&p, BUSY_SIZE));
        xm[r] = mc_now_s() - t0;
        CHECK_CUDA(cudaStreamSynchronize(s));
        CHECK_CUDA(cudaFree(p));
    }
}

/* --------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    int nsizes = run.opt.quick ? QUICK_NSIZES : NSIZES;
    int dev = run.opt.device;

    /* The first cudaMalloc after the context: it may set up the driver's heaps. */
    void *p = NULL;
    double t0 = mc_now_s();
    CHECK_CUDA(cudaMalloc(&p, SIZES[0]));
    double first = mc_now_s() - t0;
    CHECK_CUDA(cudaFree(p));

    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int pools = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev));
    cudaMemPool_t pool = NULL;
    uint64_t old_threshold = 0, keep = UINT64_MAX; /* the attributes are cuuint64_t (uint64_t) */
    if (pools) {
        CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, dev));
        CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &old_threshold));
        CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    }

    size_t maxr = (size_t)(run.opt.repeats > 5 ? run.opt.repeats : 5);
    double *x1 = mc_xmalloc(maxr * sizeof *x1), *x2 = mc_xmalloc(maxr * sizeof *x2);
    double *x3 = mc_xmalloc(maxr * sizeof *x3);
    char sz[32], t[32], u[32], note[512];
    for (int i = 0; i < nsizes; i++) {
        uint64_t bytes = SIZES[i];
        int big = bytes >= GIB;
        int reps = big && run.opt.repeats > BIG_REPEATS ? BIG_REPEATS : run.opt.repeats;
        int warm = big && run.opt.warmup > 1 ? 1 : run.opt.warmup;
        uint64_t fr = free_bytes();
        if (fr < bytes + HEADROOM) {
            status[MALLOC][i] = status[FREE][i] = "oom";
            if (bytes <= HIT_MAX_SIZE) status[HIT_MALLOC][i] = status[HIT_FREE][i] = "oom";
            if (pools) status[AMALLOC][i] = status[AFREE][i] = status[AROUND][i] = "oom";
            mc_log(&run, "%s: skipped, %llu bytes free", size_str(bytes, sz, sizeof sz),
                   (unsigned long long)fr);
            continue;
        }
        plain(&run, i, reps, warm, x1, x2);
        if (bytes <= HIT_MAX_SIZE) cached(&run, i, reps, warm, x1, x2);
        if (pools) pooled(&run, pool, s, i, reps, warm, x1, x2, x3);
        mc_log(&run, "%8s: cudaMalloc %s, cudaFree %s, cached hit %s", size_str(bytes, sz, sizeof sz),
               ok(MALLOC, i) ? time_str(lat[MALLOC][i].median, t, sizeof t) : "oom",
               ok(FREE, i) ? time_str(lat[FREE][i].median, u, sizeof u) : "oom",
               ok(HIT_MALLOC, i) ? time_str(lat[HIT_MALLOC][i].median, note, sizeof note) : "-");
    }
    int breps = run.opt.repeats < 5 ? run.opt.repeats : 5;
    busy(breps, s, x1, x2, x3);
    mc_stats busy_m = mc_stats_of(x1, (size_t)breps), busy_f = mc_stats_of(x2, (size_t)breps);
    mc_stats busy_k = mc_stats_of(x3, (size_t)breps);
    free(x1);
    free(x2);
    free(x3);

    /* ---- rows ---- */
    mc_emit_value(&run, "cudaMalloc_first_in_process", "bytes", (double)SIZES[0], "host_latency", "s",
                  first, "first cudaMalloc after context creation (cudaFree(0))");
    for (int m = 0; m < NMETH; m++)
        for (int i = 0; i < nsizes; i++) {
            if (!status[m][i]) continue;
            snprintf(note, sizeof note, "host clock%s%s", m >= HIT_MALLOC ? "; per op, batches of K "
                     "cache hits in the allocator model over the CUDA backend" : "",
                     SIZES[i] >= GIB ? "; fewer repeats from 1 GiB" : "");
            mc_emit(&run, METH[m], "bytes", (double)SIZES[i], "host_latency", "s", lat[m][i],
                    status[m][i], strcmp(status[m][i], "oom") == 0 ? "less than size + 256 MiB free, "
                    "or cudaErrorMemoryAllocation" : note);
        }
    double ratios[NSIZES], lat_ge[NSIZES];
    int nr = 0, nl = 0;
    for (int i = 0; i < nsizes; i++) {
        if (ok(MALLOC, i) && SIZES[i] >= VERDICT_MIN) lat_ge[nl++] = lat[MALLOC][i].median;
        if (!ok(MALLOC, i) || !ok(HIT_MALLOC, i)) continue;
        double r = lat[MALLOC][i].median / lat[HIT_MALLOC][i].median;
        mc_emit_value(&run, "cudaMalloc_over_cached_hit", "bytes", (double)SIZES[i], "latency_ratio",
                      "ratio", r, "median cudaMalloc / median ca_malloc cache hit");
        mc_emit_value(&run, "cudaFree_over_cached_free", "bytes", (double)SIZES[i], "latency_ratio",
                      "ratio", lat[FREE][i].median / lat[HIT_FREE][i].median,
                      "median cudaFree / median ca_free into the cache");
        if (SIZES[i] >= VERDICT_MIN) ratios[nr++] = r;
    }
    mc_emit(&run, "cudaMalloc_device_busy", "bytes", (double)BUSY_SIZE, "host_latency", "s", busy_m,
            "ok", "host clock; a 5 ms kernel running on another stream");
    mc_emit(&run, "cudaFree_device_busy", "bytes", (double)BUSY_SIZE, "host_latency", "s", busy_f,
            "ok", "host clock; a 5 ms kernel running on another stream");
    mc_emit(&run, "busy_kernel", "", 0, "host_wall", "s", busy_k, "ok",
            "launch + cudaStreamSynchronize of the 5 ms kernel, host clock");

    /* ---- findings ---- */
    char list[1024];
    int L = -1, G = -1; /* largest measured size; first measured >= 1 GiB */
    for (int i = 0; i < nsizes; i++)
        if (ok(MALLOC, i)) { L = i; if (G < 0 && SIZES[i] >= GIB) G = i; }
    if (G < 0) for (int i = 0; i < nsizes; i++) if (ok(MALLOC, i) && SIZES[i] >= VERDICT_MIN) { G = i; break; }
    series_str(MALLOC, nsizes, list, sizeof list);
    if (L >= 0 && G >= 0 && L > G)
        mc_emit_finding(&run, "cudaMalloc median by size: %s. From %s to %s it grows by %s per GiB: "
                        "large blocks are backed by newly mapped pages, small ones come from chunks "
                        "the driver already holds.", list, size_str(SIZES[G], sz, sizeof sz),
                        size_str(SIZES[L], t, sizeof t),
                        time_str((lat[MALLOC][L].median - lat[MALLOC][G].median) /
                                 ((double)(SIZES[L] - SIZES[G]) / GIB), u, sizeof u));
    else
        mc_emit_finding(&run, "cudaMalloc median by size: %s.", list);
    series_str(FREE, nsizes, list, sizeof list);
    int waits_f = busy_f.median >= 0.5 * busy_k.median, waits_m = busy_m.median >= 0.5 * busy_k.median;
    mc_emit_finding(&run, "cudaFree median by size: %s. With a kernel of %s running, cudaFree of 2 MiB "
                    "took %s (%s for the device) and cudaMalloc %s (%s): a caching allocator also "
                    "avoids %s.", list, time_str(busy_k.median, sz, sizeof sz),
                    time_str(busy_f.median, t, sizeof t), waits_f ? "it waited" : "it did not wait",
                    time_str(busy_m.median, u, sizeof u), waits_m ? "it waited" : "it did not wait",
                    waits_f ? "cudaFree's device-wide synchronisation" : "cudaFree's cost");
    int c2 = -1;
    for (int i = 0; i < nsizes; i++) if (ok(MALLOC, i) && SIZES[i] >= VERDICT_MIN) { c2 = i; break; }
    if (ok(MALLOC, 0))
        mc_emit_finding(&run, "The first cudaMalloc of the process (%s, right after context creation) "
                        "took %s, against a steady %s for %s.", size_str(SIZES[0], sz, sizeof sz),
                        time_str(first, t, sizeof t), time_str(lat[MALLOC][0].median, u, sizeof u),
                        size_str(SIZES[0], note, sizeof note));
    if (c2 >= 0 && ok(HIT_MALLOC, c2))
        mc_emit_finding(&run, "At %s a cached hit costs %s to allocate and %s to free in the model "
                        "(its bookkeeping only), against %s and %s for cudaMalloc and cudaFree: "
                        "%.0fx and %.0fx.", size_str(SIZES[c2], sz, sizeof sz),
                        time_str(lat[HIT_MALLOC][c2].median, t, sizeof t),
                        time_str(lat[HIT_FREE][c2].median, u, sizeof u),
                        time_str(lat[MALLOC][c2].median, list, 64),
                        time_str(lat[FREE][c2].median, list + 64, 64),
                        lat[MALLOC][c2].median / lat[HIT_MALLOC][c2].median,
                        lat[FREE][c2].median / lat[HIT_FREE][c2].median);
    if (!pools)
        mc_emit_finding(&run, "This device has no stream-ordered memory pools: cudaMallocAsync not measured.");
    else if (c2 >= 0 && ok(AMALLOC, c2))
        mc_emit_finding(&run, "cudaMallocAsync from a pool that keeps its memory, at %s: the host call "
                        "takes %s, cudaFreeAsync %s, and malloc+free+stream sync %s, against %s for "
                        "cudaMalloc: a pool gives a cache's speed without PyTorch's allocator.",
                        size_str(SIZES[c2], sz, sizeof sz), time_str(lat[AMALLOC][c2].median, t, sizeof t),
                        time_str(lat[AFREE][c2].median, u, sizeof u),
                        time_str(lat[AROUND][c2].median, list, 64),
                        time_str(lat[MALLOC][c2].median, list + 64, 64));

    /* ---- verdict ---- */
    if (nl == 0) {
        mc_emit_verdict(&run, MC_INCONCLUSIVE, "no size >= 2 MiB could be allocated");
    } else {
        double T = mc_stats_of(lat_ge, (size_t)nl).median;
        double H = nr ? mc_stats_of(ratios, (size_t)nr).median : NAN;
        int about_1ms = T >= 0.3e-3 && T <= 3e-3, cache_pays = nr > 0 && H >= 10.0;
        mc_verdict v = about_1ms && cache_pays ? MC_HOLDS
                     : about_1ms || cache_pays ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
        mc_emit_verdict(&run, v, "median cudaMalloc latency over %d sizes >= 2 MiB: %s (claim about "
                        "1 ms; band 0.3-3 ms: %s); cudaMalloc / cached hit: %.0fx (median of %d sizes; "
                        ">= 10x: %s); cudaFree of %s %s idle; of 2 MiB %s with a kernel running",
                        nl, time_str(T, sz, sizeof sz), about_1ms ? "inside" : "outside", H, nr,
                        cache_pays ? "yes" : "no", size_str(SIZES[c2], list, 64),
                        time_str(lat[FREE][c2].median, t, sizeof t), time_str(busy_f.median, u, sizeof u));
    }

    if (pools) {
        CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &old_threshold));
        CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));
    }
    CHECK_CUDA(cudaStreamDestroy(s));
    return mc_run_end(&run);
}
