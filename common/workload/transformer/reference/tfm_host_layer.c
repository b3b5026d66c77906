/* tfm_host_layer.c: float64 reference of nn.TransformerEncoderLayer and
 * nn.TransformerDecoderLayer (tfm_host_layer.h; whole models are in
 * tfm_host_model.c), forward and backward, in training mode, as PyTorch
 * 2.11 computes them:
 *   MultiheadAttention: Q, K, V = x W_{q,k,v}^T + b (in_proj rows [0,E),
 *     [E,2E), [2E,3E)), heads of Dh = E / heads, SDPA with dropout on the
 *     probabilities, out_proj;
 *   encoder post-norm: x = norm1(x + dropout1(sa(x))),
 *                      x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))));
 *   norm_first:        x = x + dropout1(sa(norm1(x))), x = x + ff(norm2(x));
 *   decoder adds the cross-attention block (norm2 / dropout2) between the two,
 *   the FFN taking norm3 / dropout3.
 * Intermediates live in an arena the caller frees after the backward. */
#include "tfm_host_layer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------ arena */

double *tfm_ar_new(tfm_arena *a, int64_t n)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->p = realloc(a->p, sizeof(double *) * (size_t)a->cap);
        CHECK(a->p != NULL, "out of host memory");
    }
    double *x = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    CHECK(x != NULL, "out of host memory");
    a->p[a->n++] = x;
    return x;
}

void tfm_ar_free(tfm_arena *a)
{
    for (int i = 0; i < a->n; i++) free(a->p[i]);
    free(a->p);
}

/* ------------------------------------------------------------ shapes */

/* Row of token (b, l) in a [B * L, E] activation. */
static int64_t row_of(const tfm_hctx *x, int L, int b, int l)
{
    return x->bf ? (int64_t)b * L + l : (int64_t)l * x->B + b;
}

/* ------------------------------------------------------------ Linear */

/* y[r, o] = x[r, :] . W[o, :] + b[o] */
static void lin_fwd(double *y, const double *x, const double *W, const double *b, int64_t rows,
                    int64_t in, int64_t out)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < out; o++) {
            double s = b[o];
            for (int64_t k = 0; k < in; k++) s += x[r * in + k] * W[o * in + k];
            y[r * out + o] = s;
        }
}

/* dx += dy W; dW += dy^T x; db += sum_r dy (each NULL: skipped). */
static void lin_bwd(double *dx, double *dW, double *db, const double *dy, const double *x,
                    const double *W, int64_t rows, int64_t in, int64_t out)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < out; o++) {
            const double g = dy[r * out + o];
            if (db) db[o] += g;
            for (int64_t k = 0; k < in; k++) {
                if (dx) dx[r * in + k] += g * W[o * in + k];
                if (dW) dW[o * in + k] += g * x[r * in + k];
            }
        }
}

static void add_to(double *d, const double *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}

/* ------------------------------------------------------------ parameters */

double *tfm_take(double **p, int64_t n)
{
    double *r = *p;
    *p += n;
    return r;
}

static tfm_mha_p bind_mha(double **p, int64_t E)
{
    tfm_mha_p m;
    m.in_w = tfm_take(p, 3 * E * E);
    m.in_b = tfm_take(p, 3 * E);
    m.out_w = tfm_take(p, E * E);
    m.out_b = tfm_take(p, E);
    return m;
}

/* Binds the layer's tensors at *p (params or grads) and advances *p. */
tfm_layer_p tfm_bind_layer(double **p, const tfm_ref_cfg *c, bool dec)
{
    const int64_t E = c->E, F = c->F;
    tfm_layer_p l;
    memset(&l, 0, sizeof l);
    l.sa = bind_mha(p, E);
    if (dec) l.ca = bind_mha(p, E);
    l.l1w = tfm_take(p, F * E);
    l.l1b = tfm_take(p, F);
    l.l2w = tfm_take(p, E * F);
    l.l2b = tfm_take(p, E);
    for (int k = 0; k < (dec ? 3 : 2); k++) {
        l.nw[k] = tfm_take(p, E);
        l.nb[k] = tfm_take(p, E);
    }
    return l;
}

int64_t tfm_ref_enc_layer_nparams(const tfm_ref_cfg *c)
{
    const int64_t E = c->E, F = c->F;
    return 4 * E * E + 4 * E + 2 * E * F + F + E + 4 * E;
}

