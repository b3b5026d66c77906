/* tfm_seq.c: the Transformer workload's layers, forward and life cycle
 * (set-up's requests are tfm_setup.c's; the loss, the micro-steps and the
 * step tfm_step.c's), in PyTorch 2.11's eager order
 * (torch/nn/modules/transformer.py):
 *
 * - Set-up (device=cuda factory kwargs): nn.Transformer builds one encoder
 *   layer (its parameters in registration order: self_attn.in_proj_weight,
 *   in_proj_bias, out_proj.weight, .bias, linear1, linear2, norm1, norm2),
 *   the encoder norm, then _get_clones deep-copies the layer N times
 *   (Parameter.__deepcopy__: one clone each, in the same order); then the
 *   decoder layer (self_attn, multihead_attn, linear1, linear2, norm1..3),
 *   its norm and M copies; _reset_parameters works in place; the two
 *   template layers die with __init__'s frame, at once (no reference
 *   cycle leaves them to the garbage collector: the fixtures' traces free
 *   them there). The encoder alone:
 *   layer, N copies, `del layer`; with --causal the mask is
 *   torch.full((L, L), -inf) then torch.triu(..., 1), the full one freed.
 * - Layers, training mode (eval() without autograd takes PyTorch's fast
 *   paths where their conditions hold: tfm_fastpath.c): post-norm
 *   x = norm1(x + _sa_block(x)); x = norm2(x + _ff_block(x)), pre-norm
 *   x = x + _sa_block(norm1(x)); x = x + _ff_block(norm2(x)); the decoder
 *   has _mha_block(x, memory) and norm3 between. _sa_block: self_attn then
 *   dropout1; _ff_block: linear2(dropout(activation(linear1(x)))) then
 *   dropout2. A Python temporary goes when the call that took it returns,
 *   a variable when it is rebound; saved tensors live until their node runs.
 * - Autocast (fp16/bf16): linear and attention in half, layer_norm in fp32
 *   (so the residual stream is fp32), the cast cache cleared at the
 *   region's exit after the loss.
 * - Checkpoint: each layer through torch.utils.checkpoint(use_reentrant=
 *   False): its inputs kept (_NoopSaveInputs) until the layer's last node
 *   has run, only holders saved; the first of its nodes to unpack a saved
 *   tensor in backward recomputes it on the backward thread (its cuBLAS
 *   handle) under a new autocast region, up to the last saved tensor
 *   (early stop: the save that stops it comes before the op's output).
 * - A data-parallel wrapper (tfm_wrap.h: FSDP2 on each encoder layer,
 *   common/workload/sharded_tfm.c): its hooks run where FSDP2's do, around
 *   each layer, at the root's post-forward and in backward, and the
 *   optimizer takes its parameter list (the local shards).
 */
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"
#include "check.h"
#include "tfm_internal.h"
#include "workload/transformer/reference/tfm_host_ref.h"
#include "tfm_offload.h"
#include "workload/transformer/kernels/tfm_kernels.h"

/* ------------------------------------------------------------ layers */

/* The blocks (torch/nn/modules/transformer.py _sa_block, _mha_block,
 * _ff_block) take x (one reference, the block's parameter) and let it go
 * where the block rebinds it (`x = self.self_attn(x, x, x, ...)[0]`,
 * `x = self.linear2(...)`), before the last dropout: pre-norm's norm output
 * is freed there, as nothing else holds it. */
/* Dropout sites (tfm_host_ref.h's order): T->site is the one the next op
 * draws from; site0 the layer's first. */
static tv sa_block(mc_tfm *T, tv *x, int p0, bool causal, int site0)
{
    T->site = site0; /* the attention probabilities */
    tv o;
    if (tfm_mha_fast(T)) { /* MultiheadAttention.forward's fast path (tfm_fastpath.c) */
        T->fast_mha++;
        o = tfm_native_mha(T, *x, p0);
    } else {
        o = mha_forward(T, *x, *x, p0, true, causal, T->L);
    }
    tv_drop(T, x);
    T->site = site0 + 1; /* dropout1 */
    if (T->c.fused) return o; /* fused with the residual add */
    tv d = op_dropout(T, o);
    tv_drop(T, &o);
    return d;
}

