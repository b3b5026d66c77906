/* tfm_step.c: the Transformer workload's loss, micro-steps and training
 * step (tfm.h mc_tfm_step, mc_tfm_step_as), as the MLP's (mlp_seq.c,
 * mlp_opt.c): per micro-step src and tgt, the forward (tfm_seq.c),
 * mse_loss's two [n] fp32 tensors and mean scratch, loss / K, ones_like,
 * [GradScaler], DivBackward0, MseLossBackward0, backward; del src, tgt,
 * out, loss; then the optimizer and zero_grad(set_to_none=True). A step
 * shape (mc_tfm_step_as) changes the sequence and micro-batch, leaves the
 * loss undivided, moves zero_grad, or keeps the loop's variables alive
 * until rebound, as a program written otherwise does (seed 000's C07:
 * tfm_seed_program.c). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "tfm_internal.h"
#include "workload/transformer/kernels/tfm_kernels.h"

/* ------------------------------------------------------------ one micro-step */

#define FPT(t) ((float *)WL_PTR(t))

/* loss = mse_loss(out, tgt) / K, the autocast exit, backward. out and tgt
 * are fp32 (autocast runs mse_loss in fp32; the last op is a layer_norm or
 * a residual add of fp32). */
static int loss_and_backward(mc_tfm *T, tv out, tv tgt)
{
    const int64_t n = out.n;
    const bool fp16 = T->c.precision == MC_WL_FP16;
    mc_wl_gpu *G = TG(T);
    const float invk = 1.0f / (float)T->c.accum;
    A(T->mse, n * 4, MC_WL_ACTIVATIONS, "mse_loss elementwise (holds the mean)");
    A(T->mse_tmp, n * 4, MC_WL_ACTIVATIONS, "mse_loss second [n]");
    if (reduce_scratch(T, 1, n, false, 4)) return -1;
    if (G) mc_gpu_mse(G, FPT(T->mse), FPT(T->mse_tmp), TVP(T, out), TVP(T, tgt), n, 1.0f);
    F(T->mse_tmp);
    if (T->locals_live && T->loss.addr) wl_move(&T->ctx, &T->kept_loss, &T->loss); /* the variable's old value */
    if (T->divide_loss) {
        A(T->loss, 4, MC_WL_OTHER, "loss / K");
        if (G) mc_gpu_scalar(G, FPT(T->loss), FPT(T->mse), NULL, invk);
        F(T->mse);
    } else {
        wl_move(&T->ctx, &T->loss, &T->mse); /* loss = mse_loss(...): the mean itself */
    }
    F(T->kept_loss); /* rebound */
    if (T->lowp) cast_cache_clear(T);
    if (fp16) {
        if (wl_scaler_lazy_init(&T->ctx, &T->opt)) return -1;
        A(T->scaled, 4, MC_WL_OTHER, "scaler.scale(loss)");
        if (G) mc_gpu_scalar(G, FPT(T->scaled), FPT(T->loss), FPT(T->opt.scale), 1.0f);
    }
    A(T->ones, 4, MC_WL_OTHER, "backward's ones_like");
    if (G) mc_gpu_fill(G, FPT(T->ones), 1.0f, 1);
    const wl_t *gs = &T->ones;
    if (fp16) {
        A(T->gmul, 4, MC_WL_OTHER, "MulBackward0");
        if (G) mc_gpu_scalar(G, FPT(T->gmul), FPT(T->ones), FPT(T->opt.scale), 1.0f);
        gs = &T->gmul;
    }
    if (T->divide_loss) {
        A(T->gdiv, 4, MC_WL_OTHER, "DivBackward0");
        if (G) mc_gpu_scalar(G, FPT(T->gdiv), FPT(*gs), NULL, invk);
        if (fp16) F(T->gmul);
        gs = &T->gdiv;
    }
    tb *g = tb_new(T, (uint64_t)(n * 4), MC_WL_ACTIVATIONS, "MseLossBackward0");
    if (!g) return -1;
    if (G) mc_gpu_mse_bwd(G, (float *)TBP(g), TVP(T, out), TVP(T, tgt), FPT(*gs), n);
    F(T->gdiv);
    if (fp16) F(T->gmul);
    if (tape_backward(T, out.node, g)) return -1;
    if (T->wrapped && T->wrap.backward_end && T->wrap.backward_end(T->wrap.ctx)) { /* the final callback */
        T->ctx.oom = true;
        return -1;
    }
    F(T->ones);
    if (fp16) F(T->scaled);
    return 0;
}

