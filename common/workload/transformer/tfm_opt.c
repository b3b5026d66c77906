/* tfm_opt.c: the end of the Transformer's step over its parameter list:
 * GradScaler, the optimizer's update (core/optimizer_step.c, the same
 * requests as the MLP's: they do not depend on the network; AdamW runs
 * _multi_tensor_adam with one more in-place torch._foreach_mul_, so it
 * requests what Adam does) and zero_grad(set_to_none=True).
 * Hyperparameters: PyTorch's defaults, lr the reference's
 * (tests/torch/transformer_reference.py). Model-only: no arithmetic, no
 * overflow. */
#include <stdlib.h>

#include "check.h"
#include "tfm_internal.h"

void tfm_opt_params(mc_tfm *T)
{
    T->params = calloc((size_t)(T->np ? T->np : 1), sizeof *T->params);
    CHECK(T->params != NULL, "out of host memory");
    for (int i = 0; i < T->np; i++) {
        tparam *p = &T->p[i];
        T->params[i] = (wl_opt_param){&p->p, &p->g, &p->m, &p->v, &p->s, p->n, (uint64_t)p->n * 4, ""};
    }
}

/* The gradients the optimizer is about to use, to the GPU check. */
static void capture_grads(void *arg)
{
    mc_tfm *T = arg;
    if (!TG(T) || !T->data || !T->data->grads || T->step != 1) return;
    int64_t off = 0;
    for (int i = 0; i < T->np; i++) {
        mc_gpu_to_host(TG(T), T->data->grads + off, WL_PTR(T->p[i].g), T->p[i].n, MC_DT_F32);
        off += T->p[i].n;
    }
}

int tfm_optimizer(mc_tfm *T, bool *skipped)
{
    const wl_opt_param *ps = T->wrap_params ? T->wrap_params : T->params; /* a wrapper's: the local shards */
    return wl_optim_step(&T->ctx, &T->opt, ps, T->np, false, capture_grads, T, skipped);
}

void tfm_zero_grad(mc_tfm *T)
{
    for (int i = 0; i < T->np; i++) wl_free(&T->ctx, &T->p[i].g);
    if (T->wrapped && T->wrap.zero_grad) T->wrap.zero_grad(T->wrap.ctx);
}
