/* Tests of core/wl_measure.h without a GPU: the loop's figures against the
 * steps it ran, an OOM as a result, and each check it makes, over the MLP in
 * model-only mode behind a test handle that alters the step results (a loss,
 * a peak, a category, a step time) as a wrong or a GPU model would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "test_util.h"
#include "workload/core/wl_handle.h"
#include "workload/core/wl_measure.h"
#include "workload/mlp/mlp.h"

static mc_workload_config cfg(void)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = 3;
    c.in = 40;
    c.width = 96;
    c.out = 24;
    c.batch = 64;
    c.optimizer = MC_WL_ADAM;
    return c;
}

static mc_wl *mlp(const mc_workload_config *c)
{
    char err[256];
    mc_wl *w = mc_workload_handle(mc_workload_create(c, false, NULL, err, sizeof err));
    if (!w) print_error("create: %s\n", err);
    assert_non_null(w);
    return w;
}

/* ------------------------------------------------------------ a handle that alters steps */

typedef struct {
    mc_workload *w;
    int bad_loss_step;   /* this step's loss NaN (0: none); others 1.0 */
    int moving_peak;     /* every step's peak (and one category) this many bytes more than the last */
    int bad_sum_step;    /* this step's weights category off by one byte (0: none; -1: every step) */
} altered;

static mc_wl_status alt_step(void *m, mc_workload_step_result *r)
{
    altered *a = m;
    mc_wl_status s = mc_workload_step(a->w, r);
    r->loss = r->step == a->bad_loss_step ? NAN : 1.0;
    r->step_time_s = r->step;  /* seconds: the step's number, so the times are known */
    uint64_t more = (uint64_t)a->moving_peak * (uint64_t)r->step;
    r->peak_allocated += more;
    r->peak_by_category[MC_WL_OTHER] += more;
    if (r->step == a->bad_sum_step || a->bad_sum_step < 0) r->peak_by_category[MC_WL_WEIGHTS]++;
    return s;
}

static const ca_allocator *alt_allocator(const void *m)
{
    return mc_workload_allocator(((const altered *)m)->w);
}

static void alt_live(const void *m, uint64_t out[MC_WL_NCAT])
{
    mc_workload_live_by_category(((const altered *)m)->w, out);
}

static void alt_destroy(void *m)
{
    mc_workload_destroy(((altered *)m)->w);
}

/* A profiled step as a GPU model's would be: the step, and a table whose
 * gemm time is the step's number (ms), the step 10 ms. */
static mc_wl_status alt_profile(void *m, mc_workload_step_result *r, mc_prof_table *t)
{
    mc_wl_status s = alt_step(m, r);
    mc_prof_table_init(t);
    mc_prof_table_add(t, MC_PROF_GEMM, (double)r->step);
    mc_prof_table_finish(t, 10.0);
    return s;
}

static const mc_wl_ops ALT = {"altered", alt_step, alt_allocator, alt_live, alt_destroy, NULL, NULL};
static const mc_wl_ops ALT_PROF = {"altered", alt_step, alt_allocator, alt_live, alt_destroy, alt_profile, NULL};

static mc_wl *alt(altered *a)
{
    mc_workload_config c = cfg();
    char err[256];
    a->w = mc_workload_create(&c, false, NULL, err, sizeof err);
    assert_non_null(a->w);
    return mc_wl_wrap(&ALT, a);
}

/* ------------------------------------------------------------ tests */

/* The figures are the measured steps': the first one's categories, the max
 * peak and reserved; a model-only run's time is NaN and nothing is wrong. */
static void figures_of_measured_steps(void **state)
{
    (void)state;
    mc_workload_config c = cfg();
    mc_wl *w = mlp(&c);
    const mc_wl_plan p = {.warm = 1, .reps = 3};
    mc_wl_measured f = mc_wl_measure(w, &p);
    assert_false(f.oom);
    assert_int_equal(f.n, 4);
    assert_int_equal(f.measured, 3);
    assert_int_equal(mc_wl_problems(&f), 0);
    assert_true(f.steady);
    uint64_t peak = 0, reserved = 0;
    for (int s = 1; s < 4; s++) {
        assert_int_equal(f.step[s].step, s + 1);
        if (f.step[s].peak_allocated > peak) peak = f.step[s].peak_allocated;
        if (f.step[s].peak_reserved > reserved) reserved = f.step[s].peak_reserved;
    }
    assert_int_equal(f.peak, peak);
    assert_int_equal(f.reserved, reserved);
    assert_memory_equal(f.cat, f.step[1].peak_by_category, sizeof f.cat);
    /* step 1 has no Adam state yet: its peak is below the steady one */
    assert_true(f.step[0].peak_allocated < f.peak);
    assert_true(isnan(f.time.median));
    mc_wl_measured_free(&f);
    mc_wl_destroy(w);
}

