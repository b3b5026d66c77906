/* Tests of common/sampler.c with a fake measurement and a fake clock: when
 * it stops (settled, sample cap, time budget), that min_n always holds, that
 * one outlier does not keep it sampling, that only watched series count, and
 * that a caller's decided() ends a series its spread would not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sampler.h"
#include "test_util.h"

/* The fake clock: seconds, advanced by the fake measurement. */
static double fake_t;
static double fake_now(void) { return fake_t; }

typedef struct {
    const double *seq[2]; /* values per series, repeated from the start when past len */
    int len[2];
    double step_s;        /* fake seconds per sample */
    int calls;
} fake;

static void measure(void *ctx, int i, double *out)
{
    fake *f = ctx;
    assert_int_equal(i, f->calls); /* i counts samples from 0 */
    for (int s = 0; s < 2; s++) out[s] = f->seq[s] ? f->seq[s][i % f->len[s]] : 1.0;
    f->calls++;
    fake_t += f->step_s;
}

static mc_sampler params(int min_n, int max_n, double budget_s)
{
    mc_sampler p = {min_n, max_n, MC_SAMPLER_NOISE, budget_s, 0, fake_now, NULL};
    return p;
}

static const double STEADY[] = {100, 100.5, 99.5, 100, 100.2, 99.8};
/* Three levels: the MAD stays >= 25 at every n (two alternating levels would
 * give MAD 0 at odd n). */
static const double WIDE[] = {50, 100, 150};

static void steady_stops_at_min_n(void **state)
{
    (void)state;
    fake f = {{STEADY, NULL}, {6, 0}, 0.001, 0};
    mc_sampler p = params(5, 50, 10.0);
    double x[2 * 50];
    mc_stats st[2];
    mc_sampled r = mc_sample(&p, 1, measure, &f, x, st);
    assert_int_equal(r.n, 5);
    assert_int_equal(f.calls, 5);
    assert_true(r.settled);
    assert_true(r.noise <= MC_SAMPLER_NOISE);
    assert_int_equal(st[0].n, 5);
    assert_near(st[0].median, 100.0, 0);
}

static void wide_runs_to_the_cap(void **state)
{
    (void)state;
    fake f = {{WIDE, NULL}, {3, 0}, 0.001, 0};
    mc_sampler p = params(4, 12, 100.0);
    double x[12];
    mc_stats st[1];
    mc_sampled r = mc_sample(&p, 1, measure, &f, x, st);
    assert_int_equal(r.n, 12);
    assert_false(r.settled);
    assert_true(r.noise > 0.3);
    assert_int_equal(st[0].n, 12);
    assert_near(st[0].min, 50, 0);
}

static void budget_ends_a_wide_series(void **state)
{
    (void)state;
    fake f = {{WIDE, NULL}, {3, 0}, 1.0, 0}; /* one fake second per sample */
    mc_sampler p = params(2, 100, 3.5);
    double x[100];
    mc_stats st[1];
    mc_sampled r = mc_sample(&p, 1, measure, &f, x, st);
    assert_int_equal(r.n, 4); /* 4 s >= 3.5 s after the 4th */
    assert_false(r.settled);
    assert_near(r.elapsed_s, 4.0, 1e-9);
}

static void budget_never_cuts_below_min_n(void **state)
{
    (void)state;
    fake f = {{WIDE, NULL}, {3, 0}, 1.0, 0};
    mc_sampler p = params(7, 9, 0.0);
    double x[9];
    mc_stats st[1];
    mc_sampled r = mc_sample(&p, 1, measure, &f, x, st);
    assert_int_equal(r.n, 7);
    /* max_n below min_n is min_n */
    fake g = {{WIDE, NULL}, {3, 0}, 0.0, 0};
    mc_sampler q = params(6, 2, 100.0);
    assert_int_equal(mc_sampler_cap(&q), 6);
    double y[6];
    r = mc_sample(&q, 1, measure, &g, y, st);
    assert_int_equal(r.n, 6);
}

