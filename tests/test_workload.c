/* Tests of the training workload without a GPU (common/workload*.c in
 * model-only mode): each category's bytes against the analytic figures,
 * optimizer state at the first step, accumulation and checkpointing against
 * the peak, OOM under a limit as a returned status, the trace against its
 * own replay, the reduction scratch. The command line is tested in
 * test_workload_args.c, the float64 reference in test_mlp_host_ref.c. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_host.h"
#include "test_util.h"
#include "trace/trace.h"
#include "workload/mlp/mlp.h"
#include "workload/mlp/mlp_internal.h"
#include "workload/core/pytorch_consts.h"
#include "workload/core/reduce_scratch.h"

#define WS MC_PT_CUBLAS_WS_BYTES     /* the cuBLAS workspace of a handle on sm_90 */
#define LTWS MC_PT_CUBLASLT_WS_BYTES /* the cuBLASLt workspace */

/* Small shapes: every tensor in the small pool, so each block is exactly
 * its rounded size and the analytic sums are exact. */
static mc_workload_config small_cfg(mc_wl_optimizer opt, mc_wl_precision prec)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = 3;
    c.in = 40;
    c.width = 96;
    c.out = 24;
    c.batch = 64;
    c.optimizer = opt;
    c.precision = prec;
    return c;
}

static mc_workload *make(const mc_workload_config *c)
{
    char err[200];
    mc_workload *w = mc_workload_create(c, false, NULL, err, sizeof err);
    if (!w) print_error("create: %s\n", err);
    assert_non_null(w);
    return w;
}

/* Σ over parameters of round_size(bytes): the weights' blocks. */
static uint64_t param_blocks(const mc_workload_config *c)
{
    uint64_t s = 0;
    for (int l = 0; l < c->layers; l++) {
        uint64_t in = (uint64_t)(l ? c->width : c->in), out = (uint64_t)(l == c->layers - 1 ? c->out : c->width);
        s += ca_round_size(in * out * 4) + ca_round_size(out * 4);
    }
    return s;
}

static void weights_analytic(void **state)
{
    (void)state;
    mc_workload_config c = small_cfg(MC_WL_SGD, MC_WL_FP32);
    assert_int_equal(mc_workload_param_count(&c), 40 * 96 + 96 + 96 * 96 + 96 + 96 * 24 + 24);
    mc_workload *w = make(&c);
    uint64_t cat[MC_WL_NCAT];
    mc_workload_live_by_category(w, cat);
    assert_int_equal(cat[MC_WL_WEIGHTS], param_blocks(&c));
    assert_int_equal(ca_get_stats(mc_workload_allocator(w))->allocated_bytes.current, param_blocks(&c));
    mc_workload_destroy(w);
}

/* End of each step: weights + optimizer state + workspaces (+ GradScaler's
 * two scalars), nothing else; the state appears at step 1 and stays. */
static void end_of_step_state(void **state)
{
    (void)state;
    static const int mult[3] = {0, 1, 2}; /* state per parameter: sgd, momentum, adam */
    for (int o = MC_WL_SGD; o <= MC_WL_ADAM; o++)
        for (int p = MC_WL_FP32; p <= MC_WL_BF16; p++) {
            mc_workload_config c = small_cfg((mc_wl_optimizer)o, (mc_wl_precision)p);
            mc_workload *w = make(&c);
            uint64_t W = param_blocks(&c), scaler = p == MC_WL_FP16 ? 1024 : 0;
            for (int s = 1; s <= 3; s++) {
                mc_workload_step_result r;
                assert_int_equal(mc_workload_step(w, &r), MC_WL_OK);
                uint64_t cat[MC_WL_NCAT];
                mc_workload_live_by_category(w, cat);
                assert_int_equal(cat[MC_WL_WEIGHTS], W);
                assert_int_equal(cat[MC_WL_OPTIMIZER], (uint64_t)mult[o] * W);
                assert_int_equal(cat[MC_WL_WORKSPACE], 2 * WS + LTWS);
                assert_int_equal(cat[MC_WL_GRADS] + cat[MC_WL_ACTIVATIONS] + cat[MC_WL_CASTS], 0);
                assert_int_equal(cat[MC_WL_OTHER], scaler);
                assert_int_equal(r.allocated_end, W * (1 + (uint64_t)mult[o]) + 2 * WS + LTWS + scaler);
                uint64_t sum = 0;
                for (int k = 0; k < MC_WL_NCAT; k++) sum += r.peak_by_category[k];
                assert_int_equal(sum, r.peak_allocated);
                assert_true(r.peak_reserved >= r.peak_allocated);
            }
            mc_workload_destroy(w);
        }
}

