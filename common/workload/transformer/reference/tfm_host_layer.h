/* tfm_host_layer.h: internal to the float64 Transformer reference: what the
 * whole-model code (tfm_host_model.c) uses of the layers
 * (tfm_host_layer.c). The public API is tfm_host_ref.h. Plain C. */
#ifndef MC_TFM_HOST_LAYER_H
#define MC_TFM_HOST_LAYER_H

#include <stdbool.h>
#include <stdint.h>

#include "tfm_host_ref.h"

/* Zeroed float64 arrays freed together (a step's intermediates). */
typedef struct {
    double **p;
    int n, cap;
} tfm_arena;

double *tfm_ar_new(tfm_arena *a, int64_t n); /* exits when out of memory */
void tfm_ar_free(tfm_arena *a);

/* Shapes shared by a model's layers. */
typedef struct {
    const tfm_ref_cfg *c;
    int B;
    bool bf;          /* batch_first: token (b, l) at row b L + l, else l B + b */
} tfm_hctx;

typedef struct {
    double *in_w, *in_b, *out_w, *out_b;
} tfm_mha_p;

/* One layer's tensors (parameters or their gradients), tfm_host_ref.h's order. */
typedef struct {
    tfm_mha_p sa, ca;               /* ca: decoder only */
    double *l1w, *l1b, *l2w, *l2b;
    double *nw[3], *nb[3];          /* norm1..norm3 (norm3: decoder only) */
} tfm_layer_p;

/* The next n values at *p; advances *p. */
double *tfm_take(double **p, int64_t n);
/* Binds an encoder (dec false) or decoder layer's tensors at *p, advances *p. */
tfm_layer_p tfm_bind_layer(double **p, const tfm_ref_cfg *c, bool dec);

/* What a layer's forward keeps for its backward (opaque). */
typedef struct tfm_layer_c tfm_layer_c;
tfm_layer_c *tfm_layers_new(int n); /* n zeroed caches; free() them */
tfm_layer_c *tfm_layer_at(tfm_layer_c *k, int i);

/* out [B L, E] = layer(xin [B L, E]); decoder: cross-attention over mem
 * [B Lm, E]. Dropout calls use offsets off, off + 1, ... (tfm_host_ref.h). */
void tfm_layer_fwd(tfm_arena *ar, const tfm_hctx *x, tfm_layer_c *k, const tfm_layer_p *p, bool dec,
                   double *out, const double *xin, int L, const double *mem, int Lm, bool causal,
                   uint64_t seed, uint64_t off);
/* dxin overwritten; dmem (decoder) and the gradients g added to. */
void tfm_layer_bwd(tfm_arena *ar, const tfm_hctx *x, const tfm_layer_c *k, const tfm_layer_p *p,
                   const tfm_layer_p *g, bool dec, const double *dout, double *dxin, double *dmem);

#endif
