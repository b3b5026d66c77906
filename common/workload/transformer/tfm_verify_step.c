/* tfm_verify_step.c: whole Transformer training steps on the GPU
 * against the float64 host reference (tfm_host_ref.h), on small shapes:
 * the suite's model (mc_tfm with real blocks from the CUDA backend) runs
 * one step on host-given parameters and data, and its loss and every
 * parameter's gradient (before the optimizer, after GradScaler's unscale)
 * must equal tfm_ref_model_loss's, micro-steps summed, within the
 * precision's tolerance. The cases cover both architectures, both layouts,
 * both norm orders, relu and gelu, causal, dropout (the same tfm_rng
 * streams), accumulation, checkpointing (the recomputation must give the
 * same values), fp32, fp16 and bf16, and the fused chains of --fused (the
 * same float64 model: fusing changes where values live, not what they are),
 * and --offload (saved activations copied to pinned host memory and back:
 * the same values, exactly). Then a few steps on fixed data:
 * the loss must fall. Needs a current CUDA device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "workload/transformer/reference/tfm_host_ref.h"
#include "workload/transformer/kernels/tfm_kernels.h"
#include "tfm_verify.h"
#include "tfm.h"

/* Relative error ||g - r|| / ||r|| over all the gradients, and of each
 * parameter tensor: within the tolerance in fp32; in fp16 and bf16 each
 * tensor within HALF_TENSOR_FACTOR times it. A half-precision gradient's
 * error follows the size of what is summed, not of the sum: on the H100 the
 * fp16 encoder-decoder without dropout (eager and fused alike, to the last
 * bit) has decoder linear1.weight's gradient (norm 0.10) 2.4e-2 off, and
 * with dropout 0.7e-3 (eager) or 7.1e-2 (fused, which rounds once less),
 * while every other tensor is within 1e-3. */
#define TOL_FP32 2e-3
#define TOL_FP16 3e-2
#define TOL_BF16 8e-2
#define HALF_TENSOR_FACTOR 4.0

typedef struct {
    const char *what;
    mc_tfm_arch arch;
    int E, heads, enc, dec, ff, L, B, accum;
    double p;
    bool gelu, pre, bf, causal, ckpt;
    mc_wl_precision prec;
    bool fused;            /* the elementwise chains in one kernel (C25): the same values */
    bool offload;          /* saved activations via pinned host memory (C23): the same values */
} vcase;