static tv mha_block(mc_tfm *T, tv *x, tv mem, int p0, int site0)
{
    T->site = site0 + 2; /* the cross-attention probabilities */
    tv o = mha_forward(T, *x, mem, p0, false, false, T->L);
    tv_drop(T, x);
    T->site = site0 + 3; /* dropout2 */
    if (T->c.fused) return o;
    tv d = op_dropout(T, o);
    tv_drop(T, &o);
    return d;
}

static tv ff_block(mc_tfm *T, tv *x, int p0, int site)
{
    const int64_t tok = T->T, E = T->E, F = T->c.ff;
    tv h = op_linear(T, *x, param_tv(T, p0), param_tv(T, p0 + 1), tok, E, F, false);
    T->site = site; /* the FFN's dropout */
    tv d;
    if (T->c.fused) {
        d = op_fused_act_dropout(T, h, tok);
        tv_drop(T, &h);
    } else {
        tv a = op_activation(T, h);
        tv_drop(T, &h);
        d = op_dropout(T, a);
        tv_drop(T, &a);
    }
    tv o = op_linear(T, d, param_tv(T, p0 + 2), param_tv(T, p0 + 3), tok, F, E, false);
    tv_drop(T, &d);
    tv_drop(T, x);
    T->site = site + 1; /* dropout2 (decoder: dropout3) */
    if (T->c.fused) return o;
    tv r = op_dropout(T, o);
    tv_drop(T, &o);
    return r;
}

/* x = norm(x + f) (post-norm) or x = x + f (pre-norm); f, x consumed. */
static void residual(mc_tfm *T, tv *x, tv *f, int pnorm)
{
    /* fused: the block's dropout (site T->site) in the add's kernel */
    tv s = T->c.fused ? op_fused_dropout_add(T, *x, *f, T->T) : op_add(T, *x, *f);
    tv_drop(T, f);
    if (!T->c.norm_first) {
        tv n = op_layer_norm(T, s, pnorm, pnorm + 1);
        tv_drop(T, &s);
        s = n;
    }
    tv_drop(T, x);
    *x = s;
}

/* One layer's body: returns its output with one reference; x is the
 * caller's (not consumed). */
static tv layer_body(mc_tfm *T, int layer, tv xin, tv mem)
{
    const bool dec = layer >= T->c.enc_layers, pre = T->c.norm_first;
    const int base = dec ? T->dec_first + (layer - (int)T->c.enc_layers) * TFM_DEC_PER
                         : T->enc_first + layer * TFM_ENC_PER;
    const int n1 = base + (dec ? 12 : 8), n2 = n1 + 2, n3 = n1 + 4, ff = base + (dec ? 8 : 4);
    const bool causal = !dec && T->c.causal;
    const int enc = (int)T->c.enc_layers;
    const int site0 = dec ? TFM_ENC_DROPOUTS * enc + TFM_DEC_DROPOUTS * (layer - enc) : TFM_ENC_DROPOUTS * layer;
    tv x = tv_view(xin), f, n;
    n = pre ? op_layer_norm(T, x, n1, n1 + 1) : tv_view(x);
    f = sa_block(T, &n, base, causal, site0);
    residual(T, &x, &f, n1);
    if (dec) {
        n = pre ? op_layer_norm(T, x, n2, n2 + 1) : tv_view(x);
        f = mha_block(T, &n, mem, base + 4, site0);
        residual(T, &x, &f, n2);
    }
    const int nf = dec ? n3 : n2;
    n = pre ? op_layer_norm(T, x, nf, nf + 1) : tv_view(x);
    f = ff_block(T, &n, ff, site0 + (dec ? 4 : 2));
    residual(T, &x, &f, nf);
    return x;
}

