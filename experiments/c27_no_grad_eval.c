/* c27_no_grad_eval: C27. What torch.no_grad() saves when evaluating: one
 * forward pass of each workload (the MLP, seed 000's nn.Transformer and a
 * batch_first encoder; core/wl_types.h's modes, through the workload
 * handle's forward) in train() with autograd, which keeps the graph's
 * saved tensors until the output goes, against train() and eval() under
 * no_grad and eval() under inference_mode, where a tensor goes with its
 * last Python owner; peak allocated over batch size, through the allocator
 * model. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_probe.h" /* MC_MIB */
#include "check.h"
#include "experiment.h"
#include "workload/core/wl_handle.h"
#include "workload/mlp/mlp.h"
#include "workload/transformer/tfm.h"

static const mc_experiment EXP = {
    .claim = "C27",
    .key = "no_grad_eval",
    .title = "Peak allocated of a forward pass with autograd's saved tensors, under no_grad and "
             "inference_mode, over batch size",
    .seed_claim = "Evaluating under torch.no_grad() keeps no graph and no activations, so it takes far "
                  "less memory.",
    .method = "One forward pass of a fresh model per figure, in PyTorch 2.11's request order, for "
              "three workloads (fp32): the MLP (Linear+ReLU, L=8, in = width = out = 1024; x = "
              "randn(B, 1024); out = model(x)); seed 000's nn.Transformer(d_model=256) (8 heads, "
              "6+6 layers, ff 2048, dropout 0.1; built on the host and moved (.cuda()) as the seed builds it; src, tgt = randn(64, B, 256); out = model(src, "
              "tgt)); and an nn.TransformerEncoder of 4 TransformerEncoderLayer(512, 8, 2048, "
              "dropout 0.1, batch_first=True) (src = randn(B, 128, 512); out = model(src)). Modes: "
              "grad (train(), autograd keeps each op's saved tensors until del out), no_grad "
              "(train() under no_grad: dropout still draws its masks, nothing is saved, a tensor "
              "goes with its last Python owner, the memory-efficient attention makes no "
              "logsumexp), eval_no_grad (eval() under no_grad: dropout returns its input; the "
              "batch_first encoder takes torch._transformer_encoder_layer_fwd, whose native MHA "
              "runs SDPA on views of one packed projection and adds the residuals in place) and "
              "inference_mode (eval() under inference_mode: as eval_no_grad). The MLP has no "
              "dropout and no fast path: grad and no_grad only. Batches: MLP 256, 1024, 4096, "
              "16384; Transformer 25, 100 (the seed's); encoder 16, 64 (--quick: 256, 4096; 100; "
              "16). Per figure: max_memory_allocated (peak reset before the inputs; weights and "
              "the forward thread's cuBLAS (32 MiB) + cuBLASLt (1 MiB) workspaces, made at the "
              "first GEMM, included), memory_allocated before the inputs, when the model returns "
              "and after del out and the inputs, the bytes only the graph holds, the output's "
              "bytes, the fast-path calls, the activations at the peak, max_memory_reserved. "
              "Allocator model over the CUDA backend on a GPU (checked against the model-only "
              "run; grad and no_grad outputs compared, and eval_no_grad and inference_mode's; "
              "forward time from CUDA events, median of --repeats after --warmup), over the host "
              "backend with --model-only.",
    .verdict_rule = "s = 1 - peak(evaluation) / peak(grad) for each workload at each batch, "
                    "evaluation being eval() under no_grad (the MLP: no_grad). inconclusive if a "
                    "run is out of memory; holds if s >= 0.5 everywhere (evaluation at most half); "
                    "does-not-hold if s <= 0.05 everywhere; otherwise holds-partly (the note gives "
                    "s per workload and batch, and the saving of the activations alone).",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 5,
    .default_warmup = 2,
    .extra = NULL,
};

#define FAR_LESS 0.5   /* s at or above: "far less" (evaluation at most half the peak) */
#define NO_SAVING 0.05 /* s at or below: no real saving */
#define MAX_B 4        /* batches of a workload */
#define ENC_SEQ 128    /* the encoder's sequence */

/* ------------------------------------------------------------ the workloads */

