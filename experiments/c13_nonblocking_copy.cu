/* C13: does cudaMemcpyAsync return at once only from pinned memory?
 *
 * A kernel of known length is queued on the stream first, so the copy cannot
 * start until it ends; the host clock then says how long the copy call took
 * to return. A call that returns while the kernel still runs did not wait for
 * the copy; one that blocks returns only after kernel + copy. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band.h"
#include "check_cuda.h"
#include "clock.h"
#include "experiment.h"
#include "gate.h"
#include "pattern.h"
#include "sampler.h"
#include "units.h"

static int busy_ms_opt = 0;        /* 0: 10 ms, or 2 ms with --quick */
static uint64_t max_bytes_opt = 0; /* 0: 256 MiB, or 4 MiB with --quick */

static const mc_extra_opt EXTRA[] = {
    {"busy-ms", MC_OPT_COUNT, &busy_ms_opt,
     "length of the kernel queued ahead of each copy, ms (default 10, --quick 2)"},
    {"max-bytes", MC_OPT_BYTES, &max_bytes_opt,
     "largest copy; sizes are 4 KiB x 4^k up to it (default 256 MiB, --quick 4 MiB)"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const char *validate_options(const mc_options *opt)
{
    (void)opt;
    return max_bytes_opt && max_bytes_opt < (4ull << 10) ? "--max-bytes must be at least 4 KiB" : NULL;
}

static const mc_experiment EXP = {
    .claim = "C13",
    .key = "nonblocking_copy",
    .title = "How long cudaMemcpyAsync takes to return, from pageable and from pinned memory",
    .seed_claim = "A non-blocking copy returns at once only from pinned memory; from pageable "
                  "memory it is synchronous.",
    .method = "For H2D and D2H copies of 4 KiB to 256 MiB in x4 steps (--quick: to 4 MiB), from "
              "pageable (posix_memalign, touched) and pinned (cudaMallocHost) memory: a 10 ms busy "
              "kernel (--busy-ms) is queued on the stream, then the host monotonic clock times the "
              "cudaMemcpyAsync call until it returns (return time), and from the kernel launch until "
              "cudaStreamSynchronize ends (kernel + copy); cudaStreamQuery right after the call says "
              "whether the stream was still busy. The copy alone (no kernel; call + sync, host "
              "clock) is measured for context. Every destination is poisoned before and checked "
              "after each copy against a seeded pattern (host side in full up to 16 MiB, above that "
              "one word per 4 KiB page plus a full check of the first timed copy). Each case takes "
              "min(5, --repeats) samples, then more until the robust spread (1.4826*MAD/median) of "
              "kernel + copy and of the copy alone is at most 2%, or until the case is decided "
              "(kernel + copy within 2% and the calls' return / (kernel + copy) wholly below or "
              "above 10%: more calls could not move it across the edge) (up to 4x --repeats "
              "samples, or until 1 s has passed); the CSV's n is the count taken.",
    .verdict_rule = "A case (memory, direction, size) is judged on the spread over its calls "
                    "(10th to 90th percentile) of return time / kernel + copy time (each call's "
                    "own), not on medians: it returned early if the spread lies under 10%, blocked "
                    "if it lies above 10%, and is undecided if it straddles 10% (then it establishes "
                    "neither side, whichever side its median falls; the note gives the spread and "
                    "the share of calls under 10%). Large sizes: >= 16 MiB (the largest size when none, as "
                    "under --quick). holds if pinned returned early in every case and pageable "
                    "blocked in every case; holds-partly if pinned returned early in some case and "
                    "pageable blocked in some large case, but not all of the holds rule (the note "
                    "names the pageable sizes that returned early and the undecided cases); "
                    "does-not-hold if pinned returned early in no case or pageable blocked in no "
                    "large case; inconclusive if the spread of a pinned case's kernel + copy "
                    "times does not lie above half the kernel's length (the kernel did not hold "
                    "the stream). A case whose return times are bimodal is reported as two modes "
                    "and their shares (a finding; two modes are told apart from 6 calls, 3 in each, "
                    "so a case that settled at fewer is not tested).",
    .flags = 0,
    .default_repeats = 5,
    .default_warmup = 1,
    .extra = EXTRA,
    .validate = validate_options,
};

enum { PAGEABLE, PINNED, NKIND };
enum { H2D, D2H, NDIR };
static const char *const KIND[NKIND] = {"pageable", "pinned"};
static const char *const DIR[NDIR] = {"h2d", "d2h"};

#define SEED_HOST 0xC13000000001ull /* H2D source: the host buffers */
#define SEED_DEV 0xC13000000002ull  /* D2H source: the device buffer */
#define MIN_BYTES (4ull << 10)
#define FULL_CHECK_BYTES (16ull << 20)
#define LARGE_BYTES (16ull << 20)
#define EARLY_SHARE 0.1
#define MAX_SIZES 24
#define SAMPLE_MAX_FACTOR 4 /* at most this many times --repeats per case */
#define SAMPLE_BUDGET_S 1.0 /* per case, after its first min(5, --repeats) */

typedef struct {
    unsigned char *host[NKIND];
    void *d_dst, *d_src;
    cudaStream_t s;
    unsigned long long *count;
} bench;

typedef struct {
    mc_stats ret, total, alone; /* seconds, host clock */
    int busy_at_return;         /* samples whose stream was still busy when the call returned */
    int n;
    mc_band frac;   /* each call's return / (kernel + copy) against [0, EARLY_SHARE] */
    int early;      /* frac's spread inside: returned early */
    int blocked;    /* frac's spread above: waited (neither: undecided) */
    int held;       /* the spread of kernel + copy lies above half the kernel's length */
    mc_modes modes; /* of the return times */
} result;

static result R[NDIR][MAX_SIZES][NKIND];


static void free_buffers(bench *b)
{
    if (b->host[PINNED]) CHECK_CUDA(cudaFreeHost(b->host[PINNED]));
    free(b->host[PAGEABLE]);
    if (b->d_dst) CHECK_CUDA(cudaFree(b->d_dst));
    if (b->d_src) CHECK_CUDA(cudaFree(b->d_src));
    memset(b->host, 0, sizeof b->host);
    b->d_dst = b->d_src = NULL;
}

/* All buffers at cap bytes, sources filled; 0, or -1 (nothing held) when out of memory. */
static int alloc_buffers(bench *b, uint64_t cap)
{
    void *p = NULL, *dd = NULL, *ds = NULL;
    if (CUDA_OK_OR_OOM(cudaMalloc(&dd, cap))) b->d_dst = dd;
    if (b->d_dst && CUDA_OK_OR_OOM(cudaMalloc(&ds, cap))) b->d_src = ds;
    if (b->d_src && posix_memalign(&p, 4096, cap) == 0) b->host[PAGEABLE] = (unsigned char *)p;
    if (b->host[PAGEABLE] && CUDA_OK_OR_OOM(cudaMallocHost(&p, cap))) b->host[PINNED] = (unsigned char *)p;
    if (!b->host[PINNED]) {
        free_buffers(b);
        return -1;
    }
    mc_pattern_fill_host(b->host[PAGEABLE], cap, SEED_HOST); /* touches every page */
    memcpy(b->host[PINNED], b->host[PAGEABLE], cap);
    mc_pattern_fill_device(b->d_src, cap, SEED_DEV, b->s);
    CHECK_CUDA(cudaStreamSynchronize(b->s));
    return 0;
}

/* One copy, behind a kernel of busy_s seconds (none when 0). Host clock:
 * *ret from call to return, *total from kernel launch to the end of the
 * stream sync. Returns 1 if the stream was still busy when the call
 * returned. The destination is poisoned first and checked after. */
static int one_copy(bench *b, int dir, int kind, uint64_t bytes, double busy_s, int full,
                    double *ret, double *total, uint64_t *bad)
{
    unsigned char *h = b->host[kind];
    uint64_t stride = full ? 1 : MC_PATTERN_PAGE_WORDS;
    if (dir == H2D) mc_pattern_poison_device(b->d_dst, bytes, b->s);
    else mc_pattern_poison_host(h, bytes, stride);
    CHECK_CUDA(cudaStreamSynchronize(b->s));

    void *dst = dir == H2D ? b->d_dst : (void *)h;
    const void *src = dir == H2D ? (const void *)h : b->d_src;
    cudaMemcpyKind mk = dir == H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    double tl = mc_now_s();
    if (busy_s > 0) mc_launch_busy_kernel(busy_s, b->s);
    double t0 = mc_now_s();
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, mk, b->s));
    double t1 = mc_now_s();
    cudaError_t q = cudaStreamQuery(b->s);
    if (q != cudaErrorNotReady) CHECK_CUDA(q);
    CHECK_CUDA(cudaStreamSynchronize(b->s));
    double t2 = mc_now_s();
    *ret = t1 - t0;
    *total = t2 - tl;

    if (dir == H2D) {
        mc_pattern_check_device(b->d_dst, bytes, SEED_HOST, b->count, b->s);
        *bad += mc_pattern_counter_take(b->count, b->s);
    } else {
        *bad += mc_pattern_check_host(h, bytes, SEED_DEV, stride);
    }
    return q == cudaErrorNotReady;
}