/* An OOM ends the steps and is a result, not a problem. */
static void oom_is_a_result(void **state)
{
    (void)state;
    mc_workload_config c = cfg();
    c.alloc.limit_bytes = 20ULL << 20; /* parameters fit, the 32 MiB cuBLAS workspace does not */
    mc_wl *w = mlp(&c);
    const mc_wl_plan p = {.warm = 1, .reps = 2};
    mc_wl_measured f = mc_wl_measure(w, &p);
    assert_true(f.oom);
    assert_int_equal(f.n, 0);
    assert_int_equal(f.measured, 0);
    assert_int_equal(f.peak, 0);
    assert_true(isnan(f.time.median));
    assert_int_equal(mc_wl_problems(&f), 0);
    mc_wl_measured_free(&f);
    mc_wl_destroy(w);
}

/* On a GPU a loss that is not finite is a problem; model-only it is not read. */
static void loss_checked_on_gpu(void **state)
{
    (void)state;
    for (int gpu = 0; gpu < 2; gpu++) {
        altered a = {.bad_loss_step = 2};
        mc_wl *w = alt(&a);
        const mc_wl_plan p = {.warm = 1, .reps = 2, .on_gpu = gpu};
        mc_wl_measured f = mc_wl_measure(w, &p);
        assert_int_equal(mc_wl_problems(&f), gpu);
        if (gpu) assert_non_null(strstr(f.problem[0], "step 2: loss nan is not finite"));
        mc_wl_measured_free(&f);
        mc_wl_destroy(w);
    }
}

/* Categories that do not sum to the peak, at any step, warm ones too. */
static void categories_must_sum(void **state)
{
    (void)state;
    altered a = {.bad_sum_step = 1};
    mc_wl *w = alt(&a);
    const mc_wl_plan p = {.warm = 1, .reps = 1};
    mc_wl_measured f = mc_wl_measure(w, &p);
    assert_int_equal(mc_wl_problems(&f), 1);
    assert_non_null(strstr(f.problem[0], "step 1: the categories sum to"));
    mc_wl_measured_free(&f);
    mc_wl_destroy(w);
}

/* A peak that moves between the measured steps is not a steady state;
 * many problems are counted, the last kept slot says how many were left out. */
static void unsteady_and_many_problems(void **state)
{
    (void)state;
    altered a = {.moving_peak = 512};
    mc_wl *w = alt(&a);
    const mc_wl_plan p = {.warm = 1, .reps = 2};
    mc_wl_measured f = mc_wl_measure(w, &p);
    assert_false(f.steady);
    assert_int_equal(f.peak, f.step[2].peak_allocated); /* the max */
    assert_int_equal(mc_wl_problems(&f), 1);
    assert_non_null(strstr(f.problem[0], "not a steady state"));
    mc_wl_measured_free(&f);
    mc_wl_destroy(w);

    altered m = {.moving_peak = 512};
    w = alt(&m);
    const mc_wl_plan may = {.warm = 1, .reps = 2, .peak_may_move = true};
    f = mc_wl_measure(w, &may);
    assert_false(f.steady);
    assert_int_equal(mc_wl_problems(&f), 0);
    mc_wl_measured_free(&f);
    mc_wl_destroy(w);

    altered b = {.bad_sum_step = -1};
    w = alt(&b);
    const mc_wl_plan many = {.warm = 1, .reps = MC_WL_PROBLEMS + 1}; /* steady: one problem a step */
    mc_wl_measured g = mc_wl_measure(w, &many);
    assert_int_equal(g.nproblem, MC_WL_PROBLEMS + 2);
    assert_int_equal(mc_wl_problems(&g), MC_WL_PROBLEMS);
    assert_non_null(strstr(g.problem[0], "step 1: the categories"));
    assert_non_null(strstr(g.problem[MC_WL_PROBLEMS - 2], "the categories"));
    assert_string_equal(g.problem[MC_WL_PROBLEMS - 1], "3 more problems not shown");
    mc_wl_measured_free(&g);
    mc_wl_destroy(w);
}

