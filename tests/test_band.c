/* Tests of common/band.c: a distribution's spread against a claim's band,
 * percentiles, and two modes, on samples whose answers are known. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "band.h"
#include "test_util.h"

static void percentile_is_linear_between_order_statistics(void **state)
{
    (void)state;
    const double x[] = {40, 10, 30, 20, 50};
    assert_near(mc_percentile(x, 5, 0), 10, 0);
    assert_near(mc_percentile(x, 5, 50), 30, 0);
    assert_near(mc_percentile(x, 5, 100), 50, 0);
    assert_near(mc_percentile(x, 5, 10), 14, 1e-12);   /* h = 0.4: 10 + 0.4 * 10 */
    assert_true(isnan(mc_percentile(x, 0, 50)));
    assert_near(x[0], 40, 0);                           /* not reordered */
}

/* The case of issue 22: cudaMalloc medians of 90 us on one H100 and 439 us on
 * another, each run's samples bimodal between ~70 us and ~780 us. Against a
 * 0.3-3 ms band both straddle an edge, so both runs say the same. */
static void bimodal_latency_straddles_on_both_machines(void **state)
{
    (void)state;
    double a[20], b[20];
    for (int i = 0; i < 20; i++) {
        a[i] = i < 13 ? 70e-6 + i * 1e-6 : 760e-6 + i * 1e-6;  /* 65% fast: median in the fast mode */
        b[i] = i < 9 ? 70e-6 + i * 1e-6 : 760e-6 + i * 1e-6;   /* 45% fast: median in the slow mode */
    }
    mc_band ba = mc_band_of(a, 20, 0.3e-3, 3e-3), bb = mc_band_of(b, 20, 0.3e-3, 3e-3);
    assert_int_equal(ba.place, MC_BAND_STRADDLES);
    assert_int_equal(bb.place, MC_BAND_STRADDLES);
    assert_near(ba.inside, 0.35, 1e-12);
    assert_near(ba.below, 0.65, 1e-12);
    assert_near(ba.above, 0.0, 0);
    mc_modes m = mc_modes_of(a, 20);
    assert_int_equal(m.n, 2);
    assert_near(m.share[0], 0.65, 1e-12);
    assert_near(m.median[0], 76e-6, 1e-12);   /* the 13 fast samples 70..82 us */
    assert_near(m.median[1], 776e-6, 1e-12);  /* the 7 slow ones 773..779 us */
}

static void tight_distributions_are_placed(void **state)
{
    (void)state;
    double in[10], lo[10], hi[10];
    for (int i = 0; i < 10; i++) {
        in[i] = 0.9e-3 + i * 1e-6;
        lo[i] = 90e-6 + i * 1e-6;
        hi[i] = 5e-3 + i * 1e-6;
    }
    assert_int_equal(mc_band_of(in, 10, 0.3e-3, 3e-3).place, MC_BAND_INSIDE);
    assert_int_equal(mc_band_of(lo, 10, 0.3e-3, 3e-3).place, MC_BAND_BELOW);
    assert_int_equal(mc_band_of(hi, 10, 0.3e-3, 3e-3).place, MC_BAND_ABOVE);
    assert_int_equal(mc_modes_of(in, 10).n, 1);
    assert_string_equal(mc_band_place_name(MC_BAND_STRADDLES), "straddles an edge");
}

/* One stray sample outside the band (a preempted call) does not move the
 * spread across the edge: the 10th-90th percentile ignores it. */
static void one_outlier_does_not_straddle(void **state)
{
    (void)state;
    double x[20];
    for (int i = 0; i < 20; i++) x[i] = 1e-3 + i * 1e-6;
    x[7] = 8e-3;
    mc_band b = mc_band_of(x, 20, 0.3e-3, 3e-3);
    assert_int_equal(b.place, MC_BAND_INSIDE);
    assert_near(b.above, 0.05, 1e-12);
    assert_int_equal(mc_modes_of(x, 20).n, 1);    /* one sample is under 10%: no second mode */
}

