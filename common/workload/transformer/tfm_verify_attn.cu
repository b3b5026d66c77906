/* tfm_verify_attn.cu: the GPU check of the fused attention (tfm_verify.h):
 * forward (O, lse) and backward (dQ, dK, dV) against tfm_ref_attn_* for
 * head dims 16, 32, 64, 128, on the two packed in-projection layouts
 * ([L, B, 3E] and [B, L, 3E], q, k, v strided views into one buffer, as
 * some callers hand them over), on MultiheadAttention's [3, L, B, E]
 * slices with SDPA's [B, L, E] output, and on separate contiguous
 * [B, H, L, Dh] tensors with Lq != Lk (cross-attention); causal or not,
 * dropout or not. Lengths that are no multiple of the tiles, and
 * sequences of 1024 to 2048 at head sizes 64 and 128. Every type runs the
 * tensor-core kernels (tfm_attention_tc.cuh: fp32 as 3xTF32), then fp32
 * the general kernels too (what a GPU before sm_80 runs, and any call the
 * tensor-core ones do not take), on the short cases. A dropout
 * decision that differed from the reference's would show as an error of
 * the order of the values themselves, far above the tolerance. Then the
 * same through cuDNN's fused kernels (tfm_attention_cudnn.cu), as the
 * model runs fp16 and bf16 where cuDNN is built in: cudnn_cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_cuda.h"
#include "workload/transformer/reference/tfm_host_ref.h"
#include "workload/transformer/kernels/tfm_kernels.h"
#include "tfm_verify_util.h"

enum { SEQ_FIRST = 0, BATCH_FIRST = 1, SEPARATE = 2, MHA = 3 };

/* dst [B, H, L, Dh] contiguous <- src at element offset off through view w. */
static void gather(double *dst, const double *src, int64_t off, tfm_view w, int B, int H, int L, int Dh)
{
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int l = 0; l < L; l++)
                for (int d = 0; d < Dh; d++)
                    dst[(((int64_t)b * H + h) * L + l) * Dh + d] = src[off + b * w.b + h * w.h + l * w.l + d];
}

typedef struct {
    int64_t n_in, n_out;          /* elements of the input buffer(s) and of O */
    int64_t off[3];               /* q, k, v offsets into the input buffer */
    tfm_view vq, vk, vv, vo;
} attn_layout;

static attn_layout layout_of(int kind, int B, int H, int Lq, int Lk, int Dh)
{
    const int64_t E = (int64_t)H * Dh;
    attn_layout a;
    memset(&a, 0, sizeof a);
    if (kind == SEQ_FIRST) { /* [L, B, 3E], O [L, B, E] */
        a.vq = a.vk = a.vv = (tfm_view){3 * E, Dh, B * 3 * E};
        a.vo = (tfm_view){E, Dh, B * E};
    } else if (kind == BATCH_FIRST) { /* [B, L, 3E], O [B, L, E] */
        a.vq = a.vk = a.vv = (tfm_view){Lq * 3 * E, Dh, 3 * E};
        a.vo = (tfm_view){Lq * E, Dh, E};
    }
    if (kind == MHA) { /* q, k, v slices of [3, L, B, E]; O [B, L, E] (SDPA's BMHK output) */
        a.vq = a.vk = a.vv = (tfm_view){E, Dh, B * E};
        a.vo = (tfm_view){Lq * E, Dh, E};
        a.n_in = 3LL * Lq * B * E;
        a.off[0] = 0;
        a.off[1] = (int64_t)Lq * B * E;
        a.off[2] = 2 * a.off[1];
    } else if (kind != SEPARATE) {
        a.n_in = (int64_t)B * Lq * 3 * E;
        a.off[0] = 0;
        a.off[1] = E;
        a.off[2] = 2 * E;
    } else { /* q [B, H, Lq, Dh], k and v [B, H, Lk, Dh] after it, one buffer */
        a.vq = a.vo = (tfm_view){(int64_t)H * Lq * Dh, (int64_t)Lq * Dh, Dh};
        a.vk = a.vv = (tfm_view){(int64_t)H * Lk * Dh, (int64_t)Lk * Dh, Dh};
        a.off[0] = 0;
        a.off[1] = (int64_t)B * H * Lq * Dh;
        a.off[2] = a.off[1] + (int64_t)B * H * Lk * Dh;
        a.n_in = a.off[2] + (int64_t)B * H * Lk * Dh;
    }
    a.n_out = (int64_t)B * Lq * E;
    return a;
}