int64_t tfm_ref_dec_layer_nparams(const tfm_ref_cfg *c)
{
    const int64_t E = c->E;
    return tfm_ref_enc_layer_nparams(c) + 4 * E * E + 4 * E + 2 * E;
}

/* ------------------------------------------------------------ multi-head attention */

typedef struct {
    int Lq, Lk;
    const double *xq, *xkv;
    double *Q, *K, *V, *q4, *k4, *v4, *o4, *lse, *A;
    tfm_ref_attn at;
} mha_c;

/* [B*L, E] rows -> [B, H, L, Dh] and back. */
static void to_heads(const tfm_hctx *x, double *h4, const double *m, int L)
{
    const int E = x->c->E, H = x->c->heads, Dh = E / H;
    for (int b = 0; b < x->B; b++)
        for (int h = 0; h < H; h++)
            for (int l = 0; l < L; l++)
                for (int d = 0; d < Dh; d++)
                    h4[(((int64_t)b * H + h) * L + l) * Dh + d] = m[row_of(x, L, b, l) * E + h * Dh + d];
}

static void from_heads(const tfm_hctx *x, double *m, const double *h4, int L)
{
    const int E = x->c->E, H = x->c->heads, Dh = E / H;
    for (int b = 0; b < x->B; b++)
        for (int h = 0; h < H; h++)
            for (int l = 0; l < L; l++)
                for (int d = 0; d < Dh; d++)
                    m[row_of(x, L, b, l) * E + h * Dh + d] = h4[(((int64_t)b * H + h) * L + l) * Dh + d];
}

/* out [B*Lq, E] = MHA(xq [B*Lq, E], xkv [B*Lk, E]). */
static void mha_fwd(tfm_arena *ar, const tfm_hctx *x, mha_c *c, const tfm_mha_p *p, double *out, const double *xq,
                    int Lq, const double *xkv, int Lk, bool causal, uint64_t seed, uint64_t offset)
{
    const int64_t E = x->c->E, rq = (int64_t)x->B * Lq, rk = (int64_t)x->B * Lk;
    c->Lq = Lq;
    c->Lk = Lk;
    c->xq = xq;
    c->xkv = xkv;
    c->Q = tfm_ar_new(ar, rq * E);
    c->K = tfm_ar_new(ar, rk * E);
    c->V = tfm_ar_new(ar, rk * E);
    lin_fwd(c->Q, xq, p->in_w, p->in_b, rq, E, E);
    lin_fwd(c->K, xkv, p->in_w + E * E, p->in_b + E, rk, E, E);
    lin_fwd(c->V, xkv, p->in_w + 2 * E * E, p->in_b + 2 * E, rk, E, E);
    c->q4 = tfm_ar_new(ar, rq * E);
    c->k4 = tfm_ar_new(ar, rk * E);
    c->v4 = tfm_ar_new(ar, rk * E);
    c->o4 = tfm_ar_new(ar, rq * E);
    c->lse = tfm_ar_new(ar, (int64_t)x->B * x->c->heads * Lq);
    c->A = tfm_ar_new(ar, rq * E);
    to_heads(x, c->q4, c->Q, Lq);
    to_heads(x, c->k4, c->K, Lk);
    to_heads(x, c->v4, c->V, Lk);
    const int Dh = x->c->E / x->c->heads;
    c->at = (tfm_ref_attn){x->B, x->c->heads, Lq, Lk, Dh, causal, x->c->p, seed, offset, 1.0 / sqrt((double)Dh),
                           NULL};
    tfm_ref_attn_fwd(&c->at, c->o4, c->lse, c->q4, c->k4, c->v4);
    from_heads(x, c->A, c->o4, Lq);
    lin_fwd(out, c->A, p->out_w, p->out_b, rq, E, E);
}

