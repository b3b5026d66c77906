/* mlp_opt.c: the end of the MLP's training step: GradScaler, the
 * optimizer's update (core/optimizer_step.c, over W0, b0, W1, b1, ...) and
 * zero_grad(set_to_none). */
#include "check.h"
#include "mlp_internal.h"

/* Host copies of the gradients the optimizer is about to use (the GPU check). */
static void capture_grads(void *arg)
{
    mc_workload *w = arg;
    if (!w->cap.on || !G) return;
    for (int l = 0; l < w->L; l++) {
        mc_gpu_to_host(G, w->cap.gW[l], WL_PTR(w->ly[l].gW), w->ly[l].out * w->ly[l].in, MC_DT_F32);
        mc_gpu_to_host(G, w->cap.gb[l], WL_PTR(w->ly[l].gb), w->ly[l].out, MC_DT_F32);
    }
}

int wl_seq_optimizer(mc_workload *w, bool *skipped)
{
    const bool inject = w->ctx.step == w->c.inject_overflow_step;
    return wl_optim_step(&w->ctx, &w->opt, w->params, 2 * w->L, inject, capture_grads, w, skipped);
}

void wl_seq_zero_grad(mc_workload *w)
{
    for (int l = 0; l < w->L; l++) {
        F(w->ly[l].gW);
        F(w->ly[l].gb);
    }
}
