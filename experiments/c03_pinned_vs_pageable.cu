/* C03: does pinned host memory make host-device copies 2-3x faster?
 *
 * H2D and D2H copies over sizes from three kinds of host memory, each timed
 * with CUDA events (device side, queueing excluded by the gate) and with the
 * host clock around a synchronous copy (everything the program waits for,
 * including the driver's staging of pageable data). The verdict uses the host
 * clock; both are reported. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band.h"
#include "check_cuda.h"
#include "clock.h"
#include "event_timer.h"
#include "experiment.h"
#include "gate.h"
#include "gpu.h"
#include "pattern.h"
#include "sampler.h"
#include "units.h"

static uint64_t max_bytes_opt = 0; /* 0: 256 MiB, or 4 MiB with --quick */

static const mc_extra_opt EXTRA[] = {
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
    .claim = "C03",
    .key = "pinned_vs_pageable",
    .title = "Host-device copy bandwidth from pageable, pinned and registered host memory",
    .seed_claim = "Pinned (page-locked) host memory makes host-device copies faster, by 2-3x.",
    .method = "H2D and D2H copies of 4 KiB to 256 MiB in x4 steps (--max-bytes; --quick: to 4 MiB) from pageable "
              "memory (posix_memalign, page-aligned like pinned memory, touched first), pinned "
              "(cudaMallocHost) and registered (the same kind of buffer + cudaHostRegister) memory, "
              "each timed two ways: CUDA events around cudaMemcpyAsync started behind a gate kernel "
              "(pageable copies are not gated, since their call waits on the stream), and the host "
              "monotonic clock around cudaMemcpy + cudaDeviceSynchronize. Each destination is "
              "poisoned before and checked after every copy against a seeded pattern (device side in "
              "full; host side in full up to 16 MiB, above that one word per 4 KiB page plus a full "
              "check of the first timed copy). Each series takes min(5, --repeats) copies, then more "
              "until its robust spread, 1.4826*MAD/median, is at most 2% (up to 4x --repeats "
              "copies, or until 1 s has passed); the CSV's n is the count taken. Copies of 1 GiB "
              "and more count --repeats as at most 3, with 1 warm-up. Context: the PCIe link's "
              "theoretical rate (nvidia-smi).",
    .verdict_rule = "Cases: each direction at each size >= 64 MiB (the largest size when none, as "
                    "under --quick). A case's R = pinned/pageable bandwidth by the host clock (median "
                    "over median); the host clock, not events, because it includes the driver's "
                    "staging of pageable data through its own pinned buffer, which events can miss. "
                    "R is judged on its uncertainty, not one value: its spread is the 10th-90th "
                    "percentile of R over 2000 bootstrap resamples of the two series of copies. A "
                    "case is in band if that spread lies inside 1.8-3.3 (2-3x, 10% tolerance); "
                    "faster if it lies above 1 but not inside the band; tells nothing if it reaches "
                    "from <= 1 to >= 1.8; not faster otherwise (it reaches <= 1 and lies below 1.8). "
                    "A spread that straddles 1.8 or 3.3 establishes neither side of that edge, so "
                    "the case is not in band whichever side its median falls (faster when the "
                    "spread lies above 1). holds if every case is in band; holds-partly if some "
                    "case is in band or faster; "
                    "does-not-hold if none is and some case is not faster; inconclusive if every "
                    "case tells nothing (a noisy ratio widens its spread: this replaces the former "
                    "'inconclusive if noise > 0.5'). A case whose pinned or pageable bandwidths are "
                    "bimodal is reported as two modes and their shares (a finding; two modes are "
                    "told apart from 6 copies, 3 in each, so a series that settled at fewer is not "
                    "tested).",
    .flags = 0,
    .default_repeats = 7,
    .default_warmup = 2,
    .extra = EXTRA,
    .validate = validate_options,
};

enum { PAGEABLE, PINNED, REGISTERED, NKIND };
enum { H2D, D2H, NDIR };
enum { EVENTS, HOST_CLOCK, NCLOCK };
static const char *const KIND[NKIND] = {"pageable", "pinned", "registered"};
static const char *const DIR[NDIR] = {"h2d", "d2h"};
static const char *const CLOCK[NCLOCK] = {"events", "host_clock"};