/* One sample for the sampler: out = {kernel + copy, copy alone, return time},
 * seconds; the first two decide when the case has settled (the return time
 * of an early return is microseconds of jitter). */
typedef struct {
    bench *b;
    int dir, kind, full;
    uint64_t bytes, bad;
    double busy_s;
    int busy;          /* samples whose stream was still busy at return */
    double *frac;      /* scratch for decided(): the sampler's cap of them */
} copy_job;

enum { S_TOTAL, S_ALONE, S_RET, NSERIES };

/* The sampler's decided(): the case's verdict is settled once each call's
 * return / (kernel + copy) lies wholly below EARLY_SHARE or wholly above it
 * (its band does not straddle the edge) and kernel + copy has settled (its
 * robust spread within MC_SAMPLER_NOISE): more samples could not move the
 * case across the edge. The copy alone of a few KiB (microseconds on the
 * host clock, +-30%) otherwise never settles and took the case to its cap
 * of 4x --repeats samples, each waiting out the kernel. */
static int case_decided(void *ctx, const double *x, int cap, int n)
{
    copy_job *j = (copy_job *)ctx;
    const double *tot = x + (size_t)S_TOTAL * (size_t)cap, *ret = x + (size_t)S_RET * (size_t)cap;
    for (int i = 0; i < n; i++) j->frac[i] = ret[i] / tot[i];
    const mc_stats t = mc_stats_of(tot, (size_t)n);
    return mc_stats_noise(&t) <= MC_SAMPLER_NOISE &&
           mc_band_of(j->frac, (size_t)n, 0.0, EARLY_SHARE).place != MC_BAND_STRADDLES;
}

