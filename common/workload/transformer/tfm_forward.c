/* tfm_forward.c: one forward pass of the Transformer alone (mc_tfm_forward,
 * tfm.h), as evaluation runs it in each of core/wl_types.h's modes:
 *
 *   transformer: src = randn; tgt = randn; out = model(src, tgt)
 *   encoder:     src = randn; out = model(src)
 *   then del out, src[, tgt]
 *
 * The layers are tfm_seq.c's, with two switches: T->no_grad (no_grad,
 * inference_mode: the tape keeps no saved tensor, so each tensor goes when
 * its last Python owner lets go, and the memory-efficient attention makes
 * no logsumexp) and T->eval (eval(): dropout returns its input, SDPA runs
 * with dropout 0, and without autograd the fast paths of tfm_fastpath.c
 * run where PyTorch takes them). inference_mode allocates as no_grad does
 * (its tensors carry no version counter or view tracking, neither of which
 * takes device memory), so it is eval() under no_grad here. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "tfm_internal.h"

#define FWD_RANDN_STREAM (1ULL << 41) /* src and tgt's random streams, apart from the steps' */

static uint64_t allocated_now(const mc_tfm *T)
{
    return (uint64_t)ca_get_stats(T->ctx.a)->allocated_bytes.current;
}

static void fill(const mc_tfm *T, mc_workload_forward_result *r)
{
    const ca_stats *s = ca_get_stats(T->ctx.a);
    r->peak_allocated = (uint64_t)s->allocated_bytes.peak;
    r->peak_reserved = (uint64_t)s->reserved_bytes.peak;
    memcpy(r->peak_by_category, T->ctx.peak_cat, sizeof T->ctx.peak_cat);
}

/* src (and tgt) = randn, out = model(...). 0, or -1 on OOM (the caller
 * unwinds). s, t: the inputs' storages (t NULL for the encoder). */
static int run(mc_tfm *T, tb **s, tb **t, tv *out)
{
    const int64_t n = T->T * T->E;
    *s = tb_new(T, (uint64_t)n * 4, MC_WL_ACTIVATIONS, "src = randn");
    if (!*s) return -1;
    const bool dec = T->c.arch == MC_TFM_TRANSFORMER;
    if (dec && !(*t = tb_new(T, (uint64_t)n * 4, MC_WL_ACTIVATIONS, "tgt = randn"))) return -1;
    T->drop_base = T->micro * (uint64_t)T->sites; /* each forward's dropout streams its own */
    if (TG(T)) {
        mc_gpu_randn(TG(T), (float *)TBP(*s), n, T->c.seed, FWD_RANDN_STREAM + 2 * T->micro);
        if (dec) mc_gpu_randn(TG(T), (float *)TBP(*t), n, T->c.seed, FWD_RANDN_STREAM + 2 * T->micro + 1);
    }
    T->micro++;
    tv src = {*s, n, 4, -1, 0, true, 0}, tgt = dec ? (tv){*t, n, 4, -1, 0, true, 0} : TV_NONE;
    *out = tfm_model_forward(T, src, tgt);
    return T->ctx.oom || !out->b ? -1 : 0;
}

mc_wl_status mc_tfm_forward(mc_tfm *T, mc_wl_fwd_mode mode, float *out_host, mc_workload_forward_result *r)
{
    const mc_tfm_config *c = &T->c;
    CHECK((unsigned)mode < MC_WL_FWD_NMODE, "transformer: forward mode %d", (int)mode);
    CHECK(c->precision == MC_WL_FP32 && !c->checkpoint && !c->offload && !c->fused,
          "mc_tfm_forward models fp32 without checkpointing, offload or fused ops only");
    memset(r, 0, sizeof *r);
    r->time_s = NAN;
    r->status = T->ctx.setup_status;
    if (r->status != MC_WL_OK) {
        fill(T, r);
        return r->status;
    }
    T->no_grad = mode != MC_WL_FWD_GRAD;
    T->eval = mode == MC_WL_FWD_EVAL || mode == MC_WL_FWD_INFERENCE;
    T->fast_layers = T->fast_mha = 0;
    wl_trace(&T->ctx, "# forward (%s)", mc_wl_fwd_mode_name(mode));
    r->allocated_before = allocated_now(T);
    wl_reset_peak(&T->ctx);
    if (TG(T)) mc_gpu_step_begin(TG(T));
    tb *s = NULL, *t = NULL;
    tv out = TV_NONE;
    const int rc = run(T, &s, &t, &out);
    if (TG(T)) r->time_s = mc_gpu_step_end(TG(T));
    fill(T, r);
    r->fast_layers = T->fast_layers;
    r->fast_mha = T->fast_mha;
    if (rc != 0) { /* a caught OutOfMemoryError: the frames and the graph go */
        r->status = MC_WL_OOM;
        tfm_unwind(T);
        T->ctx.oom = false;
        wl_unwind(&T->ctx);
        r->allocated_out = r->allocated_end = allocated_now(T);
    } else {
        r->allocated_out = allocated_now(T);
        r->output_bytes = (uint64_t)(out.n * out.es);
        if (TG(T) && out_host) mc_gpu_to_host(TG(T), out_host, TVP(T, out), out.n, MC_DT_F32);
        tape_clear(T); /* del out: the graph goes with it, and what only it held */
        r->saved_bytes = r->allocated_out - allocated_now(T);
        tv_drop(T, &out);
        tb_unref(T, s);
        tb_unref(T, t);
        r->allocated_end = allocated_now(T);
    }
    T->no_grad = T->eval = false;
    return r->status;
}