/* cudnn: the case runs through cuDNN's kernels (tfm_attention_cudnn.cu) with
 * the buffers the model gives them (workspaces of PyTorch's sizes), the
 * forward writing out its dropout mask, which the reference then uses; the
 * backward's graph regenerates the mask itself, so a mask it drew
 * differently shows as an error. */
/* What the checks' lines say ran, where not cuDNN: "" (the kernels
 * tfm_attn_fwd picks) or "general kernels ". */
static const char *g_by = "";

static void attn_case_on(tfm_vctx *v, int dt, int kind, int Dh, bool causal, float p, int B, int H, int Lq,
                         int Lk, bool acc, bool cudnn)
{
    const attn_layout L = layout_of(kind, B, H, Lq, Lk, Dh);
    const int64_t es = MC_DT_SIZE(dt), nq = (int64_t)B * H * Lq * Dh, nk = (int64_t)B * H * Lk * Dh;
    uint64_t s = 5000 + (uint64_t)(Dh * 4 + kind * 2 + causal);
    double *in = tfm_v_host(L.n_in), *dout = tfm_v_host(L.n_out), *got = tfm_v_host(L.n_in);
    tfm_v_fill(in, L.n_in, -1.0, 1.0, &s);
    tfm_v_fill(dout, L.n_out, -1.0, 1.0, &s);
    char *din = (char *)tfm_v_upload(in, L.n_in, dt), *ddo = (char *)tfm_v_upload(dout, L.n_out, dt);
    char *dgrad = (char *)tfm_v_alloc((uint64_t)(L.n_in * es)), *dout_o = (char *)tfm_v_alloc((uint64_t)(L.n_out * es));
    float *lse = (float *)tfm_v_alloc(4 * (uint64_t)(B * H * Lq)), *delta = (float *)tfm_v_alloc(4 * (uint64_t)(B * H * Lq));
    float *dq_acc = acc ? (float *)tfm_v_alloc(4 * (uint64_t)nq) : NULL; /* cuDNN's workspace holds one */
    CHECK_CUDA(cudaMemset(dgrad, 0, (size_t)(L.n_in * es)));
    CHECK_CUDA(cudaDeviceSynchronize()); /* before g's non-blocking stream uses it */

    tfm_attn a;
    memset(&a, 0, sizeof a);
    a.B = B; a.H = H; a.Lq = Lq; a.Lk = Lk; a.Dh = Dh; a.causal = causal; a.dropout_p = p;
    a.seed = 99; a.offset = 17; a.scale = (float)(1.0 / sqrt((double)Dh));
    const uint64_t ws_fwd = 256, ws_bwd = (uint64_t)B * H * Lq * (Dh + 1) * 4 + 256; /* tfm_attn.c's */
    const int64_t nmask = (int64_t)B * H * Lq * Lk;
    void *philox = cudnn ? tfm_v_alloc(16) : NULL, *ws = cudnn ? tfm_v_alloc(ws_bwd) : NULL;
    /* room for whole 128 x 128 tiles, should the engine write them */
    const int64_t room = (int64_t)B * H * ((Lq + 127) / 128 * 128) * ((Lk + 127) / 128 * 128);
    /* with a causal mask cuDNN's forward faults writing its dropout mask out
     * (seen on the H100, cuDNN 9.19): there it runs without, its outputs
     * checked finite only */
    const bool blind = cudnn && p > 0 && causal;
    float *dmask = cudnn && p > 0 && !causal ? (float *)tfm_v_alloc(4 * (uint64_t)room) : NULL;
    int ran = 0;
    if (cudnn) {
        const tfm_cudnn_io fio = {philox, (char *)philox + 8, ws, ws_fwd, dmask};
        const tfm_cudnn_io bio = {philox, (char *)philox + 8, ws, ws_bwd, NULL};
        ran = !tfm_cudnn_attn_fwd(v->g, &a, dout_o, L.vo, lse, din + L.off[0] * es, L.vq, din + L.off[1] * es,
                                  L.vk, din + L.off[2] * es, L.vv, dt, &fio);
        /* each call checked on its own: a fault names its pass */
        const cudaError_t fe = cudaDeviceSynchronize();
        if (fe) {
            fprintf(stderr, "cuDNN attention forward Dh %d Lq %d Lk %d causal %d p %.1f: %s\n", Dh, Lq, Lk, causal,
                    (double)p, cudaGetErrorString(fe));
            exit(MC_EXIT_CUDA);
        }
        ran = ran && !tfm_cudnn_attn_bwd(v->g, &a, dgrad + L.off[0] * es, L.vq, dgrad + L.off[1] * es, L.vk,
                                         dgrad + L.off[2] * es, L.vv, ddo, L.vo, din + L.off[0] * es, L.vq,
                                         din + L.off[1] * es, L.vk, din + L.off[2] * es, L.vv, dout_o, L.vo, lse,
                                         dt, &bio);
        const cudaError_t be = cudaDeviceSynchronize();
        if (be) {
            fprintf(stderr, "cuDNN attention backward Dh %d Lq %d Lk %d causal %d p %.1f: %s\n", Dh, Lq, Lk, causal,
                    (double)p, cudaGetErrorString(be));
            exit(MC_EXIT_CUDA);
        }
    } else {
        tfm_attn_fwd(v->g, &a, dout_o, L.vo, lse, din + L.off[0] * es, L.vq, din + L.off[1] * es, L.vk,
                     din + L.off[2] * es, L.vv, dt);
        tfm_attn_bwd(v->g, &a, dgrad + L.off[0] * es, L.vq, dgrad + L.off[1] * es, L.vk, dgrad + L.off[2] * es,
                     L.vv, delta, dq_acc, ddo, L.vo, din + L.off[0] * es, L.vq, din + L.off[1] * es, L.vk,
                     din + L.off[2] * es, L.vv, dout_o, L.vo, lse, dt);
    }
    double *keep = NULL;
    if (dmask) {
        keep = tfm_v_host(nmask);
        tfm_v_download(v->g, keep, dmask, nmask, MC_DT_F32);
    }

    double *q4 = tfm_v_host(nq), *k4 = tfm_v_host(nk), *v4 = tfm_v_host(nk), *do4 = tfm_v_host(nq);
    double *o4 = tfm_v_host(nq), *l4 = tfm_v_host(nq / Dh), *dq4 = tfm_v_host(nq), *dk4 = tfm_v_host(nk);
    double *dv4 = tfm_v_host(nk), *g4 = tfm_v_host(nq > nk ? nq : nk);
    gather(q4, in, L.off[0], L.vq, B, H, Lq, Dh);
    gather(k4, in, L.off[1], L.vk, B, H, Lk, Dh);
    gather(v4, in, L.off[2], L.vv, B, H, Lk, Dh);
    gather(do4, dout, 0, L.vo, B, H, Lq, Dh);
    const tfm_ref_attn r = {B, H, Lq, Lk, Dh, causal, p, 99, 17, 1.0 / sqrt((double)Dh), keep};
    if (!blind) {
        tfm_ref_attn_fwd(&r, o4, l4, q4, k4, v4);
        tfm_ref_attn_bwd(&r, dq4, dk4, dv4, do4, q4, k4, v4, o4, l4);
    }

    const char *kinds[4] = {"[L,B,3E]", "[B,L,3E]", "[B,H,L,Dh]", "[3,L,B,E]->[B,L,E]"};
    char what[160];
    const char *by = cudnn ? "cuDNN " : g_by;
    const double tol = tfm_v_tol(dt);
    if (blind) {
        double worst = 0;
        tfm_v_download(v->g, got, dout_o, L.n_out, dt);
        for (int64_t i = 0; i < L.n_out; i++) worst = isfinite(got[i]) ? fmax(worst, fabs(got[i])) : INFINITY;
        tfm_v_download(v->g, got, dgrad, L.n_in, dt);
        for (int64_t i = 0; i < L.n_in; i++) worst = isfinite(got[i]) ? fmax(worst, fabs(got[i])) : INFINITY;
        snprintf(what, sizeof what, "cuDNN attention fwd+bwd %s Dh %d Lq %d Lk %d causal 1 p %.1f (ran%s; no mask "
                 "written out with a causal mask: outputs finite, largest |x| %.3g)", kinds[kind], Dh, Lq, Lk,
                 (double)p, ran ? "" : " NOT", worst);
        tfm_v_report(v, what, dt, ran && isfinite(worst) ? 0.0 : INFINITY, tol);
    } else {
        if (cudnn && !ran) { /* cuDNN available but took no graph: a failure, not a skip */
            snprintf(what, sizeof what, "cuDNN attention %s Dh %d Lq %d Lk %d causal %d p %.1f: not run (%s)",
                     kinds[kind], Dh, Lq, Lk, causal, (double)p, tfm_cudnn_state());
            tfm_v_report(v, what, dt, INFINITY, tol);
        }
        tfm_v_download(v->g, got, dout_o, L.n_out, dt);
        gather(g4, got, 0, L.vo, B, H, Lq, Dh);
        double e = tfm_v_err(g4, o4, nq);
        tfm_v_download(v->g, got, lse, (int64_t)B * H * Lq, MC_DT_F32);
        e = fmax(e, tfm_v_err(got, l4, (int64_t)B * H * Lq));
        snprintf(what, sizeof what, "%sattention fwd %s Dh %d Lq %d Lk %d causal %d p %.1f", by, kinds[kind], Dh, Lq,
                 Lk, causal, (double)p);
        tfm_v_report(v, what, dt, e, tol);
        tfm_v_download(v->g, got, dgrad, L.n_in, dt);
        gather(g4, got, L.off[0], L.vq, B, H, Lq, Dh);
        e = tfm_v_err(g4, dq4, nq);
        gather(g4, got, L.off[1], L.vk, B, H, Lk, Dh);
        e = fmax(e, tfm_v_err(g4, dk4, nk));
        gather(g4, got, L.off[2], L.vv, B, H, Lk, Dh);
        e = fmax(e, tfm_v_err(g4, dv4, nk));
        snprintf(what, sizeof what, "%sattention bwd %s Dh %d Lq %d Lk %d causal %d p %.1f%s", by, kinds[kind], Dh,
                 Lq, Lk, causal, (double)p, acc && !cudnn ? " dQ accumulated" : "");
        tfm_v_report(v, what, dt, e, tol);
    }
    void *dev[] = {din, ddo, dgrad, dout_o, lse, delta, dq_acc, philox, ws, dmask};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) tfm_v_free(dev[i]);
    double *hs[] = {in, dout, got, q4, k4, v4, do4, o4, l4, dq4, dk4, dv4, g4, keep};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) free(hs[i]);
}

