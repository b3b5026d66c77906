/* mlp_host_ref.h: the training workload's arithmetic in float64 on the host,
 * for small shapes: the reference the GPU check (mlp_verify.c) and the unit
 * tests compare against. Row-major, as mlp.h: W[l] is [out_l, in_l],
 * x [m, in], y [m, out].
 *
 * Mixed precision: where the GPU stores a tensor in fp16 or bf16 (autocast's
 * casts of weights, biases and the input, each Linear's output, the
 * gradients of the backward), the reference rounds it the same way (round
 * to nearest even), so what remains between the two is fp32 accumulation
 * order, not the format. rnd NULL: no rounding (fp32). */
#ifndef MC_MLP_HOST_REF_H
#define MC_MLP_HOST_REF_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef double (*mc_round_fn)(double);
double mc_round_fp16(double v);   /* IEEE binary16, overflow to +-inf */
double mc_round_bf16(double v);   /* bfloat16 */
double mc_round_fp32(double v);   /* (double)(float)v */

typedef struct {
    int layers;
    int64_t in, width, out;
} mc_mlp_shape;

int64_t mc_mlp_in(const mc_mlp_shape *s, int l);
int64_t mc_mlp_out(const mc_mlp_shape *s, int l);

/* loss = scale * mean over m x out of (f(x) - y)^2, f the MLP. Adds the
 * gradients of loss w.r.t. W[l], b[l] into gW[l], gb[l] (when not NULL),
 * so that micro-steps accumulate as .grad does. Returns loss. */
double mc_mlp_ref_loss_grad(const mc_mlp_shape *s, int64_t m, double *const *W,
                            double *const *b, const double *x, const double *y, double scale,
                            mc_round_fn rnd, double *const *gW, double *const *gb);

/* max |a - b| / max(max |b|, floor): the error measure of the checks. */
double mc_rel_err(const double *a, const double *b, int64_t n, double floor);

#ifdef __cplusplus
}
#endif
#endif
