/* c04_sync_vs_async_timing.cu: C04, what a host clock measures around
 * asynchronous CUDA work, with and without synchronizing, against CUDA
 * events. Workloads: cuBLAS SGEMM (true fp32) at several sizes, and a kernel
 * that spins for a set time. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "band.h"
#include "check_cuda.h"
#include "clock.h"
#include "event_timer.h"
#include "experiment.h"
#include "gate.h"
#include "seeded_stream.h"
#include "stats.h"

static const mc_experiment EXP = {
    .claim = "C04",
    .key = "sync_vs_async_timing",
    .title = "one workload timed three ways: host clock without sync, host clock with sync, CUDA events",
    .seed_claim = "CUDA work is asynchronous: a host clock read without synchronizing measures "
                  "nearly nothing; synchronize (or use events) to get the real time.",
    .method = "cublasSgemm (n x n, column-major, CUBLAS_DEFAULT_MATH: true fp32, no TF32 tensor "
              "cores) at n = 256, 1024, 4096, 8192 (--quick: 256, 1024) and a one-block spin "
              "kernel of 1 ms and 10 ms, on one stream, each sample started on an idle GPU: "
              "(1) monotonic host clock around the launch only; (2) monotonic host clock around "
              "launch + cudaStreamSynchronize; (3) CUDA events around the launch, queued behind a "
              "host-released gate kernel so the launch itself is not timed. The three methods "
              "alternate within each repeat. SGEMM checked against a host double reference "
              "(full at n=256, 256 sampled entries above), output poisoned first; FLOP/s = 2n^3 / "
              "event time, set against SMs x 128 FP32 lanes x 2 x clock.",
    .verdict_rule = "Each figure is judged on its spread over the repeats (10th to 90th "
                    "percentile), not one median; methods alternate within a repeat, so each repeat "
                    "gives one of each. A workload is eligible when its event times' spread lies "
                    "above 100 us (one that straddles 100 us is not judged, and the note says so). "
                    "It shows the claim when the spread of host-no-sync / events (per repeat) lies "
                    "inside 0-10% and the spread of host-with-sync - events (per repeat) lies inside "
                    "+-max(20% of the median event time, 50 us); a spread that straddles an edge "
                    "establishes neither side and counts as not showing it, whichever side its "
                    "median falls (the note gives the spread and the share of repeats inside). "
                    "holds: every eligible workload shows it; holds-partly: some; does-not-hold: "
                    "none; inconclusive: no workload is eligible. A bimodal series (host-no-sync, "
                    "host-with-sync or events) of an eligible workload is reported as two modes "
                    "and their shares (a finding).",
    .flags = 0,
    .default_repeats = 10,
    .default_warmup = 2,
    .extra = NULL,
};

#define MIN_ELIGIBLE_S 100e-6  /* shorter work is hidden by launch and sync overhead */
#define NOSYNC_MAX_SHARE 0.10
#define SYNC_TOL_SHARE 0.20
#define SYNC_TOL_S 50e-6
#define SEED_A 0x00C04A5EEDULL
#define SEED_B 0x00C04B5EEDULL

/* ============================================================== inputs */

/* Element i of a seeded stream in [-1, 1): splitmix64, top 24 bits, exact in
 * float, the same on host and device. */
