/* tfm_verify.cu: the GPU check of the Transformer kernels (tfm_verify.h):
 * LayerNorm, the eager elementwise kernels, the fused chains and AdamW;
 * attention is in tfm_verify_attn.cu, the helpers both use in
 * tfm_verify_util.cu. Its buffers are its own (cudaMalloc), not the
 * modelled workload's. */
#include "tfm_verify.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_cuda.h"
#include "workload/transformer/reference/tfm_host_ref.h"
#include "workload/core/optimizer_ref.h"
#include "workload/core/optimizer_step.h"
#include "workload/transformer/kernels/tfm_kernels.h"
#include "workload/transformer/kernels/tfm_rng.h"
#include "tfm_verify_util.h"

/* ------------------------------------------------------------ LayerNorm */

static void check_layernorm(tfm_vctx *v, int dt, int64_t rows, int64_t n, int64_t part_rows)
{
    uint64_t s = 1000 + (uint64_t)(n + part_rows);
    double *x = tfm_v_host(rows * n), *gm = tfm_v_host(n), *bt = tfm_v_host(n), *dy = tfm_v_host(rows * n);
    tfm_v_fill(x, rows * n, -2.0, 3.0, &s);
    tfm_v_fill(gm, n, 0.8, 1.2, &s);
    tfm_v_fill(bt, n, -0.2, 0.2, &s);
    tfm_v_fill(dy, rows * n, -1.0, 1.0, &s);
    void *dx_ = tfm_v_upload(x, rows * n, dt), *dg = tfm_v_upload(gm, n, dt), *db = tfm_v_upload(bt, n, dt);
    void *ddy = tfm_v_upload(dy, rows * n, dt);
    void *dyo = tfm_v_alloc((uint64_t)(rows * n) * MC_DT_SIZE(dt)), *ddx = tfm_v_alloc((uint64_t)(rows * n) * MC_DT_SIZE(dt));
    void *dgg = tfm_v_alloc((uint64_t)n * MC_DT_SIZE(dt)), *dgb = tfm_v_alloc((uint64_t)n * MC_DT_SIZE(dt));
    float *mean = (float *)tfm_v_alloc(4 * (uint64_t)rows), *rstd = (float *)tfm_v_alloc(4 * (uint64_t)rows);
    float *pg = part_rows ? (float *)tfm_v_alloc(4 * (uint64_t)(part_rows * n)) : NULL;
    float *pb = part_rows ? (float *)tfm_v_alloc(4 * (uint64_t)(part_rows * n)) : NULL;
    tfm_ln_fwd(v->g, dyo, mean, rstd, dx_, dg, db, rows, n, 1e-5f, dt);
    tfm_ln_bwd(v->g, ddx, dgg, dgb, ddy, dx_, dg, mean, rstd, rows, n, pg, pb, part_rows, dt);

    double *ry = tfm_v_host(rows * n), *rm = tfm_v_host(rows), *rr = tfm_v_host(rows), *rdx = tfm_v_host(rows * n);
    double *rdg = tfm_v_host(n), *rdb = tfm_v_host(n), *got = tfm_v_host(rows * n);
    tfm_ref_ln_fwd(ry, rm, rr, x, gm, bt, rows, n, 1e-5);
    tfm_ref_ln_bwd(rdx, rdg, rdb, dy, x, gm, rm, rr, rows, n);
    char what[96];
    const double tol = tfm_v_tol(dt);
    snprintf(what, sizeof what, "layernorm fwd y [%lld,%lld]", (long long)rows, (long long)n);
    tfm_v_download(v->g, got, dyo, rows * n, dt);
    tfm_v_report(v, what, dt, tfm_v_err(got, ry, rows * n), tol);
    snprintf(what, sizeof what, "layernorm fwd mean, rstd [%lld]", (long long)rows);
    tfm_v_download(v->g, got, mean, rows, MC_DT_F32);
    double e = tfm_v_err(got, rm, rows);
    tfm_v_download(v->g, got, rstd, rows, MC_DT_F32);
    e = fmax(e, tfm_v_err(got, rr, rows));
    tfm_v_report(v, what, dt, e, 1e-4);
    snprintf(what, sizeof what, "layernorm bwd dx, dgamma, dbeta (%lld partial rows)", (long long)part_rows);
    tfm_v_download(v->g, got, ddx, rows * n, dt);
    e = tfm_v_err(got, rdx, rows * n);
    tfm_v_download(v->g, got, dgg, n, dt);
    e = fmax(e, tfm_v_err(got, rdg, n));
    tfm_v_download(v->g, got, dgb, n, dt);
    e = fmax(e, tfm_v_err(got, rdb, n));
    tfm_v_report(v, what, dt, e, tol);

    void *dev[] = {dx_, dg, db, ddy, dyo, ddx, dgg, dgb, mean, rstd, pg, pb};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i]) tfm_v_free(dev[i]);
    double *hs[] = {x, gm, bt, dy, ry, rm, rr, rdx, rdg, rdb, got};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) free(hs[i]);
}

