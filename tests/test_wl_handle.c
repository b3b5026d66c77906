/* Tests of core/wl_handle.h without a GPU: a handle over the MLP and over
 * the Transformer steps exactly as the model's own calls do (the same step
 * results from two fresh models of one configuration), reports the model's
 * allocator and live bytes, and passes a failed create through as NULL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "test_util.h"
#include "workload/core/wl_handle.h"
#include "workload/mlp/mlp.h"
#include "workload/transformer/tfm.h"

#define STEPS 3

static mc_workload_config mlp_cfg(void)
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

static mc_tfm_config tfm_cfg(void)
{
    mc_tfm_config c = mc_tfm_config_default();
    c.d_model = 32;
    c.heads = 4;
    c.enc_layers = 2;
    c.dec_layers = 2;
    c.ff = 64;
    c.seq = 8;
    c.batch = 4;
    return c;
}

/* The fields a model-only step fills with figures (loss and time are NaN). */
static void assert_same_step(const mc_workload_step_result *a, const mc_workload_step_result *b)
{
    assert_int_equal(a->step, b->step);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->peak_allocated, b->peak_allocated);
    assert_int_equal(a->allocated_end, b->allocated_end);
    assert_int_equal(a->peak_reserved, b->peak_reserved);
    assert_int_equal(a->reserved_end, b->reserved_end);
    assert_memory_equal(a->peak_by_category, b->peak_by_category, sizeof a->peak_by_category);
}

/* The handle's live bytes sum to the allocator's memory_allocated. */
static void assert_live_sums(const mc_wl *w)
{
    uint64_t live[MC_WL_NCAT], sum = 0;
    mc_wl_live_by_category(w, live);
    for (int k = 0; k < MC_WL_NCAT; k++) sum += live[k];
    assert_true(sum > 0);
    assert_int_equal(sum, ca_get_stats(mc_wl_allocator(w))->allocated_bytes.current);
}

static void mlp_handle_steps_as_the_model(void **state)
{
    (void)state;
    char err[256];
    mc_workload_config c = mlp_cfg();
    mc_workload *m = mc_workload_create(&c, false, NULL, err, sizeof err);
    mc_workload *inner = mc_workload_create(&c, false, NULL, err, sizeof err);
    assert_non_null(m);
    assert_non_null(inner);
    mc_wl *w = mc_workload_handle(inner);
    assert_non_null(w);
    assert_string_equal(mc_wl_name(w), "mlp");
    assert_ptr_equal(mc_wl_allocator(w), mc_workload_allocator(inner));
    for (int s = 0; s < STEPS; s++) {
        mc_workload_step_result a, b;
        assert_int_equal(mc_workload_step(m, &a), MC_WL_OK);
        assert_int_equal(mc_wl_step(w, &b), MC_WL_OK);
        assert_same_step(&a, &b);
        assert_live_sums(w);
    }
    mc_workload_destroy(m);
    mc_wl_destroy(w); /* the model too: LeakSanitizer would say otherwise */
}

static void tfm_handle_steps_as_the_model(void **state)
{
    (void)state;
    char err[256];
    mc_tfm_config c = tfm_cfg();
    mc_tfm *t = mc_tfm_create(&c, false, NULL, err, sizeof err);
    mc_tfm *inner = mc_tfm_create(&c, false, NULL, err, sizeof err);
    assert_non_null(t);
    assert_non_null(inner);
    mc_wl *w = mc_tfm_handle(inner);
    assert_non_null(w);
    assert_string_equal(mc_wl_name(w), "transformer");
    assert_ptr_equal(mc_wl_allocator(w), mc_tfm_allocator(inner));
    for (int s = 0; s < STEPS; s++) {
        mc_workload_step_result a, b;
        assert_int_equal(mc_tfm_step(t, &a), MC_WL_OK);
        assert_int_equal(mc_wl_step(w, &b), MC_WL_OK);
        assert_same_step(&a, &b);
        assert_live_sums(w);
    }
    mc_tfm_destroy(t);
    mc_wl_destroy(w);
}

static void failed_create_is_null(void **state)
{
    (void)state;
    char err[256] = "";
    mc_workload_config c = mlp_cfg();
    c.layers = 1; /* refused */
    assert_null(mc_workload_handle(mc_workload_create(&c, false, NULL, err, sizeof err)));
    assert_true(err[0] != '\0');
    mc_tfm_config t = tfm_cfg();
    t.heads = 5; /* does not divide d_model */
    err[0] = '\0';
    assert_null(mc_tfm_handle(mc_tfm_create(&t, false, NULL, err, sizeof err)));
    assert_true(err[0] != '\0');
    mc_wl_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp_handle_steps_as_the_model),
        cmocka_unit_test(tfm_handle_steps_as_the_model),
        cmocka_unit_test(failed_create_is_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