/* The timed steps (GPU) run after the measured ones; time is theirs, else
 * the measured steps'. */
static void timed_steps(void **state)
{
    (void)state;
    altered a = {0};
    mc_wl *w = alt(&a);
    const mc_wl_plan p = {.warm = 2, .reps = 1, .timed_warm = 1, .timed_reps = 3, .on_gpu = true};
    mc_wl_measured f = mc_wl_measure(w, &p);
    assert_int_equal(mc_wl_problems(&f), 0);
    assert_int_equal(f.n, 3);
    assert_int_equal(f.time.n, 3);
    assert_true(f.time.min == 5.0 && f.time.median == 6.0 && f.time.max == 7.0); /* steps 5..7 */
    assert_int_equal(f.ntimes, 3); /* every timed step's time kept, in order, for band.h */
    assert_true(f.times[0] == 5.0 && f.times[1] == 6.0 && f.times[2] == 7.0);
    mc_wl_measured_free(&f);
    assert_true(f.times == NULL && f.ntimes == 0);
    mc_wl_destroy(w);

    altered b = {0};
    w = alt(&b);
    const mc_wl_plan q = {.warm = 1, .reps = 2, .on_gpu = true};
    f = mc_wl_measure(w, &q);
    assert_true(f.time.n == 2 && f.time.min == 2.0 && f.time.max == 3.0); /* the measured steps */
    assert_true(f.ntimes == 2 && f.times[0] == 2.0 && f.times[1] == 3.0);
    mc_wl_measured_free(&f);
    mc_wl_destroy(w);

    altered d = {0};
    w = alt(&d);
    const mc_wl_plan host = {.warm = 2, .reps = 1, .timed_warm = 1, .timed_reps = 3};
    f = mc_wl_measure(w, &host);   /* model-only: no timed steps */
    assert_true(isnan(f.time.median));
    assert_true(f.ntimes == 0 && f.times == NULL);
    mc_wl_measured_free(&f);
    mc_wl_destroy(w);
}
/* plan.profile: on a GPU one more step after the timed ones, profiled (its
 * table kept, its step checked); model-only, or a workload without a
 * profiled step, none. */
static void profiled_step(void **state)
{
    (void)state;
    altered a = {0};
    mc_wl *w = alt(&a);
    w->ops = &ALT_PROF;
    const mc_wl_plan p = {.warm = 1, .reps = 2, .timed_warm = 1, .timed_reps = 2, .on_gpu = true, .profile = true};
    mc_wl_measured f = mc_wl_measure(w, &p);
    assert_true(f.have_prof);
    assert_true(fabs(f.prof.ms[MC_PROF_GEMM] - 7.0) < 1e-12); /* steps 1-3, then 4-6 timed: the 7th */
    assert_true(fabs(f.prof.idle_ms - 3.0) < 1e-12);
    assert_int_equal(mc_wl_problems(&f), 0);
    mc_wl_measured_free(&f);
    const mc_wl_plan host = {.warm = 1, .reps = 2, .profile = true}; /* model-only: no profiled step */
    f = mc_wl_measure(w, &host);
    assert_false(f.have_prof);
    mc_wl_measured_free(&f);
    w->ops = &ALT; /* no profiled step: none, and nothing wrong */
    f = mc_wl_measure(w, &p);
    assert_false(f.have_prof);
    assert_int_equal(mc_wl_problems(&f), 0);
    mc_wl_measured_free(&f);
    mc_wl_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(figures_of_measured_steps),
        cmocka_unit_test(oom_is_a_result),
        cmocka_unit_test(loss_checked_on_gpu),
        cmocka_unit_test(categories_must_sum),
        cmocka_unit_test(unsteady_and_many_problems),
        cmocka_unit_test(timed_steps),
        cmocka_unit_test(profiled_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