/* dxq += d/dxq, dxkv += d/dxkv (may be the same array), grads += . */
static void mha_bwd(tfm_arena *ar, const tfm_hctx *x, const mha_c *c, const tfm_mha_p *p, const tfm_mha_p *g,
                    const double *dout, double *dxq, double *dxkv)
{
    const int64_t E = x->c->E, rq = (int64_t)x->B * c->Lq, rk = (int64_t)x->B * c->Lk;
    double *dA = tfm_ar_new(ar, rq * E), *do4 = tfm_ar_new(ar, rq * E);
    lin_bwd(dA, g->out_w, g->out_b, dout, c->A, p->out_w, rq, E, E);
    to_heads(x, do4, dA, c->Lq);
    double *dq4 = tfm_ar_new(ar, rq * E), *dk4 = tfm_ar_new(ar, rk * E), *dv4 = tfm_ar_new(ar, rk * E);
    tfm_ref_attn_bwd(&c->at, dq4, dk4, dv4, do4, c->q4, c->k4, c->v4, c->o4, c->lse);
    double *dQ = tfm_ar_new(ar, rq * E), *dK = tfm_ar_new(ar, rk * E), *dV = tfm_ar_new(ar, rk * E);
    from_heads(x, dQ, dq4, c->Lq);
    from_heads(x, dK, dk4, c->Lk);
    from_heads(x, dV, dv4, c->Lk);
    lin_bwd(dxq, g->in_w, g->in_b, dQ, c->xq, p->in_w, rq, E, E);
    lin_bwd(dxkv, g->in_w + E * E, g->in_b + E, dK, c->xkv, p->in_w + E * E, rk, E, E);
    lin_bwd(dxkv, g->in_w + 2 * E * E, g->in_b + 2 * E, dV, c->xkv, p->in_w + 2 * E * E, rk, E, E);
}

/* ------------------------------------------------------------ blocks with dropout */

/* Attention block: y = dropout(MHA(xq, xkv)), sites (offset: probabilities, +1: output). */
typedef struct {
    mha_c m;
    double *a;        /* MHA output before dropout */
    uint8_t *mask;
} attn_blk;

static void attn_blk_fwd(tfm_arena *ar, const tfm_hctx *x, attn_blk *k, const tfm_mha_p *p, double *y,
                         const double *xq, int Lq, const double *xkv, int Lk, bool causal,
                         uint64_t seed, uint64_t offset)
{
    const int64_t n = (int64_t)x->B * Lq * x->c->E;
    k->a = tfm_ar_new(ar, n);
    k->mask = (uint8_t *)tfm_ar_new(ar, n / 8 + 1);
    mha_fwd(ar, x, &k->m, p, k->a, xq, Lq, xkv, Lk, causal, seed, offset);
    tfm_ref_dropout(y, k->mask, k->a, n, x->c->p, seed, offset + 1);
}

static void drop_bwd(double *dx, const double *dy, const uint8_t *mask, int64_t n, float p)
{
    const double f = 1.0 / (1.0 - (double)p);
    for (int64_t i = 0; i < n; i++) dx[i] = p == 0.0f ? dy[i] : mask[i] ? dy[i] * f : 0.0;
}

static void attn_blk_bwd(tfm_arena *ar, const tfm_hctx *x, const attn_blk *k, const tfm_mha_p *p, const tfm_mha_p *g,
                         const double *dy, double *dxq, double *dxkv)
{
    const int64_t n = (int64_t)x->B * k->m.Lq * x->c->E;
    double *da = tfm_ar_new(ar, n);
    drop_bwd(da, dy, k->mask, n, x->c->p);
    mha_bwd(ar, x, &k->m, p, g, da, dxq, dxkv);
}

/* FFN block: y = dropout2(linear2(dropout(act(linear1(xin))))), sites offset, offset + 1. */
typedef struct {
    const double *xin;
    double *h, *a, *d, *z;   /* linear1 out, act out, dropout out, linear2 out */
    uint8_t *m1, *m2;
} ff_blk;

static void ff_blk_fwd(tfm_arena *ar, const tfm_hctx *x, ff_blk *k, const tfm_layer_p *p, double *y,
                       const double *xin, int64_t rows, uint64_t seed, uint64_t offset)
{
    const int64_t E = x->c->E, F = x->c->F;
    k->xin = xin;
    k->h = tfm_ar_new(ar, rows * F);
    k->a = tfm_ar_new(ar, rows * F);
    k->d = tfm_ar_new(ar, rows * F);
    k->z = tfm_ar_new(ar, rows * E);
    k->m1 = (uint8_t *)tfm_ar_new(ar, rows * F / 8 + 1);
    k->m2 = (uint8_t *)tfm_ar_new(ar, rows * E / 8 + 1);
    lin_fwd(k->h, xin, p->l1w, p->l1b, rows, E, F);
    for (int64_t i = 0; i < rows * F; i++) k->a[i] = tfm_ref_act(k->h[i], x->c->act);
    tfm_ref_dropout(k->d, k->m1, k->a, rows * F, x->c->p, seed, offset);
    lin_fwd(k->z, k->d, p->l2w, p->l2b, rows, F, E);
    tfm_ref_dropout(y, k->m2, k->z, rows * E, x->c->p, seed, offset + 1);
}

