/* tfm_opt.c: the end of the Transformer's step over its parameter
 * list, as mlp_opt.c does it for the MLP (the same PyTorch functions,
 * whose requests do not depend on the network): GradScaler.unscale_ and
 * the found_inf.item() sync, the foreach optimizers, GradScaler.update,
 * zero_grad(set_to_none=True). AdamW (torch/optim/adamw.py: Adam with
 * decoupled weight decay) runs _multi_tensor_adam with one more
 * torch._foreach_mul_(params, 1 - lr * weight_decay), in place: the same
 * requests as Adam. Hyperparameters: PyTorch's defaults (momentum 0.9,
 * betas (0.9, 0.999), eps 1e-8, AdamW's weight decay 0.01), lr the
 * reference's (tests/torch/transformer_reference.py). Model-only: no
 * arithmetic, no overflow. */
#include <stdlib.h>

#include "check.h"
#include "tfm_internal.h"
#include "tfm_kernels.h"

#define FPO(t) ((float *)WL_PTR(t))

#define MOMENTUM 0.9f
#define BETA1 0.9
#define BETA2 0.999
#define EPS 1e-8
#define ADAMW_DECAY 0.01
#define GROWTH_INTERVAL 2000 /* GradScaler defaults: growth 2, backoff 0.5 */

/* The foreach lists over the parameters, in model.parameters() order. */
typedef struct {
    float **p, **g, **m, **v;
    int64_t *n;
} lists;

static void lists_make(mc_tfm *T, lists *l)
{
    const size_t np = (size_t)T->np;
    l->p = malloc(np * sizeof *l->p);
    l->g = malloc(np * sizeof *l->g);
    l->m = malloc(np * sizeof *l->m);
    l->v = malloc(np * sizeof *l->v);
    l->n = malloc(np * sizeof *l->n);
    CHECK(l->p && l->g && l->m && l->v && l->n, "out of host memory");
    for (int i = 0; i < T->np; i++) {
        l->p[i] = FPO(T->p[i].p);
        l->g[i] = FPO(T->p[i].g);
        l->m[i] = FPO(T->p[i].m);
        l->v[i] = FPO(T->p[i].v);
        l->n[i] = T->p[i].n;
    }
}

static void lists_free(lists *l)
{
    free(l->p);
    free(l->g);
    free(l->m);
    free(l->v);
    free(l->n);
}

static double lr_of(const mc_tfm *T)
{
    if (T->c.lr > 0) return T->c.lr;
    return T->c.optimizer == MC_WL_ADAM || T->c.optimizer == MC_TFM_ADAMW ? 1e-3 : 0.01;
}

static int unscale(mc_tfm *T, bool *inf)
{
    mc_wl_gpu *G = TG(T);
    A(T->inv_d, 8, MC_WL_OTHER, "scale.double()");
    A(T->inv_r, 8, MC_WL_OTHER, ".reciprocal()");
    F(T->inv_d);
    A(T->inv_f, 4, MC_WL_OTHER, ".float(): inv_scale");
    F(T->inv_r);
    if (G) mc_gpu_inv_scale(G, FPO(T->inv_f), FPO(T->scale));
    A(T->found, 4, MC_WL_OTHER, "found_inf");
    if (G) mc_gpu_fill(G, FPO(T->found), 0.0f, 1);
    A(T->found_c, 4, MC_WL_OTHER, "found_inf per device (copy)");
    if (G) mc_gpu_copy(G, WL_PTR(T->found_c), WL_PTR(T->found), 4);
    A(T->inv_c, 4, MC_WL_OTHER, "inv_scale per device (copy)");
    if (G) {
        lists l;
        mc_gpu_copy(G, WL_PTR(T->inv_c), WL_PTR(T->inv_f), 4);
        lists_make(T, &l);
        mc_gpu_unscale(G, T->np, l.g, l.n, FPO(T->inv_c), FPO(T->found_c));
        lists_free(&l);
    }
    F(T->inv_c);
    F(T->inv_f);
    F(T->found);
    *inf = G && mc_gpu_read_scalar(G, FPO(T->found_c)) != 0.0f;
    return 0;
}

