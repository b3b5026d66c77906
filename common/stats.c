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
    s.median = (n % 2) ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    if (n > 1) {
        double ss = 0.0;
        for (size_t i = 0; i < n; i++) ss += (sorted[i] - s.mean) * (sorted[i] - s.mean);
        s.stdev = sqrt(ss / (double)(n - 1));
    }
    free(sorted);
    return s;
}

mc_stats mc_stats_one(double v)
{
    mc_stats s = {1, v, v, v, v, 0.0};
    return s;
}

double mc_stats_noise(const mc_stats *s)
{
    return s->median != 0.0 ? s->stdev / fabs(s->median) : 0.0;
}