static const vcase CASES[] = {
    {"encoder fp32 seq-first post-norm relu causal", MC_TFM_ENCODER, 32, 2, 2, 0, 48, 12, 3, 1, 0.1, false, false, false, true, false, MC_WL_FP32, false, false},
    {"encoder fp32 batch-first pre-norm gelu ckpt accum 2", MC_TFM_ENCODER, 64, 2, 2, 0, 96, 10, 4, 2, 0.2, true, true, true, false, true, MC_WL_FP32, false, false},
    {"transformer fp32 seq-first post-norm relu", MC_TFM_TRANSFORMER, 32, 2, 1, 2, 64, 9, 3, 1, 0.1, false, false, false, false, false, MC_WL_FP32, false, false},
    {"transformer fp32 batch-first pre-norm gelu ckpt accum 2", MC_TFM_TRANSFORMER, 64, 4, 2, 1, 64, 8, 4, 2, 0.1, true, true, true, false, true, MC_WL_FP32, false, false},
    {"transformer fp32 no dropout, head size 64", MC_TFM_TRANSFORMER, 128, 2, 1, 1, 64, 7, 2, 1, 0.0, false, false, true, false, false, MC_WL_FP32, false, false},
    {"encoder fp16 causal accum 2", MC_TFM_ENCODER, 64, 2, 2, 0, 128, 16, 4, 2, 0.1, false, false, false, true, false, MC_WL_FP16, false, false},
    {"transformer fp16 batch-first ckpt", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 2, 1, 0.1, false, false, true, false, true, MC_WL_FP16, false, false},
    {"encoder bf16 batch-first pre-norm gelu", MC_TFM_ENCODER, 64, 4, 2, 0, 128, 16, 2, 1, 0.1, true, true, true, false, false, MC_WL_BF16, false, false},
    {"transformer bf16 seq-first pre-norm", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 96, 8, 3, 1, 0.0, false, true, false, false, false, MC_WL_BF16, false, false},
    {"transformer fp32 fused, gelu, batch-first", MC_TFM_TRANSFORMER, 32, 2, 1, 1, 64, 9, 3, 1, 0.1, true, false, true, false, false, MC_WL_FP32, true, false},
    {"encoder fp32 fused, relu, pre-norm, ckpt accum 2", MC_TFM_ENCODER, 64, 2, 2, 0, 96, 10, 4, 2, 0.2, false, true, false, true, true, MC_WL_FP32, true, false},
    {"transformer fp16 fused, relu", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 2, 1, 0.1, false, false, false, false, false, MC_WL_FP16, true, false},
    {"encoder bf16 fused, gelu, batch-first", MC_TFM_ENCODER, 64, 4, 2, 0, 128, 16, 2, 1, 0.1, true, false, true, false, false, MC_WL_BF16, true, false},
    {"transformer fp16 relu (eager)", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 2, 1, 0.1, false, false, false, false, false, MC_WL_FP16, false, false},
    {"transformer fp16 fused, relu, no dropout", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 2, 1, 0.0, false, false, false, false, false, MC_WL_FP16, true, false},
    {"transformer fp16 fused, relu, batch-first", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 2, 1, 0.1, false, false, true, false, false, MC_WL_FP16, true, false},
    {"encoder fp16 fused, relu", MC_TFM_ENCODER, 64, 2, 2, 0, 128, 12, 2, 1, 0.1, false, false, false, false, false, MC_WL_FP16, true, false},
    {"transformer fp16 relu, no dropout (eager)", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 2, 1, 0.0, false, false, false, false, false, MC_WL_FP16, false, false},
    {"transformer bf16 fused, relu (the fp16 case's shape)", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 2, 1, 0.1, false, false, false, false, false, MC_WL_BF16, true, false},
    {"transformer fp16 fused, relu, pre-norm", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 2, 1, 0.1, false, true, false, false, false, MC_WL_FP16, true, false},
    {"transformer fp16 fused, relu, seq 16 batch 2", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 16, 2, 1, 0.1, false, false, false, false, false, MC_WL_FP16, true, false},
    {"transformer fp32 fused, relu (the fp16 case's shape)", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 2, 1, 0.1, false, false, false, false, false, MC_WL_FP32, true, false},
    /* --offload (C23): saved activations through pinned host memory and back: the same values */
    {"transformer fp32 offload, relu, seq-first", MC_TFM_TRANSFORMER, 32, 2, 1, 2, 64, 9, 3, 1, 0.1, false, false, false, false, false, MC_WL_FP32, false, true},
    {"transformer fp16 offload, gelu, batch-first, accum 2", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 12, 4, 2, 0.1, true, false, true, false, false, MC_WL_FP16, false, true},
    {"encoder bf16 offload, fused, causal, pre-norm", MC_TFM_ENCODER, 64, 4, 2, 0, 128, 16, 2, 1, 0.1, false, true, false, true, false, MC_WL_BF16, true, true},
};

static mc_tfm_config config_of(const vcase *v)
{
    mc_tfm_config c = mc_tfm_config_default();
    c.arch = v->arch;
    c.d_model = v->E;
    c.heads = v->heads;
    c.enc_layers = v->enc;
    c.dec_layers = v->arch == MC_TFM_TRANSFORMER ? v->dec : 0;
    c.ff = v->ff;
    c.dropout = v->p;
    c.activation = v->gelu ? MC_TFM_GELU : MC_TFM_RELU;
    c.norm_first = v->pre;
    c.batch_first = v->bf;
    c.causal = v->causal;
    c.seq = v->L;
    c.batch = v->B;
    c.accum = v->accum;
    c.optimizer = MC_WL_SGD;
    c.precision = v->prec;
    c.checkpoint = v->ckpt;
    c.fused = v->fused;
    c.offload = v->offload;
    c.seed = 1234;
    return c;
}

static tfm_ref_model ref_of(const vcase *v, int micro_batch)
{
    tfm_ref_model m;
    memset(&m, 0, sizeof m);
    m.c.E = v->E;
    m.c.heads = v->heads;
    m.c.F = v->ff;
    m.c.p = (float)v->p;
    m.c.act = v->gelu ? TFM_ACT_GELU : TFM_ACT_RELU;
    m.c.norm_first = v->pre;
    m.c.eps = 1e-5;
    m.n_enc = v->enc;
    m.n_dec = v->arch == MC_TFM_TRANSFORMER ? v->dec : 0;
    m.enc_norm = m.dec_norm = v->arch == MC_TFM_TRANSFORMER;
    m.enc_causal = v->causal;
    m.batch_first = v->bf;
    m.B = micro_batch;
    m.S = m.T = v->L;
    return m;
}

