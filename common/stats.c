#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of sorted[0..n), n > 0. */
static double median_sorted(const double *sorted, size_t n)
{
    return (n % 2) ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

/* MAD of sorted[0..n) whose median is med; sorted is overwritten. */
static double mad_sorted(double *sorted, size_t n, double med)
{
    if (n < 2) return 0.0;
    for (size_t i = 0; i < n; i++) sorted[i] = fabs(sorted[i] - med);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    return median_sorted(sorted, n);
}

double mc_mad_of(const double *x, size_t n)
{
    if (n < 2) return 0.0;
    double *sorted = mc_xmalloc(n * sizeof *sorted);
    memcpy(sorted, x, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    double mad = mad_sorted(sorted, n, median_sorted(sorted, n));
    free(sorted);
    return mad;
}

mc_stats mc_stats_of(const double *x, size_t n)
{
    mc_stats s = {0};
    if (n == 0) return s;
    double *sorted = mc_xmalloc(n * sizeof *sorted);
    memcpy(sorted, x, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);

    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += sorted[i];
    s.n = n;
    s.min = sorted[0];
    s.max = sorted[n - 1];
    s.mean = sum / (double)n;
    s.median = median_sorted(sorted, n);
    if (n > 1) {
        double ss = 0.0;
        for (size_t i = 0; i < n; i++) ss += (sorted[i] - s.mean) * (sorted[i] - s.mean);
        s.stdev = sqrt(ss / (double)(n - 1));
    }
    s.mad = mad_sorted(sorted, n, s.median);
    free(sorted);
    return s;
}

mc_stats mc_stats_one(double v)
{
    mc_stats s = {1, v, v, v, v, 0.0, 0.0};
    return s;
}

double mc_stats_noise(const mc_stats *s)
{
    return s->median != 0.0 ? MC_MAD_TO_SIGMA * s->mad / fabs(s->median) : 0.0;
}
