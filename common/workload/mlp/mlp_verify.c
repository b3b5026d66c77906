/* mlp_verify.c: the GPU check of the training workload (mlp_verify.h). It
 * reads the workload's device tensors through mlp_internal.h. */
#include "mlp_verify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_cuda.h"
#include "workload/core/wl_gpu.h"
#include "mlp_host_ref.h"
#include "workload/core/optimizer_ref.h"
#include "mlp_internal.h"

#define STEPS 3
#define TOL_FP32 1e-4
#define TOL_LOWP 1e-2
#define TOL_PARAM 1e-5
#define ERR_FLOOR 1e-6
#define LOSS_STEPS 100

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    CHECK(p != NULL, "out of host memory");
    return p;
}

/* Host copies: params P, optimizer state M/V (double), and float scratch. */
typedef struct {
    int L;
    mc_mlp_shape s;
    double **P, **M, **V, **Gref, **Ggpu; /* 2L tensors: W0, b0, W1, b1, ... */
    int64_t *n;
    float *f;                               /* largest tensor, floats */
} host_set;

static void host_init(host_set *h, const mc_workload *w)
{
    h->L = w->L;
    h->s = (mc_mlp_shape){w->c.layers, w->c.in, w->c.width, w->c.out};
    int nt = 2 * w->L;
    h->n = xcalloc((size_t)nt, sizeof *h->n);
    double ***all[5] = {&h->P, &h->M, &h->V, &h->Gref, &h->Ggpu};
    int64_t most = 1;
    for (int l = 0; l < w->L; l++) {
        h->n[2 * l] = w->ly[l].out * w->ly[l].in;
        h->n[2 * l + 1] = w->ly[l].out;
        if (h->n[2 * l] > most) most = h->n[2 * l];
    }
    for (int a = 0; a < 5; a++) {
        *all[a] = xcalloc((size_t)nt, sizeof(double *));
        for (int t = 0; t < nt; t++) (*all[a])[t] = xcalloc((size_t)h->n[t], sizeof(double));
    }
    h->f = xcalloc((size_t)most, sizeof(float));
}

static void host_free(host_set *h)
{
    double **all[5] = {h->P, h->M, h->V, h->Gref, h->Ggpu};
    for (int a = 0; a < 5; a++) {
        for (int t = 0; t < 2 * h->L; t++) free(all[a][t]);
        free(all[a]);
    }
    free(h->n);
    free(h->f);
}

static void read_dev(mc_workload *w, host_set *h, double *dst, const wl_t *t, int64_t n)
{
    mc_gpu_to_host(w->ctx.gpu, h->f, WL_PTR(*t), n, MC_DT_F32);
    for (int64_t i = 0; i < n; i++) dst[i] = h->f[i];
}

static void read_params(mc_workload *w, host_set *h, double **out)
{
    for (int l = 0; l < w->L; l++) {
        read_dev(w, h, out[2 * l], &w->ly[l].W, h->n[2 * l]);
        read_dev(w, h, out[2 * l + 1], &w->ly[l].b, h->n[2 * l + 1]);
    }
}

static double *widen(const float *f, int64_t n)
{
    double *d = xcalloc((size_t)n, sizeof *d);
    for (int64_t i = 0; i < n; i++) d[i] = f[i];
    return d;
}

static mc_workload *small(mc_wl_precision prec, mc_wl_optimizer opt, int accum, bool ckpt,
                          bool gpu)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = 3;
    c.in = 8;
    c.width = 16;
    c.out = 4;
    c.batch = 6;
    c.accum = accum;
    c.precision = prec;
    c.optimizer = opt;
    c.checkpoint = ckpt;
    c.seed = 7;
    c.lr = opt == MC_WL_ADAM ? 1e-2 : 0.05;
    char err[200];
    mc_workload *w = mc_workload_create(&c, gpu, NULL, err, sizeof err);
    CHECK(w != NULL, "verify config refused: %s", err);
    return w;
}

static void capture_on(mc_workload *w)
{
    wl_capture *c = &w->cap;
    c->on = true;
    c->x = xcalloc((size_t)w->c.accum, sizeof *c->x);
    c->y = xcalloc((size_t)w->c.accum, sizeof *c->y);
    for (int k = 0; k < w->c.accum; k++) {
        c->x[k] = xcalloc((size_t)(w->mb * w->c.in), sizeof(float));
        c->y[k] = xcalloc((size_t)(w->mb * w->c.out), sizeof(float));
    }
    c->gW = xcalloc((size_t)w->L, sizeof *c->gW);
    c->gb = xcalloc((size_t)w->L, sizeof *c->gb);
    for (int l = 0; l < w->L; l++) {
        c->gW[l] = xcalloc((size_t)(w->ly[l].out * w->ly[l].in), sizeof(float));
        c->gb[l] = xcalloc((size_t)w->ly[l].out, sizeof(float));
    }
}

