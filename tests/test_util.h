/* test_util.h: what the tests need beyond Debian's cmocka 1.1 (which has no
 * double-precision compare). Include after <cmocka.h>. */
#ifndef MC_TEST_UTIL_H
#define MC_TEST_UTIL_H

#include <math.h>

/* Fails unless |a - b| <= eps, printing both values in full. */
#define assert_near(a, b, eps)                                                      \
    do {                                                                            \
        double mc_a_ = (a), mc_b_ = (b), mc_e_ = (eps);                             \
        if (!(fabs(mc_a_ - mc_b_) <= mc_e_)) {                                      \
            print_error("%.17g != %.17g (tolerance %g)\n", mc_a_, mc_b_, mc_e_);    \
            fail();                                                                 \
        }                                                                           \
    } while (0)

#endif