static mc_wl *make_mlp(int64_t batch, bool on_gpu, char *err, size_t len)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = 8;
    c.in = c.width = c.out = 1024;
    c.batch = batch;
    return mc_workload_handle(mc_workload_create(&c, on_gpu, NULL, err, len));
}

static mc_tfm_config transformer_config(int64_t batch)
{
    return mc_tfm_seed000_accum(MC_TFM_SEED000_ACCUM_SEQ, batch);
}

static mc_tfm_config encoder_config(int64_t batch)
{
    mc_tfm_config c = mc_tfm_config_default();
    c.arch = MC_TFM_ENCODER;
    c.d_model = 512;
    c.heads = 8;
    c.enc_layers = 4;
    c.ff = 2048;
    c.batch_first = true;
    c.seq = ENC_SEQ;
    c.batch = batch;
    return c;
}

static mc_wl *make_tfm(const mc_tfm_config *c, bool on_gpu, char *err, size_t len)
{
    return mc_tfm_handle(mc_tfm_create(c, on_gpu, NULL, err, len));
}

static mc_wl *make_transformer(int64_t batch, bool on_gpu, char *err, size_t len)
{
    mc_tfm_config c = transformer_config(batch);
    return make_tfm(&c, on_gpu, err, len);
}

static mc_wl *make_encoder(int64_t batch, bool on_gpu, char *err, size_t len)
{
    mc_tfm_config c = encoder_config(batch);
    return make_tfm(&c, on_gpu, err, len);
}

/* One workload of the sweep: its batches, the modes that differ for it (the
 * first `modes` of mc_wl_fwd_mode), the one the verdict calls evaluation,
 * and a fresh model of a batch. */
typedef struct {
    const char *name;
    int64_t batches[MAX_B], quick[MAX_B];
    int nb, nq, modes;
    mc_wl_fwd_mode evaluation;
    double gpu_tol; /* GPU vs model-only figures, relative (mc_check_gpu_peak) */
    mc_wl *(*make)(int64_t batch, bool on_gpu, char *err, size_t len);
    int64_t out_per_batch; /* the output's floats per batch row */
} workload_kind;

static const workload_kind KINDS[] = {
    {"mlp", {256, 1024, 4096, 16384}, {256, 4096}, 4, 2, 2, MC_WL_FWD_NO_GRAD, 0, make_mlp, 1024},
    {"transformer", {25, MC_TFM_SEED000_ACCUM_BATCH}, {MC_TFM_SEED000_ACCUM_BATCH}, 2, 1,
     MC_WL_FWD_NMODE, MC_WL_FWD_EVAL, MC_PLACEMENT_TOL, make_transformer,
     MC_TFM_SEED000_ACCUM_SEQ * 256},
    {"encoder", {16, 64}, {16}, 2, 1, MC_WL_FWD_NMODE, MC_WL_FWD_EVAL, MC_PLACEMENT_TOL, make_encoder,
     ENC_SEQ * 512},
};
#define NKIND ((int)(sizeof KINDS / sizeof *KINDS))

/* ------------------------------------------------------------ one figure */

typedef struct {
    mc_workload_forward_result r;  /* the first forward of a fresh model */
    mc_stats time;                 /* GPU: forwards after the warm-up */
} fig;

/* The first forward's output of each mode, for the GPU comparison. */
static float *g_out[MC_WL_FWD_NMODE];

static void check_gpu(mc_run *run, const workload_kind *k, int64_t B, mc_wl_fwd_mode mode,
                      const mc_workload_forward_result *g, const char *what)
{
    char err[256];
    mc_wl *ref = k->make(B, false, err, sizeof err);
    CHECK(ref != NULL, "workload: %s", err);
    mc_workload_forward_result m;
    mc_wl_forward(ref, mode, NULL, &m);
    mc_wl_destroy(ref);
    if (m.status != g->status) {
        mc_verify_failed(run, what, "GPU status %d, model-only %d", (int)g->status, (int)m.status);
        return;
    }
    const uint64_t gv[3] = {g->peak_allocated, g->allocated_out, g->allocated_end},
                   mv[3] = {m.peak_allocated, m.allocated_out, m.allocated_end};
    for (int i = 0; i < 3; i++) {
        char w[160];
        snprintf(w, sizeof w, "%s %s", what, i == 0 ? "peak" : i == 1 ? "allocated_out" : "allocated_end");
        mc_check_gpu_peak(run, w, gv[i], mv[i], k->gpu_tol, true);
    }
}