static void capture_off(mc_workload *w)
{
    wl_capture *c = &w->cap;
    for (int k = 0; k < w->c.accum; k++) {
        free(c->x[k]);
        free(c->y[k]);
    }
    for (int l = 0; l < w->L; l++) {
        free(c->gW[l]);
        free(c->gb[l]);
    }
    free(c->x);
    free(c->y);
    free(c->gW);
    free(c->gb);
    memset(c, 0, sizeof *c);
}

/* Three steps of one configuration against the host reference. */
static int check_config(FILE *log, mc_wl_precision prec, mc_wl_optimizer opt, int accum, bool ckpt)
{
    mc_workload *w = small(prec, opt, accum, ckpt, true);
    capture_on(w);
    host_set h;
    host_init(&h, w);
    const int nt = 2 * w->L;
    mc_round_fn rnd = prec == MC_WL_FP16 ? mc_round_fp16 : prec == MC_WL_BF16 ? mc_round_bf16 : NULL;
    const double tol = prec == MC_WL_FP32 ? TOL_FP32 : TOL_LOWP;
    double worst_loss = 0, worst_grad = 0, worst_param = 0;
    bool skipped = false;
    read_params(w, &h, h.P);
    for (int step = 1; step <= STEPS; step++) {
        mc_workload_step_result r;
        CHECK(mc_workload_step(w, &r) == MC_WL_OK, "verify run out of memory");
        skipped |= r.skipped;
        for (int t = 0; t < nt; t++) memset(h.Gref[t], 0, (size_t)h.n[t] * sizeof(double));
        double loss = 0;
        double *Wp[64], *bp[64], *gWp[64], *gbp[64];
        CHECK(w->L <= 64, "verify shapes have few layers");
        for (int l = 0; l < w->L; l++) {
            Wp[l] = h.P[2 * l];
            bp[l] = h.P[2 * l + 1];
            gWp[l] = h.Gref[2 * l];
            gbp[l] = h.Gref[2 * l + 1];
        }
        for (int k = 0; k < accum; k++) {
            double *x = widen(w->cap.x[k], w->mb * w->c.in), *y = widen(w->cap.y[k], w->mb * w->c.out);
            loss += mc_mlp_ref_loss_grad(&h.s, w->mb, Wp, bp, x, y, 1.0 / accum, rnd, gWp, gbp);
            free(x);
            free(y);
        }
        double el = fabs(r.loss - loss) / fmax(fabs(loss), ERR_FLOOR);
        if (!(el <= worst_loss)) worst_loss = el;
        for (int l = 0; l < w->L; l++)
            for (int j = 0; j < 2; j++) {
                int t = 2 * l + j;
                const float *gf = j ? w->cap.gb[l] : w->cap.gW[l];
                for (int64_t i = 0; i < h.n[t]; i++) h.Ggpu[t][i] = gf[i];
                double e = mc_rel_err(h.Ggpu[t], h.Gref[t], h.n[t], ERR_FLOOR);
                if (!(e <= worst_grad)) worst_grad = e;
            }
        if (!r.skipped) /* the reference update, on the GPU's own gradients */
            for (int t = 0; t < nt; t++) {
                if (opt == MC_WL_SGD) mc_opt_ref_sgd(h.P[t], h.Ggpu[t], h.n[t], w->c.lr);
                else if (opt == MC_WL_MOMENTUM)
                    mc_opt_ref_momentum(h.P[t], h.Ggpu[t], h.M[t], h.n[t], w->c.lr, 0.9, w->opt.steps == 1);
                else
                    mc_opt_ref_adam(h.P[t], h.Ggpu[t], h.M[t], h.V[t], h.n[t], w->c.lr, 0.9, 0.999,
                                    1e-8, w->opt.steps);
            }
        double **now = h.Gref; /* reuse as scratch: the GPU's parameters after the step */
        read_params(w, &h, now);
        for (int t = 0; t < nt; t++) {
            double e = mc_rel_err(now[t], h.P[t], h.n[t], ERR_FLOOR);
            if (!(e <= worst_param)) worst_param = e;
            memcpy(h.P[t], now[t], (size_t)h.n[t] * sizeof(double)); /* each step on its own */
        }
    }
    bool ok = worst_loss <= tol && worst_grad <= tol && worst_param <= TOL_PARAM && !skipped;
    fprintf(log, "verify: %s %-8s accum=%d%s: loss err %.2e, grad err %.2e (limit %.0e), "
                 "param err %.2e (limit %.0e)%s: %s\n",
            mc_wl_precision_name(prec), mc_wl_optimizer_name(opt), accum, ckpt ? " checkpoint" : "",
            worst_loss, worst_grad, tol, worst_param, TOL_PARAM,
            skipped ? ", a step was skipped" : "", ok ? "ok" : "FAIL");
    host_free(&h);
    capture_off(w);
    mc_workload_destroy(w);
    return ok ? 0 : 1;
}