static void attn_case(tfm_vctx *v, int dt, int kind, int Dh, bool causal, float p, int B, int H, int Lq,
                      int Lk, bool acc)
{
    attn_case_on(v, dt, kind, Dh, causal, p, B, H, Lq, Lk, acc, false);
}

/* cuDNN's fused kernels, as the model runs them for fp16 and bf16 (where
 * they are built in: the note says so where not). */
static void cudnn_cases(tfm_vctx *v)
{
    if (!tfm_cudnn_available()) {
        printf("note: cuDNN attention not checked: %s\n", tfm_cudnn_state());
        return;
    }
    /* dropout at lengths of whole 128-key tiles, its mask written out and
     * used by the reference (with a causal mask: run, outputs finite); any
     * length without dropout */
    for (int dt = MC_DT_F16; dt <= MC_DT_BF16; dt++) {
        attn_case_on(v, dt, MHA, 64, true, 0.0f, 3, 2, 68, 68, true, true);
        attn_case_on(v, dt, SEQ_FIRST, 32, false, 0.0f, 2, 2, 70, 70, true, true);
        attn_case_on(v, dt, MHA, 64, false, 0.1f, 2, 2, 128, 128, true, true);
        attn_case_on(v, dt, BATCH_FIRST, 128, true, 0.2f, 2, 2, 128, 128, true, true);
        attn_case_on(v, dt, BATCH_FIRST, 128, false, 0.0f, 1, 2, 1100, 1100, true, true);
        attn_case_on(v, dt, MHA, 64, false, 0.1f, 1, 2, 2048, 2048, true, true);
        attn_case_on(v, dt, MHA, 128, true, 0.1f, 1, 1, 2048, 2048, true, true);
    }
}

