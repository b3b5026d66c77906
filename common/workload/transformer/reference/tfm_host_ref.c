/* tfm_host_ref.c: the float64 building blocks of the Transformer reference
 * (tfm_host_ref.h): attention core, LayerNorm, activations, dropout, AdamW.
 * Straightforward loops, no cleverness: this is the gold. */
#include "tfm_host_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "workload/transformer/kernels/tfm_rng.h"

/* ------------------------------------------------------------ attention */

/* Row i of head bh: p[j] = softmax probabilities (undropped), returns lse. */
static double attn_row(const tfm_ref_attn *a, const double *q, const double *k, int i, double *p)
{
    const int Dh = a->Dh;
    double mx = -INFINITY;
    for (int j = 0; j < a->Lk; j++) {
        if (a->causal && j > i) {
            p[j] = -INFINITY;
            continue;
        }
        double s = 0;
        for (int d = 0; d < Dh; d++) s += q[(int64_t)i * Dh + d] * k[(int64_t)j * Dh + d];
        p[j] = s * a->scale;
        if (p[j] > mx) mx = p[j];
    }
    double sum = 0;
    for (int j = 0; j < a->Lk; j++) {
        p[j] = p[j] == -INFINITY ? 0.0 : exp(p[j] - mx);
        sum += p[j];
    }
    for (int j = 0; j < a->Lk; j++) p[j] /= sum;
    return mx + log(sum);
}

/* Dropout factor of element (bh, i, j): 0 or 1 / (1 - p). */
static double attn_keep(const tfm_ref_attn *a, int64_t bh, int i, int j)
{
    if (a->p == 0.0f) return 1.0;
    uint64_t e = ((uint64_t)bh * (uint64_t)a->Lq + (uint64_t)i) * (uint64_t)a->Lk + (uint64_t)j;
    if (a->keep) return a->keep[e] != 0.0 ? 1.0 / (1.0 - (double)a->p) : 0.0;
    return tfm_rng_attn_keep(a->seed, a->offset, e, a->p) ? 1.0 / (1.0 - (double)a->p) : 0.0;
}

void tfm_ref_attn_fwd(const tfm_ref_attn *a, double *o, double *lse, const double *q,
                      const double *k, const double *v)
{
    const int Dh = a->Dh;
    double *p = mc_xmalloc(sizeof(double) * (unsigned long long)a->Lk);
    for (int64_t bh = 0; bh < (int64_t)a->B * a->H; bh++) {
        const double *qh = q + bh * a->Lq * Dh, *kh = k + bh * a->Lk * Dh, *vh = v + bh * a->Lk * Dh;
        for (int i = 0; i < a->Lq; i++) {
            lse[bh * a->Lq + i] = attn_row(a, qh, kh, i, p);
            double *oi = o + (bh * a->Lq + i) * Dh;
            for (int d = 0; d < Dh; d++) oi[d] = 0;
            for (int j = 0; j < a->Lk; j++) {
                double w = p[j] * attn_keep(a, bh, i, j);
                for (int d = 0; d < Dh; d++) oi[d] += w * vh[(int64_t)j * Dh + d];
            }
        }
    }
    free(p);
}

