/* Tests of build/workload --profile's host side (common/workload/core/
 * wl_profile_table.c): the kinds, the sums and idle, the table and its CSV
 * against the hand-written tests/fixtures/profile/ (which
 * tests/torch/profile_reference.py is held to as well), the CSV written
 * whole or not at all, and the hooks' nesting (only the outermost counts). */
#define _POSIX_C_SOURCE 200809L /* open_memstream, mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "workload/core/wl_profile_table.h"

#define FIXTURES "tests/fixtures/profile"

/* The whole of a file (NULL if unreadable); the caller frees it. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

/* What printer(fp, t) writes, as a string; the caller frees it. */
static char *printed(void (*printer)(FILE *, const mc_prof_table *), const mc_prof_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    printer(fp, t);
    fclose(fp);
    return buf;
}

/* The fixture's step: several operations a kind, as a real step has. */
static mc_prof_table fixture_step(void)
{
    mc_prof_table t;
    mc_prof_table_init(&t);
    mc_prof_table_add(&t, MC_PROF_GEMM, 0.3);
    mc_prof_table_add(&t, MC_PROF_COPY, 0.01);
    mc_prof_table_add(&t, MC_PROF_GEMM, 0.1);
    mc_prof_table_add(&t, MC_PROF_ATTENTION, 0.15);
    mc_prof_table_add(&t, MC_PROF_LAYERNORM, 0.05);
    mc_prof_table_add(&t, MC_PROF_ELEMENTWISE, 0.03);
    mc_prof_table_add(&t, MC_PROF_OPTIMIZER, 0.07);
    mc_prof_table_add(&t, MC_PROF_COPY, 0.03);
    mc_prof_table_finish(&t, 1.0);
    return t;
}

static void kinds(void **state)
{
    (void)state;
    static const char *const want[] = {"gemm", "attention", "layernorm", "elementwise", "optimizer", "copy"};
    assert_int_equal(MC_PROF_NKINDS, 6);
    for (int k = 0; k < MC_PROF_NKINDS; k++) assert_string_equal(mc_prof_kind_name(k), want[k]);
    assert_null(mc_prof_kind_name(-1));
    assert_null(mc_prof_kind_name(MC_PROF_NKINDS));
}

static void sums(void **state)
{
    (void)state;
    mc_prof_table t = fixture_step();
    assert_int_equal(t.ops, 8);
    assert_near(t.ms[MC_PROF_GEMM], 0.4, 1e-12);
    assert_near(t.ms[MC_PROF_COPY], 0.04, 1e-12);
    assert_near(t.busy_ms, 0.74, 1e-12);
    assert_near(t.idle_ms, 0.26, 1e-12);
    assert_near(mc_prof_share(&t, t.ms[MC_PROF_GEMM]), 40.0, 1e-9);
    /* busy past the elapsed time (event granularity): idle 0, not negative */
    mc_prof_table_init(&t);
    mc_prof_table_add(&t, MC_PROF_GEMM, 1.5);
    mc_prof_table_add(&t, MC_PROF_COPY, -0.001); /* a negative reading counts as 0 */
    mc_prof_table_finish(&t, 1.0);
    assert_near(t.idle_ms, 0.0, 0);
    assert_near(t.ms[MC_PROF_COPY], 0.0, 0);
    assert_int_equal(t.ops, 2);
    /* no step: shares 0, not NaN */
    mc_prof_table_init(&t);
    mc_prof_table_finish(&t, 0.0);
    assert_near(mc_prof_share(&t, 0.0), 0.0, 0);
}

static void table_and_csv_match_the_fixture(void **state)
{
    (void)state;
    mc_prof_table t = fixture_step();
    char *want_txt = slurp(FIXTURES "/table.txt"), *want_csv = slurp(FIXTURES "/table.csv");
    assert_non_null(want_txt);
    assert_non_null(want_csv);
    char *txt = printed(mc_prof_table_print, &t), *csv = printed(mc_prof_table_csv, &t);
    assert_string_equal(txt, want_txt);
    assert_string_equal(csv, want_csv);
    free(txt);
    free(csv);
    free(want_txt);
    free(want_csv);
}

static void csv_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_wl_profile.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[256] = "";
    snprintf(path, sizeof path, "%s/profile.csv", dir);
    mc_prof_table t = fixture_step();
    assert_int_equal(mc_prof_table_write_csv(path, &t, err, sizeof err), 0);
    char *got = slurp(path), *want = slurp(FIXTURES "/table.csv");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    /* nothing but the file: the temporary name is gone */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test \"$(ls -A %s)\" = profile.csv", dir);
    assert_int_equal(system(cmd), 0);
    /* a folder that is not there: -1, one line, nothing left behind */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/nowhere/profile.csv", dir);
    assert_int_equal(mc_prof_table_write_csv(bad, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, bad));
    assert_null(strchr(err, '\n'));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* A wrapper calling a wrapper: begin(outer) begin(inner) end(inner)
 * end(outer) records one operation, the outer one. */
static void nesting(void **state)
{
    (void)state;
    int depth = 0;
    assert_true(mc_prof_enter(&depth));   /* outer: recorded */
    assert_false(mc_prof_enter(&depth));  /* inner: not */
    assert_false(mc_prof_leave(&depth));  /* inner ends: not the end */
    assert_true(mc_prof_leave(&depth));   /* outer ends: the end event */
    assert_int_equal(depth, 0);
    assert_true(mc_prof_enter(&depth));   /* the next operation is outermost again */
    assert_true(mc_prof_leave(&depth));
}
/* Two steps compared: the rows that differ by min_ms or more, largest first;
 * none: said so; a short buffer cut, still a string. */
static void compare(void **state)
{
    (void)state;
    mc_prof_table a, b;
    mc_prof_table_init(&a);
    mc_prof_table_init(&b);
    mc_prof_table_add(&a, MC_PROF_GEMM, 20.0);
    mc_prof_table_add(&a, MC_PROF_ELEMENTWISE, 6.0);
    mc_prof_table_add(&a, MC_PROF_COPY, 1.0);
    mc_prof_table_finish(&a, 30.0); /* idle 3 */
    mc_prof_table_add(&b, MC_PROF_GEMM, 9.0);
    mc_prof_table_add(&b, MC_PROF_ELEMENTWISE, 6.01);
    mc_prof_table_add(&b, MC_PROF_COPY, 3.0);
    mc_prof_table_finish(&b, 20.0); /* idle 1.99 */
    char buf[256];
    assert_string_equal(mc_prof_table_compare(buf, sizeof buf, "fp32", &a, "fp16", &b, 0.05),
                        "fp32 30.00 ms, fp16 20.00 ms a step; gemm 20.00 -> 9.00 ms (-11.00), "
                        "copy 1.00 -> 3.00 ms (+2.00), idle 3.00 -> 1.99 ms (-1.01)");
    assert_string_equal(mc_prof_table_compare(buf, sizeof buf, "a", &a, "b", &a, 0.05),
                        "a 30.00 ms, b 30.00 ms a step; no kind differs by 0.05 ms or more");
    char small[24];
    mc_prof_table_compare(small, sizeof small, "fp32", &a, "fp16", &b, 0.05);
    assert_int_equal(strlen(small), sizeof small - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds),
        cmocka_unit_test(sums),
        cmocka_unit_test(table_and_csv_match_the_fixture),
        cmocka_unit_test(csv_file),
        cmocka_unit_test(nesting),
        cmocka_unit_test(compare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