/* ------------------------------------------------------------ eager elementwise */

/* shift: elements the device pointers start past a 16-byte boundary (1:
 * the single-element path; 0: the 16-byte path and its tail). */
static void check_eager(tfm_vctx *v, int dt, int64_t n, int shift)
{
    uint64_t s = 2000 + (uint64_t)n;
    const int64_t tot = n + shift;
    const uint64_t es = (uint64_t)MC_DT_SIZE(dt);
    double *x = tfm_v_host(tot), *dy = tfm_v_host(tot), *r = tfm_v_host(tot), *got = tfm_v_host(tot);
    double *want = tfm_v_host(n);
    tfm_v_fill(x, tot, -3.0, 3.0, &s);
    tfm_v_fill(dy, tot, -1.0, 1.0, &s);
    tfm_v_fill(r, tot, -1.0, 1.0, &s);
    char *dx_ = (char *)tfm_v_upload(x, tot, dt), *ddy = (char *)tfm_v_upload(dy, tot, dt);
    char *dr32 = (char *)tfm_v_upload(r, tot, MC_DT_F32); /* the fp32 residual stream */
    char *dout = (char *)tfm_v_alloc((uint64_t)tot * es), *dgrad = (char *)tfm_v_alloc((uint64_t)tot * es);
    char *dsum = (char *)tfm_v_alloc((uint64_t)tot * 4);
    uint8_t *mask = (uint8_t *)tfm_v_alloc((uint64_t)tot);
    const double *xs = x + shift, *dys = dy + shift, *rs = r + shift;
    void *px = dx_ + shift * es, *pdy = ddy + shift * es, *pout = dout + shift * es, *pg = dgrad + shift * es;
    const double tol = tfm_v_tol(dt);
    char what[96];
    for (int act = TFM_ACT_RELU; act <= TFM_ACT_GELU; act++) {
        const char *name = act == TFM_ACT_RELU ? "relu" : "gelu";
        tfm_act_fwd(v->g, pout, px, n, act, dt);
        for (int64_t i = 0; i < n; i++) want[i] = tfm_ref_act(xs[i], act);
        tfm_v_download(v->g, got, pout, n, dt);
        snprintf(what, sizeof what, "%s fwd n %lld shift %d", name, (long long)n, shift);
        tfm_v_report(v, what, dt, tfm_v_err(got, want, n), tol);
        /* relu's backward reads its output, gelu's its input */
        tfm_act_bwd(v->g, pg, pdy, act == TFM_ACT_RELU ? pout : px, n, act, dt);
        for (int64_t i = 0; i < n; i++) want[i] = dys[i] * tfm_ref_act_grad(xs[i], act);
        tfm_v_download(v->g, got, pg, n, dt);
        snprintf(what, sizeof what, "%s bwd n %lld shift %d", name, (long long)n, shift);
        tfm_v_report(v, what, dt, tfm_v_err(got, want, n), tol);
    }
    /* dropout: the kept elements exactly tfm_rng's, values scaled by 1 / (1 - p) */
    const float p = 0.3f;
    uint8_t *hm = (uint8_t *)malloc((size_t)n + 1);
    CHECK(hm != NULL, "out of host memory");
    tfm_dropout_fwd(v->g, pout, mask + shift, px, n, p, 7, 3, dt);
    tfm_ref_dropout(want, NULL, xs, n, p, 7, 3);
    tfm_v_download(v->g, got, pout, n, dt);
    double e = tfm_v_err(got, want, n);
    tfm_v_bytes_to_host(v->g, hm, mask + shift, (uint64_t)n);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; i++) wrong += hm[i] != (uint8_t)tfm_rng_keep(7, 3, (uint64_t)i, p);
    snprintf(what, sizeof what, "dropout fwd n %lld shift %d (%lld masks differ)", (long long)n, shift, (long long)wrong);
    tfm_v_report(v, what, dt, wrong ? INFINITY : e, tol);
    tfm_dropout_bwd(v->g, pg, pdy, mask + shift, n, p, dt);
    for (int64_t i = 0; i < n; i++) want[i] = hm[i] ? dys[i] / (1.0 - (double)p) : 0.0;
    tfm_v_download(v->g, got, pg, n, dt);
    snprintf(what, sizeof what, "dropout bwd n %lld shift %d", (long long)n, shift);
    tfm_v_report(v, what, dt, tfm_v_err(got, want, n), tol);
    free(hm);
    /* residual add: fp32 stream + dt branch -> fp32 */
    tfm_add(v->g, dsum + shift * 4, MC_DT_F32, dr32 + shift * 4, MC_DT_F32, px, dt, n);
    for (int64_t i = 0; i < n; i++) want[i] = rs[i] + xs[i];
    tfm_v_download(v->g, got, dsum + shift * 4, n, MC_DT_F32);
    snprintf(what, sizeof what, "add fp32 + dtype n %lld shift %d", (long long)n, shift);
    tfm_v_report(v, what, dt, tfm_v_err(got, want, n), 1e-6);

    void *dev[] = {dx_, ddy, dr32, dout, dgrad, dsum, mask};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) tfm_v_free(dev[i]);
    free(x); free(dy); free(r); free(got); free(want);
}