static void ff_blk_bwd(tfm_arena *ar, const tfm_hctx *x, const ff_blk *k, const tfm_layer_p *p, const tfm_layer_p *g,
                       const double *dy, double *dxin, int64_t rows)
{
    const int64_t E = x->c->E, F = x->c->F;
    double *dz = tfm_ar_new(ar, rows * E), *dd = tfm_ar_new(ar, rows * F), *dh = tfm_ar_new(ar, rows * F);
    drop_bwd(dz, dy, k->m2, rows * E, x->c->p);
    lin_bwd(dd, g->l2w, g->l2b, dz, k->d, p->l2w, rows, F, E);
    drop_bwd(dh, dd, k->m1, rows * F, x->c->p);
    for (int64_t i = 0; i < rows * F; i++) dh[i] *= tfm_ref_act_grad(k->h[i], x->c->act);
    lin_bwd(dxin, g->l1w, g->l1b, dh, k->xin, p->l1w, rows, E, F);
}

/* ------------------------------------------------------------ residual + norm wiring */

/* One sublayer: post-norm out = LN(xin + blk(xin)); pre-norm out = xin + blk(LN(xin)).
 * Holds what the backward needs; blk's own cache is kept by the caller. */
typedef struct {
    const double *xin;
    double *bin;             /* the block's input (xin or LN(xin)) */
    double *sum;             /* post-norm: xin + blk */
    double *mean, *rstd;
    int64_t rows;
} sub_c;

static void sub_pre(tfm_arena *ar, const tfm_hctx *x, sub_c *s, const double *xin, int64_t rows,
                    const double *nw, const double *nb)
{
    const int64_t E = x->c->E;
    s->xin = xin;
    s->rows = rows;
    s->mean = tfm_ar_new(ar, rows);
    s->rstd = tfm_ar_new(ar, rows);
    if (x->c->norm_first) {
        s->bin = tfm_ar_new(ar, rows * E);
        tfm_ref_ln_fwd(s->bin, s->mean, s->rstd, xin, nw, nb, rows, E, x->c->eps);
    } else {
        s->bin = (double *)xin;
    }
}

/* out from the block's output y. */
static void sub_post(tfm_arena *ar, const tfm_hctx *x, sub_c *s, double *out, const double *y,
                     const double *nw, const double *nb)
{
    const int64_t n = s->rows * x->c->E;
    if (x->c->norm_first) {
        for (int64_t i = 0; i < n; i++) out[i] = s->xin[i] + y[i];
    } else {
        s->sum = tfm_ar_new(ar, n);
        for (int64_t i = 0; i < n; i++) s->sum[i] = s->xin[i] + y[i];
        tfm_ref_ln_fwd(out, s->mean, s->rstd, s->sum, nw, nb, s->rows, x->c->E, x->c->eps);
    }
}

/* Backward of the wiring, first half: from dout, the gradient into the
 * block's output (dy) and the residual's share of dxin (dxin overwritten). */
static void sub_bwd_out(tfm_arena *ar, const tfm_hctx *x, const sub_c *s, const double *dout, double *dy,
                        double *dxin, const double *nw, double *gnw, double *gnb)
{
    const int64_t n = s->rows * x->c->E;
    if (x->c->norm_first) {
        memcpy(dy, dout, sizeof(double) * (size_t)n);
        memcpy(dxin, dout, sizeof(double) * (size_t)n);
    } else {
        double *dsum = tfm_ar_new(ar, n);
        tfm_ref_ln_bwd(dsum, gnw, gnb, dout, s->sum, nw, s->mean, s->rstd, s->rows, x->c->E);
        memcpy(dy, dsum, sizeof(double) * (size_t)n);
        memcpy(dxin, dsum, sizeof(double) * (size_t)n);
    }
}

/* Second half: dbin (the gradient into the block's input) into dxin. */
static void sub_bwd_in(tfm_arena *ar, const tfm_hctx *x, const sub_c *s, const double *dbin, double *dxin,
                       const double *nw, double *gnw, double *gnb)
{
    const int64_t n = s->rows * x->c->E;
    if (x->c->norm_first) {
        double *t = tfm_ar_new(ar, n);
        tfm_ref_ln_bwd(t, gnw, gnb, dbin, s->xin, nw, s->mean, s->rstd, s->rows, x->c->E);
        add_to(dxin, t, n);
    } else {
        add_to(dxin, dbin, n);
    }
}