/* Ten steady copies with one stalled at 10x: settles at min_n all the same. */
static void one_outlier_does_not_prolong(void **state)
{
    (void)state;
    static const double seq[] = {100, 101, 99, 1000, 100, 100.5, 99.5, 100, 101, 99};
    fake f = {{seq, NULL}, {10, 0}, 0.001, 0};
    mc_sampler p = params(10, 40, 100.0);
    double x[40];
    mc_stats st[1];
    mc_sampled r = mc_sample(&p, 1, measure, &f, x, st);
    assert_int_equal(r.n, 10);
    assert_true(r.settled);
    assert_true(st[0].stdev / st[0].median > 0.5); /* what the stdev would have said */
}

/* Wide at first, then steady: stops once the steady samples are the majority
 * of deviations (n = 9: MAD 0), not before. */
static void settles_when_the_spread_narrows(void **state)
{
    (void)state;
    static const double seq[] = {50, 150, 50, 150, 100, 100, 100, 100, 100, 100, 100, 100};
    fake f = {{seq, NULL}, {12, 0}, 0.001, 0};
    mc_sampler p = params(4, 12, 100.0);
    double x[12];
    mc_stats st[1];
    mc_sampled r = mc_sample(&p, 1, measure, &f, x, st);
    assert_int_equal(r.n, 9);
    assert_true(r.settled);
    assert_near(st[0].median, 100, 0);
}

/* Series 0 steady, series 1 wide: watching series 0 only settles at min_n;
 * watching both runs to the cap. Every series is summarised either way. */
static void only_watched_series_decide(void **state)
{
    (void)state;
    mc_sampler p = params(3, 10, 100.0);
    double x[2 * 10];
    mc_stats st[2];
    fake f = {{STEADY, WIDE}, {6, 3}, 0.001, 0};
    p.nwatch = 1;
    mc_sampled r = mc_sample(&p, 2, measure, &f, x, st);
    assert_int_equal(r.n, 3);
    assert_true(r.settled);
    assert_int_equal(st[1].n, 3);
    assert_near(st[1].min, 50, 0);
    assert_near(x[10 + 2], 150, 0); /* series 1, sample 2 at x[1 * cap + 2] */
    fake g = {{STEADY, WIDE}, {6, 3}, 0.001, 0};
    p.nwatch = 0;
    r = mc_sample(&p, 2, measure, &g, x, st);
    assert_int_equal(r.n, 10);
    assert_false(r.settled);
}

/* decided(): a series too wide to settle stops once the caller's judgement
 * of it is decided, never before min_n; where it never is, the cap stands. */
static int decided_calls, decided_from;
static int decided_at(void *ctx, const double *x, int cap, int n)
{
    (void)ctx;
    (void)cap;
    assert_true(x != NULL);
    decided_calls++;
    return n >= decided_from;
}

static void decided_ends_a_wide_series(void **state)
{
    (void)state;
    fake f = {{WIDE, NULL}, {3, 0}, 0.001, 0};
    mc_sampler p = params(4, 12, 100.0);
    p.decided = decided_at;
    double x[12];
    mc_stats st[1];
    decided_from = 1; /* decided at once: still min_n samples */
    decided_calls = 0;
    mc_sampled r = mc_sample(&p, 1, measure, &f, x, st);
    assert_int_equal(r.n, 4);
    assert_true(r.settled);
    assert_true(r.noise > 0.3); /* it stopped on the decision, not on the spread */
    assert_int_equal(decided_calls, 1);
    fake g = {{WIDE, NULL}, {3, 0}, 0.001, 0};
    decided_from = 7;
    r = mc_sample(&p, 1, measure, &g, x, st);
    assert_int_equal(r.n, 7);
    assert_true(r.settled);
    fake h = {{WIDE, NULL}, {3, 0}, 0.001, 0};
    decided_from = 100; /* never */
    r = mc_sample(&p, 1, measure, &h, x, st);
    assert_int_equal(r.n, 12);
    assert_false(r.settled);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(steady_stops_at_min_n),
        cmocka_unit_test(wide_runs_to_the_cap),
        cmocka_unit_test(budget_ends_a_wide_series),
        cmocka_unit_test(budget_never_cuts_below_min_n),
        cmocka_unit_test(one_outlier_does_not_prolong),
        cmocka_unit_test(settles_when_the_spread_narrows),
        cmocka_unit_test(only_watched_series_decide),
        cmocka_unit_test(decided_ends_a_wide_series),
    };
    return cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
}