/* The loss falls on fixed data. */
static int check_loss_falls(FILE *log, mc_wl_precision prec)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = 3;
    c.in = 16;
    c.width = 32;
    c.out = 8;
    c.batch = 32;
    c.precision = prec;
    c.optimizer = MC_WL_ADAM;
    c.lr = 1e-2;
    c.fixed_data = true;
    c.seed = 11;
    char err[200];
    mc_workload *w = mc_workload_create(&c, true, NULL, err, sizeof err);
    CHECK(w != NULL, "%s", err);
    double first = NAN, last = NAN;
    for (int s = 1; s <= LOSS_STEPS; s++) {
        mc_workload_step_result r;
        CHECK(mc_workload_step(w, &r) == MC_WL_OK, "out of memory");
        if (s == 1) first = r.loss;
        last = r.loss;
    }
    mc_workload_destroy(w);
    bool ok = isfinite(first) && isfinite(last) && last < 0.5 * first;
    fprintf(log, "verify: %s loss on fixed data, Adam: %.4g at step 1, %.4g at step %d: %s\n",
            mc_wl_precision_name(prec), first, last, LOSS_STEPS, ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}

/* An overflow injected at step 2 in fp16: skipped, scale halved, parameters unchanged. */
static int check_overflow(FILE *log)
{
    mc_workload *w = small(MC_WL_FP16, MC_WL_ADAM, 1, false, true);
    w->c.inject_overflow_step = 2;
    host_set h;
    host_init(&h, w);
    mc_workload_step_result r1, r2, r3;
    CHECK(mc_workload_step(w, &r1) == MC_WL_OK, "out of memory");
    read_params(w, &h, h.P);
    CHECK(mc_workload_step(w, &r2) == MC_WL_OK, "out of memory");
    read_params(w, &h, h.M);
    CHECK(mc_workload_step(w, &r3) == MC_WL_OK, "out of memory");
    double moved = 0;
    for (int t = 0; t < 2 * w->L; t++) moved = fmax(moved, mc_rel_err(h.M[t], h.P[t], h.n[t], ERR_FLOOR));
    bool ok = !r1.skipped && r2.skipped && !r3.skipped && r1.loss_scale == 65536.0 &&
              r2.loss_scale == 32768.0 && r3.loss_scale == 32768.0 && moved == 0.0 &&
              w->opt.steps == 2;
    fprintf(log, "verify: fp16 overflow injected at step 2: skipped %d%d%d, scale %.0f %.0f %.0f, "
                 "parameters moved by %.2e over the skipped step: %s\n",
            r1.skipped, r2.skipped, r3.skipped, r1.loss_scale, r2.loss_scale, r3.loss_scale, moved,
            ok ? "ok" : "FAIL");
    host_free(&h);
    mc_workload_destroy(w);
    return ok ? 0 : 1;
}

/* The same sequence on the GPU and in model-only gives the same figures
 * (small shapes: everything but the workspaces in 2 MiB small segments). */
static int check_accounting(FILE *log, mc_wl_precision prec, bool ckpt)
{
    mc_workload *g = small(prec, MC_WL_ADAM, 2, ckpt, true), *m = small(prec, MC_WL_ADAM, 2, ckpt, false);
    bool ok = true;
    mc_workload_step_result a = {0}, b = {0};
    for (int s = 1; s <= STEPS; s++) {
        mc_workload_step(g, &a);
        mc_workload_step(m, &b);
        /* reserved may differ: the driver, not the host rule, places segments */
        ok &= a.peak_allocated == b.peak_allocated && a.allocated_end == b.allocated_end;
    }
    fprintf(log, "verify: %s%s allocator figures, GPU vs model-only: peak %llu vs %llu, end %llu vs "
                 "%llu: %s\n", mc_wl_precision_name(prec), ckpt ? " checkpoint" : "",
            (unsigned long long)a.peak_allocated, (unsigned long long)b.peak_allocated,
            (unsigned long long)a.allocated_end, (unsigned long long)b.allocated_end,
            ok ? "ok" : "FAIL");
    mc_workload_destroy(g);
    mc_workload_destroy(m);
    return ok ? 0 : 1;
}