/* The short cases of one type and head dim: both layouts, masks, dropout,
 * lengths that are no multiple of the tiles. */
static void short_cases(tfm_vctx *v, int dt, int Dh)
{
    attn_case(v, dt, SEQ_FIRST, Dh, false, 0.0f, 2, 2, 70, 70, false);
    attn_case(v, dt, BATCH_FIRST, Dh, true, 0.2f, 2, 2, 70, 70, true);
    attn_case(v, dt, SEPARATE, Dh, false, 0.1f, 2, 3, 33, 50, true); /* Lk % 4 != 0: a philox block per element */
    attn_case(v, dt, SEPARATE, Dh, true, 0.0f, 1, 2, 45, 45, false);
    attn_case(v, dt, MHA, Dh, true, 0.1f, 3, 2, 68, 68, true);          /* Lk % 4 == 0, % 16 != 0 */
    attn_case(v, dt, SEPARATE, Dh, false, 0.3f, 1, 2, 20, 36, false);
    attn_case(v, dt, MHA, Dh, false, 0.1f, 2, 2, 80, 80, false);        /* Lk % 16 == 0: one block per 16 */
}

int tfm_verify_attention(tfm_vctx *v)
{
    const int before = v->fails;
    const int dims[4] = {16, 32, 64, 128};
    for (int dt = MC_DT_F32; dt <= MC_DT_BF16; dt++)
        for (int d = 0; d < 4; d++) short_cases(v, dt, dims[d]);
    tfm_attn_tc_set_enabled(false); /* fp32 on the general kernels */
    g_by = "general kernels ";
    for (int d = 0; d < 4; d++) short_cases(v, MC_DT_F32, dims[d]);
    tfm_attn_tc_set_enabled(true);
    g_by = "";
    /* The sizes users run (sequence 1024 and more), head sizes 64 and 128:
     * many key tiles per row, so the online softmax's rescaling and the
     * dropout stream are checked far from the first tile. */
    for (int dt = MC_DT_F32; dt <= MC_DT_BF16; dt++) {
        attn_case(v, dt, MHA, 64, true, 0.1f, 1, 2, 1024, 1024, true);
        attn_case(v, dt, MHA, 64, true, 0.1f, 1, 2, 1024, 1024, false);
        attn_case(v, dt, BATCH_FIRST, 128, false, 0.1f, 1, 2, 1100, 1100, true);
        attn_case(v, dt, BATCH_FIRST, 128, false, 0.1f, 1, 2, 1100, 1100, false);
        attn_case(v, dt, SEPARATE, 128, true, 0.0f, 1, 1, 1030, 1536, true);
        attn_case(v, dt, SEPARATE, 64, false, 0.2f, 1, 1, 2048, 2050, true); /* Lk % 16 != 0 */
    }
    cudnn_cases(v);
    return v->fails - before;
}
