/* Tests of common/results/figure_compare.c: the same / higher / lower / ambiguous
 * rule of build/compare on crafted pairs, its edges (exact figures, zero
 * medians, sign changes) and the spread it uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "results/figure_compare.h"
#include "test_util.h"

static mc_figure fig(double median, double min, double max)
{
    mc_figure f = {median, min, max, true};
    return f;
}

static mc_figure exact(double v) { return fig(v, v, v); }

static mc_label label(mc_figure a, mc_figure b)
{
    double r;
    return mc_figure_label(&a, &b, &r);
}

static void spread_is_half_range_over_median(void **state)
{
    (void)state;
    mc_figure f = fig(100, 90, 110);
    assert_near(mc_figure_spread(&f), 0.10, 1e-12);
    f = exact(4096);
    assert_near(mc_figure_spread(&f), 0, 0);
    f = (mc_figure){5, 0, 0, false};
    assert_near(mc_figure_spread(&f), 0, 0);
    f = fig(0, -1, 1);
    assert_true(isinf(mc_figure_spread(&f)));
}

static void same_within_the_larger_spread(void **state)
{
    (void)state;
    assert_int_equal(label(fig(100, 90, 110), fig(105, 95, 115)), MC_SAME);
    /* within B's spread only still counts as same: the larger one rules */
    assert_int_equal(label(fig(100, 99, 101), fig(108, 98, 118)), MC_SAME);
    assert_int_equal(label(exact(2097152), exact(2097152)), MC_SAME);
    /* printed at 10 digits: equal */
    assert_int_equal(label(exact(1.105533069e10), exact(11055330690.0000001)), MC_SAME);
}

static void higher_and_lower_beyond_both_spreads(void **state)
{
    (void)state;
    double r;
    mc_figure a = fig(100, 99, 101), b = fig(150, 148, 152);
    assert_int_equal(mc_figure_label(&a, &b, &r), MC_HIGHER);
    assert_near(r, 1.5, 1e-12);
    assert_int_equal(label(fig(100, 99, 101), fig(50, 49, 51)), MC_LOWER);
    assert_int_equal(label(exact(4096), exact(8192)), MC_HIGHER);
    assert_int_equal(label(exact(-10), exact(-20)), MC_LOWER);
}

static void ambiguous_when_the_ranges_overlap(void **state)
{
    (void)state;
    /* moved 20%, beyond both spreads (17.5%, 9.2%), but the ranges overlap */
    assert_int_equal(label(fig(100, 95, 130), fig(120, 99, 121)), MC_AMBIGUOUS);
    /* one exact side, the other range reaching it */
    assert_int_equal(label(exact(100), fig(130, 100, 140)), MC_AMBIGUOUS);
}

static void zero_and_sign_change_have_no_ratio(void **state)
{
    (void)state;
    double r;
    mc_figure a = exact(0), b = exact(0);
    assert_int_equal(mc_figure_label(&a, &b, &r), MC_SAME);
    assert_true(isnan(r));
    b = exact(22);
    assert_int_equal(mc_figure_label(&a, &b, &r), MC_HIGHER);
    assert_true(isnan(r));
    assert_int_equal(label(exact(22), exact(0)), MC_LOWER);
    assert_int_equal(label(fig(-5, -6, -4), fig(5, 4, 6)), MC_HIGHER);
    assert_int_equal(label(fig(-5, -6, 6), fig(5, 4, 6)), MC_AMBIGUOUS);
}

static void names(void **state)
{
    (void)state;
    assert_string_equal(mc_label_name(MC_SAME), "same");
    assert_string_equal(mc_label_name(MC_HIGHER), "higher");
    assert_string_equal(mc_label_name(MC_LOWER), "lower");
    assert_string_equal(mc_label_name(MC_AMBIGUOUS), "ambiguous");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spread_is_half_range_over_median),
        cmocka_unit_test(same_within_the_larger_spread),
        cmocka_unit_test(higher_and_lower_beyond_both_spreads),
        cmocka_unit_test(ambiguous_when_the_ranges_overlap),
        cmocka_unit_test(zero_and_sign_change_have_no_ratio),
        cmocka_unit_test(names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