/* The bias gradient at a large batch, where the rows are split over the SMs
 * and partial sums go through the reduction buffer: every column's sum of
 * [m,n] against a float64 host sum of the same (dt-rounded) values. The
 * small shapes of check_config take the one-pass path only. */
static int check_bias_grad_large(FILE *log, int dt)
{
    const int64_t m = 32768, n = 1024;
    const uint64_t scratch_bytes = 32ull << 20;
    mc_wl_gpu *g = mc_gpu_create(1);
    float *f32 = NULL;
    void *gh = NULL, *gb = NULL, *scratch = NULL;
    CHECK_CUDA(cudaMalloc((void **)&f32, (size_t)(m * n) * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&gh, (size_t)(m * n) * MC_DT_SIZE(dt)));
    CHECK_CUDA(cudaMalloc(&gb, (size_t)n * MC_DT_SIZE(dt)));
    CHECK_CUDA(cudaMalloc(&scratch, scratch_bytes));
    mc_gpu_randn(g, f32, m * n, 7, 1);
    mc_gpu_cast(g, gh, dt, f32, MC_DT_F32, m * n);
    mc_gpu_cast(g, f32, MC_DT_F32, gh, dt, m * n); /* the values gh holds, in fp32 */
    mc_gpu_bias_grad(g, gb, gh, m, n, dt, scratch, scratch_bytes);
    float *host = xcalloc((size_t)(m * n), sizeof(float));
    float *sum = xcalloc((size_t)n, sizeof(float));
    mc_gpu_cast(g, scratch, MC_DT_F32, gb, dt, n);
    mc_gpu_sync(g);
    CHECK_CUDA(cudaMemcpy(host, f32, (size_t)(m * n) * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(sum, scratch, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0.0;
    for (int64_t j = 0; j < n; j++) {
        double ref = 0.0, mag = 0.0;
        for (int64_t i = 0; i < m; i++) {
            ref += host[i * n + j];
            mag += fabs(host[i * n + j]);
        }
        double err = fabs(sum[j] - ref) / (mag > 0 ? mag : 1.0);
        if (!(err <= worst)) worst = err; /* NaN makes worst NaN */
    }
    /* The sum is rounded once to dt at the end: relative to the sum of
     * magnitudes, fp32 accumulation stays far below dt's half-ulp. */
    double tol = dt == MC_DT_F32 ? 1e-6 : dt == MC_DT_F16 ? 1e-3 : 8e-3;
    int ok = worst <= tol;
    fprintf(log, "verify: bias gradient of [%lld,%lld] %s (rows split over the SMs): worst "
            "|gb - sum| / sum|gh| = %.2e (limit %.0e) %s\n", (long long)m, (long long)n,
            dt == MC_DT_F32 ? "fp32" : dt == MC_DT_F16 ? "fp16" : "bf16", worst, tol,
            ok ? "ok" : "FAILED");
    free(host);
    free(sum);
    CHECK_CUDA(cudaFree(f32));
    CHECK_CUDA(cudaFree(gh));
    CHECK_CUDA(cudaFree(gb));
    CHECK_CUDA(cudaFree(scratch));
    mc_gpu_destroy(g);
    return ok ? 0 : 1;
}

int mc_workload_verify(FILE *log)
{
    int fails = 0;
    for (int p = MC_WL_FP32; p <= MC_WL_BF16; p++)
        for (int o = MC_WL_SGD; o <= MC_WL_ADAM; o++) {
            fails += check_config(log, (mc_wl_precision)p, (mc_wl_optimizer)o, 1, false);
            fails += check_config(log, (mc_wl_precision)p, (mc_wl_optimizer)o, 2, true);
        }
    for (int p = MC_WL_FP32; p <= MC_WL_BF16; p++) {
        fails += check_loss_falls(log, (mc_wl_precision)p);
        fails += check_accounting(log, (mc_wl_precision)p, p == MC_WL_FP16);
    }
    fails += check_overflow(log);
    for (int dt = MC_DT_F32; dt <= MC_DT_BF16; dt++) fails += check_bias_grad_large(log, dt);
    fprintf(log, "verify: %d check(s) failed\n", fails);
    return fails;
}
