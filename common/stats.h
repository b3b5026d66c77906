/* stats.h: summary statistics of repeated samples. Every figure the suite
 * reports as "median with spread" is computed here. */
#ifndef MC_STATS_H
#define MC_STATS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t n;       /* samples */
    double median;  /* headline figure; mean of the middle two when n is even */
    double min, max, mean;
    double stdev;   /* sample standard deviation (n - 1); 0 when n < 2 */
    double mad;     /* median absolute deviation from the median; 0 when n < 2. One
                       outlier moves it little, where it can double the stdev. */
} mc_stats;

/* 1.4826 * MAD estimates the standard deviation of normally distributed
 * samples, so a robust noise figure reads on the stdev's scale. */
#define MC_MAD_TO_SIGMA 1.4826

/* Summary of x[0..n). Does not modify x. n == 0 gives all-zero stats. */
mc_stats mc_stats_of(const double *x, size_t n);

/* A single value as stats (n = 1): for counts and one-shot figures. */
mc_stats mc_stats_one(double v);

/* How noisy the figure was, robustly: 1.4826 * MAD / |median| (0 when the
 * median is 0). Every experiment's noise test uses this, not the stdev, so
 * one stray sample (a preempted copy, a page-fault burst) cannot turn a
 * verdict inconclusive on its own. */
double mc_stats_noise(const mc_stats *s);

/* Median absolute deviation of x[0..n) about its median (0 when n < 2).
 * Does not modify x. */
double mc_mad_of(const double *x, size_t n);

#ifdef __cplusplus
}
#endif
#endif
