/* tfm_host_model.c: the float64 reference of whole models
 * (nn.TransformerEncoder, nn.Transformer) with an MSE loss, and their
 * parameter count and test initialisation (tfm_host_ref.h), on the layers
 * of tfm_host_layer.c. */
#include "tfm_host_layer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------ model */

int64_t tfm_ref_model_nparams(const tfm_ref_model *m)
{
    const int64_t E = m->c.E;
    return m->n_enc * tfm_ref_enc_layer_nparams(&m->c) + (m->enc_norm ? 2 * E : 0) +
           m->n_dec * tfm_ref_dec_layer_nparams(&m->c) + (m->dec_norm ? 2 * E : 0);
}


typedef struct {
    double *xin, *out, *mean, *rstd;
} norm_c;

static void final_norm_fwd(tfm_arena *ar, const tfm_hctx *x, norm_c *k, double *xin, int64_t rows,
                           const double *w, const double *b)
{
    k->xin = xin;
    k->out = tfm_ar_new(ar, rows * x->c->E);
    k->mean = tfm_ar_new(ar, rows);
    k->rstd = tfm_ar_new(ar, rows);
    tfm_ref_ln_fwd(k->out, k->mean, k->rstd, xin, w, b, rows, x->c->E, x->c->eps);
}

double tfm_ref_model_loss(const tfm_ref_model *m, const double *params, const double *src,
                          const double *tgt, const double *y, uint64_t seed, uint64_t offset0,
                          double *grad, double *out)
{
    const tfm_ref_cfg *c = &m->c;
    const int64_t E = c->E;
    CHECK(E % c->heads == 0, "d_model %d not divisible by heads %d", c->E, c->heads);
    tfm_arena ar = {0};
    tfm_hctx x = {c, m->B, m->batch_first};
    double *pp = (double *)params, *gp = grad;
    tfm_layer_p *P = calloc((size_t)(m->n_enc + m->n_dec + 1), sizeof *P);
    tfm_layer_p *G = calloc((size_t)(m->n_enc + m->n_dec + 1), sizeof *G);
    tfm_layer_c *K = tfm_layers_new(m->n_enc + m->n_dec);
    CHECK(P && G, "out of host memory");
    double *encw = NULL, *encb = NULL, *decw = NULL, *decb = NULL, *genw = NULL, *genb = NULL,
           *gdecw = NULL, *gdecb = NULL;
    for (int l = 0; l < m->n_enc; l++) {
        P[l] = tfm_bind_layer(&pp, c, false);
        if (grad) G[l] = tfm_bind_layer(&gp, c, false);
    }
    if (m->enc_norm) {
        encw = tfm_take(&pp, E);
        encb = tfm_take(&pp, E);
        if (grad) {
            genw = tfm_take(&gp, E);
            genb = tfm_take(&gp, E);
        }
    }
    for (int l = m->n_enc; l < m->n_enc + m->n_dec; l++) {
        P[l] = tfm_bind_layer(&pp, c, true);
        if (grad) G[l] = tfm_bind_layer(&gp, c, true);
    }
    if (m->dec_norm) {
        decw = tfm_take(&pp, E);
        decb = tfm_take(&pp, E);
        if (grad) {
            gdecw = tfm_take(&gp, E);
            gdecb = tfm_take(&gp, E);
        }
    }

    /* forward */
    const int64_t rs = (int64_t)m->B * m->S, rt = (int64_t)m->B * m->T;
    uint64_t off = offset0;
    const double *xcur = src;
    for (int l = 0; l < m->n_enc; l++) {
        double *o = tfm_ar_new(&ar, rs * E);
        tfm_layer_fwd(&ar, &x, tfm_layer_at(K, l), &P[l], false, o, xcur, m->S, NULL, 0, m->enc_causal, seed, off);
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
            double *o = tfm_ar_new(&ar, rt * E);
            tfm_layer_fwd(&ar, &x, tfm_layer_at(K, l), &P[l], true, o, ycur, m->T, mem, m->S, m->dec_causal, seed, off);
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
        double *d = tfm_ar_new(&ar, n_out);
        for (int64_t i = 0; i < n_out; i++) d[i] = 2.0 * (result[i] - y[i]) / (double)n_out;
        double *dmem = tfm_ar_new(&ar, rs * E);
        if (m->n_dec > 0) {
            if (m->dec_norm) {
                double *t = tfm_ar_new(&ar, rt * E);
                tfm_ref_ln_bwd(t, gdecw, gdecb, d, dn.xin, decw, dn.mean, dn.rstd, rt, E);
                d = t;
            }
            for (int l = m->n_enc + m->n_dec - 1; l >= m->n_enc; l--) {
                double *t = tfm_ar_new(&ar, rt * E);
                tfm_layer_bwd(&ar, &x, tfm_layer_at(K, l), &P[l], &G[l], true, d, t, dmem);
                d = t;
            }
            d = dmem;
        }
        if (m->enc_norm) {
            double *t = tfm_ar_new(&ar, rs * E);
            tfm_ref_ln_bwd(t, genw, genb, d, en.xin, encw, en.mean, en.rstd, rs, E);
            d = t;
        }
        for (int l = m->n_enc - 1; l >= 0; l--) {
            double *t = tfm_ar_new(&ar, rs * E);
            tfm_layer_bwd(&ar, &x, tfm_layer_at(K, l), &P[l], &G[l], false, d, t, NULL);
            d = t;
        }
    }
    free(P);
    free(G);
    free(K);
    tfm_ar_free(&ar);
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
        tfm_layer_p lp = tfm_bind_layer(&p, c, dec);
        const tfm_mha_p *mh[2] = {&lp.sa, dec ? &lp.ca : NULL};
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
