/* optimizer_step.c: GradScaler and the foreach optimizers' requests over a
 * parameter list (optimizer_step.h), and on a GPU their kernels between
 * them. The order is PyTorch 2.11's, checked request by request against
 * its traces for the MLP and the Transformer (tests/fixtures/). */
#include "optimizer_step.h"

#include <stdio.h>
#include <stdlib.h>

#include "check.h"

#define WL_CTX x
#define FP(t) ((float *)WL_PTR(t))

void wl_optim_init(wl_optim *o, mc_wl_optimizer kind, double lr, bool scaler)
{
    o->kind = kind;
    o->lr = lr > 0 ? lr : mc_wl_optimizer_default_lr(kind);
    o->scaler = scaler;
    o->scale_host = MC_SCALER_INIT;
}

int wl_scaler_lazy_init(wl_ctx *x, wl_optim *o)
{
    if (o->scale.addr) return 0;
    AK(o->scale, 4, MC_WL_OTHER, "GradScaler scale");
    if (x->gpu) mc_gpu_fill(x->gpu, FP(o->scale), (float)o->scale_host, 1);
    AK(o->growth, 4, MC_WL_OTHER, "GradScaler growth tracker");
    if (x->gpu) mc_gpu_fill(x->gpu, FP(o->growth), 0.0f, 1);
    return 0;
}

/* The foreach lists of the kernels: one pointer per parameter. */
typedef struct {
    float **p, **g, **m, **v;
    int64_t *n;
} lists;