static int new_group(mc_tfm *T)
{
    if (T->ngrp == T->cap_grp) {
        T->cap_grp = T->cap_grp ? 2 * T->cap_grp : 16;
        T->grp = realloc(T->grp, (size_t)T->cap_grp * sizeof *T->grp);
        CHECK(T->grp != NULL, "out of host memory");
    }
    memset(&T->grp[T->ngrp], 0, sizeof T->grp[T->ngrp]);
    return T->ngrp++;
}

/* RegisterPostBackwardFunction's backward (a: the layer): the wrapper's
 * post_backward, the gradient handed on as it came (its layout and view
 * kept for the next node's input buffer). */
static int wrap_post_backward_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    if (T->wrap.post_backward && T->wrap.post_backward(T->wrap.ctx, (int)nd->a[0])) {
        T->ctx.oom = true;
        return -1;
    }
    out[0] = nd->gin[0];
    tb_ref(out[0]);
    nd->next[0].slot = (nd->next[0].slot & 0xff) | (nd->gin_nc[0] ? 0x100 : 0) | (nd->gin_view[0] ? 0x200 : 0);
    nd->next[0].es = nd->gin_es[0];
    return 0;
}

/* A wrapper's pre-forward hook of layer l, then (input needing a
 * gradient) RegisterPostBackwardFunction.apply on it: *x becomes its
 * output, the same storage. */
static int wrap_pre_forward(mc_tfm *T, int l, tv *x)
{
    if (T->wrap.pre_forward && T->wrap.pre_forward(T->wrap.ctx, l)) {
        T->ctx.oom = true;
        return -1;
    }
    if (x->node == -1) return 0;
    int n = tape_node(T, wrap_post_backward_bwd, "RegisterPostBackwardFunctionBackward", 1);
    T->tape[n].a[0] = l;
    tape_edge(T, n, 0, *x);
    x->node = n;
    x->slot = 0;
    return 0;
}

/* output = mod(output, ...) or checkpoint(mod, output, ...): *x rebinds.
 * Under a wrapper (tfm_wrap.h) its hooks run around the layer. */
static void layer(mc_tfm *T, int l, tv *x, tv mem)
{
    if (T->ctx.oom) return;
    tv y, in = TV_NONE;
    if (T->wrapped) {
        in = tv_view(*x); /* the hook's output: what the layer takes */
        if (wrap_pre_forward(T, l, &in)) {
            tv_drop(T, &in);
            return;
        }
        y = layer_body(T, l, in, mem);
        if (y.b) T->tape[y.node].wrap_pre = l + 1;
        if (T->wrap.post_forward) T->wrap.post_forward(T->wrap.ctx, l);
        tv_drop(T, &in);
    } else if (T->c.checkpoint) {
        int g = new_group(T);
        tgroup *G = &T->grp[g];
        G->in = tv_view(*x);
        G->mem = tv_view(mem);
        G->layer = l;
        G->first = T->nt;
        T->cur_group = g;
        y = layer_body(T, l, *x, mem);
        T->cur_group = -1;
        G = &T->grp[g];
        G->last = T->nt;
        G->last_saving = -1;
        for (int i = G->first; i < G->last; i++)
            if (T->tape[i].orig_saved > 0) {
                G->last_saving = i;
                G->live_nodes++;
            }
    } else if (tfm_layer_fast(T, l)) {
        y = tfm_fast_encoder_layer(T, l, *x);
    } else {
        y = layer_body(T, l, *x, mem);
    }
    tv_drop(T, x);
    *x = y;
}

/* Checkpoint's recompute hook (tfm_saved_hooks): layer g's forward again
 * on the backward thread, its saved tensors moved into the first
 * forward's nodes, the recomputation's own graph dropped. */