static double *dup_f(const float *f, int64_t n)
{
    double *d = malloc((size_t)n * sizeof *d);
    CHECK(d != NULL, "out of host memory");
    for (int64_t i = 0; i < n; i++) d[i] = f[i];
    return d;
}

/* Deterministic data in [-2, 2) (an LCG; the values only need to be the
 * same on both sides). */
static void fill(float *x, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(*s >> 11) / 9007199254740992.0 * 4.0 - 2.0);
    }
}

static double tol_of(mc_wl_precision p) { return p == MC_WL_FP32 ? TOL_FP32 : p == MC_WL_FP16 ? TOL_FP16 : TOL_BF16; }

/* One step of case v against the reference; returns the failures. */
static int check_case(const vcase *v, FILE *log)
{
    const mc_tfm_config c = config_of(v);
    /* the float64 model drops out with the suite's stream, not cuDNN's */
    tfm_cudnn_set_enabled(c.dropout == 0);
    const int K = v->accum, Bm = v->B / K;
    const int64_t n = (int64_t)Bm * v->L * v->E;
    const tfm_ref_model m = ref_of(v, Bm);
    const int64_t np = tfm_ref_model_nparams(&m);
    CHECK((uint64_t)np == mc_tfm_param_count(&c), "verify: parameter counts differ");
    double *pd = malloc((size_t)np * sizeof *pd), *gref = calloc((size_t)np, sizeof *gref);
    float *pf = malloc((size_t)np * sizeof *pf), *ggpu = malloc((size_t)np * sizeof *ggpu);
    float *src[8], *tgt[8], losses[8];
    CHECK(pd && gref && pf && ggpu && K <= 8, "out of host memory");
    tfm_ref_model_init(&m, pd, 77);
    for (int64_t i = 0; i < np; i++) pf[i] = (float)pd[i], pd[i] = pf[i];
    uint64_t s = 99;
    double ref_loss = 0;
    const int sites = TFM_ENC_DROPOUTS * m.n_enc + TFM_DEC_DROPOUTS * m.n_dec;
    for (int k = 0; k < K; k++) {
        src[k] = malloc((size_t)n * sizeof(float));
        tgt[k] = malloc((size_t)n * sizeof(float));
        CHECK(src[k] && tgt[k], "out of host memory");
        fill(src[k], n, &s);
        fill(tgt[k], n, &s);
        double *sd = dup_f(src[k], n), *td = dup_f(tgt[k], n);
        ref_loss += tfm_ref_model_loss(&m, pd, sd, m.n_dec ? td : NULL, td, c.seed, (uint64_t)(k * sites), gref, NULL) / K;
        free(sd);
        free(td);
    }
    for (int64_t i = 0; i < np; i++) gref[i] /= K;

    mc_tfm_data data = {pf, (const float *const *)src, (const float *const *)tgt, ggpu, losses};
    char err[256];
    mc_tfm *t = mc_tfm_create_with(&c, true, NULL, &data, err, sizeof err);
    CHECK(t != NULL, "verify: %s", err);
    mc_workload_step_result r;
    mc_tfm_step(t, &r);
    mc_tfm_destroy(t);

    int fails = 0;
    double worst = 0;
    const double tol = tol_of(v->prec);
    if (r.status != MC_WL_OK || r.skipped) {
        fprintf(log, "verify: tfm step %s FAIL (status %s%s)\n", v->what, r.status == MC_WL_OK ? "ok" : "oom",
                r.skipped ? ", skipped" : "");
        fails++;
    } else {
        const double lerr = fabs(r.loss - ref_loss) / fabs(ref_loss);
        /* per tensor, in model.parameters() order */
        int64_t off = 0;
        const int64_t E = v->E, F = v->ff;
        const int64_t enc_sz[12] = {3 * E * E, 3 * E, E * E, E, F * E, F, E * F, E, E, E, E, E};
        const int64_t dec_sz[18] = {3 * E * E, 3 * E, E * E, E, 3 * E * E, 3 * E, E * E, E, F * E, F, E * F, E, E, E, E, E, E, E};
        int nt = 0;
        int64_t sizes[1024];
        for (int l = 0; l < m.n_enc; l++)
            for (int i = 0; i < 12; i++) sizes[nt++] = enc_sz[i];
        if (m.enc_norm) sizes[nt++] = E, sizes[nt++] = E;
        for (int l = 0; l < m.n_dec; l++)
            for (int i = 0; i < 18; i++) sizes[nt++] = dec_sz[i];
        if (m.dec_norm) sizes[nt++] = E, sizes[nt++] = E;
        int worst_i = -1;
        char over[512] = "";
        size_t used = 0;
        double all_d2 = 0, all_r2 = 0;
        const double tensor_tol = v->prec == MC_WL_FP32 ? tol : HALF_TENSOR_FACTOR * tol;
        for (int i = 0; i < nt; i++) {
            double d2 = 0, r2 = 0;
            for (int64_t j = off; j < off + sizes[i]; j++) {
                d2 += (ggpu[j] - gref[j]) * (ggpu[j] - gref[j]);
                r2 += gref[j] * gref[j];
            }
            all_d2 += d2;
            all_r2 += r2;
            double e = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
            if (e > worst) worst = e, worst_i = i;
            if (e > tensor_tol && used < sizeof over - 40)
                used += (size_t)snprintf(over + used, sizeof over - used, " [%d: %.1e, |ref| %.2e]", i, e, sqrt(r2));
            off += sizes[i];
        }
        const double global = all_r2 > 0 ? sqrt(all_d2 / all_r2) : sqrt(all_d2);
        CHECK(off == np, "verify: parameter sizes do not add up");
        bool ok = lerr <= tol && global <= tol && worst <= tensor_tol;
        fprintf(log, "verify: tfm step %-56s loss %.6f vs %.6f (err %.1e), gradients err %.1e, worst tensor %.1e (%d) %s%s\n",
                v->what, r.loss, ref_loss, lerr, global, worst, worst_i, ok ? "ok" : "FAIL, over the tolerance:", over);
        fails += !ok;
    }
    for (int k = 0; k < K; k++) {
        free(src[k]);
        free(tgt[k]);
    }
    free(pd);
    free(gref);
    free(pf);
    free(ggpu);
    return fails;
}

