/* optimizer_ref.h: float64 references of the optimizers' updates
 * (optimizer_step.h), which the GPU checks compare the kernels with. */
#ifndef MC_WL_OPTIMIZER_REF_H
#define MC_WL_OPTIMIZER_REF_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One optimizer update of n values, as PyTorch's (lr; momentum 0.9 with
 * dampening 0, the buffer a clone of the gradient at the first step; Adam
 * betas, eps, bias correction at step t >= 1). */
void mc_opt_ref_sgd(double *p, const double *g, int64_t n, double lr);
void mc_opt_ref_momentum(double *p, const double *g, double *buf, int64_t n, double lr,
                         double momentum, bool first);
void mc_opt_ref_adam(double *p, const double *g, double *m, double *v, int64_t n, double lr,
                     double beta1, double beta2, double eps, int t);
/* One AdamW step (torch.optim.AdamW, decoupled decay) on n values, t >= 1. */
void mc_opt_ref_adamw(double *p, const double *g, double *m, double *v, int64_t n, double lr,
                      double beta1, double beta2, double eps, double weight_decay, int t);

#ifdef __cplusplus
}
#endif
#endif
