/* c27_no_grad_eval: C27. What torch.no_grad() saves when evaluating: the
 * forward pass of each workload (mlp_forward.h; the MLP today) with
 * autograd's saved tensors kept, as a forward outside no_grad keeps them
 * until the graph goes, and under no_grad, where a layer's input goes as soon
 * as the next layer has its output; peak allocated over batch size, through
 * the allocator model. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_probe.h"
#include "check.h"
#include "experiment.h"
#include "workload/mlp/mlp.h"
#include "workload/mlp/mlp_forward.h"

static const mc_experiment EXP = {
    .claim = "C27",
    .key = "no_grad_eval",
    .title = "Peak allocated of a forward pass with autograd's saved tensors and under no_grad, over batch size",
    .seed_claim = "Evaluating under torch.no_grad() keeps no graph and no activations, so it takes far "
                  "less memory.",
    .method = "For each workload (the MLP: Linear+ReLU, L=8 layers, in = width = out = 1024, fp32), a "
              "fresh model per figure, then x = randn(B, 1024); out = model(x), in PyTorch 2.11's "
              "request order: grad (autograd keeps each ReLU output for the backward, so x, the L-1 "
              "ReLU outputs and out are live when model(x) returns) against no_grad (each layer's "
              "input freed once the next layer has made its output). B = 256, 1024, 4096, 16384 "
              "(--quick 256, 4096). Per figure: max_memory_allocated (peak reset before x; weights "
              "and the forward thread's cuBLAS (32 MiB) + cuBLASLt (1 MiB) workspaces included, "
              "made at the first addmm as in training), memory_allocated when model(x) returns and "
              "after del out, x, the bytes only the graph holds, the activations at the peak. "
              "Allocator model over the CUDA backend on a GPU (checked against the model-only run; "
              "both forwards' outputs compared; forward time from CUDA events, median of --repeats "
              "after --warmup), over the host backend with --model-only.",
    .verdict_rule = "s = 1 - peak(no_grad) / peak(grad) at each batch. inconclusive if a run is out "
                    "of memory; holds if s >= 0.5 at every batch (no_grad at most half); "
                    "does-not-hold if s <= 0.05 at every batch; otherwise holds-partly (the note "
                    "gives s per batch, and the saving of the activations alone).",
    .flags = MC_EXP_MODEL_ONLY,
    .default_repeats = 5,
    .default_warmup = 2,
    .extra = NULL,
};

#define FAR_LESS 0.5   /* s at or above: "far less" (no_grad at most half the peak) */
#define NO_SAVING 0.05 /* s at or below: no real saving */

static const int64_t BATCHES[] = {256, 1024, 4096, 16384};
static const int64_t BATCHES_QUICK[] = {256, 4096};

/* One workload of the sweep. The Transformer joins here when it exists. */
typedef struct {
    const char *name;
    mc_workload_config (*config)(int64_t batch);
} workload_kind;

static mc_workload_config mlp_config(int64_t batch)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = 8;
    c.in = c.width = c.out = 1024;
    c.batch = batch;
    return c;
}

static const workload_kind KINDS[] = {{"mlp", mlp_config}};
#define NKIND ((int)(sizeof KINDS / sizeof *KINDS))

enum { M_GRAD, M_NOGRAD, NMODE };
static const char *const MODE[NMODE] = {"grad", "no_grad"};

typedef struct {
    mc_workload_forward_result r;  /* the first forward of a fresh model */
    mc_stats time;                 /* GPU: forwards after the warm-up */
} fig;

/* The first forward's output of each mode, for the GPU comparison. */
static float *g_out[NMODE];

