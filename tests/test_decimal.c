/* Tests of common/decimal.h (the SWAR number parsing and formatting of the
 * replay's hot path) against snprintf / strtoull, at every length and the
 * boundaries between lengths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "decimal.h"

/* xorshift64: reproducible values of every magnitude. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void check_put(uint64_t v)
{
    char got[32], want[32];
    memset(got, 'x', sizeof got);
    size_t n = dec_put(got, v);
    got[n] = '\0';
    snprintf(want, sizeof want, "%llu", (unsigned long long)v);
    assert_string_equal(got, want);
}

static void formatting(void **state)
{
    (void)state;
    uint64_t p = 1;
    for (int k = 0; k < 20; k++, p *= 10) { /* every power of ten and its neighbours */
        check_put(p - 1);
        check_put(p);
        check_put(p + 1);
    }
    check_put(0);
    check_put(UINT64_MAX);
    check_put(85899345920ULL); /* 80 GiB */
    uint64_t s = 88172645463325252ULL;
    for (int i = 0; i < 200000; i++) {
        uint64_t v = next(&s);
        check_put(v >> (v & 63)); /* all magnitudes */
    }
}

static void parsing_runs_of_eight(void **state)
{
    (void)state;
    const char *cases[] = {"0 rest!!", "7,abcdef", "12345678", "1234567x", "99 99999", "x1234567"};
    const unsigned runs[] = {1, 1, 8, 7, 2, 0};
    const uint64_t values[] = {0, 7, 12345678, 1234567, 99, 0};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        uint64_t w = dec_load8(cases[i]);
        unsigned n = dec_run8(w);
        assert_int_equal(n, runs[i]);
        if (n) assert_int_equal(dec_value8(w, n), values[i]);
    }
    /* Every value of every length 1..8, and a non-digit after it. */
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 200000; i++) {
        char buf[16];
        uint32_t v = (uint32_t)(next(&s) % 100000000);
        int len = snprintf(buf, sizeof buf, "%u", v);
        memcpy(buf + len, " trailing", 9 - (len > 7 ? 1 : 0));
        uint64_t w = dec_load8(buf);
        assert_int_equal(dec_run8(w), len < 8 ? (unsigned)len : 8u);
        assert_int_equal(dec_value8(w, (unsigned)len), v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(formatting),
        cmocka_unit_test(parsing_runs_of_eight),
    };
    return cmocka_run_group_tests_name("decimal", tests, NULL, NULL);
}
