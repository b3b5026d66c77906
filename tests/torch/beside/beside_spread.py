"""beside_spread.py: the bootstrap spread of a median, of a ratio of medians and
of a figure measured round by round, as common/band.h gives the suite's
(the 10th to 90th percentile over MEDIAN_RESAMPLES resamples, a fixed
seed: the same samples give the same spread); a figure written with its
spread; the robust noise of a series. Standard library only."""
import math
import random
import statistics


MEDIAN_RESAMPLES = 2000  # as common/band.h's MC_BAND_RESAMPLES
SPREAD_LOW, SPREAD_HIGH = 10.0, 90.0  # percentiles of the resampled medians (MC_BAND_LOW/HIGH_PCT)


def _resampled_medians(xs, rng):
    n = len(xs)
    return [statistics.median(xs[rng.randrange(n)] for _ in range(n)) for _ in range(MEDIAN_RESAMPLES)]


def median_spread(xs):
    """(lo, hi): the 10th and 90th percentiles of the median of xs over
    MEDIAN_RESAMPLES bootstrap resamples (a fixed seed: the same samples
    give the same spread); (x, x) for one sample."""
    xs = [float(x) for x in xs]
    if len(xs) < 2:
        return (xs[0], xs[0]) if xs else (None, None)
    meds = _resampled_medians(xs, random.Random(0x6D63))
    return percentile(meds, SPREAD_LOW), percentile(meds, SPREAD_HIGH)


def ratio_spread(num, den):
    """median(num) / median(den) and its spread (lo, hi): each side
    resampled on its own, as mc_band_ratio_of. (None, None, None) where a
    side has no samples or a zero median."""
    num, den = [float(x) for x in num], [float(x) for x in den]
    if not num or not den or statistics.median(den) == 0:
        return None, None, None
    rng = random.Random(0x6D64)
    a = _resampled_medians(num, rng) if len(num) > 1 else [num[0]] * MEDIAN_RESAMPLES
    d = _resampled_medians(den, rng) if len(den) > 1 else [den[0]] * MEDIAN_RESAMPLES
    r = [x / y for x, y in zip(a, d) if y != 0]
    return statistics.median(num) / statistics.median(den), percentile(r, SPREAD_LOW), percentile(r, SPREAD_HIGH)


def rounds_spread(fn, n):
    """(lo, hi): the 10th and 90th percentiles of fn(indices) over
    MEDIAN_RESAMPLES resamples of n rounds' indices with replacement (a
    figure made of several series measured round by round, kept together:
    C14's overlap from its serial and double-buffered rounds); (None, None)
    without rounds."""
    if n < 1:
        return None, None
    rng = random.Random(0x6D66)
    got = [fn([rng.randrange(n) for _ in range(n)]) for _ in range(MEDIAN_RESAMPLES)]
    return percentile(got, SPREAD_LOW), percentile(got, SPREAD_HIGH)


def with_spread(value, lo, hi, fmt):
    """"1.08x (0.97-1.15)"-style: value by fmt, then its spread where it has one."""
    if value is None:
        return "-"
    if lo is None or hi is None or fmt(lo) == fmt(hi):
        return fmt(value)
    return "%s (%s-%s)" % (fmt(value), fmt(lo), fmt(hi))


def percentile(xs, p):
    """Percentile p (0..100) of xs, linear between order statistics (band.c's
    mc_percentile, "type 7"); None for no samples."""
    s = sorted(xs)
    if not s:
        return None
    h = (len(s) - 1) * p / 100.0
    i = int(math.floor(h))
    return s[-1] if i + 1 >= len(s) else s[i] + (h - i) * (s[i + 1] - s[i])


def noise(xs):
    """The robust relative spread of xs, 1.4826 * MAD / |median| (stats.c's
    mc_stats_noise); 0 where the median is 0."""
    med = statistics.median(xs)
    mad = statistics.median([abs(x - med) for x in xs])
    return 1.4826 * mad / abs(med) if med else 0.0