/* Five steps, one of them twice as slow: a stray step, not a second mode. */
static void one_stray_step_of_five_is_no_mode(void **state)
{
    (void)state;
    const double x[5] = {10e-3, 10.2e-3, 25e-3, 10.1e-3, 9.9e-3};
    assert_int_equal(mc_modes_of(x, 5).n, 1);
    const double y[6] = {10e-3, 10.2e-3, 25e-3, 26e-3, 10.1e-3, 25.5e-3};
    assert_int_equal(mc_modes_of(y, 6).n, 2);   /* three a side */
}

static void empty_establishes_nothing(void **state)
{
    (void)state;
    mc_band b = mc_band_of(NULL, 0, 1, 2);
    assert_int_equal(b.place, MC_BAND_STRADDLES);
    assert_int_equal(b.n, 0);
    assert_int_equal(mc_modes_of(NULL, 0).n, 0);
}

/* A speed-up whose median sits just inside 1.5 on one machine and just
 * outside on another, with noisy samples: the median's resampled spread
 * straddles 1.5 on both. A clear one is placed. */
static void ratio_of_medians_near_an_edge_straddles(void **state)
{
    (void)state;
    double slow[15], fast_a[15], fast_b[15], fast_c[15];
    for (int i = 0; i < 15; i++) {
        slow[i] = 30e-3 + ((i * 7) % 15) * 0.4e-3;      /* 30.0-35.6 ms, median 32.8 */
        fast_a[i] = 21.6e-3 + ((i * 4) % 15) * 0.3e-3;  /* median 23.7 ms: 1.38x */
        fast_b[i] = 20.4e-3 + ((i * 4) % 15) * 0.3e-3;  /* median 22.5 ms: 1.46x */
        fast_c[i] = 8e-3 + ((i * 4) % 15) * 0.1e-3;     /* median 8.7 ms: 3.77x */
    }
    mc_band a = mc_band_ratio_of(slow, 15, fast_a, 15, 1.5, 3.0);
    mc_band b = mc_band_ratio_of(slow, 15, fast_b, 15, 1.5, 3.0);
    assert_int_equal(b.place, MC_BAND_STRADDLES);
    assert_true(b.p_low < 1.5 && b.p_high > 1.5);
    assert_true(a.place == MC_BAND_BELOW || a.place == MC_BAND_STRADDLES);
    assert_int_equal(mc_band_ratio_of(slow, 15, fast_c, 15, 1.5, 3.0).place, MC_BAND_ABOVE);
    assert_int_equal(mc_band_ratio_of(slow, 15, fast_c, 15, 1.5, 5.0).place, MC_BAND_INSIDE);
    /* the same samples give the same answer (a fixed seed) */
    mc_band b2 = mc_band_ratio_of(slow, 15, fast_b, 15, 1.5, 3.0);
    assert_near(b2.p_low, b.p_low, 0);
    assert_near(b2.inside, b.inside, 0);
    assert_int_equal(mc_band_ratio_of(slow, 15, fast_b, 0, 1.5, 3.0).place, MC_BAND_STRADDLES);
    assert_int_equal(mc_band_ratio_of(slow, 15, NULL, 0, 1.5, 3.0).place, MC_BAND_STRADDLES);
}

static void median_of_tight_samples_is_placed(void **state)
{
    (void)state;
    double x[9] = {0.21, 0.22, 0.23, 0.24, 0.25, 0.26, 0.27, 0.28, 0.29};
    mc_band b = mc_band_median_of(x, 9, 0.15, 0.35);
    assert_int_equal(b.place, MC_BAND_INSIDE);
    assert_near(b.inside, 1.0, 0);
    assert_int_equal(mc_band_median_of(x, 9, 0.25, 0.35).place, MC_BAND_STRADDLES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percentile_is_linear_between_order_statistics),
        cmocka_unit_test(bimodal_latency_straddles_on_both_machines),
        cmocka_unit_test(tight_distributions_are_placed),
        cmocka_unit_test(one_outlier_does_not_straddle),
        cmocka_unit_test(one_stray_step_of_five_is_no_mode),
        cmocka_unit_test(empty_establishes_nothing),
        cmocka_unit_test(ratio_of_medians_near_an_edge_straddles),
        cmocka_unit_test(median_of_tight_samples_is_placed),
    };
    return cmocka_run_group_tests_name("band", tests, NULL, NULL);
}