#define SEED_HOST 0xC03000000001ull /* H2D source: the host buffers */
#define SEED_DEV 0xC03000000002ull  /* D2H source: the device buffer */
#define MIN_BYTES (4ull << 10)
#define FULL_CHECK_BYTES (16ull << 20) /* host checks in full up to here */
#define LARGE_BYTES (64ull << 20)      /* the verdict's sizes */
#define GIB (1ull << 30)
#define GIB_REPEATS 3
#define MAX_SIZES 24
#define SAMPLE_MAX_FACTOR 4 /* at most this many times --repeats per series */
#define SAMPLE_BUDGET_S 1.0 /* per series, after its first min(5, --repeats): PCIe rates drift
                               for minutes */

typedef struct {
    uint64_t cap;                /* bytes of every buffer below */
    unsigned char *host[NKIND];
    void *d_dst;                 /* H2D destination, poisoned before each copy */
    void *d_src;                 /* D2H source, pattern SEED_DEV */
    cudaStream_t s;
    mc_gate gate;
    mc_event_timer et;
    unsigned long long *count;   /* device mismatch counter */
} bench;

/* ------------------------------------------------------------ buffers */


static void free_buffers(bench *b)
{
    if (b->host[REGISTERED]) {
        CHECK_CUDA(cudaHostUnregister(b->host[REGISTERED]));
        free(b->host[REGISTERED]);
    }
    if (b->host[PINNED]) CHECK_CUDA(cudaFreeHost(b->host[PINNED]));
    free(b->host[PAGEABLE]);
    if (b->d_dst) CHECK_CUDA(cudaFree(b->d_dst));
    if (b->d_src) CHECK_CUDA(cudaFree(b->d_src));
    memset(b->host, 0, sizeof b->host);
    b->d_dst = b->d_src = NULL;
}

/* Page-aligned pageable memory, as pinned memory is, so alignment is not
 * what differs between the kinds. NULL when out of memory. */
static unsigned char *pageable_alloc(uint64_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, 4096, bytes) == 0 ? (unsigned char *)p : NULL;
}

/* Every buffer at cap bytes. Returns NULL, or the kind that could not be had
 * (then nothing is held). Fills the host sources and the device source. */
static const char *alloc_buffers(bench *b, uint64_t cap)
{
    const char *fail = NULL;
    void *dd = NULL, *ds = NULL, *pin = NULL;
    unsigned char *reg = NULL;
    b->cap = cap;
    if (CUDA_OK_OR_OOM(cudaMalloc(&dd, cap))) b->d_dst = dd;
    else fail = "device";
    if (!fail && CUDA_OK_OR_OOM(cudaMalloc(&ds, cap))) b->d_src = ds;
    else if (!fail) fail = "device";
    if (!fail && !(b->host[PAGEABLE] = pageable_alloc(cap))) fail = "pageable";
    if (!fail && CUDA_OK_OR_OOM(cudaMallocHost(&pin, cap))) b->host[PINNED] = (unsigned char *)pin;
    else if (!fail) fail = "pinned";
    if (!fail && !(reg = pageable_alloc(cap))) fail = "registered";
    if (!fail && CUDA_OK_OR_OOM(cudaHostRegister(reg, cap, cudaHostRegisterDefault))) b->host[REGISTERED] = reg;
    else if (!fail) fail = "registered";
    if (fail) {
        if (reg && !b->host[REGISTERED]) free(reg);
        free_buffers(b);
        return fail;
    }
    mc_pattern_fill_host(b->host[PAGEABLE], cap, SEED_HOST); /* touches every page */
    memcpy(b->host[PINNED], b->host[PAGEABLE], cap);
    memcpy(b->host[REGISTERED], b->host[PAGEABLE], cap);
    mc_pattern_fill_device(b->d_src, cap, SEED_DEV, b->s);
    CHECK_CUDA(cudaStreamSynchronize(b->s));
    return NULL;
}

/* ---------------------------------------------------------- one copy */