/* src and tgt: randn on the device (Philox streams of the micro-step), or
 * the GPU check's host data. */
static void fill_data(mc_tfm *T, tb *s, tb *t, int k)
{
    mc_wl_gpu *G = TG(T);
    const int64_t n = T->T * T->E;
    if (T->data) {
        mc_gpu_from_host(G, TBP(s), T->data->src[k], (uint64_t)n * 4);
        mc_gpu_from_host(G, TBP(t), T->data->tgt[k], (uint64_t)n * 4);
        return;
    }
    const uint64_t seed = T->c.data_seed ? T->c.data_seed : T->c.seed;
    mc_gpu_randn(G, (float *)TBP(s), n, seed, (1ULL << 40) + 2 * T->micro);
    mc_gpu_randn(G, (float *)TBP(t), n, seed, (1ULL << 40) + 2 * T->micro + 1);
}

static int micro_step(mc_tfm *T, int k)
{
    const uint64_t n = (uint64_t)(T->T * T->E);
    tb *s = tb_new(T, n * 4, MC_WL_ACTIVATIONS, "src = randn");
    tb_unref(T, T->kept_src); /* a kept variable goes when rebound */
    T->kept_src = NULL;
    tb *t = s ? tb_new(T, n * 4, MC_WL_ACTIVATIONS, "tgt = randn") : NULL;
    tb_unref(T, T->kept_tgt);
    T->kept_tgt = NULL;
    if (!t) {
        tb_unref(T, s);
        return -1;
    }
    T->drop_base = T->micro * (uint64_t)T->sites; /* each micro-step's dropout streams its own */
    if (TG(T)) fill_data(T, s, t, k);
    T->micro++;
    tv src = {s, (int64_t)n, 4, -1, 0, true, 0}, tgt = {t, (int64_t)n, 4, -1, 0, true, 0};
    tv out = tfm_model_forward(T, src, tgt);
    tv_drop(T, &T->kept_out);
    if (T->ctx.oom || !out.b) {
        tv_drop(T, &src);
        tv_drop(T, &tgt);
        return -1;
    }
    int rc = loss_and_backward(T, out, tgt);
    if (rc == 0 && TG(T)) mc_gpu_read_loss(TG(T), k, FPT(T->loss));
    if (T->locals_live && rc == 0) { /* they live on until rebound (or the step ends) */
        T->kept_src = src.b;
        T->kept_tgt = tgt.b;
        T->kept_out = out;
    } else {
        tv_drop(T, &src); /* del src, tgt, out, loss */
        tv_drop(T, &tgt);
        tv_drop(T, &out);
        F(T->loss);
    }
    tape_clear(T);
    return rc || T->ctx.oom ? -1 : 0;
}

/* ------------------------------------------------------------ the step */

mc_wl_status mc_tfm_profile_step(mc_tfm *T, mc_workload_step_result *r, mc_prof_table *tab)
{
    wl_ctx_profile_begin(&T->ctx);
    mc_wl_status s = mc_tfm_step(T, r);
    wl_ctx_profile_end(&T->ctx, tab);
    return s;
}

/* mc_tfm_step's own shape: (seq, batch / accum, accum), the loss divided,
 * zero_grad after, the locals deleted in each micro-step. */
mc_wl_status mc_tfm_step(mc_tfm *T, mc_workload_step_result *r)
{
    const mc_tfm_config *c = &T->c;
    const mc_tfm_step_shape s = {c->seq, c->batch / c->accum, c->accum, true, false, true, false};
    return mc_tfm_step_as(T, &s, r);
}