/* ------------------------------------------------------------ layers */

struct tfm_layer_c {
    sub_c s[3];
    attn_blk sa, ca;
    ff_blk ff;
    double *x1, *x2;        /* outputs of the first two sublayers */
    int L;
};

void tfm_layer_fwd(tfm_arena *ar, const tfm_hctx *x, tfm_layer_c *k, const tfm_layer_p *p, bool dec,
                   double *out, const double *xin, int L, const double *mem, int Lm, bool causal,
                   uint64_t seed, uint64_t off)
{
    const int64_t rows = (int64_t)x->B * L, n = rows * x->c->E;
    double *y = tfm_ar_new(ar, n);
    k->L = L;
    k->x1 = dec ? tfm_ar_new(ar, n) : NULL;
    k->x2 = tfm_ar_new(ar, n);
    double *after_sa = dec ? k->x1 : k->x2;
    sub_pre(ar, x, &k->s[0], xin, rows, p->nw[0], p->nb[0]);
    attn_blk_fwd(ar, x, &k->sa, &p->sa, y, k->s[0].bin, L, k->s[0].bin, L, causal, seed, off);
    sub_post(ar, x, &k->s[0], after_sa, y, p->nw[0], p->nb[0]);
    if (dec) {
        sub_pre(ar, x, &k->s[1], k->x1, rows, p->nw[1], p->nb[1]);
        attn_blk_fwd(ar, x, &k->ca, &p->ca, y, k->s[1].bin, L, mem, Lm, false, seed, off + 2);
        sub_post(ar, x, &k->s[1], k->x2, y, p->nw[1], p->nb[1]);
    }
    const int f = dec ? 2 : 1;
    sub_pre(ar, x, &k->s[f], k->x2, rows, p->nw[f], p->nb[f]);
    ff_blk_fwd(ar, x, &k->ff, p, y, k->s[f].bin, rows, seed, off + (dec ? 4 : 2));
    sub_post(ar, x, &k->s[f], out, y, p->nw[f], p->nb[f]);
}

/* dxin overwritten; dmem added to (decoder). */
void tfm_layer_bwd(tfm_arena *ar, const tfm_hctx *x, const tfm_layer_c *k, const tfm_layer_p *p,
                   const tfm_layer_p *g, bool dec, const double *dout, double *dxin, double *dmem)
{
    const int64_t rows = (int64_t)x->B * k->L, n = rows * x->c->E;
    double *dy = tfm_ar_new(ar, n), *dbin = tfm_ar_new(ar, n), *dx2 = tfm_ar_new(ar, n);
    const int f = dec ? 2 : 1;
    sub_bwd_out(ar, x, &k->s[f], dout, dy, dx2, p->nw[f], g->nw[f], g->nb[f]);
    ff_blk_bwd(ar, x, &k->ff, p, g, dy, dbin, rows);
    sub_bwd_in(ar, x, &k->s[f], dbin, dx2, p->nw[f], g->nw[f], g->nb[f]);
    const double *d_after_sa = dx2;
    if (dec) {
        double *dx1 = tfm_ar_new(ar, n);
        memset(dbin, 0, sizeof(double) * (size_t)n);
        sub_bwd_out(ar, x, &k->s[1], dx2, dy, dx1, p->nw[1], g->nw[1], g->nb[1]);
        attn_blk_bwd(ar, x, &k->ca, &p->ca, &g->ca, dy, dbin, dmem);
        sub_bwd_in(ar, x, &k->s[1], dbin, dx1, p->nw[1], g->nw[1], g->nb[1]);
        d_after_sa = dx1;
    }
    memset(dbin, 0, sizeof(double) * (size_t)n);
    sub_bwd_out(ar, x, &k->s[0], d_after_sa, dy, dxin, p->nw[0], g->nw[0], g->nb[0]);
    attn_blk_bwd(ar, x, &k->sa, &p->sa, &g->sa, dy, dbin, dbin);
    sub_bwd_in(ar, x, &k->s[0], dbin, dxin, p->nw[0], g->nw[0], g->nb[0]);
}

tfm_layer_c *tfm_layers_new(int n)
{
    tfm_layer_c *k = calloc((size_t)(n > 0 ? n : 1), sizeof *k);
    CHECK(k != NULL, "out of host memory");
    return k;
}

tfm_layer_c *tfm_layer_at(tfm_layer_c *k, int i) { return &k[i]; }
