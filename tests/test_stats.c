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

static void noise_is_stdev_over_median(void **state)
{
    (void)state;
    const double x[] = {9, 10, 11};
    mc_stats s = mc_stats_of(x, 3);
    assert_near(mc_stats_noise(&s), 0.1, 1e-12);
    mc_stats zero = mc_stats_one(0.0);
    assert_near(mc_stats_noise(&zero), 0.0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(odd_sample),
        cmocka_unit_test(even_sample_median_is_mean_of_middle_two),
        cmocka_unit_test(input_is_not_reordered),
        cmocka_unit_test(single_and_empty),
        cmocka_unit_test(noise_is_stdev_over_median),
    };
    return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