static int adam(mc_tfm *T)
{
    mc_wl_gpu *G = TG(T);
    for (int i = 0; i < T->np && !T->opt_ready; i++) { /* Adam._init_group */
        AK(T->p[i].m, T->p[i].p.bytes, MC_WL_OPTIMIZER, "exp_avg");
        if (G) mc_gpu_fill(G, FPO(T->p[i].m), 0.0f, T->p[i].n);
        AK(T->p[i].v, T->p[i].p.bytes, MC_WL_OPTIMIZER, "exp_avg_sq");
        if (G) mc_gpu_fill(G, FPO(T->p[i].v), 0.0f, T->p[i].n);
    }
    T->opt_ready = true;
    for (int i = 0; i < T->np; i++) /* exp_avg_sq_sqrt = torch._foreach_sqrt(...) */
        A(T->p[i].s, T->p[i].p.bytes, MC_WL_OPTIMIZER, "_foreach_sqrt");
    if (G) { /* one kernel each, needing none of the temporaries */
        lists l;
        lists_make(T, &l);
        if (T->c.optimizer == MC_TFM_ADAMW)
            tfm_adamw(G, T->np, l.p, l.g, l.m, l.v, l.n, lr_of(T), BETA1, BETA2, EPS, ADAMW_DECAY, T->opt_steps);
        else
            mc_gpu_adam(G, T->np, l.p, l.g, l.m, l.v, l.n, (float)lr_of(T), (float)BETA1, (float)BETA2,
                        (float)EPS, T->opt_steps);
        lists_free(&l);
    }
    for (int i = T->np - 1; i >= 0; i--) F(T->p[i].s);
    return 0;
}

/* The gradients the optimizer is about to use, to the GPU check. */
static void capture_grads(mc_tfm *T)
{
    if (!TG(T) || !T->data || !T->data->grads || T->step != 1) return;
    int64_t off = 0;
    for (int i = 0; i < T->np; i++) {
        mc_gpu_to_host(TG(T), T->data->grads + off, WL_PTR(T->p[i].g), T->p[i].n, MC_DT_F32);
        off += T->p[i].n;
    }
}

int tfm_optimizer(mc_tfm *T, bool *skipped)
{
    mc_wl_gpu *G = TG(T);
    bool inf = false;
    *skipped = false;
    const bool fp16 = T->c.precision == MC_WL_FP16;
    if (fp16 && unscale(T, &inf)) return -1;
    capture_grads(T);
    *skipped = inf;
    if (!inf) {
        T->opt_steps++;
        if (T->c.optimizer == MC_WL_SGD) {
            if (G) {
                lists l;
                lists_make(T, &l);
                mc_gpu_sgd(G, T->np, l.p, l.g, l.n, (float)lr_of(T));
                lists_free(&l);
            }
        } else if (T->c.optimizer == MC_WL_MOMENTUM) {
            const bool first = !T->opt_ready;
            for (int i = 0; i < T->np && first; i++) /* grad.detach().clone() */
                if (!T->p[i].m.addr) AK(T->p[i].m, T->p[i].p.bytes, MC_WL_OPTIMIZER, "momentum_buffer");
            T->opt_ready = true;
            if (G) {
                lists l;
                lists_make(T, &l);
                mc_gpu_momentum(G, T->np, l.p, l.g, l.m, l.n, (float)lr_of(T), MOMENTUM, first);
                lists_free(&l);
            }
        } else if (adam(T)) {
            return -1;
        }
    }
    if (fp16) { /* GradScaler.update: backoff on inf, growth after GROWTH_INTERVAL clean steps */
        if (inf) {
            T->scale_host *= 0.5;
            T->growth_tracker = 0;
        } else if (++T->growth_tracker == GROWTH_INTERVAL) {
            T->scale_host *= 2.0;
            T->growth_tracker = 0;
        }
        if (G) mc_gpu_fill(G, FPO(T->scale), (float)T->scale_host, 1);
        F(T->found_c); /* update()'s found_infs list goes */
    }
    return 0;
}

void tfm_zero_grad(mc_tfm *T)
{
    for (int i = 0; i < T->np; i++) wl_free(&T->ctx, &T->p[i].g);
}