static int recompute(mc_tfm *T, int g)
{
    tgroup *G = &T->grp[g];
    const int handle = T->handle;
    T->recomputing = true;
    T->stopped = false;
    T->rec_target = g;
    T->rec_base = T->nt;
    T->handle = 1;
    tv in = tv_view(G->in), mem = tv_view(G->mem);
    tv y = layer_body(T, G->layer, in, mem);
    tv_drop(T, &y);
    tv_drop(T, &in);
    tv_drop(T, &mem);
    if (T->lowp) cast_cache_clear(T); /* the recomputation's autocast exit */
    T->recomputing = T->stopped = false;
    T->handle = handle;
    G = &T->grp[g];
    const int made = T->nt - T->rec_base;
    for (int k = 0; k < made && G->first + k < G->last; k++) {
        tnode *o = &T->tape[G->first + k], *r = &T->tape[T->rec_base + k];
        for (int s = 0; s < r->nsaved && s < o->nsaved; s++) {
            o->saved[s] = r->saved[s];
            o->sa[s] = r->sa[s];
            o->sp[s] = r->sp[s];
            r->saved[s] = NULL;
        }
        for (int s = o->nsaved; s < r->nsaved; s++) tb_unref(T, r->saved[s]);
    }
    for (int k = 0; k < made; k++) { /* the recomputation's own graph goes */
        tnode *r = &T->tape[T->rec_base + k];
        for (int s = 0; s < r->nsaved; s++) tb_unref(T, r->saved[s]);
        for (int s = 0; s < 3; s++) tb_unref(T, r->gin[s]);
    }
    T->nt = T->rec_base;
    G->recomputed = true;
    return T->ctx.oom ? -1 : 0;
}

/* ------------------------------------------------------------ the forward */

tv tfm_model_forward(mc_tfm *T, tv src, tv tgt)
{
    tv x = tv_view(src), none = TV_NONE;
    for (int l = 0; l < T->c.enc_layers; l++) layer(T, l, &x, none);
    if (T->wrapped && T->wrap.forward_end && !T->ctx.oom) T->wrap.forward_end(T->wrap.ctx); /* the root's post-forward */
    if (T->c.arch == MC_TFM_ENCODER) return x;
    tv mem = op_layer_norm(T, x, T->enc_norm, T->enc_norm + 1);
    tv_drop(T, &x);
    tv y = tv_view(tgt);
    for (int l = 0; l < T->c.dec_layers; l++) layer(T, (int)T->c.enc_layers + l, &y, mem);
    tv out = op_layer_norm(T, y, T->dec_norm, T->dec_norm + 1);
    tv_drop(T, &y);
    tv_drop(T, &mem);
    return out;
}


/* ------------------------------------------------------------ life cycle */

mc_tfm *mc_tfm_create(const mc_tfm_config *c, bool on_gpu, FILE *trace, char *err, size_t len)
{
    return mc_tfm_create_with(c, on_gpu, trace, NULL, err, len);
}

static mc_tfm *create(const mc_tfm_config *c, bool on_gpu, const ca_backend *be, FILE *trace, mc_tfm_data *data,
                      char *err, size_t len);

mc_tfm *mc_tfm_create_with(const mc_tfm_config *c, bool on_gpu, FILE *trace, mc_tfm_data *data,
                           char *err, size_t len)
{
    return create(c, on_gpu, NULL, trace, data, err, len);
}

mc_tfm *mc_tfm_create_on(const mc_tfm_config *c, ca_backend be, FILE *trace, char *err, size_t len)
{
    return create(c, false, &be, trace, NULL, err, len);
}