static void copy_sample(void *ctx, int i, double *out)
{
    copy_job *j = (copy_job *)ctx;
    int full = j->full || i == 0;
    j->busy += one_copy(j->b, j->dir, j->kind, j->bytes, j->busy_s, full, &out[S_RET], &out[S_TOTAL], &j->bad);
    double ignored;
    one_copy(j->b, j->dir, j->kind, j->bytes, 0.0, full, &ignored, &out[S_ALONE], &j->bad);
}

/* Seconds in the unit that reads best. */
static const char *time_str(double s, char *buf, size_t len)
{
    if (s >= 1e-3) snprintf(buf, len, "%.2f ms", s * 1e3);
    else snprintf(buf, len, "%.1f us", s * 1e6);
    return buf;
}

/* Appends the sizes at which (dir, kind) returned early, or "none". */
static const char *early_list(int dir, int kind, const uint64_t *sizes, int nsizes, char *buf,
                              size_t len)
{
    char sz[32];
    size_t used = 0;
    buf[0] = '\0';
    for (int si = 0; si < nsizes; si++)
        if (R[dir][si][kind].early && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                                     mc_bytes_str(sizes[si], MC_UNIT_MIB, sz, sizeof sz));
    if (!used) snprintf(buf, len, "none");
    return buf;
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    double busy_s = 1e-3 * (busy_ms_opt ? busy_ms_opt : run.opt.quick ? 2 : 10);
    uint64_t max_bytes = max_bytes_opt ? max_bytes_opt : run.opt.quick ? (4ull << 20) : (256ull << 20);
    uint64_t sizes[MAX_SIZES];
    int nsizes = 0;
    for (uint64_t s = MIN_BYTES; s <= max_bytes && nsizes < MAX_SIZES; s *= 4) sizes[nsizes++] = s;

    bench b;
    memset(&b, 0, sizeof b);
    CHECK_CUDA(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
    b.count = mc_pattern_counter_new();
    while (nsizes > 0 && alloc_buffers(&b, sizes[nsizes - 1]) != 0) {
        mc_emit(&run, "", "bytes", (double)sizes[nsizes - 1], "allocation", "bytes",
                mc_stats_of(NULL, 0), "oom", "two device and two host buffers of this size");
        nsizes--;
    }
    if (nsizes == 0) mc_run_waive(&run, "out of memory even for 4 KiB buffers");

    /* From min(reps, 5) samples until kernel + copy and the copy alone settle: each sample
     * waits out the kernel (--busy-ms, 10 by default), so every sample a steady case does
     * not need costs that much. */
    int reps = run.opt.repeats, min_n = reps < MC_SAMPLER_MIN_N ? reps : MC_SAMPLER_MIN_N;
    mc_sampler sp = {min_n, SAMPLE_MAX_FACTOR * reps, MC_SAMPLER_NOISE, SAMPLE_BUDGET_S, S_RET, NULL,
                     case_decided};
    double *x = (double *)mc_xmalloc((size_t)NSERIES * (size_t)mc_sampler_cap(&sp) * sizeof *x);
    double *frac = (double *)mc_xmalloc((size_t)mc_sampler_cap(&sp) * sizeof *frac);
    char sz[32], metric[64], note[256];
    /* Direction outermost: D2H overwrites the host buffers that H2D reads. */
    for (int d = 0; d < NDIR; d++)
        for (int si = 0; si < nsizes; si++)
            for (int k = 0; k < NKIND; k++) {
                uint64_t bytes = sizes[si], bad = 0;
                int small = bytes <= FULL_CHECK_BYTES;
                result *r = &R[d][si][k];
                copy_job job = {&b, d, k, small, bytes, 0, busy_s, 0, frac};
                double warm_out[NSERIES];
                for (int w = 0; w < run.opt.warmup; w++) /* i = 1: no full check */
                    copy_sample(&job, 1, warm_out);
                job.busy = 0;
                mc_stats st[NSERIES];
                mc_sampled got = mc_sample(&sp, NSERIES, copy_sample, &job, x, st);
                bad = job.bad;
                r->ret = st[S_RET];
                r->total = st[S_TOTAL];
                r->alone = st[S_ALONE];
                r->busy_at_return = job.busy;
                r->n = got.n;
                /* Each call against the band, not the medians: a case whose
                 * calls fall on both sides of 10% reads the same on every
                 * machine, wherever its median lands (band.h). */
                const double *ret = x + (size_t)S_RET * mc_sampler_cap(&sp);
                const double *tot = x + (size_t)S_TOTAL * mc_sampler_cap(&sp);
                for (int i = 0; i < got.n; i++) frac[i] = ret[i] / tot[i];
                r->frac = mc_band_of(frac, (size_t)got.n, 0.0, EARLY_SHARE);
                r->early = r->frac.place == MC_BAND_INSIDE;
                r->blocked = r->frac.place == MC_BAND_ABOVE;
                r->held = mc_band_of(tot, (size_t)got.n, 0.5 * busy_s, INFINITY).place == MC_BAND_INSIDE;
                r->modes = mc_modes_of(ret, (size_t)got.n);
                if (bad)
                    mc_verify_failed(&run, KIND[k], "%s %s copy of %llu bytes: %llu words wrong",
                                     KIND[k], DIR[d], (unsigned long long)bytes, (unsigned long long)bad);
                mc_log(&run, "%s %-8s %8s: returned after %9.1f us of %8.2f ms (%s)", DIR[d], KIND[k],
                       mc_bytes_str(bytes, MC_UNIT_MIB, sz, sizeof sz), 1e6 * r->ret.median, 1e3 * r->total.median,
                       r->early ? "early" : r->blocked ? "blocked" : "undecided");
            }

    /* ---- rows ---- */
    for (int d = 0; d < NDIR; d++)
        for (int si = 0; si < nsizes; si++)
            for (int k = 0; k < NKIND; k++) {
                result *r = &R[d][si][k];
                double pv = (double)sizes[si];
                snprintf(note, sizeof note, "after a %.0f ms kernel on the stream", 1e3 * busy_s);
                snprintf(metric, sizeof metric, "%s_return_time_host_clock", DIR[d]);
                mc_emit(&run, KIND[k], "bytes", pv, metric, "s", r->ret, "ok", note);
                snprintf(metric, sizeof metric, "%s_kernel_plus_copy_host_clock", DIR[d]);
                mc_emit(&run, KIND[k], "bytes", pv, metric, "s", r->total, "ok", note);
                snprintf(metric, sizeof metric, "%s_copy_alone_host_clock", DIR[d]);
                mc_emit(&run, KIND[k], "bytes", pv, metric, "s", r->alone, "ok",
                        "no kernel ahead: cudaMemcpyAsync + cudaStreamSynchronize");
                snprintf(metric, sizeof metric, "%s_return_fraction", DIR[d]);
                if (r->early) snprintf(note, sizeof note, "returned early (< 10%% of kernel + copy)");
                else if (r->blocked) snprintf(note, sizeof note, "blocked");
                else snprintf(note, sizeof note, "undecided: per call, return / (kernel + copy) "
                              "%.3f-%.3f (10th-90th percentile) straddles 10%%; %.0f%% of %d calls under",
                              r->frac.p_low, r->frac.p_high, 100.0 * r->frac.below + 100.0 * r->frac.inside,
                              r->n);
                mc_emit_value(&run, KIND[k], "bytes", pv, metric, "ratio",
                              r->ret.median / r->total.median, note);
                snprintf(metric, sizeof metric, "%s_return_over_copy_alone", DIR[d]);
                mc_emit_value(&run, KIND[k], "bytes", pv, metric, "ratio",
                              r->ret.median / r->alone.median, "return time / copy alone, medians");
                snprintf(metric, sizeof metric, "%s_busy_at_return", DIR[d]);
                mc_emit_value(&run, KIND[k], "bytes", pv, metric, "fraction",
                              (double)r->busy_at_return / r->n,
                              "share of calls after which cudaStreamQuery said not ready");
            }

    /* ---- verdict and findings ---- */
    int np = 0, p_early = 0, nl = 0, l_blocked = 0, pg_early = 0, pg_blocked = 0, held = 1;
    int first_large = nsizes - 1;
    double pin_max_ret = 0.0;
    for (int si = 0; si < nsizes; si++)
        if (sizes[si] >= LARGE_BYTES) { first_large = si; break; }
    for (int d = 0; d < NDIR; d++)
        for (int si = 0; si < nsizes; si++) {
            const result *pin = &R[d][si][PINNED], *pg = &R[d][si][PAGEABLE];
            np++;
            p_early += pin->early;
            pg_early += pg->early;
            pg_blocked += pg->blocked;
            if (pin->ret.median > pin_max_ret) pin_max_ret = pin->ret.median;
            if (!pin->held) held = 0;
            if (si >= first_large) {
                nl++;
                l_blocked += pg->blocked;
            }
        }
    char eh2d[512], ed2h[512], bh2d[512], bd2h[512];
    early_list(H2D, PAGEABLE, sizes, nsizes, eh2d, sizeof eh2d);
    early_list(D2H, PAGEABLE, sizes, nsizes, ed2h, sizeof ed2h);
    early_list(H2D, PINNED, sizes, nsizes, bh2d, sizeof bh2d);
    early_list(D2H, PINNED, sizes, nsizes, bd2h, sizeof bd2h);
    int L = nsizes - 1;
    mc_emit_finding(&run, "Pinned: the slowest median return of cudaMemcpyAsync over all sizes was "
                    "%.1f us, with a %.0f ms kernel queued ahead of it; it returned early at H2D: "
                    "%s; D2H: %s.", 1e6 * pin_max_ret, 1e3 * busy_s, bh2d, bd2h);
    mc_emit_finding(&run, "Pageable H2D returned early at: %s. Small pageable H2D copies are staged "
                    "into the driver's pinned buffer and the call returns; larger ones wait for the "
                    "DMA of earlier chunks, which waits for the kernel.", eh2d);
    mc_emit_finding(&run, "Pageable D2H returned early at: %s. A D2H copy into pageable memory can "
                    "only finish after the data has arrived, so the call waits for the kernel and "
                    "the copy.", ed2h);
    mc_emit_finding(&run, "At %s, H2D: the pinned call returned after %.1f us, the pageable call "
                    "after %.2f ms; the copy alone takes %.2f ms pinned and %.2f ms pageable (host "
                    "clock), so a blocking call costs the kernel's %.0f ms plus the copy.",
                    mc_bytes_str(sizes[L], MC_UNIT_MIB, sz, sizeof sz), 1e6 * R[H2D][L][PINNED].ret.median,
                    1e3 * R[H2D][L][PAGEABLE].ret.median, 1e3 * R[H2D][L][PINNED].alone.median,
                    1e3 * R[H2D][L][PAGEABLE].alone.median, 1e3 * busy_s);
    /* Undecided cases (neither early nor blocked) and bimodal return times. */
    char undecided[1024] = "", modes[512], m0[32], m1[32];
    int nu = 0;
    for (int k = 0; k < NKIND; k++)
        for (int d = 0; d < NDIR; d++) {
            modes[0] = '\0';
            for (int si = 0; si < nsizes; si++) {
                const result *r = &R[d][si][k];
                size_t len = strlen(undecided), ml = strlen(modes);
                mc_bytes_str(sizes[si], MC_UNIT_MIB, sz, sizeof sz);
                if (!r->early && !r->blocked) {
                    nu++;
                    snprintf(undecided + len, sizeof undecided - len, "%s%s %s %s %.3f-%.3f, %.0f%% of "
                             "%d calls under", len ? "; " : "", KIND[k], DIR[d], sz, r->frac.p_low,
                             r->frac.p_high, 100.0 * (r->frac.below + r->frac.inside), r->n);
                }
                if (r->modes.n == 2)
                    snprintf(modes + ml, sizeof modes - ml, "%s%s: %s (%.0f%% of calls) and %s (%.0f%%)",
                             ml ? "; " : "", sz, time_str(r->modes.median[0], m0, sizeof m0),
                             100.0 * r->modes.share[0], time_str(r->modes.median[1], m1, sizeof m1),
                             100.0 * r->modes.share[1]);
            }
            if (modes[0])
                mc_emit_finding(&run, "%s %s: the return time of cudaMemcpyAsync is bimodal (two modes "
                                "at least %.0fx apart, each at least %.0f%% of the calls) at %s. The "
                                "median depends on the shares; the verdict judges the spread of the calls.",
                                KIND[k], d == H2D ? "H2D" : "D2H", MC_MODES_GAP,
                                100.0 * MC_MODES_MIN_SHARE, modes);
        }
    mc_verdict v;
    if (!held) v = MC_INCONCLUSIVE;
    else if (p_early == np && pg_blocked == np) v = MC_HOLDS;
    else if (p_early == 0 || l_blocked == 0) v = MC_DOES_NOT_HOLD;
    else v = MC_HOLDS_PARTLY;
    mc_emit_verdict(&run, v, "pinned returned early in %d/%d cases; pageable blocked in %d/%d cases "
                    ">= %s, in %d/%d cases in all, and returned early in %d/%d cases (H2D: %s; D2H: "
                    "%s); undecided in %d cases%s%s%s; early = the 10th-90th percentile of return / "
                    "(kernel + copy) over the calls lies under 10%%, blocked = above, undecided = "
                    "straddles; kernel %.0f ms%s",
                    p_early, np, l_blocked, nl, mc_bytes_str(sizes[first_large], MC_UNIT_MIB, sz, sizeof sz),
                    pg_blocked, np, pg_early, np, eh2d, ed2h, nu, nu ? " (" : "", undecided,
                    nu ? ")" : "", 1e3 * busy_s,
                    held ? "" : "; the kernel + copy times of a pinned case reached under half the "
                                "kernel's length");

    free(frac);
    free(x);
    free_buffers(&b);
    mc_pattern_counter_free(b.count);
    CHECK_CUDA(cudaStreamDestroy(b.s));
    return mc_run_end(&run);
}