static fig measure(mc_run *run, const workload_kind *k, int64_t B, int mode)
{
    fig f;
    memset(&f, 0, sizeof f);
    f.time = mc_stats_one(NAN);
    mc_workload_config c = k->config(B);
    char err[256], what[96];
    snprintf(what, sizeof what, "%s B=%lld %s", k->name, (long long)B, MODE[mode]);
    mc_workload *w = mc_workload_create(&c, run->on_gpu, NULL, err, sizeof err);
    CHECK(w != NULL, "workload: %s", err);
    bool grad = mode == M_GRAD;
    mc_workload_forward(w, grad, run->on_gpu ? g_out[mode] : NULL, &f.r);
    if (run->on_gpu) {
        mc_workload *ref = mc_workload_create(&c, false, NULL, err, sizeof err);
        CHECK(ref != NULL, "workload: %s", err);
        mc_workload_forward_result m;
        mc_workload_forward(ref, grad, NULL, &m);
        if (m.status != f.r.status || m.peak_allocated != f.r.peak_allocated ||
            m.allocated_out != f.r.allocated_out || m.allocated_end != f.r.allocated_end)
            mc_verify_failed(run, what, "GPU peak %llu out %llu end %llu, model-only %llu %llu %llu",
                             (unsigned long long)f.r.peak_allocated,
                             (unsigned long long)f.r.allocated_out,
                             (unsigned long long)f.r.allocated_end,
                             (unsigned long long)m.peak_allocated,
                             (unsigned long long)m.allocated_out,
                             (unsigned long long)m.allocated_end);
        mc_workload_destroy(ref);
        if (f.r.status == MC_WL_OK) {
            const int R = run->opt.repeats, W = run->opt.warmup;
            double *t = mc_xmalloc((size_t)R * sizeof *t);
            int n = 0;
            for (int i = 0; i < W + R; i++) {
                mc_workload_forward_result x;
                if (mc_workload_forward(w, grad, NULL, &x) != MC_WL_OK) break;
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
    mc_workload_destroy(w);
    return f;
}

static void emit_fig(mc_run *run, const char *kind, int mode, int64_t B, const fig *f)
{
    char v[64];
    snprintf(v, sizeof v, "%s/%s", kind, MODE[mode]);
    const double pv = (double)B;
    if (f->r.status != MC_WL_OK) {
        mc_emit(run, v, "batch", pv, "peak_allocated", "bytes", mc_stats_one(NAN), "oom",
                "out of memory during the forward");
        return;
    }
    mc_emit_value(run, v, "batch", pv, "peak_allocated", "bytes", (double)f->r.peak_allocated,
                  "max_memory_allocated() over x = randn; out = model(x)");
    mc_emit_value(run, v, "batch", pv, "allocated_out", "bytes", (double)f->r.allocated_out,
                  "memory_allocated() when model(x) returns");
    mc_emit_value(run, v, "batch", pv, "allocated_end", "bytes", (double)f->r.allocated_end,
                  "memory_allocated() after del out, x: weights + workspaces");
    mc_emit_value(run, v, "batch", pv, "graph_saved_bytes", "bytes", (double)f->r.saved_bytes,
                  "blocks only the graph holds when model(x) returns (the ReLU outputs)");
    mc_emit_value(run, v, "batch", pv, "peak_activations", "bytes",
                  (double)f->r.peak_by_category[MC_WL_ACTIVATIONS], "activations live at the peak");
    mc_emit_value(run, v, "batch", pv, "peak_weights", "bytes",
                  (double)f->r.peak_by_category[MC_WL_WEIGHTS], "parameters at the peak");
    mc_emit_value(run, v, "batch", pv, "peak_workspace", "bytes",
                  (double)f->r.peak_by_category[MC_WL_WORKSPACE], "cuBLAS + cuBLASLt workspaces");
    mc_emit_value(run, v, "batch", pv, "peak_reserved", "bytes", (double)f->r.peak_reserved,
                  "max_memory_reserved()");
    if (run->on_gpu)
        mc_emit(run, v, "batch", pv, "forward_time", "s", f->time, "ok",
                "CUDA events around x = randn ... model(x), after the warm-up");
}

/* The two modes' outputs must agree: the same weights, x and kernels. */
static void compare_outputs(mc_run *run, const char *kind, int64_t B, int64_t n)
{
    double worst = 0;
    bool finite = true;
    for (int64_t i = 0; i < n; i++) {
        float a = g_out[M_GRAD][i], b = g_out[M_NOGRAD][i];
        finite &= isfinite(a) && isfinite(b);
        double d = fabs((double)a - (double)b) / fmax(1e-6, fabs((double)a));
        if (d > worst) worst = d;
    }
    if (!finite || worst > 1e-5)
        mc_verify_failed(run, kind, "B=%lld: grad and no_grad outputs differ (relative %.3g%s)",
                         (long long)B, worst, finite ? "" : ", not finite");
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const int64_t *batches = run.opt.quick ? BATCHES_QUICK : BATCHES;
    const int NB = run.opt.quick ? 2 : 4;
    bool oom = false;
    int far = 0, none = 0, total = 0;
    uint64_t nograd_saved = 0; /* the most any no_grad forward's graph held, bytes */
    char per_b[768] = "";
    size_t used = 0;
    for (int k = 0; k < NKIND; k++)
        for (int i = 0; i < NB; i++) {
            const int64_t B = batches[i];
            mc_workload_config c = KINDS[k].config(B);
            const int64_t nout = c.batch * c.out;
            for (int m = 0; m < NMODE && run.on_gpu; m++)
                g_out[m] = mc_xmalloc((size_t)nout * sizeof(float));
            mc_log(&run, "%s, batch %lld", KINDS[k].name, (long long)B);
            fig f[NMODE];
            for (int m = 0; m < NMODE; m++) {
                f[m] = measure(&run, &KINDS[k], B, m);
                emit_fig(&run, KINDS[k].name, m, B, &f[m]);
            }
            bool ok = f[M_GRAD].r.status == MC_WL_OK && f[M_NOGRAD].r.status == MC_WL_OK;
            if (ok && run.on_gpu) compare_outputs(&run, KINDS[k].name, B, nout);
            for (int m = 0; m < NMODE; m++) {
                free(g_out[m]);
                g_out[m] = NULL;
            }
            if (!ok) {
                oom = true;
                continue;
            }
            const mc_workload_forward_result *g = &f[M_GRAD].r, *n = &f[M_NOGRAD].r;
            double ratio = (double)n->peak_allocated / (double)g->peak_allocated;
            double s = 1.0 - ratio;
            uint64_t ga = g->peak_by_category[MC_WL_ACTIVATIONS],
                     na = n->peak_by_category[MC_WL_ACTIVATIONS];
            double act_ratio = (double)na / (double)ga;
            char v[64];
            snprintf(v, sizeof v, "%s/no_grad_vs_grad", KINDS[k].name);
            mc_emit_value(&run, v, "batch", (double)B, "peak_ratio", "ratio", ratio,
                          "no_grad peak allocated / grad peak allocated");
            mc_emit_value(&run, v, "batch", (double)B, "peak_saving", "fraction", s,
                          "1 - peak ratio: the share of the peak no_grad saves");
            mc_emit_value(&run, v, "batch", (double)B, "activation_ratio", "ratio", act_ratio,
                          "activations at the no_grad peak / at the grad peak");
            const uint64_t fixed = g->peak_by_category[MC_WL_WEIGHTS] +
                                   g->peak_by_category[MC_WL_WORKSPACE];
            mc_emit_finding(&run,
                "%s, B=%lld: peak %.1f MiB with grad, %.1f MiB under no_grad (%.0f%% less). "
                "Activations at the peak %.1f vs %.1f MiB (%.2fx; grad keeps x, the %d ReLU "
                "outputs and out, no_grad at most three of them); weights + workspaces %.1f MiB "
                "in both. When model(x) returns the graph alone holds %.1f MiB (no_grad %.1f); "
                "after del out, x both are back at %.1f MiB.",
                KINDS[k].name, (long long)B, MC_MIB(g->peak_allocated), MC_MIB(n->peak_allocated),
                100 * s, MC_MIB(ga), MC_MIB(na), act_ratio, c.layers - 1, MC_MIB(fixed),
                MC_MIB(g->saved_bytes), MC_MIB(n->saved_bytes), MC_MIB(g->allocated_end));
            if (run.on_gpu)
                mc_emit_finding(&run, "%s, B=%lld: forward time (events, median) %.3f ms with grad, "
                                "%.3f ms under no_grad.", KINDS[k].name, (long long)B,
                                1e3 * f[M_GRAD].time.median, 1e3 * f[M_NOGRAD].time.median);
            total++;
            if (n->saved_bytes > nograd_saved) nograd_saved = n->saved_bytes;
            far += s >= FAR_LESS;
            none += s <= NO_SAVING;
            used += (size_t)snprintf(per_b + used, used < sizeof per_b ? sizeof per_b - used : 0,
                                     "%s%s B=%lld s=%.2f (activations %.2fx)", used ? ", " : "",
                                     KINDS[k].name, (long long)B, s, act_ratio);
        }

    if (oom || total == 0) {
        mc_emit_verdict(&run, MC_INCONCLUSIVE, "a forward ran out of memory; no saving at every batch");
        return mc_run_end(&run);
    }
    mc_verdict v = far == total ? MC_HOLDS : none == total ? MC_DOES_NOT_HOLD : MC_HOLDS_PARTLY;
    mc_emit_verdict(&run, v,
        "peak saving s = 1 - no_grad/grad: %s; s >= %.2f at %d of %d batches, <= %.2f at %d. "
        "Under no_grad the graph held at most %llu B when model(x) returned, but weights and the "
        "cuBLAS workspaces stay, and even without a graph a layer's input and output are live "
        "together.", per_b, FAR_LESS, far, total, NO_SAVING, none, (unsigned long long)nograd_saved);
    return mc_run_end(&run);
}