/* Training on fixed data lowers the loss: 30 Adam steps. */
static int check_loss_falls(FILE *log)
{
    const vcase v = {"loss falls", MC_TFM_TRANSFORMER, 64, 2, 1, 1, 128, 16, 4, 1, 0.1, false, false, true, false, false, MC_WL_FP32, false, false};
    mc_tfm_config c = config_of(&v);
    c.optimizer = MC_WL_ADAM;
    const tfm_ref_model m = ref_of(&v, v.B);
    const int64_t np = tfm_ref_model_nparams(&m), n = (int64_t)v.B * v.L * v.E;
    double *pd = malloc((size_t)np * sizeof *pd);
    float *pf = malloc((size_t)np * sizeof *pf), *src = malloc((size_t)n * 4), *tgt = malloc((size_t)n * 4);
    CHECK(pd && pf && src && tgt, "out of host memory");
    tfm_ref_model_init(&m, pd, 5);
    for (int64_t i = 0; i < np; i++) pf[i] = (float)pd[i];
    uint64_t s = 7;
    fill(src, n, &s);
    fill(tgt, n, &s);
    const float *sp[1] = {src}, *tp[1] = {tgt};
    mc_tfm_data data = {pf, sp, tp, NULL, NULL};
    char err[256];
    mc_tfm *t = mc_tfm_create_with(&c, true, NULL, &data, err, sizeof err);
    CHECK(t != NULL, "verify: %s", err);
    double first = NAN, last = NAN;
    mc_workload_step_result r;
    for (int i = 0; i < 30; i++) {
        mc_tfm_step(t, &r);
        if (i == 0) first = r.loss;
        last = r.loss;
    }
    mc_tfm_destroy(t);
    free(pd);
    free(pf);
    free(src);
    free(tgt);
    bool ok = isfinite(first) && isfinite(last) && last < 0.8 * first;
    fprintf(log, "verify: tfm training on fixed data: loss %.4f at step 1, %.4f at step 30 %s\n", first, last,
            ok ? "ok" : "FAIL (it must fall by 20%)");
    return !ok;
}

int mc_tfm_verify_steps(FILE *log)
{
    int fails = 0;
    const char *only = getenv("MEMCLAIMS_VERIFY_ONLY"); /* a debugging aid: cases whose name has it */
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        if (!only || strstr(CASES[i].what, only)) fails += check_case(&CASES[i], log);
    fails += check_loss_falls(log);
    tfm_cudnn_set_enabled(true);
    fprintf(log, "verify: tfm steps with dropout ran the suite's attention kernels, whose dropout the float64 "
                 "model draws (cuDNN's are checked case by case above)\n");
    fprintf(log, "verify: tfm steps: %d failed\n", fails); /* scripts/readme reads this line */
    return fails;
}