/* One copy of `bytes` in direction dir to or from host memory `kind`, timed
 * by `clock`; the destination is poisoned first and checked after (host side
 * in full when full, else one word per page). Adds mismatches to *bad.
 * Returns seconds. */
static double one_copy(bench *b, int dir, int kind, uint64_t bytes, int clock, int full,
                       uint64_t *bad)
{
    unsigned char *h = b->host[kind];
    uint64_t stride = full ? 1 : MC_PATTERN_PAGE_WORDS;
    if (dir == H2D) mc_pattern_poison_device(b->d_dst, bytes, b->s);
    else mc_pattern_poison_host(h, bytes, stride);
    CHECK_CUDA(cudaStreamSynchronize(b->s));

    void *dst = dir == H2D ? b->d_dst : (void *)h;
    const void *src = dir == H2D ? (const void *)h : b->d_src;
    cudaMemcpyKind mk = dir == H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    double t;
    if (clock == EVENTS) {
        /* A pageable copy's call stages data and, for D2H, waits for the
         * copy: behind a closed gate it would wait forever. */
        int gated = kind != PAGEABLE;
        if (gated) mc_gate_close(&b->gate, b->s);
        mc_event_timer_start(&b->et);
        CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, mk, b->s));
        mc_event_timer_stop(&b->et);
        if (gated) mc_gate_release(&b->gate);
        t = mc_event_timer_elapsed_s(&b->et);
    } else {
        double t0 = mc_now_s();
        CHECK_CUDA(cudaMemcpy(dst, src, bytes, mk));
        CHECK_CUDA(cudaDeviceSynchronize()); /* a pageable H2D may return before its DMA ends */
        t = mc_now_s() - t0;
    }
    if (dir == H2D) {
        mc_pattern_check_device(b->d_dst, bytes, SEED_HOST, b->count, b->s);
        *bad += mc_pattern_counter_take(b->count, b->s);
    } else {
        *bad += mc_pattern_check_host(h, bytes, SEED_DEV, stride);
    }
    return t;
}

/* One sample for the sampler: the bandwidth of one copy, B/s. The first is
 * checked in full. */
typedef struct {
    bench *b;
    int dir, kind, clock, full;
    uint64_t bytes, bad;
} copy_job;

static void copy_sample(void *ctx, int i, double *out)
{
    copy_job *j = (copy_job *)ctx;
    out[0] = (double)j->bytes / one_copy(j->b, j->dir, j->kind, j->bytes, j->clock, j->full || i == 0, &j->bad);
}

/* ------------------------------------------------------------ helpers */

/* Relative noise of a ratio of two medians: root-sum-square of theirs. */
static double ratio_noise(const mc_stats *a, const mc_stats *b)
{
    double na = mc_stats_noise(a), nb = mc_stats_noise(b);
    return sqrt(na * na + nb * nb);
}

static mc_stats bw[NDIR][MAX_SIZES][NKIND][NCLOCK]; /* bandwidth, B/s */
/* Every host-clock copy's bandwidth, B/s, per series (bw[..][HOST_CLOCK].n
 * of them): the verdict judges their distribution, not one median (band.h). */
static double *hs[NDIR][MAX_SIZES][NKIND];

/* How one verdict case's bootstrap spread of R reads (see .verdict_rule). */
enum { CASE_IN, CASE_FASTER, CASE_NOTHING, CASE_NOT, NCASE };
static const char *const CASE_WORD[NCASE] = {"in band", "faster", "tells nothing", "not faster"};
#define BAND_LO 1.8 /* 2x less 10% */
#define BAND_HI 3.3 /* 3x plus 10% */