/* ------------------------------------------------------------ fused chains */

static void check_fused(tfm_vctx *v, int dt, int64_t rows, int64_t cols, int act, bool with_res, float p)
{
    const int dto = with_res ? MC_DT_F32 : dt;
    const int64_t n = rows * cols;
    uint64_t s = 3000 + (uint64_t)(cols * 8 + act * 2 + with_res);
    double *h = tfm_v_host(n), *b = tfm_v_host(cols), *r = tfm_v_host(n), *dy = tfm_v_host(n);
    double *got = tfm_v_host(n), *want = tfm_v_host(n);
    tfm_v_fill(h, n, -2.0, 2.0, &s);
    tfm_v_fill(b, cols, -0.5, 0.5, &s);
    tfm_v_fill(r, n, -1.0, 1.0, &s);
    tfm_v_fill(dy, n, -1.0, 1.0, &s);
    void *dh = tfm_v_upload(h, n, dt), *db = tfm_v_upload(b, cols, dt);
    void *dr = with_res ? tfm_v_upload(r, n, dto) : NULL, *ddy = tfm_v_upload(dy, n, dto);
    void *dyo = tfm_v_alloc((uint64_t)n * MC_DT_SIZE(dto)), *ddu = tfm_v_alloc((uint64_t)n * MC_DT_SIZE(dt));
    uint8_t *bits = (uint8_t *)tfm_v_alloc((uint64_t)n);
    tfm_fused_fwd(v->g, dyo, dto, bits, dh, db, dr, rows, cols, act, p, 11, 4, dt);
    tfm_fused_bwd(v->g, ddu, ddy, dto, bits, dh, db, rows, cols, act, p, dt);
    uint8_t *hb = (uint8_t *)malloc((size_t)n);
    CHECK(hb != NULL, "out of host memory");
    tfm_v_bytes_to_host(v->g, hb, bits, (uint64_t)n);
    int64_t wrong = 0;
    const double f = p > 0.0f ? 1.0 / (1.0 - (double)p) : 1.0;
    for (int64_t i = 0; i < n; i++) {
        const double u = h[i] + b[i % cols];
        const bool keep = p == 0.0f || tfm_rng_keep(11, 4, (uint64_t)i, p);
        wrong += (hb[i] & 1) != keep;
        if (fabs(u) > 1e-3) wrong += ((hb[i] >> 1) & 1) != (u > 0); /* the sign of a tiny u may round */
        want[i] = (with_res ? r[i] : 0.0) + (keep ? tfm_ref_act(u, act) * f : 0.0);
    }
    char what[128];
    snprintf(what, sizeof what, "fused fwd act %d res %d p %.1f [%lld,%lld] (%lld bits differ)", act,
             with_res, (double)p, (long long)rows, (long long)cols, (long long)wrong);
    tfm_v_download(v->g, got, dyo, n, dto);
    tfm_v_report(v, what, dt, wrong ? INFINITY : tfm_v_err(got, want, n), tfm_v_tol(dt));
    for (int64_t i = 0; i < n; i++) {
        const double u = h[i] + b[i % cols];
        want[i] = (hb[i] & 1) ? dy[i] * f * tfm_ref_act_grad(u, act) : 0.0;
    }
    snprintf(what, sizeof what, "fused bwd act %d res %d p %.1f [%lld,%lld]", act, with_res, (double)p,
             (long long)rows, (long long)cols);
    tfm_v_download(v->g, got, ddu, n, dt);
    tfm_v_report(v, what, dt, tfm_v_err(got, want, n), tfm_v_tol(dt));
    free(hb);
    void *dev[] = {dh, db, dr, ddy, dyo, ddu, bits};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i]) tfm_v_free(dev[i]);
    free(h); free(b); free(r); free(dy); free(got); free(want);
}

