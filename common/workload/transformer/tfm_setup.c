/* tfm_setup.c: the Transformer's parameters, in model.parameters()
 * order with PyTorch's names, their requests at set-up as nn.Transformer's
 * __init__ makes them (template layers, deep copies, the causal mask;
 * tfm_seq.c's header says the order), and on the GPU their values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tfm_internal.h"

#define FPT(t) ((float *)WL_PTR(t))

/* ------------------------------------------------------------ set-up */

static const char *const ENC_NAMES[TFM_ENC_PER] = {
    "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
    "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
    "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"};
static const char *const DEC_NAMES[TFM_DEC_PER] = {
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
void tfm_build_params(mc_tfm *T)
{
    int64_t en[TFM_ENC_PER], dn[TFM_DEC_PER];
    layer_sizes(T, false, en);
    layer_sizes(T, true, dn);
    const char *pre = T->c.arch == MC_TFM_TRANSFORMER ? "encoder.layers.%d.%s" : "layers.%d.%s";
    T->enc_first = 0;
    for (int l = 0; l < T->c.enc_layers; l++)
        for (int i = 0; i < TFM_ENC_PER; i++) add_param(T, en[i], pre, l, ENC_NAMES[i]);
    T->enc_norm = T->dec_first = T->dec_norm = -1;
    if (T->c.arch != MC_TFM_TRANSFORMER) return;
    T->enc_norm = T->np;
    add_param(T, T->E, "encoder.norm.%.0d%s", 0, "weight");
    add_param(T, T->E, "encoder.norm.%.0d%s", 0, "bias");
    T->dec_first = T->np;
    for (int l = 0; l < T->c.dec_layers; l++)
        for (int i = 0; i < TFM_DEC_PER; i++) add_param(T, dn[i], "decoder.layers.%d.%s", l, DEC_NAMES[i]);
    T->dec_norm = T->np;
    add_param(T, T->E, "decoder.norm.%.0d%s", 0, "weight");
    add_param(T, T->E, "decoder.norm.%.0d%s", 0, "bias");
}

static int alloc_param(mc_tfm *T, int i)
{
    return wl_alloc(&T->ctx, &T->p[i].p, (uint64_t)T->p[i].n * 4, MC_WL_WEIGHTS, true, T->p[i].name);
}

/* A template layer (freed at the end of set-up), then its clones. */
static int template_and_clones(mc_tfm *T, bool dec, wl_t *tmpl, int first, int layers, int norm)
{
    int64_t n[TFM_DEC_PER];
    const int per = dec ? TFM_DEC_PER : TFM_ENC_PER;
    layer_sizes(T, dec, n);
    for (int i = 0; i < per; i++)
        if (wl_alloc(&T->ctx, &tmpl[i], (uint64_t)n[i] * 4, MC_WL_WEIGHTS, false,
                     dec ? "template decoder layer (deep-copied, then freed)"
                         : "template encoder layer (deep-copied, then freed)") != 0)
            return -1;
    if (norm >= 0 && (alloc_param(T, norm) || alloc_param(T, norm + 1))) return -1;
    for (int l = 0; l < layers; l++)
        for (int i = 0; i < per; i++)
            if (alloc_param(T, first + l * per + i)) return -1;
    return 0;
}

/* model.cuda() of a model made on the host: Module._apply moves each
 * module's children before its own parameters, so every layer's
 * MultiheadAttention gives its out_proj (a child) before its in_proj
 * (its own), and a stack's norm comes after its layers: a new block each,
 * in that order, nothing freed (the host's tensors are not the device's). */
static int moved_to_device(mc_tfm *T, int first, int layers, bool dec, int norm)
{
    static const int ENC[TFM_ENC_PER] = {2, 3, 0, 1, 4, 5, 6, 7, 8, 9, 10, 11};
    static const int DEC[TFM_DEC_PER] = {2, 3, 0, 1, 6, 7, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
    const int per = dec ? TFM_DEC_PER : TFM_ENC_PER;
    for (int l = 0; l < layers; l++)
        for (int i = 0; i < per; i++)
            if (alloc_param(T, first + l * per + (dec ? DEC[i] : ENC[i]))) return -1;
    return norm >= 0 && (alloc_param(T, norm) || alloc_param(T, norm + 1)) ? -1 : 0;
}

int tfm_setup(mc_tfm *T)
{
    wl_t enc_t[TFM_ENC_PER], dec_t[TFM_DEC_PER];
    memset(enc_t, 0, sizeof enc_t);
    memset(dec_t, 0, sizeof dec_t);
    int rc;
    if (T->c.build_host) {
        rc = moved_to_device(T, T->enc_first, (int)T->c.enc_layers, false, T->enc_norm);
        if (rc == 0 && T->c.arch == MC_TFM_TRANSFORMER)
            rc = moved_to_device(T, T->dec_first, (int)T->c.dec_layers, true, T->dec_norm);
    } else {
        rc = template_and_clones(T, false, enc_t, T->enc_first, (int)T->c.enc_layers, T->enc_norm);
        if (rc == 0 && T->c.arch == MC_TFM_TRANSFORMER)
            rc = template_and_clones(T, true, dec_t, T->dec_first, (int)T->c.dec_layers, T->dec_norm);
    }
    for (int i = 0; i < TFM_ENC_PER; i++) wl_free(&T->ctx, &enc_t[i]);
    for (int i = 0; i < TFM_DEC_PER; i++) wl_free(&T->ctx, &dec_t[i]);
    if (rc == 0 && T->c.causal) { /* generate_square_subsequent_mask: full, then triu */
        const uint64_t b = (uint64_t)(T->L * T->L * 4);
        wl_t full;
        memset(&full, 0, sizeof full);
        if (wl_alloc(&T->ctx, &full, b, MC_WL_ACTIVATIONS, false, "torch.full((L, L), -inf)") != 0) return -1;
        T->mask = calloc(1, sizeof *T->mask);
        CHECK(T->mask != NULL, "out of host memory");
        rc = wl_alloc(&T->ctx, &T->mask->t, b, MC_WL_ACTIVATIONS, true, "causal mask: torch.triu(full, 1)");
        wl_free(&T->ctx, &full);
    }
    return rc;
}

static bool ends(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* The parameters' values: nn.Transformer._reset_parameters' xavier_uniform_
 * for every matrix (the encoder alone too, for one rule), the Linear
 * biases' U(+-1/sqrt(fan_in)), MultiheadAttention's zero biases, LayerNorm
 * 1 and 0; or the GPU check's. */
void tfm_init_params(mc_tfm *T)
{
    mc_wl_gpu *G = TG(T);
    const double E = (double)T->E, F = (double)T->c.ff;
    uint64_t off = 0;
    for (int i = 0; i < T->np; i++) {
        tparam *p = &T->p[i];
        float *d = FPT(p->p);
        if (T->data && T->data->params) {
            mc_gpu_from_host(G, d, T->data->params + off, (uint64_t)p->n * 4);
            off += (uint64_t)p->n;
            continue;
        }
        double fan_in = 0, fan_out = 0, bias_in = 0;
        if (ends(p->name, "in_proj_weight")) fan_in = E, fan_out = 3 * E;
        else if (ends(p->name, "out_proj.weight")) fan_in = E, fan_out = E;
        else if (ends(p->name, "linear1.weight")) fan_in = E, fan_out = F;
        else if (ends(p->name, "linear2.weight")) fan_in = F, fan_out = E;
        else if (ends(p->name, "linear1.bias")) bias_in = E;
        else if (ends(p->name, "linear2.bias")) bias_in = F;
        if (fan_in > 0)
            mc_gpu_uniform(G, d, p->n, (float)sqrt(6.0 / (fan_in + fan_out)), T->c.seed, (uint64_t)i);
        else if (bias_in > 0)
            mc_gpu_uniform(G, d, p->n, (float)(1.0 / sqrt(bias_in)), T->c.seed, (uint64_t)i);
        else
            mc_gpu_fill(G, d, strstr(p->name, "norm") && ends(p->name, "weight") ? 1.0f : 0.0f, p->n);
    }
}