void tfm_ref_attn_bwd(const tfm_ref_attn *a, double *dq, double *dk, double *dv,
                      const double *dout, const double *q, const double *k, const double *v,
                      const double *o, const double *lse)
{
    (void)lse; /* the reference recomputes the probabilities exactly */
    const int Dh = a->Dh;
    const int64_t nq = (int64_t)a->B * a->H * a->Lq * Dh, nk = (int64_t)a->B * a->H * a->Lk * Dh;
    memset(dq, 0, sizeof(double) * (size_t)nq);
    memset(dk, 0, sizeof(double) * (size_t)nk);
    memset(dv, 0, sizeof(double) * (size_t)nk);
    double *p = mc_xmalloc(sizeof(double) * (unsigned long long)a->Lk);
    double *ds = mc_xmalloc(sizeof(double) * (unsigned long long)a->Lk);
    for (int64_t bh = 0; bh < (int64_t)a->B * a->H; bh++) {
        const int64_t qo = bh * a->Lq * Dh, ko = bh * a->Lk * Dh;
        for (int i = 0; i < a->Lq; i++) {
            attn_row(a, q + qo, k + ko, i, p);
            const double *doi = dout + qo + (int64_t)i * Dh, *oi = o + qo + (int64_t)i * Dh;
            double delta = 0; /* rowsum(dO * O) = sum_j P_ij dP_ij */
            for (int d = 0; d < Dh; d++) delta += doi[d] * oi[d];
            for (int j = 0; j < a->Lk; j++) {
                const double z = attn_keep(a, bh, i, j);
                double dpd = 0; /* gradient of the dropped probability */
                for (int d = 0; d < Dh; d++) {
                    dpd += doi[d] * v[ko + (int64_t)j * Dh + d];
                    dv[ko + (int64_t)j * Dh + d] += p[j] * z * doi[d];
                }
                ds[j] = p[j] * (dpd * z - delta);
            }
            for (int j = 0; j < a->Lk; j++)
                for (int d = 0; d < Dh; d++) {
                    dq[qo + (int64_t)i * Dh + d] += a->scale * ds[j] * k[ko + (int64_t)j * Dh + d];
                    dk[ko + (int64_t)j * Dh + d] += a->scale * ds[j] * q[qo + (int64_t)i * Dh + d];
                }
        }
    }
    free(p);
    free(ds);
}

/* ------------------------------------------------------------ LayerNorm */

void tfm_ref_ln_fwd(double *y, double *mean, double *rstd, const double *x, const double *gamma,
                    const double *beta, int64_t rows, int64_t n, double eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * n;
        double mu = 0, var = 0;
        for (int64_t j = 0; j < n; j++) mu += xr[j];
        mu /= (double)n;
        for (int64_t j = 0; j < n; j++) var += (xr[j] - mu) * (xr[j] - mu);
        var /= (double)n;
        const double rs = 1.0 / sqrt(var + eps);
        mean[r] = mu;
        rstd[r] = rs;
        for (int64_t j = 0; j < n; j++) y[r * n + j] = (xr[j] - mu) * rs * gamma[j] + beta[j];
    }
}

void tfm_ref_ln_bwd(double *dx, double *dgamma, double *dbeta, const double *dy, const double *x,
                    const double *gamma, const double *mean, const double *rstd, int64_t rows,
                    int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * n, *dyr = dy + r * n;
        double a = 0, b = 0; /* mean(dy g), mean(dy g xhat) */
        for (int64_t j = 0; j < n; j++) {
            const double xh = (xr[j] - mean[r]) * rstd[r];
            a += dyr[j] * gamma[j];
            b += dyr[j] * gamma[j] * xh;
            if (dgamma) dgamma[j] += dyr[j] * xh;
            if (dbeta) dbeta[j] += dyr[j];
        }
        a /= (double)n;
        b /= (double)n;
        if (dx)
            for (int64_t j = 0; j < n; j++) {
                const double xh = (xr[j] - mean[r]) * rstd[r];
                dx[r * n + j] = rstd[r] * (dyr[j] * gamma[j] - a - xh * b);
            }
    }
}

/* ------------------------------------------------------------ elementwise */

double tfm_ref_act(double x, int act)
{
    if (act == 1) return x > 0 ? x : 0;
    if (act == 2) return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    return x;
}

double tfm_ref_act_grad(double x, int act)
{
    if (act == 1) return x > 0 ? 1 : 0;
    if (act == 2) return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) * 0.39894228040143267794 /* 1 / sqrt(2 pi) */;
    return 1;
}

void tfm_ref_dropout(double *y, uint8_t *mask, const double *x, int64_t n, float p, uint64_t seed,
                     uint64_t offset)
{
    const double f = 1.0 / (1.0 - (double)p);
    for (int64_t i = 0; i < n; i++) {
        const bool keep = p == 0.0f || tfm_rng_keep(seed, offset, (uint64_t)i, p);
        if (mask) mask[i] = keep;
        y[i] = p == 0.0f ? x[i] : keep ? x[i] * f : 0.0;
    }
}

