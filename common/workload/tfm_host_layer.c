/* tfm_host_layer.c: float64 reference of nn.TransformerEncoderLayer,
 * nn.TransformerDecoderLayer and whole models with an MSE loss
 * (tfm_host_ref.h), forward and backward, in training mode, as PyTorch 2.11
 * computes them:
 *   MultiheadAttention: Q, K, V = x W_{q,k,v}^T + b (in_proj rows [0,E),
 *     [E,2E), [2E,3E)), heads of Dh = E / heads, SDPA with dropout on the
 *     probabilities, out_proj;
 *   encoder post-norm: x = norm1(x + dropout1(sa(x))),
 *                      x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))));
 *   norm_first:        x = x + dropout1(sa(norm1(x))), x = x + ff(norm2(x));
 *   decoder adds the cross-attention block (norm2 / dropout2) between the two,
 *   the FFN taking norm3 / dropout3.
 * Intermediates live in an arena freed at the end of each call. */
#include "workload/tfm_host_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------ arena */

typedef struct {
    double **p;
    int n, cap;
} arena;

static double *ar_new(arena *a, int64_t n)
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

static void ar_free(arena *a)
{
    for (int i = 0; i < a->n; i++) free(a->p[i]);
    free(a->p);
}

/* ------------------------------------------------------------ shapes */

typedef struct {
    const tfm_ref_cfg *c;
    int B;
    bool bf;          /* batch_first */
} ctx;

/* Row of token (b, l) in a [B * L, E] activation. */
static int64_t row_of(const ctx *x, int L, int b, int l)
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

typedef struct {
    double *in_w, *in_b, *out_w, *out_b;
} mha_p;

typedef struct {
    mha_p sa, ca;                   /* ca: decoder only */
    double *l1w, *l1b, *l2w, *l2b;
    double *nw[3], *nb[3];          /* norm1..norm3 (norm3: decoder only) */
} layer_p;

static double *take(double **p, int64_t n)
{
    double *r = *p;
    *p += n;
    return r;
}

static mha_p bind_mha(double **p, int64_t E)
{
    mha_p m;
    m.in_w = take(p, 3 * E * E);
    m.in_b = take(p, 3 * E);
    m.out_w = take(p, E * E);
    m.out_b = take(p, E);
    return m;
}

