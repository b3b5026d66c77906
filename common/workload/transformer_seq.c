/* transformer_seq.c: the Transformer workload's set-up, layers and step, in
 * PyTorch 2.11's eager order (torch/nn/modules/transformer.py):
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
 * - Layers, training mode (no fast path): post-norm
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
 *   has run, only holders saved; the first node of the layer to run in
 *   backward recomputes it on the backward thread (its cuBLAS handle) under
 *   a new autocast region, up to the last saved tensor (early stop).
 * - The loss and the step as the MLP's (workload_seq.c, workload_opt.c):
 *   mse_loss's two [n] fp32 tensors and mean scratch, loss / K, ones_like,
 *   [GradScaler], DivBackward0, MseLossBackward0; del src, tgt, out, loss.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "transformer_internal.h"

enum { ENC_PER = 12, DEC_PER = 18 };

/* ------------------------------------------------------------ set-up */

static const char *const ENC_NAMES[ENC_PER] = {
    "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
    "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
    "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"};
static const char *const DEC_NAMES[DEC_PER] = {
    "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
    "self_attn.out_proj.bias", "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
    "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias", "linear1.weight",
    "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
    "norm2.weight", "norm2.bias", "norm3.weight", "norm3.bias"};

static void layer_sizes(const mc_tfm *T, bool dec, int64_t *n)
{
    const int64_t E = T->E, F = T->c.ff;
    int k = 0;
    for (int a = 0; a < (dec ? 2 : 1); a++) {
        n[k++] = 3 * E * E;
        n[k++] = 3 * E;
        n[k++] = E * E;
        n[k++] = E;
    }
    n[k++] = F * E;
    n[k++] = F;
    n[k++] = E * F;
    n[k++] = E;
    for (int a = 0; a < (dec ? 3 : 2); a++) {
        n[k++] = E;
        n[k++] = E;
    }
}

static void add_param(mc_tfm *T, int64_t n, const char *fmt, int l, const char *leaf)
{
    if (T->np == T->cap_p) {
        T->cap_p = T->cap_p ? 2 * T->cap_p : 64;
        T->p = realloc(T->p, (size_t)T->cap_p * sizeof *T->p);
        CHECK(T->p != NULL, "out of host memory");
    }
    tparam *p = &T->p[T->np++];
    memset(p, 0, sizeof *p);
    p->n = n;
    snprintf(p->name, sizeof p->name, fmt, l, leaf);
}

/* The parameter list, in model.parameters() order (no requests). */
static void build_params(mc_tfm *T)
{
    int64_t en[ENC_PER], dn[DEC_PER];
    layer_sizes(T, false, en);
    layer_sizes(T, true, dn);
    const char *pre = T->c.arch == MC_TFM_TRANSFORMER ? "encoder.layers.%d.%s" : "layers.%d.%s";
    T->enc_first = 0;
    for (int l = 0; l < T->c.enc_layers; l++)
        for (int i = 0; i < ENC_PER; i++) add_param(T, en[i], pre, l, ENC_NAMES[i]);
    T->enc_norm = T->dec_first = T->dec_norm = -1;
    if (T->c.arch != MC_TFM_TRANSFORMER) return;
    T->enc_norm = T->np;
    add_param(T, T->E, "encoder.norm.%.0d%s", 0, "weight");
    add_param(T, T->E, "encoder.norm.%.0d%s", 0, "bias");
    T->dec_first = T->np;
    for (int l = 0; l < T->c.dec_layers; l++)
        for (int i = 0; i < DEC_PER; i++) add_param(T, dn[i], "decoder.layers.%d.%s", l, DEC_NAMES[i]);
    T->dec_norm = T->np;
    add_param(T, T->E, "decoder.norm.%.0d%s", 0, "weight");
    add_param(T, T->E, "decoder.norm.%.0d%s", 0, "bias");
}

static int alloc_param(mc_tfm *T, int i)
{
    return wl_alloc(&T->w, &T->p[i].p, (uint64_t)T->p[i].n * 4, MC_WL_WEIGHTS, true, T->p[i].name);
}

/* A template layer (freed at the end of set-up), then its clones. */
static int template_and_clones(mc_tfm *T, bool dec, wl_t *tmpl, int first, int layers, int norm)
{
    int64_t n[DEC_PER];
    const int per = dec ? DEC_PER : ENC_PER;
    layer_sizes(T, dec, n);
    for (int i = 0; i < per; i++)
        if (wl_alloc(&T->w, &tmpl[i], (uint64_t)n[i] * 4, MC_WL_WEIGHTS, false,
                     dec ? "template decoder layer (deep-copied, then freed)"
                         : "template encoder layer (deep-copied, then freed)") != 0)
            return -1;
    if (norm >= 0 && (alloc_param(T, norm) || alloc_param(T, norm + 1))) return -1;
    for (int l = 0; l < layers; l++)
        for (int i = 0; i < per; i++)
            if (alloc_param(T, first + l * per + i)) return -1;
    return 0;
}