/* Adam's peak is in the step: weights, grads, two states and the sqrt list. */
static void adam_peak(void **state)
{
    (void)state;
    mc_workload_config c = small_cfg(MC_WL_ADAM, MC_WL_FP32);
    mc_workload *w = make(&c);
    mc_workload_step_result r;
    mc_workload_step(w, &r);
    uint64_t W = param_blocks(&c);
    assert_int_equal(r.peak_by_category[MC_WL_OPTIMIZER], 3 * W);
    assert_int_equal(r.peak_by_category[MC_WL_GRADS], W);
    assert_int_equal(r.peak_allocated, 5 * W + 2 * WS + LTWS);
    mc_workload_destroy(w);
}

static uint64_t peak_of(mc_workload_config c, int steps, uint64_t *act)
{
    mc_workload *w = make(&c);
    mc_workload_step_result r = {0};
    for (int s = 0; s < steps; s++) mc_workload_step(w, &r);
    if (act) *act = r.peak_by_category[MC_WL_ACTIVATIONS];
    mc_workload_destroy(w);
    return r.peak_allocated;
}

/* Accumulation over K micro-batches lowers the peak where activations dominate. */
static void accumulation_lowers_peak(void **state)
{
    (void)state;
    mc_workload_config c = small_cfg(MC_WL_SGD, MC_WL_FP32);
    c.layers = 6;
    c.in = c.width = c.out = 256;
    c.batch = 512; /* activations 512 KiB each, weights 256 KiB */
    uint64_t a1, a4;
    uint64_t p1 = peak_of(c, 2, &a1);
    c.accum = 4;
    uint64_t p4 = peak_of(c, 2, &a4);
    assert_true(p4 < p1);
    assert_true(a4 * 2 < a1);
}

/* Checkpointing each Linear+ReLU pair saves nothing in this network: the
 * pair's input is kept (as the next Linear would keep it), and the backward
 * recomputes the pair (and its thread needs a cuBLASLt workspace). */
static void checkpoint_keeps_peak(void **state)
{
    (void)state;
    for (int p = MC_WL_FP32; p <= MC_WL_BF16; p++) {
        mc_workload_config c = small_cfg(MC_WL_MOMENTUM, (mc_wl_precision)p);
        c.layers = 5;
        uint64_t plain = peak_of(c, 2, NULL);
        c.checkpoint = true;
        uint64_t ck = peak_of(c, 2, NULL);
        assert_true(ck >= plain);
        assert_true(ck <= plain + LTWS + 4 * (uint64_t)c.batch * (uint64_t)c.width * 4);
    }
}

/* Mixed precision: each micro-step casts every weight once (autocast's
 * cache), and no cast outlives the step. */
static void casts_in_step(void **state)
{
    (void)state;
    mc_workload_config c = small_cfg(MC_WL_SGD, MC_WL_BF16);
    c.accum = 2;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    char err[200];
    mc_workload *w = mc_workload_create(&c, false, fp, err, sizeof err);
    assert_non_null(w);
    mc_workload_step_result r;
    mc_workload_step(w, &r);
    uint64_t cat[MC_WL_NCAT];
    mc_workload_live_by_category(w, cat);
    assert_int_equal(cat[MC_WL_CASTS], 0);
    mc_workload_destroy(w);
    fclose(fp);
    int casts = 0;
    for (const char *p = buf; (p = strstr(p, "autocast weight cast")); p++) casts++;
    assert_int_equal(casts, c.layers * c.accum);
    free(buf);
}

