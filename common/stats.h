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
} mc_stats;

/* Summary of x[0..n). Does not modify x. n == 0 gives all-zero stats. */
mc_stats mc_stats_of(const double *x, size_t n);

/* A single value as stats (n = 1): for counts and one-shot figures. */
mc_stats mc_stats_one(double v);

/* How noisy the figure was: stdev / |median| (0 when the median is 0). */
double mc_stats_noise(const mc_stats *s);

#ifdef __cplusplus
}
#endif
#endif
