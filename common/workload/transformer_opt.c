/* transformer_opt.c: the end of the Transformer's step over its parameter
 * list, as workload_opt.c does it for the MLP (the same PyTorch functions,
 * whose requests do not depend on the network): GradScaler.unscale_ and
 * the found_inf.item() sync, the foreach optimizers, GradScaler.update,
 * zero_grad(set_to_none=True). AdamW (torch/optim/adamw.py: Adam with
 * decoupled weight decay) runs _multi_tensor_adam with one more
 * torch._foreach_mul_(params, 1 - lr * weight_decay), in place: the same
 * requests as Adam. Model-only: no arithmetic, no overflow. */
#include "check.h"
#include "transformer_internal.h"

#define AO(t, bytes, cat, what, keep)                                                     \
    do {                                                                                  \
        if (wl_alloc(&T->w, &(t), (uint64_t)(bytes), (cat), (keep), (what)) != 0) {       \
            T->oom = true;                                                                \
            return -1;                                                                    \
        }                                                                                 \
    } while (0)
#define FO(t) wl_free(&T->w, &(t))

static int unscale(mc_tfm *T)
{
    AO(T->inv_d, 8, MC_WL_OTHER, "scale.double()", false);
    AO(T->inv_r, 8, MC_WL_OTHER, ".reciprocal()", false);
    FO(T->inv_d);
    AO(T->inv_f, 4, MC_WL_OTHER, ".float(): inv_scale", false);
    FO(T->inv_r);
    AO(T->found, 4, MC_WL_OTHER, "found_inf", false);
    AO(T->found_c, 4, MC_WL_OTHER, "found_inf per device (copy)", false);
    AO(T->inv_c, 4, MC_WL_OTHER, "inv_scale per device (copy)", false);
    FO(T->inv_c);
    FO(T->inv_f);
    FO(T->found);
    return 0;
}

static int adam(mc_tfm *T)
{
    for (int i = 0; i < T->np && !T->opt_ready; i++) { /* Adam._init_group */
        AO(T->p[i].m, T->p[i].p.bytes, MC_WL_OPTIMIZER, "exp_avg", true);
        AO(T->p[i].v, T->p[i].p.bytes, MC_WL_OPTIMIZER, "exp_avg_sq", true);
    }
    T->opt_ready = true;
    for (int i = 0; i < T->np; i++) /* exp_avg_sq_sqrt = torch._foreach_sqrt(...) */
        AO(T->p[i].s, T->p[i].p.bytes, MC_WL_OPTIMIZER, "_foreach_sqrt", false);
    for (int i = T->np - 1; i >= 0; i--) FO(T->p[i].s);
    return 0;
}

int tfm_optimizer(mc_tfm *T, bool *skipped)
{
    *skipped = false;
    const bool fp16 = T->c.precision == MC_WL_FP16;
    if (fp16 && unscale(T)) return -1;
    if (T->c.optimizer == MC_WL_MOMENTUM) {
        for (int i = 0; i < T->np && !T->opt_ready; i++) /* grad.detach().clone() */
            if (!T->p[i].m.addr) AO(T->p[i].m, T->p[i].p.bytes, MC_WL_OPTIMIZER, "momentum_buffer", true);
        T->opt_ready = true;
    } else if (T->c.optimizer == MC_WL_ADAM || T->c.optimizer == MC_TFM_ADAMW) {
        if (adam(T)) return -1;
    }
    if (fp16) {
        if (++T->growth_tracker == 2000) { /* GradScaler: growth after 2000 clean steps */
            T->scale_host *= 2.0;
            T->growth_tracker = 0;
        }
        FO(T->found_c); /* update()'s found_infs list goes */
    }
    return 0;
}

void tfm_zero_grad(mc_tfm *T)
{
    for (int i = 0; i < T->np; i++) wl_free(&T->w, &T->p[i].g);
}