static fig measure(mc_run *run, const workload_kind *k, int64_t B, mc_wl_fwd_mode mode)
{
    fig f;
    memset(&f, 0, sizeof f);
    f.time = mc_stats_one(NAN);
    char err[256], what[96];
    snprintf(what, sizeof what, "%s B=%lld %s", k->name, (long long)B, mc_wl_fwd_mode_name(mode));
    mc_wl *w = k->make(B, run->on_gpu, err, sizeof err);
    CHECK(w != NULL, "workload: %s", err);
    mc_wl_forward(w, mode, run->on_gpu ? g_out[mode] : NULL, &f.r);
    if (run->on_gpu) {
        check_gpu(run, k, B, mode, &f.r, what);
        if (f.r.status == MC_WL_OK) {
            const int R = run->opt.repeats, W = run->opt.warmup;
            double *t = mc_xmalloc((size_t)R * sizeof *t);
            int n = 0;
            for (int i = 0; i < W + R; i++) {
                mc_workload_forward_result x;
                if (mc_wl_forward(w, mode, NULL, &x) != MC_WL_OK) break;
                if (i >= W) t[n++] = x.time_s;
            }
            if (n > 0) f.time = mc_stats_of(t, (size_t)n);
            free(t);
        }
    }
    uint64_t sum = 0;
    for (int j = 0; j < MC_WL_NCAT; j++) sum += f.r.peak_by_category[j];
    if (f.r.status == MC_WL_OK && sum != f.r.peak_allocated)
        mc_verify_failed(run, what, "categories sum to %llu B, peak is %llu B",
                         (unsigned long long)sum, (unsigned long long)f.r.peak_allocated);
    if (f.r.status == MC_WL_OK && mode != MC_WL_FWD_GRAD && f.r.saved_bytes != 0)
        mc_verify_failed(run, what, "the graph holds %llu B without autograd",
                         (unsigned long long)f.r.saved_bytes);
    mc_wl_destroy(w);
    return f;
}

static void emit_fig(mc_run *run, const workload_kind *k, mc_wl_fwd_mode mode, int64_t B, const fig *f)
{
    char v[64];
    snprintf(v, sizeof v, "%s/%s", k->name, mc_wl_fwd_mode_name(mode));
    const double pv = (double)B;
    if (f->r.status != MC_WL_OK) {
        mc_emit(run, v, "batch", pv, "peak_allocated", "bytes", mc_stats_one(NAN), "oom",
                "out of memory during the forward");
        return;
    }
    const mc_workload_forward_result *r = &f->r;
    mc_emit_value(run, v, "batch", pv, "peak_allocated", "bytes", (double)r->peak_allocated,
                  "max_memory_allocated() over the inputs' randn and the forward");
    mc_emit_value(run, v, "batch", pv, "allocated_before", "bytes", (double)r->allocated_before,
                  "memory_allocated() before the inputs: the weights");
    mc_emit_value(run, v, "batch", pv, "allocated_out", "bytes", (double)r->allocated_out,
                  "memory_allocated() when the model returns");
    mc_emit_value(run, v, "batch", pv, "allocated_end", "bytes", (double)r->allocated_end,
                  "memory_allocated() after del out and the inputs: weights + workspaces");
    mc_emit_value(run, v, "batch", pv, "graph_saved_bytes", "bytes", (double)r->saved_bytes,
                  "blocks only the graph holds when the model returns (freed with it at del out)");
    mc_emit_value(run, v, "batch", pv, "output_bytes", "bytes", (double)r->output_bytes,
                  "out.numel() * out.element_size()");
    mc_emit_value(run, v, "batch", pv, "fast_path_layers", "count", (double)r->fast_layers,
                  "encoder layers run by torch._transformer_encoder_layer_fwd");
    mc_emit_value(run, v, "batch", pv, "fast_path_mha", "count", (double)r->fast_mha,
                  "attentions run by torch._native_multi_head_attention from MultiheadAttention");
    mc_emit_value(run, v, "batch", pv, "peak_activations", "bytes",
                  (double)r->peak_by_category[MC_WL_ACTIVATIONS], "activations live at the peak");
    mc_emit_value(run, v, "batch", pv, "peak_weights", "bytes",
                  (double)r->peak_by_category[MC_WL_WEIGHTS], "parameters at the peak");
    mc_emit_value(run, v, "batch", pv, "peak_workspace", "bytes",
                  (double)r->peak_by_category[MC_WL_WORKSPACE], "cuBLAS + cuBLASLt workspaces");
    mc_emit_value(run, v, "batch", pv, "peak_reserved", "bytes", (double)r->peak_reserved,
                  "max_memory_reserved()");
    if (run->on_gpu)
        mc_emit(run, v, "batch", pv, "forward_time", "s", f->time, "ok",
                "CUDA events around the inputs' randn ... model(...), after the warm-up");
}