static void lists_make(const wl_opt_param *ps, int np, lists *l)
{
    const size_t n = (size_t)np;
    l->p = malloc(n * sizeof *l->p);
    l->g = malloc(n * sizeof *l->g);
    l->m = malloc(n * sizeof *l->m);
    l->v = malloc(n * sizeof *l->v);
    l->n = malloc(n * sizeof *l->n);
    CHECK(l->p && l->g && l->m && l->v && l->n, "out of host memory");
    for (int i = 0; i < np; i++) {
        l->p[i] = FP(*ps[i].p);
        l->g[i] = FP(*ps[i].g);
        l->m[i] = ps[i].m ? FP(*ps[i].m) : NULL;
        l->v[i] = ps[i].v ? FP(*ps[i].v) : NULL;
        l->n[i] = ps[i].n;
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

/* GradScaler.unscale_ and the found_inf.item() of _maybe_opt_step. */
static int unscale(wl_ctx *x, wl_optim *o, const wl_opt_param *ps, int np, bool inject, bool *inf)
{
    mc_wl_gpu *G = x->gpu;
    A(o->inv_d, 8, MC_WL_OTHER, "scale.double()");
    A(o->inv_r, 8, MC_WL_OTHER, ".reciprocal()");
    F(o->inv_d);
    A(o->inv_f, 4, MC_WL_OTHER, ".float(): inv_scale");
    F(o->inv_r);
    if (G) mc_gpu_inv_scale(G, FP(o->inv_f), FP(o->scale));
    A(o->found, 4, MC_WL_OTHER, "found_inf");
    if (G) mc_gpu_fill(G, FP(o->found), 0.0f, 1);
    A(o->found_c, 4, MC_WL_OTHER, "found_inf per device (copy)");
    if (G) mc_gpu_copy(G, WL_PTR(o->found_c), WL_PTR(o->found), 4);
    A(o->inv_c, 4, MC_WL_OTHER, "inv_scale per device (copy)");
    if (G) {
        lists l;
        mc_gpu_copy(G, WL_PTR(o->inv_c), WL_PTR(o->inv_f), 4);
        lists_make(ps, np, &l);
        if (inject) mc_gpu_poison(G, l.g[0]);
        mc_gpu_unscale(G, np, l.g, l.n, FP(o->inv_c), FP(o->found_c));
        lists_free(&l);
    }
    F(o->inv_c); /* _unscale_grads_ returns */
    F(o->inv_f); /* unscale_ returns */
    F(o->found);
    *inf = G ? mc_gpu_read_scalar(G, FP(o->found_c)) != 0.0f : inject;
    return 0;
}

/* GradScaler.update: backoff on inf, growth after MC_SCALER_INTERVAL clean steps. */
static void update_scale(wl_ctx *x, wl_optim *o, bool inf)
{
    if (inf) {
        o->scale_host *= MC_SCALER_BACKOFF;
        o->growth_tracker = 0;
    } else if (++o->growth_tracker == MC_SCALER_INTERVAL) {
        o->scale_host *= MC_SCALER_GROWTH;
        o->growth_tracker = 0;
    }
    if (x->gpu) {
        mc_gpu_fill(x->gpu, FP(o->scale), (float)o->scale_host, 1);
        mc_gpu_fill(x->gpu, FP(o->growth), 0.0f, 1); /* the host keeps the count */
    }
    F(o->found_c); /* update()'s found_infs list goes */
}

/* SGD(momentum=0.9): the buffers are grad.detach().clone() at the first step. */
static int momentum(wl_ctx *x, wl_optim *o, const wl_opt_param *ps, int np)
{
    const bool first = !o->ready;
    char what[96];
    for (int i = 0; i < np && first; i++) {
        if (ps[i].m->addr) continue;
        snprintf(what, sizeof what, "momentum_buffer%s", ps[i].suffix);
        AK(*ps[i].m, ps[i].bytes, MC_WL_OPTIMIZER, what);
    }
    o->ready = true;
    if (x->gpu) {
        lists l;
        lists_make(ps, np, &l);
        mc_gpu_momentum(x->gpu, np, l.p, l.g, l.m, l.n, (float)o->lr, (float)MC_OPT_MOMENTUM,
                        first);
        lists_free(&l);
    }
    return 0;
}

/* Adam and AdamW: Adam._init_group makes exp_avg, exp_avg_sq =
 * zeros_like(p) for each parameter without state (after an OOM there, some
 * have it; the step count lives on the CPU); _multi_tensor_adam's
 * exp_avg_sq_sqrt = torch._foreach_sqrt(...) list dies with the function,
 * last first. AdamW's decay is in place: no request. */
static int adam(wl_ctx *x, wl_optim *o, const wl_opt_param *ps, int np)
{
    mc_wl_gpu *G = x->gpu;
    char what[96];
    for (int i = 0; i < np && !o->ready; i++) {
        wl_t *st[2] = {ps[i].m, ps[i].v};
        static const char *const name[2] = {"exp_avg", "exp_avg_sq"};
        for (int j = 0; j < 2; j++) {
            if (st[j]->addr) continue;
            snprintf(what, sizeof what, "%s%s", name[j], ps[i].suffix);
            AK(*st[j], ps[i].bytes, MC_WL_OPTIMIZER, what);
            if (G) mc_gpu_fill(G, FP(*st[j]), 0.0f, (int64_t)(ps[i].bytes / 4));
        }
    }
    o->ready = true;
    for (int i = 0; i < np; i++) {
        snprintf(what, sizeof what, "_foreach_sqrt%s", ps[i].suffix);
        A(*ps[i].s, ps[i].bytes, MC_WL_OPTIMIZER, what);
    }
    if (G) { /* one kernel each, needing none of the temporaries */
        lists l;
        lists_make(ps, np, &l);
        if (o->kind == MC_WL_ADAMW)
            mc_gpu_adamw(G, np, l.p, l.g, l.m, l.v, l.n, o->lr, MC_OPT_BETA1, MC_OPT_BETA2,
                         MC_OPT_EPS, MC_OPT_ADAMW_DECAY, o->steps);
        else
            mc_gpu_adam(G, np, l.p, l.g, l.m, l.v, l.n, (float)o->lr, (float)MC_OPT_BETA1,
                        (float)MC_OPT_BETA2, (float)MC_OPT_EPS, o->steps);
        lists_free(&l);
    }
    for (int i = np - 1; i >= 0; i--) F(*ps[i].s);
    return 0;
}

int wl_optim_step(wl_ctx *x, wl_optim *o, const wl_opt_param *ps, int np, bool inject,
                  wl_opt_hook before_update, void *arg, bool *skipped)
{
    bool inf = false;
    *skipped = false;
    if (o->scaler && unscale(x, o, ps, np, inject, &inf)) return -1;
    if (before_update) before_update(arg);
    *skipped = inf;
    if (!inf) {
        o->steps++;
        int rc = 0;
        if (o->kind == MC_WL_SGD) {
            if (x->gpu) {
                lists l;
                lists_make(ps, np, &l);
                mc_gpu_sgd(x->gpu, np, l.p, l.g, l.n, (float)o->lr);
                lists_free(&l);
            }
        } else if (o->kind == MC_WL_MOMENTUM) {
            rc = momentum(x, o, ps, np);
        } else {
            rc = adam(x, o, ps, np);
        }
        if (rc) return -1;
    }
    if (o->scaler) update_scale(x, o, inf);
    return 0;
}
