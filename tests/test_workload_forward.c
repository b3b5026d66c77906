/* Tests of the forward pass alone (mlp_forward.c) without a GPU: the
 * peak, what is held when model(x) returns and after del, with and without
 * grad, against figures computed by hand from the rules (which tensors
 * autograd saves, when Sequential's rebinding drops a layer's input); OOM
 * under a limit as a returned status; the modes through the workload
 * handle. The Transformer's: test_tfm_forward.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "workload/mlp/mlp.h"
#include "workload/core/wl_handle.h"
#include "workload/mlp/mlp_forward.h"
#include "workload/core/pytorch_consts.h"

#define MIB (1ULL << 20)
#define WS (MC_PT_CUBLAS_WS_BYTES + MC_PT_CUBLASLT_WS_BYTES) /* the forward thread's workspaces */

/* in = width = out = 1024, batch 256: every activation is 256 x 1024 x 4 =
 * 1 MiB, a small-pool request (<= kSmallSize), so its block is exactly
 * 1 MiB; each weight is 4 MiB, four of them split off 20 MiB segments with
 * > 1 MiB left each time, so 4 MiB blocks; biases 4 KiB blocks; the 32 MiB
 * workspace takes a segment of exactly its size. Every block is its
 * request, and the sums below are exact. */
static mc_workload_config cfg(int layers)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = layers;
    c.in = c.width = c.out = 1024;
    c.batch = 256;
    return c;
}

static uint64_t params(int layers) { return (uint64_t)layers * (4 * MIB + 4096); }

static mc_workload_forward_result forward(const mc_workload_config *c, bool grad)
{
    char err[200];
    mc_workload *w = mc_workload_create(c, false, NULL, err, sizeof err);
    assert_non_null(w);
    mc_workload_forward_result r;
    assert_int_equal(mc_workload_forward(w, grad, NULL, &r), MC_WL_OK);
    uint64_t live[MC_WL_NCAT];
    mc_workload_live_by_category(w, live);
    assert_int_equal(live[MC_WL_ACTIVATIONS], 0); /* del out, x left no activation */
    mc_workload_destroy(w);
    return r;
}

/* L = 4. grad: x, r0, r1, r2 and out are live when out is made: 5 MiB of
 * activations. no_grad: at most three (the layer's input, its output, and
 * x, which the caller holds), e.g. x, h1 and r1 when r1 is made. */
static void four_layers_by_hand(void **state)
{
    (void)state;
    mc_workload_config c = cfg(4);
    const uint64_t base = params(4) + WS;
    mc_workload_forward_result g = forward(&c, true), n = forward(&c, false);
    assert_int_equal(g.status, MC_WL_OK);
    assert_int_equal(g.peak_allocated, base + 5 * MIB);
    assert_int_equal(n.peak_allocated, base + 3 * MIB);
    assert_int_equal(g.allocated_out, base + 5 * MIB); /* x, r0..r2, out */
    assert_int_equal(n.allocated_out, base + 2 * MIB); /* x, out */
    assert_int_equal(g.saved_bytes, 3 * MIB);          /* the ReLU outputs */
    assert_int_equal(n.saved_bytes, 0);
    assert_int_equal(g.allocated_end, base);
    assert_int_equal(n.allocated_end, base);
    assert_int_equal(g.allocated_before, params(4)); /* the workspaces come at the first addmm */
    assert_int_equal(n.allocated_before, params(4));
    assert_int_equal(g.output_bytes, MIB);
    assert_int_equal(n.output_bytes, MIB);
    assert_int_equal(g.peak_by_category[MC_WL_ACTIVATIONS], 5 * MIB);
    assert_int_equal(n.peak_by_category[MC_WL_ACTIVATIONS], 3 * MIB);
    assert_int_equal(g.peak_by_category[MC_WL_WEIGHTS], params(4));
    assert_int_equal(g.peak_by_category[MC_WL_WORKSPACE], WS);
    uint64_t sum = 0;
    for (int k = 0; k < MC_WL_NCAT; k++) sum += n.peak_by_category[k];
    assert_int_equal(sum, n.peak_allocated);
    assert_true(isnan(g.time_s));
}

/* The saved activations grow with depth (L + 1 of them at the peak), the
 * no_grad peak does not (3); at L = 2 the two are equal. */
