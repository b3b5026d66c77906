/* Tests of common/stats.c on samples whose statistics are known exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "stats.h"
#include "test_util.h"

static void odd_sample(void **state)
{
    (void)state;
    const double x[] = {5, 1, 4, 2, 3};
    mc_stats s = mc_stats_of(x, 5);
    assert_int_equal(s.n, 5);
    assert_near(s.median, 3.0, 0);
    assert_near(s.min, 1.0, 0);
    assert_near(s.max, 5.0, 0);
    assert_near(s.mean, 3.0, 1e-15);
    assert_near(s.stdev, sqrt(2.5), 1e-12); /* sum of squares 10 over n-1 = 4 */
}

static void even_sample_median_is_mean_of_middle_two(void **state)
{
    (void)state;
    const double x[] = {10, 40, 20, 30};
    mc_stats s = mc_stats_of(x, 4);
    assert_near(s.median, 25.0, 0);
    assert_near(s.mean, 25.0, 0);
}

static void input_is_not_reordered(void **state)
{
    (void)state;
    double x[] = {3, 1, 2};
    mc_stats_of(x, 3);
    assert_near(x[0], 3, 0);
    assert_near(x[1], 1, 0);
    assert_near(x[2], 2, 0);
}

static void single_and_empty(void **state)
{
    (void)state;
    const double x[] = {7.5};
    mc_stats s = mc_stats_of(x, 1);
    assert_int_equal(s.n, 1);
    assert_near(s.median, 7.5, 0);
    assert_near(s.stdev, 0.0, 0);
    mc_stats e = mc_stats_of(NULL, 0);
    assert_int_equal(e.n, 0);
    mc_stats one = mc_stats_one(-2.0);
    assert_int_equal(one.n, 1);
    assert_near(one.max, -2.0, 0);
}

static void mad_of_known_samples(void **state)
{
    (void)state;
    /* median 3; |x - 3| = 2 1 0 1 2 -> median 1 */
    const double odd[] = {5, 1, 4, 2, 3};
    assert_near(mc_stats_of(odd, 5).mad, 1.0, 0);
    assert_near(mc_mad_of(odd, 5), 1.0, 0);
    /* median 25; deviations 15 15 5 5 -> median 10 */
    const double even[] = {10, 40, 20, 30};
    assert_near(mc_stats_of(even, 4).mad, 10.0, 0);
    const double one[] = {7};
    assert_near(mc_mad_of(one, 1), 0.0, 0);
    assert_near(mc_stats_one(4.0).mad, 0.0, 0);
    assert_near(mc_stats_of(NULL, 0).mad, 0.0, 0);
    double keep[] = {3, 1, 2};
    mc_mad_of(keep, 3);
    assert_near(keep[0], 3, 0);
    assert_near(keep[2], 2, 0);
}

static void noise_is_scaled_mad_over_median(void **state)
{
    (void)state;
    /* median 10, deviations 1 0 1 -> MAD 1 */
    const double x[] = {9, 10, 11};
    mc_stats s = mc_stats_of(x, 3);
    assert_near(mc_stats_noise(&s), MC_MAD_TO_SIGMA * 0.1, 1e-12);
    const double neg[] = {-9, -10, -11};
    mc_stats n = mc_stats_of(neg, 3);
    assert_near(mc_stats_noise(&n), MC_MAD_TO_SIGMA * 0.1, 1e-12);
    mc_stats zero = mc_stats_one(0.0);
    assert_near(mc_stats_noise(&zero), 0.0, 0);
}

/* Ten steady copies near 100 and one stalled at 1000 (a preempted transfer):
 * the stdev-based noise exceeds MC-style limits (0.5), the robust one stays
 * at the steady samples' 1-2%. */
static void one_outlier_does_not_inflate_noise(void **state)
{
    (void)state;
    const double steady[] = {99, 100, 101, 100, 99, 101, 100, 98, 102, 100};
    double x[11];
    for (int i = 0; i < 10; i++) x[i] = steady[i];
    x[10] = 1000;
    mc_stats clean = mc_stats_of(steady, 10), dirty = mc_stats_of(x, 11);
    double stdev_noise = dirty.stdev / dirty.median;
    assert_true(stdev_noise > 2.5);                   /* stdev ~ 271, median 100 */
    assert_true(mc_stats_noise(&dirty) < 0.02);      /* MAD 1 -> 1.5% */
    assert_near(mc_stats_noise(&dirty), mc_stats_noise(&clean), 0.005);
    /* A real spread is still seen: half the samples at 50, half at 150. */
    const double wide[] = {50, 150, 50, 150, 50, 150};
    mc_stats w = mc_stats_of(wide, 6);
    assert_near(mc_stats_noise(&w), MC_MAD_TO_SIGMA * 0.5, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(odd_sample),
        cmocka_unit_test(even_sample_median_is_mean_of_middle_two),
        cmocka_unit_test(input_is_not_reordered),
        cmocka_unit_test(single_and_empty),
        cmocka_unit_test(mad_of_known_samples),
        cmocka_unit_test(noise_is_scaled_mad_over_median),
        cmocka_unit_test(one_outlier_does_not_inflate_noise),
    };
    return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