static int setup(mc_tfm *T)
{
    wl_t enc_t[ENC_PER], dec_t[DEC_PER];
    memset(enc_t, 0, sizeof enc_t);
    memset(dec_t, 0, sizeof dec_t);
    int rc = template_and_clones(T, false, enc_t, T->enc_first, (int)T->c.enc_layers, T->enc_norm);
    if (rc == 0 && T->c.arch == MC_TFM_TRANSFORMER)
        rc = template_and_clones(T, true, dec_t, T->dec_first, (int)T->c.dec_layers, T->dec_norm);
    for (int i = 0; i < ENC_PER; i++) wl_free(&T->w, &enc_t[i]);
    for (int i = 0; i < DEC_PER; i++) wl_free(&T->w, &dec_t[i]);
    if (rc == 0 && T->c.causal) { /* generate_square_subsequent_mask: full, then triu */
        const uint64_t b = (uint64_t)(T->L * T->L * 4);
        wl_t full;
        memset(&full, 0, sizeof full);
        if (wl_alloc(&T->w, &full, b, MC_WL_ACTIVATIONS, false, "torch.full((L, L), -inf)") != 0) return -1;
        T->mask = calloc(1, sizeof *T->mask);
        CHECK(T->mask != NULL, "out of host memory");
        rc = wl_alloc(&T->w, &T->mask->t, b, MC_WL_ACTIVATIONS, true, "causal mask: torch.triu(full, 1)");
        wl_free(&T->w, &full);
    }
    return rc;
}

/* ------------------------------------------------------------ layers */

/* The blocks (torch/nn/modules/transformer.py _sa_block, _mha_block,
 * _ff_block) take x (one reference, the block's parameter) and let it go
 * where the block rebinds it (`x = self.self_attn(x, x, x, ...)[0]`,
 * `x = self.linear2(...)`), before the last dropout: pre-norm's norm output
 * is freed there, as nothing else holds it. */
static tv sa_block(mc_tfm *T, tv *x, int p0, bool causal)
{
    tv o = mha_forward(T, *x, *x, p0, true, causal, T->L);
    tv_drop(T, x);
    tv d = op_dropout(T, o);
    tv_drop(T, &o);
    return d;
}

static tv mha_block(mc_tfm *T, tv *x, tv mem, int p0)
{
    tv o = mha_forward(T, *x, mem, p0, false, false, T->L);
    tv_drop(T, x);
    tv d = op_dropout(T, o);
    tv_drop(T, &o);
    return d;
}

static tv ff_block(mc_tfm *T, tv *x, int p0)
{
    const int64_t tok = T->T, E = T->E, F = T->c.ff;
    tv h = op_linear(T, *x, param_tv(T, p0), param_tv(T, p0 + 1), tok, E, F, false);
    tv a = op_activation(T, h);
    tv_drop(T, &h);
    tv d = op_dropout(T, a);
    tv_drop(T, &a);
    tv o = op_linear(T, d, param_tv(T, p0 + 2), param_tv(T, p0 + 3), tok, F, E, false);
    tv_drop(T, &d);
    tv_drop(T, x);
    tv r = op_dropout(T, o);
    tv_drop(T, &o);
    return r;
}

/* x = norm(x + f) (post-norm) or x = x + f (pre-norm); f, x consumed. */
static void residual(mc_tfm *T, tv *x, tv *f, int pnorm)
{
    tv s = op_add(T, *x, *f);
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
    const int base = dec ? T->dec_first + (layer - (int)T->c.enc_layers) * DEC_PER
                         : T->enc_first + layer * ENC_PER;
    const int n1 = base + (dec ? 12 : 8), n2 = n1 + 2, n3 = n1 + 4, ff = base + (dec ? 8 : 4);
    const bool causal = !dec && T->c.causal;
    tv x = tv_view(xin), f, n;
    n = pre ? op_layer_norm(T, x, n1, n1 + 1) : tv_view(x);
    f = sa_block(T, &n, base, causal);
    residual(T, &x, &f, n1);
    if (dec) {
        n = pre ? op_layer_norm(T, x, n2, n2 + 1) : tv_view(x);
        f = mha_block(T, &n, mem, base + 4);
        residual(T, &x, &f, n2);
    }
    const int nf = dec ? n3 : n2;
    n = pre ? op_layer_norm(T, x, nf, nf + 1) : tv_view(x);
    f = ff_block(T, &n, ff);
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

/* output = mod(output, ...) or checkpoint(mod, output, ...): *x rebinds. */
static void layer(mc_tfm *T, int l, tv *x, tv mem)
{
    if (T->oom) return;
    tv y;
    if (T->c.checkpoint) {
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
    } else {
        y = layer_body(T, l, *x, mem);
    }
    tv_drop(T, x);
    *x = y;
}

int tfm_recompute(mc_tfm *T, int g)
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
    return T->oom ? -1 : 0;
}