/* Two modes' outputs that must agree (the same weights, inputs, dropout
 * streams and kernels): n floats. */
static void compare_outputs(mc_run *run, const char *kind, int64_t B, mc_wl_fwd_mode a,
                            mc_wl_fwd_mode b, int64_t n)
{
    double worst = 0;
    bool finite = true;
    for (int64_t i = 0; i < n; i++) {
        float x = g_out[a][i], y = g_out[b][i];
        finite &= isfinite(x) && isfinite(y);
        double d = fabs((double)x - (double)y) / fmax(1e-6, fabs((double)x));
        if (d > worst) worst = d;
    }
    if (!finite || worst > 1e-5)
        mc_verify_failed(run, kind, "B=%lld: %s and %s outputs differ (relative %.3g%s)", (long long)B,
                         mc_wl_fwd_mode_name(a), mc_wl_fwd_mode_name(b), worst,
                         finite ? "" : ", not finite");
}

/* ------------------------------------------------------------ the run */

typedef struct {
    int far, none, total;
    bool oom;
    uint64_t nograd_saved; /* the most any forward without autograd left in a graph, bytes */
    char per[2048];        /* s of each workload and batch, for the verdict's note */
    size_t used;
} tally;

/* The ratios against grad, the findings, and the verdict's count. */
static void judge(mc_run *run, tally *t, const workload_kind *k, int64_t B, const fig *f)
{
    const mc_workload_forward_result *g = &f[MC_WL_FWD_GRAD].r, *e = &f[k->evaluation].r;
    for (int m = 1; m < k->modes; m++) {
        const mc_workload_forward_result *n = &f[m].r;
        char v[64];
        snprintf(v, sizeof v, "%s/%s_vs_grad", k->name, mc_wl_fwd_mode_name((mc_wl_fwd_mode)m));
        const double ratio = (double)n->peak_allocated / (double)g->peak_allocated;
        mc_emit_value(run, v, "batch", (double)B, "peak_ratio", "ratio", ratio,
                      "peak allocated without autograd / with it");
        mc_emit_value(run, v, "batch", (double)B, "peak_saving", "fraction", 1 - ratio,
                      "1 - peak ratio: the share of the peak this mode saves");
        mc_emit_value(run, v, "batch", (double)B, "activation_ratio", "ratio",
                      (double)n->peak_by_category[MC_WL_ACTIVATIONS] /
                          (double)g->peak_by_category[MC_WL_ACTIVATIONS],
                      "activations at this mode's peak / at grad's");
        if (n->saved_bytes > t->nograd_saved) t->nograd_saved = n->saved_bytes;
    }
    const double s = 1.0 - (double)e->peak_allocated / (double)g->peak_allocated;
    const uint64_t ga = g->peak_by_category[MC_WL_ACTIVATIONS], ea = e->peak_by_category[MC_WL_ACTIVATIONS];
    const uint64_t fixed = g->peak_by_category[MC_WL_WEIGHTS] + g->peak_by_category[MC_WL_WORKSPACE];
    char modes[256] = "", fast[192] = "";
    if (e->fast_layers + e->fast_mha)
        snprintf(fast, sizeof fast, " In %s PyTorch's inference fast path ran %d encoder layers "
                 "(torch._transformer_encoder_layer_fwd) and %d attentions "
                 "(torch._native_multi_head_attention).", mc_wl_fwd_mode_name(k->evaluation),
                 e->fast_layers, e->fast_mha);
    for (int m = 1, u = 0; m < k->modes; m++)
        u += snprintf(modes + u, sizeof modes - (size_t)u, "%s%.1f MiB in %s", m > 1 ? ", " : "",
                      MC_MIB(f[m].r.peak_allocated), mc_wl_fwd_mode_name((mc_wl_fwd_mode)m));
    mc_emit_finding(run,
        "%s, B=%lld: peak %.1f MiB with grad, %s: %.0f%% less in %s. Activations at the peak "
        "%.1f vs %.1f MiB (%.2fx); weights + workspaces %.1f MiB in every mode. When the model "
        "returns the graph alone holds %.1f MiB (nothing without autograd); the output is %.1f "
        "MiB; after del every mode is back at %.1f MiB.%s",
        k->name, (long long)B, MC_MIB(g->peak_allocated), modes, 100 * s,
        mc_wl_fwd_mode_name(k->evaluation), MC_MIB(ga), MC_MIB(ea), (double)ea / (double)ga,
        MC_MIB(fixed), MC_MIB(g->saved_bytes), MC_MIB(g->output_bytes), MC_MIB(g->allocated_end),
        fast);
    t->total++;
    t->far += s >= FAR_LESS;
    t->none += s <= NO_SAVING;
    t->used += (size_t)snprintf(t->per + t->used, t->used < sizeof t->per ? sizeof t->per - t->used : 0,
                                "%s%s B=%lld s=%.2f (activations %.2fx)", t->used ? ", " : "", k->name,
                                (long long)B, s, (double)ea / (double)ga);
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    tally t;
    memset(&t, 0, sizeof t);
    for (int k = 0; k < NKIND; k++) {
        const workload_kind *K = &KINDS[k];
        const int NB = run.opt.quick ? K->nq : K->nb;
        for (int i = 0; i < NB; i++) {
            const int64_t B = run.opt.quick ? K->quick[i] : K->batches[i];
            const int64_t nout = B * K->out_per_batch;
            for (int m = 0; m < K->modes && run.on_gpu; m++)
                g_out[m] = mc_xmalloc((size_t)nout * sizeof(float));
            mc_log(&run, "%s, batch %lld", K->name, (long long)B);
            fig f[MC_WL_FWD_NMODE];
            bool ok = true;
            for (int m = 0; m < K->modes; m++) {
                f[m] = measure(&run, K, B, (mc_wl_fwd_mode)m);
                emit_fig(&run, K, (mc_wl_fwd_mode)m, B, &f[m]);
                ok &= f[m].r.status == MC_WL_OK;
            }
            if (ok && run.on_gpu) {
                compare_outputs(&run, K->name, B, MC_WL_FWD_GRAD, MC_WL_FWD_NO_GRAD, nout);
                if (K->modes > 2) compare_outputs(&run, K->name, B, MC_WL_FWD_EVAL, MC_WL_FWD_INFERENCE, nout);
            }
            for (int m = 0; m < MC_WL_FWD_NMODE; m++) {
                free(g_out[m]);
                g_out[m] = NULL;
            }
            if (!ok) t.oom = true;
            else judge(&run, &t, K, B, f);
            if (ok && run.on_gpu)
                mc_emit_finding(&run, "%s, B=%lld: forward time (events, median) %.3f ms with grad, "
                                "%.3f ms in %s.", K->name, (long long)B, 1e3 * f[MC_WL_FWD_GRAD].time.median,
                                1e3 * f[K->evaluation].time.median, mc_wl_fwd_mode_name(K->evaluation));
        }
    }

    if (t.oom || t.total == 0) {
        mc_emit_verdict(&run, MC_INCONCLUSIVE, "a forward ran out of memory; no saving at every batch");
        return mc_run_end(&run);
    }
    mc_verdict v = t.far == t.total ? MC_HOLDS : t.none == t.total ? MC_DOES_NOT_HOLD : MC_HOLDS_PARTLY;
    mc_emit_verdict(&run, v,
        "peak saving s = 1 - evaluation/grad (the MLP under no_grad; seed 000's nn.Transformer and "
        "the encoder in eval() under no_grad): %s; s >= %.2f at %d of %d, <= %.2f at %d. Without "
        "autograd the graph held at most %llu B when the model returned, but weights and the "
        "cuBLAS workspaces stay, and even without a graph a layer's input and output are live "
        "together.", t.per, FAR_LESS, t.far, t.total, NO_SAVING, t.none,
        (unsigned long long)t.nograd_saved);
    return mc_run_end(&run);
}