/* On the GPU, over the host device, or (be) over the caller's backend. */
static mc_tfm *create(const mc_tfm_config *c, bool on_gpu, const ca_backend *be, FILE *trace, mc_tfm_data *data,
                      char *err, size_t len)
{
    if (mc_tfm_config_check(c, err, len) != 0) return NULL;
    if (on_gpu && mc_tfm_gpu_check(c, err, len) != 0) return NULL;
    if (c->offload && c->checkpoint) { /* tfm_offload.c says why */
        snprintf(err, len, "--offload does not combine with --checkpoint");
        return NULL;
    }
    CHECK(!data || on_gpu, "transformer: host data without a GPU");
    mc_tfm *T = calloc(1, sizeof *T);
    CHECK(T != NULL, "out of host memory");
    T->c = *c;
    T->N = c->batch / c->accum;
    T->L = c->seq;
    T->E = c->d_model;
    T->H = c->heads;
    T->hd = T->E / T->H;
    T->T = T->N * T->L;
    T->lowp = c->precision != MC_WL_FP32;
    T->es = T->lowp ? 2 : 4;
    T->dt = c->precision == MC_WL_FP16 ? MC_DT_F16 : c->precision == MC_WL_BF16 ? MC_DT_BF16 : MC_DT_F32;
    T->sites = (int)(TFM_ENC_DROPOUTS * c->enc_layers +
                     (c->arch == MC_TFM_TRANSFORMER ? TFM_DEC_DROPOUTS * c->dec_layers : 0));
    T->data = data;
    T->cur_group = -1;
    T->divide_loss = true;
    if (c->checkpoint) T->hooks.recompute = recompute;
    if (c->offload) tfm_offload_hooks(&T->hooks);
    wl_optim_init(&T->opt, c->optimizer, c->lr, c->precision == MC_WL_FP16);
    wl_ctx *w = &T->ctx;
    if (be) { /* model-only, on the caller's backend */
        wl_ctx_open_backend(w, &c->alloc, *be);
        w->trace = trace;
        w->trace_steps = c->trace_steps;
    } else {
        wl_ctx_open(w, &c->alloc, on_gpu, c->host_capacity, c->accum, trace, c->trace_steps);
    }
    tfm_build_params(T);
    tfm_opt_params(T);
    wl_trace(w, "# memclaims-trace v1");
    wl_trace(w, "# build/workload's requests: %s d_model=%lld heads=%lld enc=%lld dec=%lld ff=%lld "
                "dropout=%g %s%s%s%s seq=%lld batch=%lld %s %s accum=%d%s%s%s",
             c->arch == MC_TFM_TRANSFORMER ? "transformer" : "encoder", (long long)c->d_model,
             (long long)c->heads, (long long)c->enc_layers,
             (long long)(c->arch == MC_TFM_TRANSFORMER ? c->dec_layers : 0), (long long)c->ff,
             c->dropout, c->activation == MC_TFM_GELU ? "gelu" : "relu",
             c->norm_first ? " norm_first" : "", c->batch_first ? " batch_first" : "",
             c->causal ? " causal" : "", (long long)c->seq, (long long)c->batch,
             mc_wl_optimizer_name(c->optimizer), mc_wl_precision_name(c->precision), c->accum,
             c->checkpoint ? " checkpoint" : "", c->fused ? " fused" : "", c->offload ? " offload" : "");
    char settings[512]; /* the allocator settings' set lines (trace/trace.h) */
    if (ca_trace_format_settings(&c->alloc, settings, sizeof settings) > 0) wl_trace(w, "%s", settings);
    wl_trace(w, "# set-up: parameters, optimizer%s", c->precision == MC_WL_FP16 ? ", GradScaler" : "");
    if (tfm_setup(T) != 0) {
        w->setup_status = MC_WL_OOM;
        wl_free_all(w);
    } else if (w->gpu) {
        tfm_init_params(T);
    }
    return T;
}

mc_wl_status mc_tfm_setup_status(const mc_tfm *T) { return T->ctx.setup_status; }
const ca_allocator *mc_tfm_allocator(const mc_tfm *T) { return T->ctx.a; }

void mc_tfm_live_by_category(const mc_tfm *T, uint64_t out[MC_WL_NCAT])
{
    wl_live_by_category(&T->ctx, out);
}

void mc_tfm_destroy(mc_tfm *T)
{
    if (!T) return;
    T->ctx.trace = NULL; /* teardown is not part of the traced sequence */
    if (T->ctx.gpu) mc_gpu_sync(T->ctx.gpu);
    tfm_unwind(T);
    tfm_offload_free(T); /* after the sync: no copy is in flight */
    wl_ctx_close(&T->ctx);
    free(T->mask);
    free(T->p);
    free(T->params);
    free(T->tape);
    free(T->grp);
    free(T);
}
