/* mlp_opt.c: the end of a training step, as PyTorch 2.11 runs it on
 * CUDA: GradScaler.step (unscale_, the .item() sync, the skip), the foreach
 * optimizers (torch/optim/sgd.py _multi_tensor_sgd, adam.py
 * _multi_tensor_adam; defaults lr as set, momentum 0.9, betas (0.9, 0.999),
 * eps 1e-8, no weight decay), GradScaler.update and zero_grad(set_to_none). */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "mlp_internal.h"

#define FP(t) ((float *)WL_PTR(t))

#define MOMENTUM 0.9f
#define BETA1 0.9f
#define BETA2 0.999f
#define EPS 1e-8f
#define GROWTH_INTERVAL 2000 /* GradScaler defaults: growth 2, backoff 0.5 */

/* The parameters in model.parameters() order (W0, b0, W1, b1, ...): a tensor
 * of each of the 2L, picked by `which` from a layer. */
typedef wl_t *(*pick_fn)(wl_layer *y, bool bias);
static wl_t *pick_param(wl_layer *y, bool bias) { return bias ? &y->b : &y->W; }
static wl_t *pick_grad(wl_layer *y, bool bias) { return bias ? &y->gb : &y->gW; }
static wl_t *pick_m(wl_layer *y, bool bias) { return bias ? &y->mb : &y->mW; }
static wl_t *pick_v(wl_layer *y, bool bias) { return bias ? &y->vb : &y->vW; }

static void lists(mc_workload *w, pick_fn f, float **out)
{
    for (int l = 0; l < w->L; l++) {
        out[2 * l] = FP(*f(&w->ly[l], false));
        out[2 * l + 1] = FP(*f(&w->ly[l], true));
    }
}

/* Host copies of the gradients the optimizer is about to use (the GPU check). */
static void capture_grads(mc_workload *w)
{
    if (!w->cap.on || !G) return;
    for (int l = 0; l < w->L; l++) {
        mc_gpu_to_host(G, w->cap.gW[l], WL_PTR(w->ly[l].gW), w->ly[l].out * w->ly[l].in, MC_DT_F32);
        mc_gpu_to_host(G, w->cap.gb[l], WL_PTR(w->ly[l].gb), w->ly[l].out, MC_DT_F32);
    }
}

/* GradScaler.unscale_ and the found_inf.item() of _maybe_opt_step. */
static int unscale(mc_workload *w, int nt, float **gr, const int64_t *n, bool *inf)
{
    A(w->inv_d, 8, MC_WL_OTHER, "scale.double()");
    A(w->inv_r, 8, MC_WL_OTHER, ".reciprocal()");
    F(w->inv_d);
    A(w->inv_f, 4, MC_WL_OTHER, ".float(): inv_scale");
    F(w->inv_r);
    if (G) mc_gpu_inv_scale(G, FP(w->inv_f), FP(w->scale));
    A(w->found, 4, MC_WL_OTHER, "found_inf");
    if (G) mc_gpu_fill(G, FP(w->found), 0.0f, 1);
    A(w->found_c, 4, MC_WL_OTHER, "found_inf per device (copy)");
    if (G) mc_gpu_copy(G, WL_PTR(w->found_c), WL_PTR(w->found), 4);
    A(w->inv_c, 4, MC_WL_OTHER, "inv_scale per device (copy)");
    if (G) mc_gpu_copy(G, WL_PTR(w->inv_c), WL_PTR(w->inv_f), 4);
    bool inject = w->ctx.step == w->c.inject_overflow_step;
    if (G) {
        if (inject) mc_gpu_poison(G, gr[0]);
        mc_gpu_unscale(G, nt, gr, n, FP(w->inv_c), FP(w->found_c));
    }
    F(w->inv_c); /* _unscale_grads_ returns */
    F(w->inv_f); /* unscale_ returns */
    F(w->found);
    *inf = G ? mc_gpu_read_scalar(G, FP(w->found_c)) != 0.0f : inject;
    return 0;
}

/* GradScaler.update: backoff on inf, growth after GROWTH_INTERVAL clean steps. */
static void update_scale(mc_workload *w, bool inf)
{
    if (inf) {
        w->scale_host *= 0.5;
        w->growth_tracker = 0;
    } else if (++w->growth_tracker == GROWTH_INTERVAL) {
        w->scale_host *= 2.0;
        w->growth_tracker = 0;
    }
    if (G) {
        mc_gpu_fill(G, FP(w->scale), (float)w->scale_host, 1);
        mc_gpu_fill(G, FP(w->growth), 0.0f, 1); /* host keeps the count; device copy unused */
    }
    F(w->found_c); /* update()'s found_infs list goes */
}

