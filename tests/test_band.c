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

static void empty_establishes_nothing(void **state)
{
    (void)state;
    mc_band b = mc_band_of(NULL, 0, 1, 2);
    assert_int_equal(b.place, MC_BAND_STRADDLES);
    assert_int_equal(b.n, 0);
    assert_int_equal(mc_modes_of(NULL, 0).n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percentile_is_linear_between_order_statistics),
        cmocka_unit_test(bimodal_latency_straddles_on_both_machines),
        cmocka_unit_test(tight_distributions_are_placed),
        cmocka_unit_test(one_outlier_does_not_straddle),
        cmocka_unit_test(empty_establishes_nothing),
    };
    return cmocka_run_group_tests_name("band", tests, NULL, NULL);
}