static void oom_is_a_status(void **state)
{
    (void)state;
    mc_workload_config c = small_cfg(MC_WL_ADAM, MC_WL_FP32);
    c.alloc.limit_bytes = 20ULL << 20; /* parameters fit, the 32 MiB workspace does not */
    mc_workload *w = make(&c);
    assert_int_equal(mc_workload_setup_status(w), MC_WL_OK);
    for (int s = 1; s <= 3; s++) {
        mc_workload_step_result r;
        assert_int_equal(mc_workload_step(w, &r), MC_WL_OOM);
        assert_int_equal(r.status, MC_WL_OOM);
        assert_int_equal(r.allocated_end, param_blocks(&c)); /* the step's tensors are gone */
        assert_true(r.peak_reserved <= c.alloc.limit_bytes);
    }
    assert_true(ca_get_stats(mc_workload_allocator(w))->num_ooms >= 3);
    mc_workload_destroy(w);

    c.alloc.limit_bytes = 1ULL << 20; /* not even the parameters' 2 MiB segment */
    w = make(&c);
    assert_int_equal(mc_workload_setup_status(w), MC_WL_OOM);
    mc_workload_step_result r;
    assert_int_equal(mc_workload_step(w, &r), MC_WL_OOM);
    assert_int_equal(r.allocated_end, 0);
    mc_workload_destroy(w);
}

/* Every limit from nothing to enough, 2 MiB apart: each step is ok or oom,
 * the allocator's invariants hold, and an OOM leaves only what persists
 * (parameters, optimizer state, workspaces, GradScaler state). */
static void oom_anywhere(void **state)
{
    (void)state;
    for (int v = 0; v < 2; v++) {
        mc_workload_config c = small_cfg(MC_WL_ADAM, v ? MC_WL_FP16 : MC_WL_FP32);
        c.in = 1000;
        c.width = 700;
        c.accum = 2;
        c.checkpoint = v == 1;
        uint64_t need = 0;
        {
            mc_workload *w = make(&c);
            mc_workload_step_result r;
            mc_workload_step(w, &r);
            mc_workload_step(w, &r);
            need = r.peak_reserved;
            mc_workload_destroy(w);
        }
        int ooms = 0, oks = 0;
        for (uint64_t lim = 2ULL << 20; lim <= need + (4ULL << 20); lim += 2ULL << 20) {
            c.alloc.limit_bytes = lim;
            mc_workload *w = make(&c);
            for (int s = 0; s < 2; s++) {
                mc_workload_step_result r;
                mc_wl_status st = mc_workload_step(w, &r);
                assert_true(st == MC_WL_OK || st == MC_WL_OOM);
                char err[200];
                assert_int_equal(ca_check_invariants(mc_workload_allocator(w), err, sizeof err), 0);
                uint64_t cat[MC_WL_NCAT];
                mc_workload_live_by_category(w, cat);
                assert_int_equal(cat[MC_WL_GRADS] + cat[MC_WL_ACTIVATIONS] + cat[MC_WL_CASTS], 0);
                assert_true(r.peak_reserved <= lim);
                if (st == MC_WL_OOM) ooms++; else oks++;
            }
            mc_workload_destroy(w);
        }
        assert_true(ooms > 4 && oks >= 2);
    }
}

static void overflow_skips(void **state)
{
    (void)state;
    mc_workload_config c = small_cfg(MC_WL_ADAM, MC_WL_FP16);
    c.inject_overflow_step = 1;
    mc_workload *w = make(&c);
    mc_workload_step_result r;
    mc_workload_step(w, &r);
    assert_true(r.skipped);
    assert_near(r.loss_scale, 32768.0, 0);
    uint64_t cat[MC_WL_NCAT];
    mc_workload_live_by_category(w, cat);
    assert_int_equal(cat[MC_WL_OPTIMIZER], 0); /* no step: no Adam state yet */
    mc_workload_step(w, &r);
    assert_false(r.skipped);
    mc_workload_live_by_category(w, cat);
    assert_int_equal(cat[MC_WL_OPTIMIZER], 2 * param_blocks(&c));
    mc_workload_destroy(w);
}