/* --------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    /* 256 MiB by default: on the H100 pinned copies run at 54-55 GB/s from 64 MiB to 1 GiB and
     * pageable ones within 7% of their 1 GiB rate at 256 MiB, while the 1 GiB series took 6 of
     * C03's 13 s (--max-bytes 1G brings them back). */
    uint64_t max_bytes = max_bytes_opt ? max_bytes_opt : run.opt.quick ? (4ull << 20) : (256ull << 20);
    uint64_t sizes[MAX_SIZES];
    int nsizes = 0;
    for (uint64_t s = MIN_BYTES; s <= max_bytes && nsizes < MAX_SIZES; s *= 4) sizes[nsizes++] = s;

    bench b;
    memset(&b, 0, sizeof b);
    CHECK_CUDA(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
    mc_gate_init(&b.gate);
    mc_event_timer_init(&b.et, b.s);
    b.count = mc_pattern_counter_new();
    const char *fail;
    while (nsizes > 0 && (fail = alloc_buffers(&b, sizes[nsizes - 1])) != NULL) {
        mc_emit(&run, fail, "bytes", (double)sizes[nsizes - 1], "allocation", "bytes",
                mc_stats_of(NULL, 0), "oom", "two device buffers and three host buffers of this size");
        mc_log(&run, "out of %s memory at %llu bytes; trying smaller", fail,
               (unsigned long long)sizes[nsizes - 1]);
        nsizes--;
    }
    if (nsizes == 0) mc_run_waive(&run, "out of memory even for 4 KiB buffers");

    /* Direction outermost: D2H overwrites the host buffers that H2D reads. */
    char sz[32], note[256];
    for (int d = 0; d < NDIR; d++) {
        for (int si = 0; si < nsizes; si++) {
            uint64_t bytes = sizes[si];
            int big = bytes >= GIB;
            int reps = big && run.opt.repeats > GIB_REPEATS ? GIB_REPEATS : run.opt.repeats;
            int warm = big && run.opt.warmup > 1 ? 1 : run.opt.warmup;
            int small = bytes <= FULL_CHECK_BYTES;
            /* From min(reps, 5) copies until the spread settles: on a quiet link 5 do; a
             * wandering one takes more, up to 4x reps. */
            int min_n = reps < MC_SAMPLER_MIN_N ? reps : MC_SAMPLER_MIN_N;
            mc_sampler sp = {min_n, SAMPLE_MAX_FACTOR * reps, MC_SAMPLER_NOISE, SAMPLE_BUDGET_S, 0, NULL, NULL};
            double *x = (double *)mc_xmalloc((size_t)mc_sampler_cap(&sp) * sizeof *x);
            for (int k = 0; k < NKIND; k++) {
                uint64_t bad = 0;
                for (int w = 0; w < warm; w++) {
                    one_copy(&b, d, k, bytes, EVENTS, small, &bad);
                    one_copy(&b, d, k, bytes, HOST_CLOCK, small, &bad);
                }
                for (int c = 0; c < NCLOCK; c++) {
                    copy_job job = {&b, d, k, c, small, bytes, 0};
                    mc_sample(&sp, 1, copy_sample, &job, x, &bw[d][si][k][c]);
                    bad += job.bad;
                    if (c == HOST_CLOCK) {
                        size_t n = bw[d][si][k][c].n;
                        hs[d][si][k] = (double *)mc_xmalloc((n ? n : 1) * sizeof *x);
                        memcpy(hs[d][si][k], x, n * sizeof *x);
                    }
                }
                if (bad)
                    mc_verify_failed(&run, KIND[k], "%s %s copy of %llu bytes: %llu words wrong",
                                     KIND[k], DIR[d], (unsigned long long)bytes,
                                     (unsigned long long)bad);
                mc_log(&run, "%s %-10s %8s: %6.2f GB/s events, %6.2f GB/s host clock", DIR[d],
                       KIND[k], mc_bytes_str(bytes, MC_UNIT_GIB, sz, sizeof sz), bw[d][si][k][EVENTS].median / 1e9,
                       bw[d][si][k][HOST_CLOCK].median / 1e9);
            }
            free(x);
        }
    }

    /* ---- rows ---- */
    char metric[64];
    for (int d = 0; d < NDIR; d++)
        for (int si = 0; si < nsizes; si++)
            for (int k = 0; k < NKIND; k++)
                for (int c = 0; c < NCLOCK; c++) {
                    snprintf(metric, sizeof metric, "%s_bandwidth_%s", DIR[d], CLOCK[c]);
                    snprintf(note, sizeof note, "%s%s",
                             c == EVENTS ? (k == PAGEABLE ? "events, not gated" : "events, gated")
                                         : "host clock: cudaMemcpy + cudaDeviceSynchronize",
                             sizes[si] >= GIB ? "; fewer repeats at 1 GiB" : "");
                    mc_emit(&run, KIND[k], "bytes", (double)sizes[si], metric, "B/s",
                            bw[d][si][k][c], "ok", note);
                }
    double ratios[2 * MAX_SIZES];
    int nr = 0, first_large = nsizes - 1;
    for (int si = 0; si < nsizes; si++)
        if (sizes[si] >= LARGE_BYTES) { first_large = si; break; }
    for (int d = 0; d < NDIR; d++)
        for (int si = 0; si < nsizes; si++) {
            const mc_stats *pg = &bw[d][si][PAGEABLE][HOST_CLOCK];
            for (int k = PINNED; k <= REGISTERED; k++) {
                const mc_stats *o = &bw[d][si][k][HOST_CLOCK];
                double r = o->median / pg->median, nz = ratio_noise(o, pg);
                snprintf(metric, sizeof metric, "%s_ratio_host_clock", DIR[d]);
                snprintf(note, sizeof note, "ratio of medians, %s over pageable; noise %.1f%%",
                         KIND[k], 100.0 * nz);
                mc_emit(&run, k == PINNED ? "pinned_over_pageable" : "registered_over_pageable",
                        "bytes", (double)sizes[si], metric, "ratio", mc_stats_one(r), "ok", note);
                if (k == PINNED && si >= first_large) ratios[nr++] = r;
            }
        }
    int gen = 0, width = 0;
    double link = mc_pcie_rate_Bps(run.opt.device, &gen, &width);
    if (link > 0) {
        snprintf(note, sizeof note, "PCIe gen%d x%d (nvidia-smi maximum), one way, after encoding",
                 gen, width);
        mc_emit_value(&run, "link", "", 0, "pcie_theoretical_bandwidth", "B/s", link, note);
    }

    /* ---- findings ---- */
    int L = nsizes - 1;
    char lo[32], hi[32];
    mc_bytes_str(sizes[first_large], MC_UNIT_GIB, lo, sizeof lo);
    mc_bytes_str(sizes[L], MC_UNIT_GIB, hi, sizeof hi);
    for (int d = 0; d < NDIR; d++)
        mc_emit_finding(&run, "%s at %s (host clock, cudaMemcpy + sync; GB/s = 1e9 B/s): pinned %.1f "
                        "GB/s, registered %.1f GB/s, pageable %.1f GB/s; pinned/pageable %.2fx.",
                        d == H2D ? "H2D" : "D2H", hi, bw[d][L][PINNED][HOST_CLOCK].median / 1e9,
                        bw[d][L][REGISTERED][HOST_CLOCK].median / 1e9,
                        bw[d][L][PAGEABLE][HOST_CLOCK].median / 1e9,
                        bw[d][L][PINNED][HOST_CLOCK].median / bw[d][L][PAGEABLE][HOST_CLOCK].median);
    mc_emit_finding(&run, "At %s latency, not bandwidth, dominates: one copy takes %.1f us from pinned "
                    "vs %.1f us from pageable H2D, %.1f us vs %.1f us D2H (host clock, bytes / median "
                    "bandwidth); pinned/pageable %.2fx H2D, %.2fx D2H.",
                    mc_bytes_str(sizes[0], MC_UNIT_GIB, sz, sizeof sz), 1e6 * sizes[0] / bw[H2D][0][PINNED][HOST_CLOCK].median,
                    1e6 * sizes[0] / bw[H2D][0][PAGEABLE][HOST_CLOCK].median,
                    1e6 * sizes[0] / bw[D2H][0][PINNED][HOST_CLOCK].median,
                    1e6 * sizes[0] / bw[D2H][0][PAGEABLE][HOST_CLOCK].median,
                    bw[H2D][0][PINNED][HOST_CLOCK].median / bw[H2D][0][PAGEABLE][HOST_CLOCK].median,
                    bw[D2H][0][PINNED][HOST_CLOCK].median / bw[D2H][0][PAGEABLE][HOST_CLOCK].median);
    /* Where do events and the host clock disagree most for pageable memory? */
    int wd = 0, ws = 0;
    double worst = 1.0;
    for (int d = 0; d < NDIR; d++)
        for (int si = 0; si < nsizes; si++) {
            double g = bw[d][si][PAGEABLE][EVENTS].median / bw[d][si][PAGEABLE][HOST_CLOCK].median;
            if ((d == 0 && si == 0) || fabs(log(g)) > fabs(log(worst))) { worst = g; wd = d; ws = si; }
        }
    mc_emit_finding(&run, "Pageable copies, events vs host clock: they differ most at %s %s, events "
                    "%.2f GB/s vs host clock %.2f GB/s (%.2fx); pinned there: %.2f vs %.2f GB/s. "
                    "Events see only the device side of the driver's staging of pageable data through "
                    "its own pinned buffer, so the verdict uses the host clock, which includes "
                    "everything the program waits for.",
                    DIR[wd], mc_bytes_str(sizes[ws], MC_UNIT_GIB, sz, sizeof sz), bw[wd][ws][PAGEABLE][EVENTS].median / 1e9,
                    bw[wd][ws][PAGEABLE][HOST_CLOCK].median / 1e9, worst,
                    bw[wd][ws][PINNED][EVENTS].median / 1e9, bw[wd][ws][PINNED][HOST_CLOCK].median / 1e9);
    double best[NDIR] = {0, 0};
    for (int d = 0; d < NDIR; d++)
        for (int si = 0; si < nsizes; si++)
            if (bw[d][si][PINNED][EVENTS].median > best[d]) best[d] = bw[d][si][PINNED][EVENTS].median;
    if (link > 0)
        mc_emit_finding(&run, "Best pinned rate (events): H2D %.1f GB/s (%.0f%%), D2H %.1f GB/s (%.0f%%) "
                        "of the PCIe gen%d x%d link's theoretical %.1f GB/s one way; the rest goes to "
                        "packet headers and flow control.",
                        best[H2D] / 1e9, 100.0 * best[H2D] / link, best[D2H] / 1e9,
                        100.0 * best[D2H] / link, gen, width, link / 1e9);
    else
        mc_emit_finding(&run, "PCIe link rate unavailable (nvidia-smi missing or silent); best pinned "
                        "rate (events): H2D %.1f GB/s, D2H %.1f GB/s.", best[H2D] / 1e9, best[D2H] / 1e9);
    double reg[2 * MAX_SIZES];
    int nreg = 0;
    for (int d = 0; d < NDIR; d++)
        for (int si = first_large; si < nsizes; si++)
            reg[nreg++] = bw[d][si][REGISTERED][HOST_CLOCK].median / bw[d][si][PINNED][HOST_CLOCK].median;
    mc_emit_finding(&run, "Registered memory (posix_memalign + cudaHostRegister) ran at %.0f%% of pinned "
                    "(median over sizes %s..%s, both directions, host clock): what the copy needs is "
                    "page-locked memory, however it was obtained.",
                    100.0 * mc_stats_of(reg, (size_t)nreg).median, lo, hi);

    /* ---- verdict ---- */
    /* Each case's R on the bootstrap spread of a ratio of medians: where an
     * edge of the band lies inside it, one machine's median falls on one
     * side and the next one's on the other; the spread reads the same. */
    int ncase[NCASE] = {0};
    char cases[1536] = ""; /* up to 8 cases (--max-bytes 4G) of about 170 characters */
    for (int d = 0; d < NDIR; d++)
        for (int si = first_large; si < nsizes; si++) {
            const double *pin = hs[d][si][PINNED], *pg = hs[d][si][PAGEABLE];
            size_t npin = bw[d][si][PINNED][HOST_CLOCK].n, npg = bw[d][si][PAGEABLE][HOST_CLOCK].n;
            mc_band in = mc_band_ratio_of(pin, npin, pg, npg, BAND_LO, BAND_HI);
            mc_band one = mc_band_ratio_of(pin, npin, pg, npg, 0.0, 1.0); /* ABOVE: faster */
            int c = in.place == MC_BAND_INSIDE   ? CASE_IN
                  : one.place == MC_BAND_ABOVE   ? CASE_FASTER
                  : in.place != MC_BAND_BELOW    ? CASE_NOTHING
                                                 : CASE_NOT;
            ncase[c]++;
            char shares[96] = "";
            if (in.place == MC_BAND_STRADDLES)
                snprintf(shares, sizeof shares, ", %.0f%% of resamples below, %.0f%% inside, %.0f%% above",
                         100.0 * in.below, 100.0 * in.inside, 100.0 * in.above);
            size_t len = strlen(cases);
            snprintf(cases + len, sizeof cases - len, "%s%s %s %.2fx (%zu pinned, %zu pageable "
                     "copies), spread %.2f-%.2f %s the band%s: %s",
                     len ? "; " : "", DIR[d], mc_bytes_str(sizes[si], MC_UNIT_GIB, sz, sizeof sz),
                     bw[d][si][PINNED][HOST_CLOCK].median / bw[d][si][PAGEABLE][HOST_CLOCK].median,
                     npin, npg, in.p_low, in.p_high, in.place == MC_BAND_STRADDLES ? "straddles an edge of"
                                          : mc_band_place_name(in.place), shares, CASE_WORD[c]);
            /* A bimodal series: its median depends on the shares of the modes. */
            for (int k = PAGEABLE; k <= PINNED; k++) {
                mc_modes md = mc_modes_of(hs[d][si][k], bw[d][si][k][HOST_CLOCK].n);
                if (md.n == 2)
                    mc_emit_finding(&run, "%s %s copies of %s are bimodal (host clock, %zu copies): "
                                    "%.2f GB/s (%.0f%% of copies) and %.2f GB/s (%.0f%%). The median "
                                    "depends on the shares, which can differ between machines; the "
                                    "verdict judges the ratio's bootstrap spread.",
                                    KIND[k], d == H2D ? "H2D" : "D2H",
                                    mc_bytes_str(sizes[si], MC_UNIT_GIB, sz, sizeof sz),
                                    bw[d][si][k][HOST_CLOCK].n, md.median[0] / 1e9, 100.0 * md.share[0],
                                    md.median[1] / 1e9, 100.0 * md.share[1]);
            }
        }
    mc_stats rs = mc_stats_of(ratios, (size_t)nr);
    mc_verdict v = ncase[CASE_IN] == nr                       ? MC_HOLDS
                 : ncase[CASE_IN] + ncase[CASE_FASTER] > 0    ? MC_HOLDS_PARTLY
                 : ncase[CASE_NOT] > 0                        ? MC_DOES_NOT_HOLD
                                                              : MC_INCONCLUSIVE;
    mc_emit_verdict(&run, v, "pinned/pageable bandwidth ratio R (host clock, median over median) in %d "
                    "cases (sizes %s..%s, H2D and D2H): median %.2fx, range %.2f..%.2f; claim 2-3x, "
                    "band %.1f-%.1f against each R's 10th-90th percentile over %d bootstrap "
                    "resamples: %d in band, %d faster, %d tell nothing, %d not faster (%s)%s",
                    nr, lo, hi, rs.median, rs.min, rs.max, BAND_LO, BAND_HI, MC_BAND_RESAMPLES,
                    ncase[CASE_IN], ncase[CASE_FASTER], ncase[CASE_NOTHING], ncase[CASE_NOT], cases,
                    sizes[L] < LARGE_BYTES ? "; no size >= 64 MiB measured, largest size used" : "");

    for (int d = 0; d < NDIR; d++)
        for (int si = 0; si < nsizes; si++)
            for (int k = 0; k < NKIND; k++) free(hs[d][si][k]);
    free_buffers(&b);
    mc_pattern_counter_free(b.count);
    mc_event_timer_destroy(&b.et);
    mc_gate_destroy(&b.gate);
    CHECK_CUDA(cudaStreamDestroy(b.s));
    return mc_run_end(&run);
}
