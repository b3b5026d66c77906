/* mlp_host_ref.c: float64 forward, backward and optimizer updates of the
 * training workload (mlp_host_ref.h). Plain loops: shapes are tiny. */
#include "mlp_host_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------ rounding */

double mc_round_fp32(double v) { return (double)(float)v; }

double mc_round_bf16(double v)
{
    float f = (float)v;
    if (!isfinite(f)) return f;
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u); /* round to nearest even on the top 16 bits */
    u &= 0xFFFF0000u;
    memcpy(&f, &u, 4);
    return f;
}

double mc_round_fp16(double v)
{
    if (!isfinite(v) || v == 0) return v;
    double a = fabs(v), r;
    if (a < 0x1p-14) { /* subnormal: quantum 2^-24 */
        r = rint(a * 0x1p24) * 0x1p-24;
    } else {
        int e;
        double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1): 11 significant bits */
        r = ldexp(rint(m * 2048.0), e - 11);
    }
    if (r > 65504.0) r = INFINITY;
    return v < 0 ? -r : r;
}

static double rd(mc_round_fn rnd, double v) { return rnd ? rnd(v) : v; }

/* ------------------------------------------------------------ shapes */

int64_t mc_mlp_in(const mc_mlp_shape *s, int l) { return l == 0 ? s->in : s->width; }
int64_t mc_mlp_out(const mc_mlp_shape *s, int l) { return l == s->layers - 1 ? s->out : s->width; }

static double *dalloc(int64_t n)
{
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    CHECK(p != NULL, "out of host memory");
    return p;
}

/* ------------------------------------------------------------ forward/backward */

double mc_mlp_ref_loss_grad(const mc_mlp_shape *s, int64_t m, double *const *W,
                            double *const *b, const double *x, const double *y, double scale,
                            mc_round_fn rnd, double *const *gW, double *const *gb)
{
    const int L = s->layers;
    double **act = calloc((size_t)L + 1, sizeof *act); /* act[l]: input of layer l (rounded) */
    double **pre = calloc((size_t)L, sizeof *pre);     /* pre[l]: Linear l output (rounded) */
    double **Wc = calloc((size_t)L, sizeof *Wc);
    CHECK(act && pre && Wc, "out of host memory");
    act[0] = dalloc(m * s->in);
    for (int64_t i = 0; i < m * s->in; i++) act[0][i] = rd(rnd, x[i]);
    for (int l = 0; l < L; l++) {
        int64_t in = mc_mlp_in(s, l), out = mc_mlp_out(s, l);
        Wc[l] = dalloc(in * out);
        for (int64_t i = 0; i < in * out; i++) Wc[l][i] = rd(rnd, W[l][i]);
        pre[l] = dalloc(m * out);
        act[l + 1] = dalloc(m * out);
        for (int64_t r = 0; r < m; r++)
            for (int64_t o = 0; o < out; o++) {
                double acc = rd(rnd, b[l][o]);
                for (int64_t i = 0; i < in; i++) acc += act[l][r * in + i] * Wc[l][o * in + i];
                pre[l][r * out + o] = rd(rnd, acc);
                act[l + 1][r * out + o] = l < L - 1 ? fmax(pre[l][r * out + o], 0.0) : pre[l][r * out + o];
            }
    }
    const int64_t n = m * s->out;
    double loss = 0;
    double *g = dalloc(n); /* gradient w.r.t. the current layer's output */
    for (int64_t i = 0; i < n; i++) {
        double d = act[L][i] - y[i];
        loss += d * d;
        g[i] = rd(rnd, 2.0 * d / (double)n * scale);
    }
    loss = loss / (double)n * scale;
    if (gW || gb)
        for (int l = L - 1; l >= 0; l--) {
            int64_t in = mc_mlp_in(s, l), out = mc_mlp_out(s, l);
            if (l < L - 1) /* ReLU: through where the output is > 0 */
                for (int64_t i = 0; i < m * out; i++)
                    if (!(pre[l][i] > 0)) g[i] = 0;
            for (int64_t o = 0; o < out; o++) {
                double sb = 0;
                for (int64_t r = 0; r < m; r++) sb += g[r * out + o];
                if (gb) gb[l][o] += rd(rnd, sb);
                for (int64_t i = 0; i < in && gW; i++) {
                    double sw = 0;
                    for (int64_t r = 0; r < m; r++) sw += g[r * out + o] * act[l][r * in + i];
                    gW[l][o * in + i] += rd(rnd, sw);
                }
            }
            if (l == 0) break;
            double *gi = dalloc(m * in);
            for (int64_t r = 0; r < m; r++)
                for (int64_t i = 0; i < in; i++) {
                    double sx = 0;
                    for (int64_t o = 0; o < out; o++) sx += g[r * out + o] * Wc[l][o * in + i];
                    gi[r * in + i] = rd(rnd, sx);
                }
            free(g);
            g = gi;
        }
    free(g);
    for (int l = 0; l < L; l++) {
        free(act[l + 1]);
        free(pre[l]);
        free(Wc[l]);
    }
    free(act[0]);
    free(act);
    free(pre);
    free(Wc);
    return loss;
}

/* ------------------------------------------------------------ optimizers */

double mc_rel_err(const double *a, const double *b, int64_t n, double floor)
{
    double num = 0, den = floor;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= num)) num = d; /* NaN propagates as a failure */
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return num / den;
}