/* A function's variables go when it returns: the kept micro-step locals. */
static void drop_kept(mc_tfm *T)
{
    tb_unref(T, T->kept_src);
    tb_unref(T, T->kept_tgt);
    T->kept_src = T->kept_tgt = NULL;
    tv_drop(T, &T->kept_out);
    F(T->loss);
    F(T->kept_loss);
}

mc_wl_status mc_tfm_step_as(mc_tfm *T, const mc_tfm_step_shape *sh, mc_workload_step_result *r)
{
    CHECK(sh->seq >= 1 && sh->batch >= 1 && sh->accum >= 1 && sh->accum <= T->c.accum,
          "transformer: a step shape needs seq, batch >= 1 and 1 <= accum <= the configuration's %d",
          T->c.accum);
    CHECK(!T->c.causal || sh->seq == T->c.seq, "transformer: a causal encoder keeps its sequence");
    wl_ctx *w = &T->ctx;
    memset(r, 0, sizeof *r);
    r->step = ++T->step;
    w->step = T->step;
    r->step_time_s = NAN;
    r->loss = NAN;
    r->loss_scale = T->c.precision == MC_WL_FP16 ? T->opt.scale_host : 1.0;
    if (w->setup_status != MC_WL_OK) {
        r->status = w->setup_status;
        wl_fill_stats(&T->ctx, r);
        return r->status;
    }
    const int64_t N0 = T->N, L0 = T->L, T0 = T->T;
    const int accum0 = T->c.accum;
    T->N = sh->batch, T->L = sh->seq, T->T = sh->batch * sh->seq, T->c.accum = sh->accum;
    T->divide_loss = sh->divide_loss;
    T->locals_live = sh->locals_live;
    wl_trace(w, "# step %d", T->step);
    wl_reset_peak(w);
    int rc = 0;
    if (TG(T)) mc_gpu_step_begin(TG(T));
    if (sh->zero_grad_before) tfm_zero_grad(T);
    if (T->wrap.step_begin) T->wrap.step_begin(T->wrap.ctx);
    for (int k = 0; k < T->c.accum && rc == 0; k++) rc = micro_step(T, k);
    bool skipped = false;
    if (rc == 0) rc = tfm_optimizer(T, &skipped);
    if (rc == 0 && sh->zero_grad_after) tfm_zero_grad(T);
    if (rc == 0 && T->wrap.step_end) T->wrap.step_end(T->wrap.ctx);
    if (rc == 0 && T->locals_live) drop_kept(T);
    if (rc != 0) { /* a caught OutOfMemoryError, then zero_grad */
        r->status = MC_WL_OOM;
        if (T->locals_live) drop_kept(T);
        tfm_unwind(T);
        T->ctx.oom = T->stopped = T->recomputing = false;
        T->handle = 0;
        T->cur_group = -1;
        wl_unwind(w);
        tfm_zero_grad(T);
    }
    if (TG(T)) {
        r->step_time_s = mc_gpu_step_end(TG(T));
        if (rc == 0) r->loss = mc_gpu_loss_sum(TG(T), T->c.accum);
        if (rc == 0 && T->data && T->data->losses && T->step == 1)
            for (int k = 0; k < T->c.accum; k++) T->data->losses[k] = mc_gpu_slot_loss(TG(T), k);
    }
    r->skipped = skipped;
    r->loss_scale = T->c.precision == MC_WL_FP16 ? T->opt.scale_host : 1.0;
    wl_fill_stats(&T->ctx, r);
    wl_trace(w, "# end of step %d%s", T->step, sh->zero_grad_after ? " (after zero_grad)" : "");
    if (w->trace && T->step == T->c.trace_steps) fflush(w->trace);
    T->N = N0, T->L = L0, T->T = T0, T->c.accum = accum0;
    T->divide_loss = true;
    T->locals_live = false;
    return r->status;
}