static void depth(void **state)
{
    (void)state;
    for (int L = 2; L <= 6; L++) {
        mc_workload_config c = cfg(L);
        const uint64_t base = params(L) + WS;
        mc_workload_forward_result g = forward(&c, true), n = forward(&c, false);
        assert_int_equal(g.peak_allocated, base + (uint64_t)(L + 1) * MIB);
        assert_int_equal(n.peak_allocated, base + 3 * MIB);
        assert_int_equal(g.saved_bytes, (uint64_t)(L - 1) * MIB);
    }
}

/* Activations over the batch: grad (L+1) x B x H x 4 bytes, no_grad 3 x. */
static void batch_scales(void **state)
{
    (void)state;
    mc_workload_config c = cfg(3);
    c.batch = 64; /* 256 KiB activations: small pool, exact blocks */
    const uint64_t a = 64 * 1024 * 4, base = params(3) + WS;
    mc_workload_forward_result g = forward(&c, true), n = forward(&c, false);
    assert_int_equal(g.peak_allocated, base + 4 * a);
    assert_int_equal(n.peak_allocated, base + 3 * a);
}

/* Workspaces that exist already (a training step made them) are not made
 * again, and still count at the peak. */
static void workspaces_kept(void **state)
{
    (void)state;
    mc_workload_config c = cfg(3);
    char err[200];
    mc_workload *w = mc_workload_create(&c, false, NULL, err, sizeof err);
    assert_non_null(w);
    mc_workload_forward_result r1, r2;
    assert_int_equal(mc_workload_forward(w, false, NULL, &r1), MC_WL_OK);
    assert_int_equal(mc_workload_forward(w, false, NULL, &r2), MC_WL_OK);
    assert_int_equal(r1.peak_allocated, r2.peak_allocated);
    assert_int_equal(r2.allocated_end, params(3) + WS);
    mc_workload_destroy(w);
}

/* Under a 59 MiB limit: weights take a 20 MiB and a 2 MiB segment, the
 * workspace 32 MiB; the grad forward's 5 activations + the 1 MiB cuBLASLt
 * workspace + the biases need 4 more 2 MiB segments (60 MiB in all): OOM,
 * returned, and what the forward held is freed. no_grad needs 3 (58 MiB). */
static void oom_is_a_status(void **state)
{
    (void)state;
    mc_workload_config c = cfg(4);
    c.alloc.limit_bytes = 59 * MIB;
    char err[200];
    mc_workload *w = mc_workload_create(&c, false, NULL, err, sizeof err);
    assert_non_null(w);
    mc_workload_forward_result r;
    assert_int_equal(mc_workload_forward(w, true, NULL, &r), MC_WL_OOM);
    assert_int_equal(r.allocated_end, params(4) + WS);
    assert_int_equal(mc_workload_forward(w, false, NULL, &r), MC_WL_OK);
    assert_int_equal(r.peak_allocated, params(4) + WS + 3 * MIB);
    mc_workload_destroy(w);
}

/* Through the workload handle (core/wl_handle.h): the MLP has no dropout
 * and no fast path, so eval() under no_grad and inference_mode are no_grad. */
static void handle_modes(void **state)
{
    (void)state;
    mc_workload_config c = cfg(4);
    mc_workload_forward_result r[MC_WL_FWD_NMODE];
    for (int m = 0; m < MC_WL_FWD_NMODE; m++) {
        char err[200];
        mc_wl *w = mc_workload_handle(mc_workload_create(&c, false, NULL, err, sizeof err));
        assert_non_null(w);
        assert_int_equal(mc_wl_forward(w, (mc_wl_fwd_mode)m, NULL, &r[m]), MC_WL_OK);
        mc_wl_destroy(w);
    }
    const uint64_t base = params(4) + WS;
    assert_int_equal(r[MC_WL_FWD_GRAD].peak_allocated, base + 5 * MIB);
    for (int m = MC_WL_FWD_NO_GRAD; m < MC_WL_FWD_NMODE; m++) {
        assert_int_equal(r[m].peak_allocated, base + 3 * MIB);
        assert_int_equal(r[m].saved_bytes, 0);
        assert_int_equal(r[m].fast_layers + r[m].fast_mha, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(four_layers_by_hand),
        cmocka_unit_test(depth),
        cmocka_unit_test(batch_scales),
        cmocka_unit_test(workspaces_kept),
        cmocka_unit_test(oom_is_a_status),
        cmocka_unit_test(handle_modes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