__host__ __device__ static inline float seeded_unit(uint64_t seed, uint64_t i)
{
    return (float)(mc_seeded_bits(seed, i) >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

static __global__ void fill_kernel(float *x, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = seeded_unit(seed, i);
}

/* Buffers hold max_n^2 elements; a size n uses the first n^2 with ld = n, so
 * A(i,k) = seeded_unit(SEED_A, i + k*n) and B(k,j) = seeded_unit(SEED_B, k + j*n).
 * Entry (i,j) of A*B, accumulated in double. */
static double ref_entry(int n, int i, int j)
{
    double s = 0.0;
    for (int k = 0; k < n; k++)
        s += (double)seeded_unit(SEED_A, i + (uint64_t)k * n) * seeded_unit(SEED_B, k + (uint64_t)j * n);
    return s;
}

/* ||C - ref|| / ||ref|| over every entry (n <= 256) or 256 sampled ones. NaN
 * (the poison) or a missing write gives a large or NaN error. */
static double sgemm_rel_error(const float *dC, int n)
{
    double num = 0.0, den = 0.0;
    if (n <= 256) {
        size_t nn = (size_t)n * n;
        float *c = (float *)mc_xmalloc(sizeof(float) * 3 * nn), *ha = c + nn, *hb = c + 2 * nn;
        CHECK_CUDA(cudaMemcpy(c, dC, sizeof(float) * nn, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < nn; i++) {
            ha[i] = seeded_unit(SEED_A, i);
            hb[i] = seeded_unit(SEED_B, i);
        }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                double r = 0.0;
                for (int k = 0; k < n; k++) r += (double)ha[i + (size_t)k * n] * hb[k + (size_t)j * n];
                double d = c[i + (size_t)j * n] - r;
                num += d * d;
                den += r * r;
            }
        free(c);
    } else {
        uint64_t x = 88172645463325252ULL; /* xorshift64: which entries to check */
        for (int s = 0; s < 256; s++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            int i = s == 0 ? 0 : s == 1 ? n - 1 : (int)(x % (uint64_t)n);
            int j = s == 0 ? 0 : s == 1 ? n - 1 : (int)((x >> 32) % (uint64_t)n);
            float c;
            CHECK_CUDA(cudaMemcpy(&c, dC + i + (size_t)j * n, sizeof c, cudaMemcpyDeviceToHost));
            double r = ref_entry(n, i, j), d = c - r;
            num += d * d;
            den += r * r;
        }
    }
    return sqrt(num) / sqrt(den);
}

/* ============================================================ workloads */

typedef struct {
    const char *variant;  /* "sgemm" or "busy_kernel" */
    const char *param;    /* "n" or "set_duration_s" */
    double value;
    int n;                /* SGEMM size, 0 for the spin kernel */
} workload;

typedef struct {
    cublasHandle_t blas;
    cudaStream_t stream;
    const float *a, *b;
    float *c;
} gpu;

static void launch(const gpu *g, const workload *w)
{
    if (w->n) {
        const float one = 1.0f, zero = 0.0f;
        CHECK_CUBLAS(cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, w->n, w->n, w->n, &one, g->a,
                                 w->n, g->b, w->n, &zero, g->c, w->n));
    } else {
        mc_launch_busy_kernel(w->value, g->stream);
    }
}

/* The per-repeat series a workload keeps: the verdict judges their spread. */
enum { S_NOSYNC, S_SYNC, S_EVENTS, S_R_NOSYNC, S_R_SYNC, S_FLOPS, NSERIES };

typedef struct {
    mc_stats nosync, sync, events, r_nosync, r_sync, flops;
    double *x; /* NSERIES rows of reps samples: series s, repeat r at x[s * reps + r]; owned */
    int reps;
} timing;

/* Series s of t, t->reps values. */
static const double *series(const timing *t, int s)
{
    return t->x + (size_t)s * (size_t)t->reps;
}

/* reps samples of each method, alternating, each on an idle stream. The
 * caller frees t.x. */
static timing measure(const gpu *g, mc_gate *gate, mc_event_timer *et, const workload *w, int reps)
{
    double *x = (double *)mc_xmalloc(sizeof(double) * NSERIES * (size_t)reps);
    double *ns = x + S_NOSYNC * reps, *sy = x + S_SYNC * reps, *ev = x + S_EVENTS * reps,
           *rn = x + S_R_NOSYNC * reps, *rs = x + S_R_SYNC * reps, *fl = x + S_FLOPS * reps;
    for (int r = 0; r < reps; r++) {
        CHECK_CUDA(cudaStreamSynchronize(g->stream));
        double t0 = mc_now_s();
        launch(g, w);
        ns[r] = mc_now_s() - t0;             /* (1) the launch call only */
        CHECK_CUDA(cudaStreamSynchronize(g->stream));

        t0 = mc_now_s();
        launch(g, w);
        CHECK_CUDA(cudaStreamSynchronize(g->stream));
        sy[r] = mc_now_s() - t0;             /* (2) launch + wait */

        mc_gate_close(gate, g->stream);
        mc_event_timer_start(et);
        launch(g, w);
        mc_event_timer_stop(et);
        mc_gate_release(gate);
        ev[r] = mc_event_timer_elapsed_s(et); /* (3) device time */

        rn[r] = ns[r] / ev[r];
        rs[r] = sy[r] / ev[r];
        fl[r] = w->n ? 2.0 * w->n * (double)w->n * w->n / ev[r] : 0.0;
    }
    timing t = {mc_stats_of(ns, reps), mc_stats_of(sy, reps), mc_stats_of(ev, reps),
                mc_stats_of(rn, reps), mc_stats_of(rs, reps), mc_stats_of(fl, reps), x, reps};
    return t;
}

/* Seconds in the unit that reads best. */
static const char *time_str(double s, char *buf, size_t len)
{
    if (s >= 1e-3) snprintf(buf, len, "%.3f ms", s * 1e3);
    else snprintf(buf, len, "%.1f us", s * 1e6);
    return buf;
}

/* Where b's spread lies, to precede the band: "inside", "above", "straddles an edge of". */
static const char *place_str(const mc_band *b)
{
    return b->place == MC_BAND_STRADDLES ? "straddles an edge of" : mc_band_place_name(b->place);
}

/* ", N% of repeats inside" when b straddles an edge, else "". */
static const char *share_str(const mc_band *b, char *buf, size_t len)
{
    buf[0] = '\0';
    if (b->place == MC_BAND_STRADDLES) snprintf(buf, len, ", %.0f%% of repeats inside", 100.0 * b->inside);
    return buf;
}

/* FP32 lanes per SM (CUDA C Programming Guide, arithmetic instruction
 * throughput: 32-bit fma results per clock per SM); 0 where not listed here. */
static int fp32_lanes_per_sm(int major, int minor)
{
    if (major == 9 || major == 10 || major == 12) return 128;
    if (major == 8) return minor == 0 ? 64 : 128;
    if (major == 7) return 64;
    return 0;
}

/* Three max_n^2 fp32 buffers; returns 0 on cudaErrorMemoryAllocation. */
static int alloc3(size_t bytes, float **a, float **b, float **c)
{
    *a = *b = *c = NULL;
    cudaError_t e = cudaMalloc((void **)a, bytes);
    if (e == cudaSuccess) e = cudaMalloc((void **)b, bytes);
    if (e == cudaSuccess) e = cudaMalloc((void **)c, bytes);
    if (e == cudaSuccess) return 1;
    if (e != cudaErrorMemoryAllocation) CHECK_CUDA(e);
    (void)cudaGetLastError();
    if (*a) CHECK_CUDA(cudaFree(*a));
    if (*b) CHECK_CUDA(cudaFree(*b));
    *a = *b = *c = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv); /* waives (exit 77) without a GPU */
    const int full_sizes[] = {256, 1024, 4096, 8192}, quick_sizes[] = {256, 1024};
    const int *sizes = run.opt.quick ? quick_sizes : full_sizes;
    int n_sizes = run.opt.quick ? 2 : 4;
    const double spins[] = {1e-3, 10e-3};

    /* ---- set up: buffers for the largest size that fits, seeded inputs, poisoned output */
    gpu g;
    float *a, *b, *c;
    while (n_sizes > 0 &&
           !alloc3(sizeof(float) * (size_t)sizes[n_sizes - 1] * sizes[n_sizes - 1], &a, &b, &c)) {
        n_sizes--;
        mc_emit(&run, "sgemm", "n", sizes[n_sizes], "time_cuda_events", "s", mc_stats_of(NULL, 0), "oom",
                "three n x n fp32 buffers did not fit");
    }
    size_t elems = n_sizes ? (size_t)sizes[n_sizes - 1] * sizes[n_sizes - 1] : 0;
    CHECK_CUDA(cudaStreamCreate(&g.stream));
    CHECK_CUBLAS(cublasCreate(&g.blas));
    CHECK_CUBLAS(cublasSetStream(g.blas, g.stream));
    CHECK_CUBLAS(cublasSetMathMode(g.blas, CUBLAS_DEFAULT_MATH)); /* no TF32 for SGEMM */
    if (n_sizes) {
        fill_kernel<<<1024, 256, 0, g.stream>>>(a, elems, SEED_A);
        CHECK_LAUNCH();
        fill_kernel<<<1024, 256, 0, g.stream>>>(b, elems, SEED_B);
        CHECK_LAUNCH();
    }
    g.a = a; g.b = b; g.c = c;
    mc_gate gate;
    mc_gate_init(&gate);
    mc_event_timer et;
    mc_event_timer_init(&et, g.stream);

    int dev = run.opt.device, sms = 0, khz = 0, major = 0, minor = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    int lanes = fp32_lanes_per_sm(major, minor);
    double peak = (double)sms * lanes * 2.0 * khz * 1e3; /* FLOP/s; 0 if unknown */
    if (peak > 0) {
        char note[200];
        snprintf(note, sizeof note, "%d SMs x %d FP32 lanes x 2 FLOP (fma) x %.3f GHz (cudaDevAttrClockRate, "
                 "boost), sm_%d%d", sms, lanes, khz * 1e-6, major, minor);
        mc_emit_value(&run, "device", "", 0, "fp32_peak_theoretical", "FLOP/s", peak, note);
    }

    /* ---- measure every workload */
    workload w[6];
    int nw = 0;
    for (int i = 0; i < n_sizes; i++) w[nw++] = (workload){"sgemm", "n", (double)sizes[i], sizes[i]};
    for (int i = 0; i < 2; i++) w[nw++] = (workload){"busy_kernel", "set_duration_s", spins[i], 0};
    timing t[6];
    double err[6] = {0};
    int eligible = 0, held = 0, judged[6] = {0};
    char detail[1536] = "";
    for (int i = 0; i < nw; i++) {
        if (w[i].n) /* NaN poison: a run that writes nothing fails verification */
            CHECK_CUDA(cudaMemsetAsync(g.c, 0xFF, sizeof(float) * w[i].n * w[i].n, g.stream));
        /* The first call of a shape sets up cuBLAS (workspace, kernel load): untimed. */
        for (int k = 0; k < 1 + run.opt.warmup; k++) launch(&g, &w[i]);
        CHECK_CUDA(cudaStreamSynchronize(g.stream));
        t[i] = measure(&g, &gate, &et, &w[i], run.opt.repeats);
        mc_log(&run, "%s %s=%g: events %.3g s, sync %.3g s, no sync %.3g s", w[i].variant, w[i].param,
               w[i].value, t[i].events.median, t[i].sync.median, t[i].nosync.median);
        const char *v = w[i].variant, *p = w[i].param;
        double pv = w[i].value;
        mc_emit(&run, v, p, pv, "time_host_clock_no_sync", "s", t[i].nosync, "ok",
                "monotonic clock around the launch call only");
        mc_emit(&run, v, p, pv, "time_host_clock_sync", "s", t[i].sync, "ok",
                "monotonic clock around launch + cudaStreamSynchronize");
        mc_emit(&run, v, p, pv, "time_cuda_events", "s", t[i].events, "ok",
                "CUDA events, launch queued behind a gate");
        mc_emit(&run, v, p, pv, "ratio_no_sync_to_events", "ratio", t[i].r_nosync, "ok",
                "per repeat, methods alternating");
        mc_emit(&run, v, p, pv, "ratio_sync_to_events", "ratio", t[i].r_sync, "ok",
                "per repeat, methods alternating");
        if (w[i].n) {
            mc_emit(&run, v, p, pv, "flop_rate_events", "FLOP/s", t[i].flops, "ok", "2 n^3 / event time");
            err[i] = sgemm_rel_error(g.c, w[i].n);
            double tol = 1e-5 * sqrt(w[i].n / 256.0); /* fp32 rounding grows about as sqrt(n) */
            if (!(err[i] < tol))
                mc_verify_failed(&run, "sgemm", "n=%d: ||C-ref||/||ref|| = %.3g, limit %.3g (TF32 would "
                                 "give ~1e-4)", w[i].n, err[i], tol);
            if (peak > 0 && t[i].flops.median > 1.10 * peak)
                mc_verify_failed(&run, "sgemm", "n=%d: %.3g FLOP/s exceeds the FP32 peak %.3g FLOP/s by "
                                 "more than 10%%: the event time or the math mode is wrong", w[i].n,
                                 t[i].flops.median, peak);
        }
        /* Judged on the spreads over the repeats (band.h), not on medians:
         * a median can fall on either side of an edge from one machine to
         * the next while the repeats straddle it on both. */
        int n = t[i].reps;
        const double *ev = series(&t[i], S_EVENTS), *sy = series(&t[i], S_SYNC);
        mc_band be = mc_band_of(ev, (size_t)n, 0.0, MIN_ELIGIBLE_S);
        size_t len = strlen(detail);
        if (be.place == MC_BAND_STRADDLES)
            snprintf(detail + len, sizeof detail - len, "%s%s %s=%g: event times %.1f-%.1f us straddle "
                     "100 us, not judged", len ? "; " : "", v, p, pv, be.p_low * 1e6, be.p_high * 1e6);
        if (be.place != MC_BAND_ABOVE) continue;
        double e = t[i].events.median, tol = fmax(SYNC_TOL_SHARE * e, SYNC_TOL_S);
        double *dsync = (double *)mc_xmalloc((size_t)n * sizeof *dsync); /* s, per repeat */
        for (int r = 0; r < n; r++) dsync[r] = sy[r] - ev[r];
        mc_band bn = mc_band_of(series(&t[i], S_R_NOSYNC), (size_t)n, 0.0, NOSYNC_MAX_SHARE);
        mc_band bs = mc_band_of(dsync, (size_t)n, -tol, tol);
        free(dsync);
        int ok = bn.place == MC_BAND_INSIDE && bs.place == MC_BAND_INSIDE;
        /* Not ok and no spread wholly outside its band: a straddle. */
        int outside = bn.place == MC_BAND_ABOVE || bs.place == MC_BAND_BELOW || bs.place == MC_BAND_ABOVE;
        judged[i] = 1;
        eligible++;
        held += ok;
        char shn[48], shs[48];
        snprintf(detail + len, sizeof detail - len, "%s%s %s=%g: no-sync/events %.4f (spread %.4f-%.4f, "
                 "%s 0-%.2f%s), sync-events %+.1f us (spread %+.1f..%+.1f us, %s +-%.0f us%s) (%s)",
                 len ? "; " : "", v, p, pv, t[i].nosync.median / e, bn.p_low, bn.p_high,
                 place_str(&bn), NOSYNC_MAX_SHARE, share_str(&bn, shn, sizeof shn),
                 (t[i].sync.median - e) * 1e6, bs.p_low * 1e6, bs.p_high * 1e6,
                 place_str(&bs), tol * 1e6, share_str(&bs, shs, sizeof shs),
                 ok ? "shows it" : outside ? "does not" : "cannot tell: counts as not showing it");
    }

    /* ---- findings and verdict */
    if (n_sizes) {
        int big = n_sizes - 1;
        mc_emit_finding(&run, "SGEMM n=%d: the host clock without sync read %.1f us for work the GPU ran for "
                        "%.3f ms (events); with sync %.3f ms. The launch returns once the work is queued.",
                        sizes[big], t[big].nosync.median * 1e6, t[big].events.median * 1e3,
                        t[big].sync.median * 1e3);
        if (!judged[0])
            mc_emit_finding(&run, "SGEMM n=%d is small: events %.1f us, host no-sync %.1f us (the launch "
                            "call itself), host with sync %.1f us. With this little work the launch and "
                            "wake-up overheads are as large as the work, so the no-sync figure is not "
                            "'nearly nothing' next to it; sizes under 100 us of device time are outside "
                            "the verdict.", sizes[0],
                            t[0].events.median * 1e6, t[0].nosync.median * 1e6, t[0].sync.median * 1e6);
        if (peak > 0)
            mc_emit_finding(&run, "SGEMM n=%d reached %.1f TFLOP/s, %.0f%% of this GPU's FP32 peak %.1f "
                            "TFLOP/s (%d SMs x %d lanes x 2 x %.2f GHz): %s. "
                            "Math mode CUBLAS_DEFAULT_MATH (no TF32); relative error vs double %.2g at n=%d "
                            "(TF32 inputs would give ~1e-4).",
                            sizes[big], t[big].flops.median * 1e-12, 100.0 * t[big].flops.median / peak,
                            peak * 1e-12, sms, lanes, khz * 1e-6,
                            t[big].flops.median <= peak
                                ? "below the CUDA-core peak, as true FP32 must be"
                                : "ABOVE the CUDA-core peak: check clock and math mode",
                            err[0], sizes[0]);
    }
    for (int i = n_sizes; i < nw; i++)
        mc_emit_finding(&run, "Spin kernel set to %.0f ms: events %.3f ms, host+sync %.3f ms, host without "
                        "sync %.1f us.", w[i].value * 1e3, t[i].events.median * 1e3, t[i].sync.median * 1e3,
                        t[i].nosync.median * 1e6);
    /* A bimodal series: its median depends on the shares of the modes. */
    static const char *const SERIES_NAME[3] = {"host clock without sync", "host clock with sync",
                                               "CUDA events"};
    for (int i = 0; i < nw; i++)
        for (int sr = S_NOSYNC; sr <= S_EVENTS && judged[i]; sr++) {
            mc_modes md = mc_modes_of(series(&t[i], sr), (size_t)t[i].reps);
            char m0[32], m1[32];
            if (md.n == 2)
                mc_emit_finding(&run, "%s %s=%g, %s: bimodal over %d repeats: %s (%.0f%% of repeats) and "
                                "%s (%.0f%%). The verdict judges the spread of the repeats, not the median.",
                                w[i].variant, w[i].param, w[i].value, SERIES_NAME[sr], t[i].reps,
                                time_str(md.median[0], m0, sizeof m0), 100.0 * md.share[0],
                                time_str(md.median[1], m1, sizeof m1), 100.0 * md.share[1]);
        }
    mc_emit_verdict(&run, mc_verdict_share(held, eligible), "%d of %d workloads with event times above 100 us "
                    "(10th-90th percentile of the repeats) show it (per repeat: no-sync/events inside "
                    "0-10%%, sync-events inside +-max(20%% of the median event time, 50 us); spreads "
                    "are 10th-90th percentiles): %s", held, eligible,
                    eligible || detail[0] ? detail : "none eligible");

    for (int i = 0; i < nw; i++) free(t[i].x);
    mc_event_timer_destroy(&et);
    mc_gate_destroy(&gate);
    CHECK_CUBLAS(cublasDestroy(g.blas));
    CHECK_CUDA(cudaStreamDestroy(g.stream));
    if (n_sizes) {
        CHECK_CUDA(cudaFree(a));
        CHECK_CUDA(cudaFree(b));
        CHECK_CUDA(cudaFree(c));
    }
    return mc_run_end(&run);
}
