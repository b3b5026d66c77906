/* band.h: where a measured distribution lies against a claim's band, for
 * verdicts that use a time. One median can fall on either side of a band's
 * edge from one machine to the next while the samples straddle it on both;
 * the rules judge the spread instead: the 10th to 90th percentile of the
 * samples. And a latency that is bimodal (cudaMalloc served from a chunk the
 * driver holds, or from a new one) is reported as its two modes. */
#ifndef MC_BAND_H
#define MC_BAND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MC_BAND_INSIDE,    /* the spread lies within [lo, hi] */
    MC_BAND_BELOW,     /* the spread lies below lo */
    MC_BAND_ABOVE,     /* the spread lies above hi */
    MC_BAND_STRADDLES  /* an edge of the band lies inside the spread: the samples decide nothing */
} mc_band_place;

/* The percentiles that make the spread judged against a band. */
#define MC_BAND_LOW_PCT 10.0
#define MC_BAND_HIGH_PCT 90.0

typedef struct {
    mc_band_place place;
    size_t n;                   /* samples */
    double inside, below, above;/* shares of the samples (sum 1; 0 when n is 0) */
    double p_low, p_high;       /* the spread: MC_BAND_LOW_PCT and MC_BAND_HIGH_PCT percentiles */
} mc_band;

/* x[0..n) (not modified) against [lo, hi], in x's unit. n == 0: STRADDLES
 * with zero shares (nothing is established). */
mc_band mc_band_of(const double *x, size_t n, double lo, double hi);
/* A claim about a typical value (a speed-up, an overhead, a share of a
 * step) is judged on the median's uncertainty instead: the 10th-90th
 * percentile of the median over MC_BAND_RESAMPLES bootstrap resamples of
 * the samples (a fixed seed, so the same samples give the same answer). The
 * shares are those of the resampled medians inside, below and above. */
#define MC_BAND_RESAMPLES 2000
mc_band mc_band_median_of(const double *x, size_t n, double lo, double hi);
/* The same for the ratio of two medians, median(num) / median(den) (a
 * speed-up, a slowdown), each resampled on its own. nn or nd 0: STRADDLES. */
mc_band mc_band_ratio_of(const double *num, size_t nn, const double *den, size_t nd, double lo,
                         double hi);
/* "inside", "below", "above", "straddles an edge" */
const char *mc_band_place_name(mc_band_place p);

/* Percentile p (0..100) of x[0..n), linear between order statistics (the
 * usual "type 7"); NAN when n is 0. Does not modify x. */
double mc_percentile(const double *x, size_t n, double p);

/* Two modes when the sorted positive samples split at a gap where the next
 * sample is at least MC_MODES_GAP times the previous one, with at least
 * MC_MODES_MIN_SHARE of the samples and MC_MODES_MIN_COUNT samples on each
 * side (the largest such gap: one stray step among five is no mode); else
 * one mode. Each mode's median and share of the samples, ascending. */
#define MC_MODES_GAP 2.0
#define MC_MODES_MIN_SHARE 0.10
#define MC_MODES_MIN_COUNT 3
typedef struct {
    int n;              /* 1 or 2 (0 when there are no samples) */
    double median[2];
    double share[2];
} mc_modes;
mc_modes mc_modes_of(const double *x, size_t n);

#ifdef __cplusplus
}
#endif
#endif