/* ------------------------------------------------------------ AdamW */

static void check_adamw(tfm_vctx *v)
{
    enum { NT = 3, STEPS = 3 };
    const int64_t n[NT] = {1000, 37, 4099};
    uint64_t s = 4000;
    double *hp[NT], *hm[NT], *hv[NT], *hg[NT];
    float *dp[NT], *dm[NT], *dv[NT], *dg[NT];
    for (int t = 0; t < NT; t++) {
        hp[t] = tfm_v_host(n[t]);
        hm[t] = tfm_v_host(n[t]);
        hv[t] = tfm_v_host(n[t]);
        hg[t] = tfm_v_host(n[t]);
        tfm_v_fill(hp[t], n[t], -1.0, 1.0, &s);
        dp[t] = (float *)tfm_v_upload(hp[t], n[t], MC_DT_F32);
        dm[t] = (float *)tfm_v_upload(hm[t], n[t], MC_DT_F32);
        dv[t] = (float *)tfm_v_upload(hv[t], n[t], MC_DT_F32);
        dg[t] = (float *)tfm_v_alloc(4 * (uint64_t)n[t]);
    }
    for (int step = 1; step <= STEPS; step++) {
        for (int t = 0; t < NT; t++) {
            tfm_v_fill(hg[t], n[t], -0.1, 0.1, &s);
            tfm_v_free(dg[t]);
            dg[t] = (float *)tfm_v_upload(hg[t], n[t], MC_DT_F32);
            mc_opt_ref_adamw(hp[t], hg[t], hm[t], hv[t], n[t], 1e-3, 0.9, 0.999, 1e-8, 0.01, step);
        }
        mc_gpu_adamw(v->g, NT, dp, dg, dm, dv, n, 1e-3, 0.9, 0.999, 1e-8, 0.01, step);
    }
    double e = 0;
    for (int t = 0; t < NT; t++) {
        double *got = tfm_v_host(n[t]);
        tfm_v_download(v->g, got, dp[t], n[t], MC_DT_F32);
        e = fmax(e, tfm_v_err(got, hp[t], n[t]));
        tfm_v_download(v->g, got, dm[t], n[t], MC_DT_F32);
        e = fmax(e, tfm_v_err(got, hm[t], n[t]));
        tfm_v_download(v->g, got, dv[t], n[t], MC_DT_F32);
        e = fmax(e, tfm_v_err(got, hv[t], n[t]));
        free(got);
    }
    /* fp32 against float64 over 3 steps: about 1.5e-7 (test_tfm_host_ref's
     * adamw_fp32_error_budget, which shows 1e-5 failing a wrong bias correction) */
    tfm_v_report(v, "adamw 3 tensors 3 steps", MC_DT_F32, e, 1e-5);
    for (int t = 0; t < NT; t++) {
        tfm_v_free(dp[t]); tfm_v_free(dm[t]); tfm_v_free(dv[t]); tfm_v_free(dg[t]);
        free(hp[t]); free(hm[t]); free(hv[t]); free(hg[t]);
    }
}

/* ------------------------------------------------------------ driver */

extern "C" int mc_tfm_verify(FILE *log)
{
    tfm_vctx v = {log, 0, 0, mc_gpu_create(1)};
    for (int dt = MC_DT_F32; dt <= MC_DT_BF16; dt++) {
        check_layernorm(&v, dt, 37, 256, 0);  /* rows in registers (packs of VEC) */
        check_layernorm(&v, dt, 70, 768, 5);
        check_layernorm(&v, dt, 33, 1024, 0);
        check_layernorm(&v, dt, 300, 100, 7); /* element by element */
        check_layernorm(&v, dt, 20, 2048, 3);
        check_layernorm(&v, dt, 1000, 768, 0); /* column sums through dX's buffer */
        check_layernorm(&v, dt, 600, 100, 0);
        check_eager(&v, dt, 4099, 0);
        check_eager(&v, dt, 1000, 1);
        for (int act = TFM_ACT_NONE; act <= TFM_ACT_GELU; act++)
            for (int res = 0; res < 2; res++) {
                check_fused(&v, dt, 37, 64, act, res, 0.2f);
                check_fused(&v, dt, 9, 60, act, res, act == TFM_ACT_RELU ? 0.0f : 0.1f);
            }
    }
    check_adamw(&v);
    tfm_verify_attention(&v);
    mc_gpu_destroy(v.g);
    fprintf(log, "verify: tfm %d checks, %d failed\n", v.checks, v.fails);
    return v.fails;
}