static int adam(mc_workload *w, int nt, float **p, float **gr, const int64_t *n)
{
    /* Adam._init_group: step on the CPU; exp_avg, exp_avg_sq = zeros_like(p)
     * for each parameter without state (after an OOM here, some have it). */
    for (int l = 0; l < w->L && !w->opt_ready; l++) {
        wl_layer *y = &w->ly[l];
        wl_t *st[4] = {&y->mW, &y->vW, &y->mb, &y->vb};
        const uint64_t by[4] = {y->W.bytes, y->W.bytes, y->b.bytes, y->b.bytes};
        static const char *const what[4] = {"exp_avg (weight)", "exp_avg_sq (weight)",
                                            "exp_avg (bias)", "exp_avg_sq (bias)"};
        for (int j = 0; j < 4; j++) {
            if (st[j]->addr) continue;
            AK(*st[j], by[j], MC_WL_OPTIMIZER, what[j]);
            if (G) mc_gpu_fill(G, FP(*st[j]), 0.0f, (int64_t)(by[j] / 4));
        }
    }
    w->opt_ready = true;
    for (int l = 0; l < w->L; l++) { /* exp_avg_sq_sqrt = torch._foreach_sqrt(...) */
        A(w->ly[l].sW, w->ly[l].W.bytes, MC_WL_OPTIMIZER, "_foreach_sqrt (weight)");
        A(w->ly[l].sb, w->ly[l].b.bytes, MC_WL_OPTIMIZER, "_foreach_sqrt (bias)");
    }
    if (G) {
        float **m = malloc((size_t)nt * sizeof *m), **v = malloc((size_t)nt * sizeof *v);
        CHECK(m && v, "out of host memory");
        lists(w, pick_m, m);
        lists(w, pick_v, v);
        mc_gpu_adam(G, nt, p, gr, m, v, n, (float)w->c.lr, BETA1, BETA2, EPS, w->opt_steps);
        free(m);
        free(v);
    }
    for (int l = w->L - 1; l >= 0; l--) { /* the list dies with the function, last first */
        F(w->ly[l].sb);
        F(w->ly[l].sW);
    }
    return 0;
}

int wl_seq_optimizer(mc_workload *w, bool *skipped)
{
    const int nt = 2 * w->L;
    float **p = malloc((size_t)nt * sizeof *p), **gr = malloc((size_t)nt * sizeof *gr);
    int64_t *n = malloc((size_t)nt * sizeof *n);
    CHECK(p && gr && n, "out of host memory");
    lists(w, pick_param, p);
    lists(w, pick_grad, gr);
    for (int l = 0; l < w->L; l++) {
        n[2 * l] = w->ly[l].out * w->ly[l].in;
        n[2 * l + 1] = w->ly[l].out;
    }
    int rc = 0;
    bool inf = false;
    if (w->c.precision == MC_WL_FP16) rc = unscale(w, nt, gr, n, &inf);
    if (rc == 0) capture_grads(w);
    *skipped = inf;
    if (rc == 0 && !inf) {
        w->opt_steps++;
        if (w->c.optimizer == MC_WL_SGD) {
            if (G) mc_gpu_sgd(G, nt, p, gr, n, (float)w->c.lr);
        } else if (w->c.optimizer == MC_WL_MOMENTUM) {
            bool first = !w->opt_ready;
            for (int l = 0; l < w->L && first && rc == 0; l++) { /* grad.detach().clone() */
                wl_layer *y = &w->ly[l];
                if ((!y->mW.addr && wl_alloc(&w->ctx, &y->mW, y->W.bytes, MC_WL_OPTIMIZER, true,
                                             "momentum_buffer (weight)")) ||
                    (!y->mb.addr && wl_alloc(&w->ctx, &y->mb, y->b.bytes, MC_WL_OPTIMIZER, true,
                                             "momentum_buffer (bias)")))
                    rc = -1;
            }
            if (rc == 0) {
                w->opt_ready = true;
                if (G) {
                    float **buf = malloc((size_t)nt * sizeof *buf);
                    CHECK(buf != NULL, "out of host memory");
                    lists(w, pick_m, buf);
                    mc_gpu_momentum(G, nt, p, gr, buf, n, (float)w->c.lr, MOMENTUM, first);
                    free(buf);
                }
            }
        } else {
            rc = adam(w, nt, p, gr, n);
        }
    }
    if (rc == 0 && w->c.precision == MC_WL_FP16) update_scale(w, inf);
    free(p);
    free(gr);
    free(n);
    return rc;
}

void wl_seq_zero_grad(mc_workload *w)
{
    for (int l = 0; l < w->L; l++) {
        F(w->ly[l].gW);
        F(w->ly[l].gb);
    }
}
