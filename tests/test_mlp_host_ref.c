/* Tests of the float64 host reference (common/mlp_host_ref.c), the gold
 * figures of the workload's GPU check: gradients against central finite
 * differences, fp16/bf16 rounding (overflow, subnormals, ties to even), and
 * the SGD, momentum and Adam updates against hand-worked steps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "workload/mlp/mlp_host_ref.h"
#include "workload/core/optimizer_ref.h"
#include "test_util.h"

static void finite_differences(void **state)
{
    (void)state;
    mc_mlp_shape s = {3, 3, 4, 2};
    const int64_t m = 3;
    double *W[3], *b[3], *gW[3], *gb[3];
    unsigned seed = 12345;
    for (int l = 0; l < 3; l++) {
        int64_t in = mc_mlp_in(&s, l), out = mc_mlp_out(&s, l);
        W[l] = calloc((size_t)(in * out), sizeof(double));
        b[l] = calloc((size_t)out, sizeof(double));
        gW[l] = calloc((size_t)(in * out), sizeof(double));
        gb[l] = calloc((size_t)out, sizeof(double));
        for (int64_t i = 0; i < in * out; i++) W[l][i] = (seed = seed * 1103515245u + 12345u) / 4294967296.0 - 0.5;
        for (int64_t i = 0; i < out; i++) b[l][i] = (seed = seed * 1103515245u + 12345u) / 4294967296.0 - 0.3;
    }
    double x[9], y[6];
    for (int i = 0; i < 9; i++) x[i] = (seed = seed * 1103515245u + 12345u) / 4294967296.0 * 2 - 1;
    for (int i = 0; i < 6; i++) y[i] = (seed = seed * 1103515245u + 12345u) / 4294967296.0 * 2 - 1;
    const double scale = 0.5;
    mc_mlp_ref_loss_grad(&s, m, W, b, x, y, scale, NULL, gW, gb);
    const double h = 1e-6;
    double worst = 0;
    for (int l = 0; l < 3; l++)
        for (int j = 0; j < 2; j++) {
            double *p = j ? b[l] : W[l], *g = j ? gb[l] : gW[l];
            int64_t n = j ? mc_mlp_out(&s, l) : mc_mlp_out(&s, l) * mc_mlp_in(&s, l);
            for (int64_t i = 0; i < n; i++) {
                double keep = p[i];
                p[i] = keep + h;
                double lp = mc_mlp_ref_loss_grad(&s, m, W, b, x, y, scale, NULL, NULL, NULL);
                p[i] = keep - h;
                double lm = mc_mlp_ref_loss_grad(&s, m, W, b, x, y, scale, NULL, NULL, NULL);
                p[i] = keep;
                double fd = (lp - lm) / (2 * h);
                worst = fmax(worst, fabs(fd - g[i]) / fmax(fabs(g[i]), 1e-3));
            }
        }
    assert_true(worst < 1e-6);
    for (int l = 0; l < 3; l++) {
        free(W[l]); free(b[l]); free(gW[l]); free(gb[l]);
    }
}

static void rounding(void **state)
{
    (void)state;
    assert_near(mc_round_fp16(1.0 / 3.0), 0.333251953125, 0);
    assert_near(mc_round_fp16(65504.0), 65504.0, 0);
    assert_true(isinf(mc_round_fp16(65520.0)));
    assert_near(mc_round_fp16(0x1p-24), 0x1p-24, 0);
    assert_near(mc_round_fp16(1.0 + 0x1p-11), 1.0, 0); /* a tie: to even */
    assert_near(mc_round_bf16(1.0 / 3.0), 0.333984375, 0);
    assert_near(mc_round_bf16(1.0 + 0x1p-8), 1.0, 0);  /* a tie: to even */
    assert_near(mc_round_bf16(-3.0), -3.0, 0);
}

static void optimizer_refs(void **state)
{
    (void)state;
    double p[2] = {1.0, -1.0}, g[2] = {0.5, -2.0}, m[2] = {0}, v[2] = {0}, buf[2];
    mc_opt_ref_adam(p, g, m, v, 2, 1e-3, 0.9, 0.999, 1e-8, 1); /* first step: lr x sign */
    assert_near(p[0], 1.0 - 1e-3, 1e-9);
    assert_near(p[1], -1.0 + 1e-3, 1e-9);
    double q[2] = {1.0, 1.0};
    mc_opt_ref_momentum(q, g, buf, 2, 0.1, 0.9, true);
    mc_opt_ref_momentum(q, g, buf, 2, 0.1, 0.9, false);
    assert_near(q[0], 1.0 - 0.1 * 0.5 - 0.1 * (0.9 * 0.5 + 0.5), 1e-12);
    mc_opt_ref_sgd(q, g, 1, 1.0);
    assert_near(q[0], 1.0 - 0.05 - 0.095 - 0.5, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finite_differences),
        cmocka_unit_test(rounding),
        cmocka_unit_test(optimizer_refs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
