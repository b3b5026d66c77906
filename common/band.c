/* band.c: band.h's spread against a band, percentiles and two modes. */
#include "band.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double *sorted_copy(const double *x, size_t n)
{
    double *s = mc_xmalloc((n ? n : 1) * sizeof *s);
    if (n) memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    return s;
}

/* Percentile p of sorted[0..n), n > 0. */
static double pct_sorted(const double *sorted, size_t n, double p)
{
    double h = (double)(n - 1) * p / 100.0;
    size_t i = (size_t)floor(h);
    if (i + 1 >= n) return sorted[n - 1];
    return sorted[i] + (h - (double)i) * (sorted[i + 1] - sorted[i]);
}

double mc_percentile(const double *x, size_t n, double p)
{
    if (n == 0) return NAN;
    double *s = sorted_copy(x, n);
    double v = pct_sorted(s, n, p);
    free(s);
    return v;
}

static double median_of(const double *sorted, size_t n)
{
    return (n % 2) ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

mc_band mc_band_of(const double *x, size_t n, double lo, double hi)
{
    mc_band b = {.place = MC_BAND_STRADDLES, .n = n, .p_low = NAN, .p_high = NAN};
    if (n == 0) return b;
    double *s = sorted_copy(x, n);
    size_t in = 0, below = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < lo) below++;
        else if (s[i] <= hi) in++;
    }
    b.inside = (double)in / (double)n;
    b.below = (double)below / (double)n;
    b.above = (double)(n - in - below) / (double)n;
    b.p_low = pct_sorted(s, n, MC_BAND_LOW_PCT);
    b.p_high = pct_sorted(s, n, MC_BAND_HIGH_PCT);
    free(s);
    if (b.p_low >= lo && b.p_high <= hi) b.place = MC_BAND_INSIDE;
    else if (b.p_high < lo) b.place = MC_BAND_BELOW;
    else if (b.p_low > hi) b.place = MC_BAND_ABOVE;
    return b;
}

/* ---------------------------------------------------------- bootstrap */

/* xorshift64*: the resampling's generator, seeded with a constant. */
static uint64_t next_u64(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* The median of one resample (with replacement) of x[0..n) into tmp. */
static double resampled_median(const double *x, size_t n, double *tmp, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) tmp[i] = x[next_u64(rng) % n];
    qsort(tmp, n, sizeof *tmp, cmp_double);
    return median_of(tmp, n);
}

/* Bootstrap medians of num (and of num / den when den is not NULL), placed
 * against [lo, hi] as mc_band_of places samples. */
static mc_band bootstrap(const double *num, size_t nn, const double *den, size_t nd, double lo,
                         double hi)
{
    mc_band b = {.place = MC_BAND_STRADDLES, .n = nn, .p_low = NAN, .p_high = NAN};
    if (nn == 0 || (den && nd == 0)) return b;
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    double *tmp = mc_xmalloc((nn > nd ? nn : nd) * sizeof *tmp);
    double *med = mc_xmalloc(MC_BAND_RESAMPLES * sizeof *med);
    for (size_t r = 0; r < MC_BAND_RESAMPLES; r++) {
        med[r] = resampled_median(num, nn, tmp, &rng);
        if (den) med[r] /= resampled_median(den, nd, tmp, &rng);
    }
    b = mc_band_of(med, MC_BAND_RESAMPLES, lo, hi);
    b.n = nn;
    free(tmp);
    free(med);
    return b;
}

mc_band mc_band_median_of(const double *x, size_t n, double lo, double hi)
{
    return bootstrap(x, n, NULL, 0, lo, hi);
}

mc_band mc_band_ratio_of(const double *num, size_t nn, const double *den, size_t nd, double lo,
                         double hi)
{
    if (!den || nd == 0) { /* no denominator: nothing is established */
        mc_band b = {.place = MC_BAND_STRADDLES, .n = nn, .p_low = NAN, .p_high = NAN};
        return b;
    }
    return bootstrap(num, nn, den, nd, lo, hi);
}

const char *mc_band_place_name(mc_band_place p)
{
    switch (p) {
    case MC_BAND_INSIDE: return "inside";
    case MC_BAND_BELOW: return "below";
    case MC_BAND_ABOVE: return "above";
    case MC_BAND_STRADDLES: break;
    }
    return "straddles an edge";
}

mc_modes mc_modes_of(const double *x, size_t n)
{
    mc_modes m = {0};
    if (n == 0) return m;
    double *s = sorted_copy(x, n);
    size_t min_side = (size_t)ceil(MC_MODES_MIN_SHARE * (double)n), split = 0;
    if (min_side < MC_MODES_MIN_COUNT) min_side = MC_MODES_MIN_COUNT;
    double best = MC_MODES_GAP;
    for (size_t i = 1; i < n; i++) {
        if (s[i - 1] <= 0 || i < min_side || n - i < min_side) continue;
        double r = s[i] / s[i - 1];
        if (r >= best) {
            best = r;
            split = i;
        }
    }
    if (split == 0) {
        m.n = 1;
        m.median[0] = median_of(s, n);
        m.share[0] = 1.0;
    } else {
        m.n = 2;
        m.median[0] = median_of(s, split);
        m.median[1] = median_of(s + split, n - split);
        m.share[0] = (double)split / (double)n;
        m.share[1] = (double)(n - split) / (double)n;
    }
    free(s);
    return m;
}
