/* optimizer_step.h: the end of a training step over a model's parameter
 * list, as PyTorch 2.11 runs it on CUDA, for every workload (mlp/,
 * transformer/, sharded/): GradScaler.unscale_ (its scalars, per-device
 * copies and the found_inf.item() sync, torch/amp/grad_scaler.py), the
 * foreach optimizers (torch/optim/sgd.py _multi_tensor_sgd, adam.py
 * _multi_tensor_adam, adamw.py: Adam's requests plus an in-place
 * _foreach_mul_), and GradScaler.update. The requests do not depend on the
 * network, only on the parameter list's order and sizes; on a GPU the
 * arithmetic runs between them (optimizer_kernels.cu). Internal to the
 * workloads. */
#ifndef MC_WL_OPTIMIZER_STEP_H
#define MC_WL_OPTIMIZER_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "optimizer.h"
#include "wl_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.optim's and GradScaler's defaults, the only values the workloads use. */
#define MC_OPT_MOMENTUM 0.9        /* SGD(momentum=0.9), dampening 0 */
#define MC_OPT_BETA1 0.9           /* Adam/AdamW betas[0] (torch/optim/adam.py) */
#define MC_OPT_BETA2 0.999         /* betas[1] */
#define MC_OPT_EPS 1e-8            /* eps */
#define MC_OPT_ADAMW_DECAY 0.01    /* AdamW weight_decay (torch/optim/adamw.py) */
#define MC_SCALER_INIT 65536.0     /* GradScaler init_scale (torch/amp/grad_scaler.py) */
#define MC_SCALER_GROWTH 2.0       /* growth_factor */
#define MC_SCALER_BACKOFF 0.5      /* backoff_factor */
#define MC_SCALER_INTERVAL 2000    /* growth_interval: clean steps before growth */

/* One parameter, in model.parameters() order: its tensors in the model's
 * own structure, the bytes of each state tensor (the parameter's, or a
 * rank's local shard under FSDP), and a suffix for the state's names in
 * the trace (" (weight)", or ""). */
typedef struct {
    wl_t *p, *g;               /* the parameter and its .grad */
    wl_t *m, *v;               /* momentum_buffer or exp_avg; exp_avg_sq */
    wl_t *s;                   /* _foreach_sqrt's temporary */
    int64_t n;                 /* fp32 elements, for the kernels */
    uint64_t bytes;            /* of each state tensor */
    const char *suffix;
} wl_opt_param;

/* An optimizer and its GradScaler. */
typedef struct {
    mc_wl_optimizer kind;
    double lr;
    bool scaler;               /* fp16: GradScaler runs */
    bool ready;                /* the state exists (made at the first step) */
    int steps;                 /* optimizer steps taken (Adam's t) */
    double scale_host;         /* GradScaler's scale, mirrored on the host */
    int growth_tracker;
    wl_t scale, growth;        /* GradScaler's state on the device (kept) */
    wl_t inv_d, inv_r, inv_f, found, found_c, inv_c; /* unscale_'s scalars */
} wl_optim;

/* kind and lr (0: mc_wl_optimizer_default_lr); scaler: fp16. */
void wl_optim_init(wl_optim *o, mc_wl_optimizer kind, double lr, bool scaler);

/* GradScaler._lazy_init_scale_growth_tracker at the first scale(): the
 * scale and the growth tracker, kept. 0, or -1 on OOM. */
int wl_scaler_lazy_init(wl_ctx *x, wl_optim *o);

/* Called between unscale_ and the update (the GPU check reads the grads). */
typedef void (*wl_opt_hook)(void *arg);

/* unscale_ (scaler only; inject: the gradients are made infinite first, on
 * a GPU by poisoning the first one), the update unless an inf/NaN gradient
 * skips it (*skipped), GradScaler.update. 0, or -1 on OOM (the caller
 * unwinds; state made so far is kept). */
int wl_optim_step(wl_ctx *x, wl_optim *o, const wl_opt_param *ps, int np, bool inject,
                  wl_opt_hook before_update, void *arg, bool *skipped);

/* ------------------------------------------------------------ kernels
 * Over nt fp32 tensors at once, asynchronous on g's stream. */
void mc_gpu_sgd(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, const int64_t *n,
                float lr);
/* first: buf = grad (clone), else buf = momentum buf + grad; then p -= lr buf */
void mc_gpu_momentum(mc_wl_gpu *g, int nt, float *const *p, float *const *gr,
                     float *const *buf, const int64_t *n, float lr, float momentum, bool first);
void mc_gpu_adam(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, float *const *m,
                 float *const *v, const int64_t *n, float lr, float beta1, float beta2,
                 float eps, int step);
/* torch.optim.AdamW (foreach, PyTorch defaults lr 1e-3, betas (0.9, 0.999),
 * eps 1e-8, weight_decay 0.01) over nt fp32 tensors at once, step t >= 1:
 *   p *= 1 - lr wd; m = lerp(m, g, 1 - b1); v = b2 v + (1 - b2) g^2;
 *   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 * One kernel, no intermediate: PyTorch's foreach path allocates
 * exp_avg_sq_sqrt (one tensor per parameter, fp32, the parameters' sizes)
 * for the denominator, which the caller models; this kernel needs none.
 * The hyperparameters are doubles, as torch.optim's Python floats: each
 * scalar the foreach ops get (1 - b1, 1 - b2, 1 - lr wd, the step size) is
 * formed in double and rounded to float once, as they are. */
void mc_gpu_adamw(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, float *const *m,
                  float *const *v, const int64_t *n, double lr, double beta1, double beta2,
                  double eps, double weight_decay, int step);

/* grads *= inv_scale[0]; found[0] = 1 where any is not finite. */
void mc_gpu_unscale(mc_wl_gpu *g, int nt, float *const *gr, const int64_t *n,
                    const float *inv_scale, float *found);

#ifdef __cplusplus
}
#endif
#endif