/* ------------------------------------------------------------ one micro-step */

static tv model_forward(mc_tfm *T, tv src, tv tgt)
{
    tv x = tv_view(src), none = TV_NONE;
    for (int l = 0; l < T->c.enc_layers; l++) layer(T, l, &x, none);
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

#define AW(t, bytes, cat, what, keep)                                                     \
    do {                                                                                  \
        if (wl_alloc(&T->w, &(t), (uint64_t)(bytes), (cat), (keep), (what)) != 0) {       \
            T->oom = true;                                                                \
            return -1;                                                                    \
        }                                                                                 \
    } while (0)
#define FW(t) wl_free(&T->w, &(t))

/* loss = mse_loss(out, tgt) / K, the autocast exit, backward. */
static int loss_and_backward(mc_tfm *T, tv out)
{
    const int64_t n = out.n;
    const bool fp16 = T->c.precision == MC_WL_FP16;
    AW(T->mse, n * 4, MC_WL_ACTIVATIONS, "mse_loss elementwise (holds the mean)", false);
    AW(T->mse_tmp, n * 4, MC_WL_ACTIVATIONS, "mse_loss second [n]", false);
    if (reduce_scratch(T, 1, n, false, 4)) return -1;
    FW(T->mse_tmp);
    AW(T->loss, 4, MC_WL_OTHER, "loss / K", false);
    FW(T->mse);
    if (T->lowp) cast_cache_clear(T);
    if (fp16) {
        if (!T->scale.addr) {
            AW(T->scale, 4, MC_WL_OTHER, "GradScaler scale", true);
            AW(T->growth, 4, MC_WL_OTHER, "GradScaler growth tracker", true);
        }
        AW(T->scaled, 4, MC_WL_OTHER, "scaler.scale(loss)", false);
    }
    AW(T->ones, 4, MC_WL_OTHER, "backward's ones_like", false);
    if (fp16) AW(T->gmul, 4, MC_WL_OTHER, "MulBackward0", false);
    AW(T->gdiv, 4, MC_WL_OTHER, "DivBackward0", false);
    if (fp16) FW(T->gmul);
    tb *g = tb_new(T, (uint64_t)(n * 4), MC_WL_ACTIVATIONS, "MseLossBackward0");
    if (!g) return -1;
    FW(T->gdiv);
    if (tape_backward(T, out.node, g)) return -1;
    FW(T->ones);
    if (fp16) FW(T->scaled);
    return 0;
}

static int micro_step(mc_tfm *T)
{
    const uint64_t n = (uint64_t)(T->T * T->E);
    tb *s = tb_new(T, n * 4, MC_WL_ACTIVATIONS, "src = randn");
    tb *t = s ? tb_new(T, n * 4, MC_WL_ACTIVATIONS, "tgt = randn") : NULL;
    if (!t) return -1;
    tv src = {s, (int64_t)n, 4, -1, 0, true}, tgt = {t, (int64_t)n, 4, -1, 0, true};
    tv out = model_forward(T, src, tgt);
    if (T->oom || !out.b) return -1;
    int rc = loss_and_backward(T, out);
    tv_drop(T, &src); /* del src, tgt, out, loss */
    tv_drop(T, &tgt);
    tv_drop(T, &out);
    FW(T->loss);
    tape_clear(T);
    return rc || T->oom ? -1 : 0;
}

/* ------------------------------------------------------------ life cycle */

mc_tfm *mc_tfm_create(const mc_tfm_config *c, bool on_gpu, FILE *trace, char *err, size_t len)
{
    if (mc_tfm_config_check(c, err, len) != 0) return NULL;
    if (on_gpu) {
        snprintf(err, len, "the Transformer runs in --model-only so far (its GPU kernels are not wired)");
        return NULL;
    }
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
    T->cur_group = -1;
    T->scale_host = 65536.0;
    mc_workload *w = &T->w;
    w->c = mc_workload_config_default();
    w->c.trace_steps = c->trace_steps;
    w->trace = trace;
    w->host = ca_host_create(c->host_capacity);
    CHECK(w->host != NULL, "ca_host_create");
    w->a = ca_create(&c->alloc, ca_host_backend(w->host));
    CHECK(w->a != NULL, "ca_create");
    build_params(T);
    wl_trace(w, "# memclaims-trace v1");
    wl_trace(w, "# build/workload's requests: %s d_model=%lld heads=%lld enc=%lld dec=%lld ff=%lld "
                "dropout=%g %s%s%s%s seq=%lld batch=%lld %s %s accum=%d%s",
             c->arch == MC_TFM_TRANSFORMER ? "transformer" : "encoder", (long long)c->d_model,
             (long long)c->heads, (long long)c->enc_layers,
             (long long)(c->arch == MC_TFM_TRANSFORMER ? c->dec_layers : 0), (long long)c->ff,
             c->dropout, c->activation == MC_TFM_GELU ? "gelu" : "relu",
             c->norm_first ? " norm_first" : "", c->batch_first ? " batch_first" : "",
             c->causal ? " causal" : "", (long long)c->seq, (long long)c->batch,
             mc_tfm_optimizer_name(c->optimizer), mc_wl_precision_name(c->precision), c->accum,
             c->checkpoint ? " checkpoint" : "");
    if (c->alloc.limit_bytes != CA_UNLIMITED) wl_trace(w, "set limit %" PRIu64, c->alloc.limit_bytes);
    if (c->alloc.max_split_size != CA_UNLIMITED)
        wl_trace(w, "set max_split_size %" PRIu64, c->alloc.max_split_size);
    wl_trace(w, "# set-up: parameters, optimizer%s", c->precision == MC_WL_FP16 ? ", GradScaler" : "");
    if (setup(T) != 0) {
        w->setup_status = MC_WL_OOM;
        while (w->n_live) wl_free(w, w->live[w->n_live - 1]);
    }
    return T;
}

mc_wl_status mc_tfm_setup_status(const mc_tfm *T) { return T->w.setup_status; }
const ca_allocator *mc_tfm_allocator(const mc_tfm *T) { return T->w.a; }

void mc_tfm_live_by_category(const mc_tfm *T, uint64_t out[MC_WL_NCAT])
{
    memcpy(out, T->w.cat_bytes, sizeof T->w.cat_bytes);
}

void mc_tfm_destroy(mc_tfm *T)
{
    if (!T) return;
    T->w.trace = NULL;
    tfm_unwind(T);
    while (T->w.n_live) wl_free(&T->w, T->w.live[T->w.n_live - 1]);
    free(T->mask);
    ca_destroy(T->w.a);
    ca_host_destroy(T->w.host);
    free(T->w.live);
    free(T->p);
    free(T->tape);
    free(T->grp);
    free(T);
}

static void fill_stats(const mc_tfm *T, mc_workload_step_result *r)
{
    const ca_stats *s = ca_get_stats(T->w.a);
    r->peak_allocated = (uint64_t)s->allocated_bytes.peak;
    r->allocated_end = (uint64_t)s->allocated_bytes.current;
    r->peak_reserved = (uint64_t)s->reserved_bytes.peak;
    r->reserved_end = (uint64_t)s->reserved_bytes.current;
    memcpy(r->peak_by_category, T->w.peak_cat, sizeof T->w.peak_cat);
}

mc_wl_status mc_tfm_step(mc_tfm *T, mc_workload_step_result *r)
{
    mc_workload *w = &T->w;
    memset(r, 0, sizeof *r);
    r->step = ++T->step;
    w->step = T->step;
    r->step_time_s = NAN;
    r->loss = NAN;
    r->loss_scale = T->c.precision == MC_WL_FP16 ? T->scale_host : 1.0;
    if (w->setup_status != MC_WL_OK) {
        r->status = w->setup_status;
        fill_stats(T, r);
        return r->status;
    }
    wl_trace(w, "# step %d", T->step);
    wl_trace(w, "reset_peak");
    ca_reset_peak(w->a);
    w->peak_seen = (uint64_t)ca_get_stats(w->a)->allocated_bytes.current;
    memcpy(w->peak_cat, w->cat_bytes, sizeof w->peak_cat);
    int rc = 0;
    for (int k = 0; k < T->c.accum && rc == 0; k++) rc = micro_step(T);
    bool skipped = false;
    if (rc == 0) rc = tfm_optimizer(T, &skipped);
    if (rc == 0) tfm_zero_grad(T);
    if (rc != 0) { /* a caught OutOfMemoryError, then zero_grad */
        r->status = MC_WL_OOM;
        tfm_unwind(T);
        T->oom = T->stopped = T->recomputing = false;
        T->handle = 0;
        T->cur_group = -1;
        for (int32_t i = w->n_live - 1; i >= 0; i--)
            if (i < w->n_live && !w->live[i]->keep) wl_free(w, w->live[i]);
        tfm_zero_grad(T);
    }
    r->skipped = skipped;
    r->loss_scale = T->c.precision == MC_WL_FP16 ? T->scale_host : 1.0;
    fill_stats(T, r);
    wl_trace(w, "# end of step %d (after zero_grad)", T->step);
    if (w->trace && T->step == T->c.trace_steps) fflush(w->trace);
    return r->status;
}