/* The trace, replayed through a fresh allocator at its addresses, gives the
 * workload's own figures at every step end and peak. */
static void trace_replays(void **state)
{
    (void)state;
    for (int v = 0; v < 3; v++) {
        mc_workload_config c = small_cfg(v == 2 ? MC_WL_ADAM : MC_WL_MOMENTUM,
                                         v == 0 ? MC_WL_FP32 : MC_WL_FP16);
        c.checkpoint = v == 1;
        c.accum = v == 2 ? 2 : 1;
        c.in = 1000; c.width = 700; /* large-pool weights too */
        char *buf = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&buf, &len);
        assert_non_null(fp);
        char err[200];
        mc_workload *w = mc_workload_create(&c, false, fp, err, sizeof err);
        assert_non_null(w);
        mc_workload_step_result r[2];
        mc_workload_step(w, &r[0]);
        mc_workload_step(w, &r[1]);
        mc_workload_destroy(w);
        fclose(fp);
        ca_trace t;
        assert_int_equal(ca_trace_parse(&t, "workload", buf, len, err, sizeof err), 0);
        ca_host_device *d = ca_host_create(80ULL << 30);
        ca_allocator *a = ca_create(&t.cfg, ca_host_backend(d));
        uint64_t *addr = calloc(t.n_slots + 1, sizeof *addr);
        int step = -1;
        for (size_t i = 0; i < t.n_ops; i++) {
            const ca_trace_op *op = &t.ops[i];
            if (op->kind == CA_OP_RESET_PEAK) {
                if (step >= 0) assert_int_equal(ca_get_stats(a)->allocated_bytes.peak, r[step].peak_allocated);
                step++;
                ca_reset_peak(a);
            } else if (op->kind == CA_OP_ALLOC) {
                ca_host_hint_next(d, op->addr); /* used only if a segment is made */
                assert_int_equal(ca_malloc(a, op->bytes, &addr[op->slot]), CA_OK);
                ca_host_hint_next(d, 0);
                assert_int_equal(addr[op->slot], op->addr);
            } else if (op->kind == CA_OP_FREE) {
                assert_int_equal(ca_free(a, addr[op->slot]), 0);
            }
        }
        assert_int_equal(step, 1);
        assert_int_equal(ca_get_stats(a)->allocated_bytes.peak, r[1].peak_allocated);
        assert_int_equal(ca_get_stats(a)->allocated_bytes.current, r[1].allocated_end);
        free(addr);
        ca_destroy(a);
        ca_host_destroy(d);
        ca_trace_free(&t);
        free(buf);
    }
}

static void reduce_scratch(void **state)
{
    (void)state;
    uint64_t buf, sem;
    wl_reduce_scratch(1, 512, false, 4, 4, 132, &buf, &sem); /* tiny mean: one block */
    assert_int_equal(buf + sem, 0);
    wl_reduce_scratch(1, 256 * 1024, false, 4, 4, 132, &buf, &sem); /* split across blocks */
    assert_true(buf > 0 && buf <= 4096 && sem == 4);
    wl_reduce_scratch(1024, 256, true, 4, 4, 132, &buf, &sem); /* a bias gradient */
    assert_int_equal(buf + sem, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(weights_analytic),
        cmocka_unit_test(end_of_step_state),
        cmocka_unit_test(adam_peak),
        cmocka_unit_test(accumulation_lowers_peak),
        cmocka_unit_test(checkpoint_keeps_peak),
        cmocka_unit_test(casts_in_step),
        cmocka_unit_test(oom_is_a_status),
        cmocka_unit_test(oom_anywhere),
        cmocka_unit_test(overflow_skips),
        cmocka_unit_test(trace_replays),
        cmocka_unit_test(reduce_scratch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
