/* sampler.h: repeat a measurement until its figures settle or a time budget
 * ends, as nvbench's stopping criterion does (nvbench/detail/measure_cold.cu:
 * at least min-samples, then stop when the relative noise is under max-noise,
 * or when the timeout has passed). Here the noise is the robust one
 * (mc_stats_noise: 1.4826 * MAD / |median|), so one stalled copy does not
 * keep the loop going, and a sample count cap bounds the memory.
 *
 * For figures that wander (PCIe bandwidth drifts by 10-20% for minutes on
 * some hosts): more samples where the spread is wide, the minimum where it is
 * narrow. Only for measurements that need no fixed n. Warm-up is the
 * caller's. Plain C, no CUDA. */
#ifndef MC_SAMPLER_H
#define MC_SAMPLER_H

#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Target relative robust spread: 2% (nvbench's default is 0.5% of the
 * stdev, for kernels; host-device copies are noisier). */
#define MC_SAMPLER_NOISE 0.02

/* Samples before a stopping rule may stop: DESIGN.md's n >= 5 by default
 * (fewer only where the user asks, --repeats below it). An experiment that
 * stops on the spread takes min_n = min(--repeats, this); where --repeats is
 * larger, a series whose spread is already narrow stops here instead of
 * taking them all. A series that stops at 5 can show two modes only as 3
 * and 2 or worse (band.h's mc_modes_of needs MC_MODES_MIN_COUNT in each). */
#define MC_SAMPLER_MIN_N 5

typedef struct {
    int min_n;          /* always take this many (the experiment's --repeats); >= 1 */
    int max_n;          /* never more; < min_n is taken as min_n */
    double max_noise;   /* settled when every watched series has mc_stats_noise <= this */
    double budget_s;    /* after min_n samples, stop once this much time has passed since
                           the first sample (seconds, on `now`) */
    int nwatch;         /* the first nwatch series decide settling; 0: all of them */
    double (*now)(void); /* the clock; NULL: mc_now_s (tests pass a fake) */
    /* NULL, or: after min_n samples, 1 when what the caller judges from them
     * is already decided (a band wholly on one side of its edge), which ends
     * the loop as settling does, however noisy a watched series still is.
     * ctx is mc_sample's; x and cap as there, n the samples so far. */
    int (*decided)(void *ctx, const double *x, int cap, int n);
} mc_sampler;

/* One sample: writes one value per series into out[0..nseries). i counts
 * samples from 0. */
typedef void (*mc_sample_fn)(void *ctx, int i, double *out);

typedef struct {
    int n;              /* samples taken */
    int settled;        /* 1 when the watched series met max_noise or decided said so;
                           0 when the cap or the budget ended the loop first */
    double elapsed_s;   /* first sample to last, on `now` */
    double noise;       /* largest mc_stats_noise of the watched series at the end */
} mc_sampled;

/* Samples fn until settled (after min_n), max_n reached, or the budget spent
 * (after min_n). x holds nseries rows of p->max_n (or min_n, if larger)
 * values: series s, sample i at x[s * cap + i]. st[s] gets each series'
 * stats over the samples taken. */
mc_sampled mc_sample(const mc_sampler *p, int nseries, mc_sample_fn fn, void *ctx, double *x,
                     mc_stats *st);

/* Row length of x for p: max(min_n, max_n), at least 1. */
int mc_sampler_cap(const mc_sampler *p);

#ifdef __cplusplus
}
#endif
#endif
