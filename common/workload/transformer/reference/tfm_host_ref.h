/* tfm_host_ref.h: the Transformer workload's arithmetic in float64 on the
 * host, for small shapes: the reference of the GPU check (tfm_verify.h) and
 * of the unit tests (tests/test_tfm_host_ref.c). Plain C.
 *
 * Building blocks (tfm_host_ref.c): LayerNorm, attention core, activations,
 * dropout, AdamW, each forward and backward. Layers (tfm_host_layer.c)
 * and models (tfm_host_model.c): nn.TransformerEncoderLayer and
 * nn.TransformerDecoderLayer in training mode (both norm orders, relu or
 * gelu, dropout through tfm_rng.h) and a whole nn.TransformerEncoder or
 * nn.Transformer with an MSE loss.
 *
 * Layout of activations: [rows, E] row-major, the token of (batch b,
 * position l) at row b L + l (batch_first) or l B + b (seq-first, PyTorch's
 * default). Dropout's element index is the index in that memory, so the
 * layout matters for which elements drop, as it does on the GPU.
 *
 * Dropout offsets: dropout call k of a model's forward, counted from 0 in
 * forward order over the whole model (every site counted, p == 0 or not),
 * draws the tfm_rng stream (seed, offset0 + k). Per encoder layer, in order:
 * attention probabilities, dropout1 (after out_proj), dropout (in the FFN),
 * dropout2 (after linear2): TFM_ENC_DROPOUTS. Per decoder layer: self-
 * attention probabilities, dropout1, cross-attention probabilities,
 * dropout2, FFN dropout, dropout3: TFM_DEC_DROPOUTS. Encoder layers first. */
#ifndef MC_TFM_HOST_REF_H
#define MC_TFM_HOST_REF_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFM_ENC_DROPOUTS 4
#define TFM_DEC_DROPOUTS 6

/* ------------------------------------------------------------ blocks */

/* Attention core on contiguous [B, H, L, Dh] float64 arrays (the element
 * and dropout-index conventions of tfm_kernels.h's tfm_attn). */
typedef struct {
    int B, H, Lq, Lk, Dh;
    bool causal;
    float p;               /* dropout on the probabilities (float, as the kernels) */
    uint64_t seed, offset;
    double scale;
    const double *keep; /* NULL: dropout from tfm_rng_attn_keep; else [B,H,Lq,Lk] of 0 or 1
                         * (cuDNN's own mask, which its forward can write out) */
} tfm_ref_attn;

/* o [B,H,Lq,Dh], lse [B,H,Lq] (natural log of the row sums of exp(scale QK^T)). */
void tfm_ref_attn_fwd(const tfm_ref_attn *a, double *o, double *lse, const double *q,
                      const double *k, const double *v);
/* dq, dk, dv overwritten. o and lse as the forward gave them. */
void tfm_ref_attn_bwd(const tfm_ref_attn *a, double *dq, double *dk, double *dv,
                      const double *dout, const double *q, const double *k, const double *v,
                      const double *o, const double *lse);

/* y = LayerNorm(x) over rows of n; mean, rstd [rows]. */
void tfm_ref_ln_fwd(double *y, double *mean, double *rstd, const double *x, const double *gamma,
                    const double *beta, int64_t rows, int64_t n, double eps);
/* dx overwritten (NULL: skipped); dgamma, dbeta ADDED to (NULL: skipped). */
void tfm_ref_ln_bwd(double *dx, double *dgamma, double *dbeta, const double *dy, const double *x,
                    const double *gamma, const double *mean, const double *rstd, int64_t rows,
                    int64_t n);

/* act: TFM_ACT_* of tfm_kernels.h (0 none, 1 relu, 2 gelu, erf form). */
double tfm_ref_act(double x, int act);
double tfm_ref_act_grad(double x, int act); /* derivative at the input x */

/* y = x * keep / (1 - p), keep from tfm_rng stream (seed, offset); mask
 * [n] gets 0/1 (NULL: not kept). p == 0: y = x, mask all 1. */
void tfm_ref_dropout(double *y, uint8_t *mask, const double *x, int64_t n, float p, uint64_t seed,
                     uint64_t offset);

/* ------------------------------------------------------------ layers and models */

typedef struct {
    int E, heads, F;       /* d_model, nhead, dim_feedforward */
    float p;               /* dropout */
    int act;               /* TFM_ACT_RELU or TFM_ACT_GELU */
    bool norm_first;
    double eps;            /* layer_norm_eps */
} tfm_ref_cfg;

/* Parameter counts, in PyTorch's named_parameters() order:
 * encoder layer: self_attn.in_proj_weight [3E,E], in_proj_bias [3E],
 *   out_proj.weight [E,E], out_proj.bias [E], linear1.weight [F,E],
 *   linear1.bias [F], linear2.weight [E,F], linear2.bias [E], norm1.weight,
 *   norm1.bias, norm2.weight, norm2.bias [E];
 * decoder layer: self_attn (4 as above), multihead_attn (4), linear1 (2),
 *   linear2 (2), norm1, norm2, norm3 (2 each). */
int64_t tfm_ref_enc_layer_nparams(const tfm_ref_cfg *c);
int64_t tfm_ref_dec_layer_nparams(const tfm_ref_cfg *c);

typedef struct {
    tfm_ref_cfg c;
    int n_enc, n_dec;      /* n_dec 0: nn.TransformerEncoder alone */
    bool enc_norm, dec_norm; /* final LayerNorm of encoder / decoder (nn.Transformer has both) */
    bool enc_causal, dec_causal; /* causal self-attention masks */
    bool batch_first;
    int B, S, T;           /* batch, source length, target length (T unused without decoder) */
} tfm_ref_model;

/* Parameters in order: encoder layers, encoder norm (weight, bias), decoder
 * layers, decoder norm. */
int64_t tfm_ref_model_nparams(const tfm_ref_model *m);

/* loss = mean over the output's elements of (out - y)^2, out the model's
 * output ([rows, E] for T (decoder) or S (encoder alone) positions, in the
 * model's layout) for inputs src [B*S, E], tgt [B*T, E] (NULL without
 * decoder), y like out. grad (NULL: none): ADDED to, the loss's gradient for
 * each parameter, in params' layout. out (NULL: not kept): the output.
 * Dropout: (seed, offset0 + k) for the model's k-th dropout call. */
double tfm_ref_model_loss(const tfm_ref_model *m, const double *params, const double *src,
                          const double *tgt, const double *y, uint64_t seed, uint64_t offset0,
                          double *grad, double *out);

/* Plain PyTorch-like init for tests: Linear weights and in_proj U(-a, a),
 * biases small, LayerNorm weight 1 + small, bias small; from seed. */
void tfm_ref_model_init(const tfm_ref_model *m, double *params, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