/* Binds the layer's tensors at *p (params or grads) and advances *p. */
static layer_p bind_layer(double **p, const tfm_ref_cfg *c, bool dec)
{
    const int64_t E = c->E, F = c->F;
    layer_p l;
    memset(&l, 0, sizeof l);
    l.sa = bind_mha(p, E);
    if (dec) l.ca = bind_mha(p, E);
    l.l1w = take(p, F * E);
    l.l1b = take(p, F);
    l.l2w = take(p, E * F);
    l.l2b = take(p, E);
    for (int k = 0; k < (dec ? 3 : 2); k++) {
        l.nw[k] = take(p, E);
        l.nb[k] = take(p, E);
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

int64_t tfm_ref_model_nparams(const tfm_ref_model *m)
{
    const int64_t E = m->c.E;
    return m->n_enc * tfm_ref_enc_layer_nparams(&m->c) + (m->enc_norm ? 2 * E : 0) +
           m->n_dec * tfm_ref_dec_layer_nparams(&m->c) + (m->dec_norm ? 2 * E : 0);
}

/* ------------------------------------------------------------ multi-head attention */

typedef struct {
    int Lq, Lk;
    const double *xq, *xkv;
    double *Q, *K, *V, *q4, *k4, *v4, *o4, *lse, *A;
    tfm_ref_attn at;
} mha_c;

/* [B*L, E] rows -> [B, H, L, Dh] and back. */
static void to_heads(const ctx *x, double *h4, const double *m, int L)
{
    const int E = x->c->E, H = x->c->heads, Dh = E / H;
    for (int b = 0; b < x->B; b++)
        for (int h = 0; h < H; h++)
            for (int l = 0; l < L; l++)
                for (int d = 0; d < Dh; d++)
                    h4[(((int64_t)b * H + h) * L + l) * Dh + d] = m[row_of(x, L, b, l) * E + h * Dh + d];
}

static void from_heads(const ctx *x, double *m, const double *h4, int L)
{
    const int E = x->c->E, H = x->c->heads, Dh = E / H;
    for (int b = 0; b < x->B; b++)
        for (int h = 0; h < H; h++)
            for (int l = 0; l < L; l++)
                for (int d = 0; d < Dh; d++)
                    m[row_of(x, L, b, l) * E + h * Dh + d] = h4[(((int64_t)b * H + h) * L + l) * Dh + d];
}

/* out [B*Lq, E] = MHA(xq [B*Lq, E], xkv [B*Lk, E]). */
static void mha_fwd(arena *ar, const ctx *x, mha_c *c, const mha_p *p, double *out, const double *xq,
                    int Lq, const double *xkv, int Lk, bool causal, uint64_t seed, uint64_t offset)
{
    const int64_t E = x->c->E, rq = (int64_t)x->B * Lq, rk = (int64_t)x->B * Lk;
    c->Lq = Lq;
    c->Lk = Lk;
    c->xq = xq;
    c->xkv = xkv;
    c->Q = ar_new(ar, rq * E);
    c->K = ar_new(ar, rk * E);
    c->V = ar_new(ar, rk * E);
    lin_fwd(c->Q, xq, p->in_w, p->in_b, rq, E, E);
    lin_fwd(c->K, xkv, p->in_w + E * E, p->in_b + E, rk, E, E);
    lin_fwd(c->V, xkv, p->in_w + 2 * E * E, p->in_b + 2 * E, rk, E, E);
    c->q4 = ar_new(ar, rq * E);
    c->k4 = ar_new(ar, rk * E);
    c->v4 = ar_new(ar, rk * E);
    c->o4 = ar_new(ar, rq * E);
    c->lse = ar_new(ar, (int64_t)x->B * x->c->heads * Lq);
    c->A = ar_new(ar, rq * E);
    to_heads(x, c->q4, c->Q, Lq);
    to_heads(x, c->k4, c->K, Lk);
    to_heads(x, c->v4, c->V, Lk);
    const int Dh = x->c->E / x->c->heads;
    c->at = (tfm_ref_attn){x->B, x->c->heads, Lq, Lk, Dh, causal, x->c->p, seed, offset, 1.0 / sqrt((double)Dh)};
    tfm_ref_attn_fwd(&c->at, c->o4, c->lse, c->q4, c->k4, c->v4);
    from_heads(x, c->A, c->o4, Lq);
    lin_fwd(out, c->A, p->out_w, p->out_b, rq, E, E);
}

/* dxq += d/dxq, dxkv += d/dxkv (may be the same array), grads += . */
static void mha_bwd(arena *ar, const ctx *x, const mha_c *c, const mha_p *p, const mha_p *g,
                    const double *dout, double *dxq, double *dxkv)
{
    const int64_t E = x->c->E, rq = (int64_t)x->B * c->Lq, rk = (int64_t)x->B * c->Lk;
    double *dA = ar_new(ar, rq * E), *do4 = ar_new(ar, rq * E);
    lin_bwd(dA, g->out_w, g->out_b, dout, c->A, p->out_w, rq, E, E);
    to_heads(x, do4, dA, c->Lq);
    double *dq4 = ar_new(ar, rq * E), *dk4 = ar_new(ar, rk * E), *dv4 = ar_new(ar, rk * E);
    tfm_ref_attn_bwd(&c->at, dq4, dk4, dv4, do4, c->q4, c->k4, c->v4, c->o4, c->lse);
    double *dQ = ar_new(ar, rq * E), *dK = ar_new(ar, rk * E), *dV = ar_new(ar, rk * E);
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

static void attn_blk_fwd(arena *ar, const ctx *x, attn_blk *k, const mha_p *p, double *y,
                         const double *xq, int Lq, const double *xkv, int Lk, bool causal,
                         uint64_t seed, uint64_t offset)
{
    const int64_t n = (int64_t)x->B * Lq * x->c->E;
    k->a = ar_new(ar, n);
    k->mask = (uint8_t *)ar_new(ar, n / 8 + 1);
    mha_fwd(ar, x, &k->m, p, k->a, xq, Lq, xkv, Lk, causal, seed, offset);
    tfm_ref_dropout(y, k->mask, k->a, n, x->c->p, seed, offset + 1);
}

static void drop_bwd(double *dx, const double *dy, const uint8_t *mask, int64_t n, float p)
{
    const double f = 1.0 / (1.0 - (double)p);
    for (int64_t i = 0; i < n; i++) dx[i] = p == 0.0f ? dy[i] : mask[i] ? dy[i] * f : 0.0;
}

static void attn_blk_bwd(arena *ar, const ctx *x, const attn_blk *k, const mha_p *p, const mha_p *g,
                         const double *dy, double *dxq, double *dxkv)
{
    const int64_t n = (int64_t)x->B * k->m.Lq * x->c->E;
    double *da = ar_new(ar, n);
    drop_bwd(da, dy, k->mask, n, x->c->p);
    mha_bwd(ar, x, &k->m, p, g, da, dxq, dxkv);
}

/* FFN block: y = dropout2(linear2(dropout(act(linear1(xin))))), sites offset, offset + 1. */
typedef struct {
    const double *xin;
    double *h, *a, *d, *z;   /* linear1 out, act out, dropout out, linear2 out */
    uint8_t *m1, *m2;
} ff_blk;

static void ff_blk_fwd(arena *ar, const ctx *x, ff_blk *k, const layer_p *p, double *y,
                       const double *xin, int64_t rows, uint64_t seed, uint64_t offset)
{
    const int64_t E = x->c->E, F = x->c->F;
    k->xin = xin;
    k->h = ar_new(ar, rows * F);
    k->a = ar_new(ar, rows * F);
    k->d = ar_new(ar, rows * F);
    k->z = ar_new(ar, rows * E);
    k->m1 = (uint8_t *)ar_new(ar, rows * F / 8 + 1);
    k->m2 = (uint8_t *)ar_new(ar, rows * E / 8 + 1);
    lin_fwd(k->h, xin, p->l1w, p->l1b, rows, E, F);
    for (int64_t i = 0; i < rows * F; i++) k->a[i] = tfm_ref_act(k->h[i], x->c->act);
    tfm_ref_dropout(k->d, k->m1, k->a, rows * F, x->c->p, seed, offset);
    lin_fwd(k->z, k->d, p->l2w, p->l2b, rows, F, E);
    tfm_ref_dropout(y, k->m2, k->z, rows * E, x->c->p, seed, offset + 1);
}

static void ff_blk_bwd(arena *ar, const ctx *x, const ff_blk *k, const layer_p *p, const layer_p *g,
                       const double *dy, double *dxin, int64_t rows)
{
    const int64_t E = x->c->E, F = x->c->F;
    double *dz = ar_new(ar, rows * E), *dd = ar_new(ar, rows * F), *dh = ar_new(ar, rows * F);
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

static void sub_pre(arena *ar, const ctx *x, sub_c *s, const double *xin, int64_t rows,
                    const double *nw, const double *nb)
{
    const int64_t E = x->c->E;
    s->xin = xin;
    s->rows = rows;
    s->mean = ar_new(ar, rows);
    s->rstd = ar_new(ar, rows);
    if (x->c->norm_first) {
        s->bin = ar_new(ar, rows * E);
        tfm_ref_ln_fwd(s->bin, s->mean, s->rstd, xin, nw, nb, rows, E, x->c->eps);
    } else {
        s->bin = (double *)xin;
    }
}

/* out from the block's output y. */
static void sub_post(arena *ar, const ctx *x, sub_c *s, double *out, const double *y,
                     const double *nw, const double *nb)
{
    const int64_t n = s->rows * x->c->E;
    if (x->c->norm_first) {
        for (int64_t i = 0; i < n; i++) out[i] = s->xin[i] + y[i];
    } else {
        s->sum = ar_new(ar, n);
        for (int64_t i = 0; i < n; i++) s->sum[i] = s->xin[i] + y[i];
        tfm_ref_ln_fwd(out, s->mean, s->rstd, s->sum, nw, nb, s->rows, x->c->E, x->c->eps);
    }
}

/* Backward of the wiring, first half: from dout, the gradient into the
 * block's output (dy) and the residual's share of dxin (dxin overwritten). */
static void sub_bwd_out(arena *ar, const ctx *x, const sub_c *s, const double *dout, double *dy,
                        double *dxin, const double *nw, double *gnw, double *gnb)
{
    const int64_t n = s->rows * x->c->E;
    if (x->c->norm_first) {
        memcpy(dy, dout, sizeof(double) * (size_t)n);
        memcpy(dxin, dout, sizeof(double) * (size_t)n);
    } else {
        double *dsum = ar_new(ar, n);
        tfm_ref_ln_bwd(dsum, gnw, gnb, dout, s->sum, nw, s->mean, s->rstd, s->rows, x->c->E);
        memcpy(dy, dsum, sizeof(double) * (size_t)n);
        memcpy(dxin, dsum, sizeof(double) * (size_t)n);
    }
}

/* Second half: dbin (the gradient into the block's input) into dxin. */
static void sub_bwd_in(arena *ar, const ctx *x, const sub_c *s, const double *dbin, double *dxin,
                       const double *nw, double *gnw, double *gnb)
{
    const int64_t n = s->rows * x->c->E;
    if (x->c->norm_first) {
        double *t = ar_new(ar, n);
        tfm_ref_ln_bwd(t, gnw, gnb, dbin, s->xin, nw, s->mean, s->rstd, s->rows, x->c->E);
        add_to(dxin, t, n);
    } else {
        add_to(dxin, dbin, n);
    }
}

/* ------------------------------------------------------------ layers */

typedef struct {
    sub_c s[3];
    attn_blk sa, ca;
    ff_blk ff;
    double *x1, *x2;        /* outputs of the first two sublayers */
    int L;
} layer_c;

static void layer_fwd(arena *ar, const ctx *x, layer_c *k, const layer_p *p, bool dec, double *out,
                      const double *xin, int L, const double *mem, int Lm, bool causal,
                      uint64_t seed, uint64_t off)
{
    const int64_t rows = (int64_t)x->B * L, n = rows * x->c->E;
    double *y = ar_new(ar, n);
    k->L = L;
    k->x1 = dec ? ar_new(ar, n) : NULL;
    k->x2 = ar_new(ar, n);
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
static void layer_bwd(arena *ar, const ctx *x, const layer_c *k, const layer_p *p, const layer_p *g,
                      bool dec, const double *dout, double *dxin, double *dmem)
{
    const int64_t rows = (int64_t)x->B * k->L, n = rows * x->c->E;
    double *dy = ar_new(ar, n), *dbin = ar_new(ar, n), *dx2 = ar_new(ar, n);
    const int f = dec ? 2 : 1;
    sub_bwd_out(ar, x, &k->s[f], dout, dy, dx2, p->nw[f], g->nw[f], g->nb[f]);
    ff_blk_bwd(ar, x, &k->ff, p, g, dy, dbin, rows);
    sub_bwd_in(ar, x, &k->s[f], dbin, dx2, p->nw[f], g->nw[f], g->nb[f]);
    const double *d_after_sa = dx2;
    if (dec) {
        double *dx1 = ar_new(ar, n);
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

/* ------------------------------------------------------------ model */

typedef struct {
    double *xin, *out, *mean, *rstd;
} norm_c;

static void final_norm_fwd(arena *ar, const ctx *x, norm_c *k, double *xin, int64_t rows,
                           const double *w, const double *b)
{
    k->xin = xin;
    k->out = ar_new(ar, rows * x->c->E);
    k->mean = ar_new(ar, rows);
    k->rstd = ar_new(ar, rows);
    tfm_ref_ln_fwd(k->out, k->mean, k->rstd, xin, w, b, rows, x->c->E, x->c->eps);
}

double tfm_ref_model_loss(const tfm_ref_model *m, const double *params, const double *src,
                          const double *tgt, const double *y, uint64_t seed, uint64_t offset0,
                          double *grad, double *out)
{
    const tfm_ref_cfg *c = &m->c;
    const int64_t E = c->E;
    CHECK(E % c->heads == 0, "d_model %d not divisible by heads %d", c->E, c->heads);
    arena ar = {0};
    ctx x = {c, m->B, m->batch_first};
    double *pp = (double *)params, *gp = grad;
    layer_p *P = calloc((size_t)(m->n_enc + m->n_dec + 1), sizeof *P);
    layer_p *G = calloc((size_t)(m->n_enc + m->n_dec + 1), sizeof *G);
    layer_c *K = calloc((size_t)(m->n_enc + m->n_dec + 1), sizeof *K);
    CHECK(P && G && K, "out of host memory");
    double *encw = NULL, *encb = NULL, *decw = NULL, *decb = NULL, *genw = NULL, *genb = NULL,
           *gdecw = NULL, *gdecb = NULL;
    for (int l = 0; l < m->n_enc; l++) {
        P[l] = bind_layer(&pp, c, false);
        if (grad) G[l] = bind_layer(&gp, c, false);
    }
    if (m->enc_norm) {
        encw = take(&pp, E);
        encb = take(&pp, E);
        if (grad) {
            genw = take(&gp, E);
            genb = take(&gp, E);
        }
    }
    for (int l = m->n_enc; l < m->n_enc + m->n_dec; l++) {
        P[l] = bind_layer(&pp, c, true);
        if (grad) G[l] = bind_layer(&gp, c, true);
    }
    if (m->dec_norm) {
        decw = take(&pp, E);
        decb = take(&pp, E);
        if (grad) {
            gdecw = take(&gp, E);
            gdecb = take(&gp, E);
        }
    }

    /* forward */
    const int64_t rs = (int64_t)m->B * m->S, rt = (int64_t)m->B * m->T;
    uint64_t off = offset0;
    const double *xcur = src;
    for (int l = 0; l < m->n_enc; l++) {
        double *o = ar_new(&ar, rs * E);
        layer_fwd(&ar, &x, &K[l], &P[l], false, o, xcur, m->S, NULL, 0, m->enc_causal, seed, off);
        off += TFM_ENC_DROPOUTS;
        xcur = o;
    }
    norm_c en = {0}, dn = {0};
    if (m->enc_norm) {
        final_norm_fwd(&ar, &x, &en, (double *)xcur, rs, encw, encb);
        xcur = en.out;
    }
    const double *mem = xcur, *result = xcur;
    int64_t rows_out = rs;
    if (m->n_dec > 0) {
        const double *ycur = tgt;
        for (int l = m->n_enc; l < m->n_enc + m->n_dec; l++) {
            double *o = ar_new(&ar, rt * E);
            layer_fwd(&ar, &x, &K[l], &P[l], true, o, ycur, m->T, mem, m->S, m->dec_causal, seed, off);
            off += TFM_DEC_DROPOUTS;
            ycur = o;
        }
        if (m->dec_norm) {
            final_norm_fwd(&ar, &x, &dn, (double *)ycur, rt, decw, decb);
            ycur = dn.out;
        }
        result = ycur;
        rows_out = rt;
    }
    const int64_t n_out = rows_out * E;
    double loss = 0;
    for (int64_t i = 0; i < n_out; i++) loss += (result[i] - y[i]) * (result[i] - y[i]);
    loss /= (double)n_out;
    if (out) memcpy(out, result, sizeof(double) * (size_t)n_out);

    /* backward */
    if (grad) {
        double *d = ar_new(&ar, n_out);
        for (int64_t i = 0; i < n_out; i++) d[i] = 2.0 * (result[i] - y[i]) / (double)n_out;
        double *dmem = ar_new(&ar, rs * E);
        if (m->n_dec > 0) {
            if (m->dec_norm) {
                double *t = ar_new(&ar, rt * E);
                tfm_ref_ln_bwd(t, gdecw, gdecb, d, dn.xin, decw, dn.mean, dn.rstd, rt, E);
                d = t;
            }
            for (int l = m->n_enc + m->n_dec - 1; l >= m->n_enc; l--) {
                double *t = ar_new(&ar, rt * E);
                layer_bwd(&ar, &x, &K[l], &P[l], &G[l], true, d, t, dmem);
                d = t;
            }
            d = dmem;
        }
        if (m->enc_norm) {
            double *t = ar_new(&ar, rs * E);
            tfm_ref_ln_bwd(t, genw, genb, d, en.xin, encw, en.mean, en.rstd, rs, E);
            d = t;
        }
        for (int l = m->n_enc - 1; l >= 0; l--) {
            double *t = ar_new(&ar, rs * E);
            layer_bwd(&ar, &x, &K[l], &P[l], &G[l], false, d, t, NULL);
            d = t;
        }
    }
    free(P);
    free(G);
    free(K);
    ar_free(&ar);
    return loss;
}

/* ------------------------------------------------------------ init */

static double lcg_u01(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

void tfm_ref_model_init(const tfm_ref_model *m, double *params, uint64_t seed)
{
    const tfm_ref_cfg *c = &m->c;
    uint64_t s = seed ^ 0x9E3779B97F4A7C15ull;
    double *p = params;
    const double a_in = 1.0 / sqrt((double)c->E), a_ff = 1.0 / sqrt((double)c->F);
    for (int l = 0; l < m->n_enc + m->n_dec; l++) {
        const bool dec = l >= m->n_enc;
        if (l == m->n_enc && m->enc_norm) p += 2 * c->E; /* filled below */
        layer_p lp = bind_layer(&p, c, dec);
        const mha_p *mh[2] = {&lp.sa, dec ? &lp.ca : NULL};
        for (int k = 0; k < 2 && mh[k]; k++) {
            for (int64_t i = 0; i < 3LL * c->E * c->E; i++) mh[k]->in_w[i] = (2 * lcg_u01(&s) - 1) * a_in;
            for (int64_t i = 0; i < 3LL * c->E; i++) mh[k]->in_b[i] = 0.1 * (2 * lcg_u01(&s) - 1);
            for (int64_t i = 0; i < (int64_t)c->E * c->E; i++) mh[k]->out_w[i] = (2 * lcg_u01(&s) - 1) * a_in;
            for (int64_t i = 0; i < c->E; i++) mh[k]->out_b[i] = 0.1 * (2 * lcg_u01(&s) - 1);
        }
        for (int64_t i = 0; i < (int64_t)c->F * c->E; i++) lp.l1w[i] = (2 * lcg_u01(&s) - 1) * a_in;
        for (int64_t i = 0; i < c->F; i++) lp.l1b[i] = 0.1 * (2 * lcg_u01(&s) - 1);
        for (int64_t i = 0; i < (int64_t)c->E * c->F; i++) lp.l2w[i] = (2 * lcg_u01(&s) - 1) * a_ff;
        for (int64_t i = 0; i < c->E; i++) lp.l2b[i] = 0.1 * (2 * lcg_u01(&s) - 1);
        for (int k = 0; k < (dec ? 3 : 2); k++)
            for (int64_t i = 0; i < c->E; i++) {
                lp.nw[k][i] = 1.0 + 0.1 * (2 * lcg_u01(&s) - 1);
                lp.nb[k][i] = 0.1 * (2 * lcg_u01(&s) - 1);
            }
    }
    p = params;
    for (int l = 0; l < m->n_enc; l++) p += tfm_ref_enc_layer_nparams(c);
    if (m->enc_norm) {
        for (int64_t i = 0; i < c->E; i++) p[i] = 1.0 + 0.1 * (2 * lcg_u01(&s) - 1);
        for (int64_t i = 0; i < c->E; i++) p[c->E + i] = 0.1 * (2 * lcg_u01(&s) - 1);
        p += 2 * c->E;
    }
    for (int l = 0; l < m->n_dec; l++) p += tfm_ref_dec_layer_nparams(c);
    if (m->dec_norm) {
        for (int64_t i = 0; i < c->E; i++) p[i] = 1.0 + 0.1 * (2 * lcg_u01(&s) - 1);
        for (int64_t i = 0; i < c->E; i++) p[c->E + i] = 0.1 * (2 * lcg_u01(&s) - 1);
    }
}
