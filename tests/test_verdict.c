/* Tests of the shared verdict rules in common/verdict.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "verdict.h"

static void words(void **state)
{
    (void)state;
    assert_string_equal(mc_verdict_word(MC_HOLDS), "holds");
    assert_string_equal(mc_verdict_word(MC_HOLDS_PARTLY), "holds-partly");
    assert_string_equal(mc_verdict_word(MC_DOES_NOT_HOLD), "does-not-hold");
    assert_string_equal(mc_verdict_word(MC_INCONCLUSIVE), "inconclusive");
}

/* "2-3x faster" */
static void factor_speedup(void **state)
{
    (void)state;
    assert_int_equal(mc_verdict_factor(2.5, 2, 3, 0.1, 0.01), MC_HOLDS);
    assert_int_equal(mc_verdict_factor(1.85, 2, 3, 0.1, 0.01), MC_HOLDS);      /* within 10% */
    assert_int_equal(mc_verdict_factor(1.5, 2, 3, 0.1, 0.01), MC_HOLDS_PARTLY); /* right way, too small */
    assert_int_equal(mc_verdict_factor(5.0, 2, 3, 0.1, 0.01), MC_HOLDS_PARTLY); /* right way, too big */
    assert_int_equal(mc_verdict_factor(1.01, 2, 3, 0.1, 0.02), MC_DOES_NOT_HOLD); /* within noise */
    assert_int_equal(mc_verdict_factor(0.8, 2, 3, 0.1, 0.01), MC_DOES_NOT_HOLD);  /* the other way */
}

/* "cuts memory to 60%" */
static void factor_reduction(void **state)
{
    (void)state;
    assert_int_equal(mc_verdict_factor(0.62, 0.6, 0.6, 0.05, 0.0), MC_HOLDS);
    assert_int_equal(mc_verdict_factor(0.9, 0.6, 0.6, 0.05, 0.0), MC_HOLDS_PARTLY);
    assert_int_equal(mc_verdict_factor(1.1, 0.6, 0.6, 0.05, 0.0), MC_DOES_NOT_HOLD);
}

static void factor_unusable_figures(void **state)
{
    (void)state;
    assert_int_equal(mc_verdict_factor(2.5, 2, 3, 0.1, 0.6), MC_INCONCLUSIVE);
    assert_int_equal(mc_verdict_factor(NAN, 2, 3, 0.1, 0.0), MC_INCONCLUSIVE);
    assert_int_equal(mc_verdict_factor(0.0, 2, 3, 0.1, 0.0), MC_INCONCLUSIVE);
    assert_int_equal(mc_verdict_factor(2.5, 2, 3, 0.1, NAN), MC_INCONCLUSIVE);
}

static void share(void **state)
{
    (void)state;
    assert_int_equal(mc_verdict_share(4, 4), MC_HOLDS);
    assert_int_equal(mc_verdict_share(1, 4), MC_HOLDS_PARTLY);
    assert_int_equal(mc_verdict_share(0, 4), MC_DOES_NOT_HOLD);
    assert_int_equal(mc_verdict_share(0, 0), MC_INCONCLUSIVE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(words),
        cmocka_unit_test(factor_speedup),
        cmocka_unit_test(factor_reduction),
        cmocka_unit_test(factor_unusable_figures),
        cmocka_unit_test(share),
    };
    return cmocka_run_group_tests_name("verdict", tests, NULL, NULL);
}
