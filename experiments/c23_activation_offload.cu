/* c23_activation_offload: C23. Does copying saved activations to pinned host
 * memory during the forward, and back for the backward, lower the device
 * peak, and what does it cost in step time? A compact MLP training step of
 * its own (fp32, L bias-free Linear+ReLU layers of width H, MSE, SGD), every
 * device tensor taken from the allocator model, in three variants:
 *   keep            saved activations stay on the device
 *   offload         each saved input is copied D2H on a side stream as soon as
 *                   it exists, its block freed once the copy is done (the
 *                   compute stream waits on the copy's event); the backward
 *                   brings each back H2D on the side stream, one layer ahead
 *   offload_serial  the same copies on the compute stream, none overlapped,
 *                   as torch.autograd.graph.save_on_cpu(pin_memory=True) does
 * The step itself, its kernels and its copies are in common/offload_mlp.cu
 * (the workload library, workload.h, has no offload mode); this file holds
 * the sweep over batches, the pinned copy bandwidth, the check of the
 * gradients against keep's, the rows, findings and verdict. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "alloc/alloc_probe.h"
#include "check.h"
#include "check_cuda.h"
#include "event_timer.h"
#include "experiment.h"
#include "gate.h"
#include "workload/offload_mlp.h"

static int layers_opt = 8;
static int width_opt = 2048;

static const mc_extra_opt EXTRA[] = {
    {"layers", MC_OPT_COUNT, &layers_opt, "Linear layers, 2..64 (default 8)"},
    {"width", MC_OPT_COUNT, &width_opt, "features H, 64..16384 (default 2048)"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const char *validate(const mc_options *o)
{
    (void)o;
    if (layers_opt < 2 || layers_opt > MC_OFFLOAD_MAX_LAYERS) return "--layers must be from 2 to 64";
    if (width_opt < 64 || width_opt > 16384) return "--width must be from 64 to 16384";
    return NULL;
}

static const mc_experiment EXP = {
    .claim = "C23",
    .key = "activation_offload",
    .title = "Saved activations kept on the GPU vs offloaded to pinned host memory: peak and step time",
    .seed_claim = "Offloading activations or parameters to CPU relieves GPU memory.",
    .method = "A training step of its own (fp32 MLP of L=8 bias-free Linear+ReLU layers, width "
              "H=2048, MSE, SGD; cuBLAS without TF32; every device tensor from the allocator "
              "model, a 32 MiB cuBLAS workspace included) over batch B = 256..8192 (--quick 512, "
              "4096). keep: saved layer inputs stay on the device. offload: each saved input is "
              "copied D2H to pinned memory on a side stream when made and its block freed once "
              "copied (compute waits on the copy's event, one layer later); the backward copies "
              "each back H2D one layer ahead. offload_serial: the same copies on the compute "
              "stream (as save_on_cpu(pin_memory=True)). Per variant: max_memory_allocated of the "
              "steady steps (step >= 2 + --warmup), step time from CUDA events (--repeats steps), "
              "PCIe bytes per step, and the copy time they imply at the pinned bandwidth measured "
              "here (gated copies, events). Gradients and loss of the first step are checked "
              "against keep's (same weights and data). --model-only: the same request sequence "
              "on the host backend, no times.",
    .verdict_rule = "At each B: memory relieved if offload's steady peak allocated is at least 1% "
                    "below keep's; slowdown = median step time offload / keep (GPU only). "
                    "inconclusive if a run is out of memory; holds if memory is relieved at every "
                    "B and (on a GPU) slowdown <= 2 at every B; holds-partly if memory is relieved "
                    "at some B only, or everywhere but with slowdown > 2 somewhere; does-not-hold if "
                    "memory is relieved at no B. Without a GPU the memory part alone decides.",
    .flags = MC_EXP_MODEL_ONLY,
    .default_repeats = 5,
    .default_warmup = 2,
    .extra = EXTRA,
    .validate = validate,
};

/* The variants (offload_mlp.h), by short names here. */
enum {
    KEEP = MC_OFFLOAD_KEEP,
    OFFLOAD = MC_OFFLOAD_OFFLOAD,
    SERIAL = MC_OFFLOAD_SERIAL,
    NVAR = MC_OFFLOAD_NVAR
};
#define VAR(v) mc_offload_variant_name(v)
static const int64_t BATCHES[] = {256, 512, 1024, 2048, 4096, 8192};
static const int64_t BATCHES_QUICK[] = {512, 4096};
#define RELIEF 0.01            /* a drop of at least 1% of keep's peak */
#define MAX_SLOWDOWN 2.0
#define GRAD_TOL 1e-6

/* ------------------------------------------------------------ pinned copy bandwidth */

/* Pinned copy bandwidth, bytes/s (median of R gated copies of `bytes`). */
static mc_stats copy_bw(mc_run *run, void *dev, float *host, uint64_t bytes, bool d2h)
{
    const int R = run->opt.repeats;
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    mc_event_timer t;
    mc_event_timer_init(&t, s);
    mc_gate gate;
    mc_gate_init(&gate);
    double *x = (double *)mc_xmalloc((size_t)R * sizeof *x);
    for (int r = -1; r < R; r++) { /* r = -1: untimed warm-up */
        mc_gate_close(&gate, s);
        mc_event_timer_start(&t);
        if (d2h) CHECK_CUDA(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
        else CHECK_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
        mc_event_timer_stop(&t);
        mc_gate_release(&gate);
        double sec = mc_event_timer_elapsed_s(&t);
        if (r >= 0) x[r] = (double)bytes / sec;
    }
    mc_stats st = mc_stats_of(x, (size_t)R);
    free(x);
    mc_gate_destroy(&gate);
    mc_event_timer_destroy(&t);
    CHECK_CUDA(cudaStreamDestroy(s));
    return st;
}

/* ------------------------------------------------------------ one variant at one batch */

typedef struct {
    bool oom;
    mc_stats peak, resv, time;
    double act_at_peak, grads_at_peak; /* bytes at the last measured step's peak */
    double pcie;                        /* bytes per step */
    double grad_rel, loss_rel;          /* against keep (GPU, offload variants) */
    bool bit_equal;
    float loss;
} vfig;

static vfig run_variant(mc_run *run, int var, int64_t B, float *const *pinned, float *ref,
                        float *tmp, float *ref_loss)
{
    vfig f;
    memset(&f, 0, sizeof f);
    mc_offload_mlp m;
    mc_offload_create(&m, run, var, layers_opt, width_opt, B, pinned);
    const int W = run->opt.warmup, R = run->opt.repeats;
    double *pk = (double *)mc_xmalloc((size_t)R * 3 * sizeof *pk), *rs = pk + R, *tm = pk + 2 * R;
    float *grads = run->on_gpu ? (var == KEEP ? ref : tmp) : NULL;
    f.oom = m.oom || !mc_offload_step(&m, 1, grads, &f.loss); /* step 1: checked, not applied */
    for (int s = 0; s < W + R && !f.oom; s++) {
        f.oom = !mc_offload_step(&m, 2 + (uint64_t)s, NULL, NULL);
        const ca_stats *st = ca_get_stats(m.p.a);
        if (s >= W) {
            pk[s - W] = (double)st->allocated_bytes.peak;
            rs[s - W] = (double)st->reserved_bytes.peak;
            tm[s - W] = m.time_s;
        }
    }
    if (!f.oom) {
        f.peak = mc_stats_of(pk, (size_t)R);
        f.resv = mc_stats_of(rs, (size_t)R);
        f.time = mc_stats_of(tm, (size_t)R);
        f.act_at_peak = (double)m.peak_cat[MC_OFFLOAD_CAT_ACT];
        f.grads_at_peak = (double)m.peak_cat[MC_OFFLOAD_CAT_G];
        f.pcie = (double)m.pcie_bytes;
    }
    if (!f.oom && run->on_gpu && var == KEEP) *ref_loss = f.loss;
    if (!f.oom && run->on_gpu && var != KEEP) { /* same weights, same data: same gradients */
        const size_t n = (size_t)m.L * (size_t)(m.H * m.H);
        double dmax = 0.0, amax = 0.0;
        for (size_t i = 0; i < n; i++) {
            dmax = fmax(dmax, fabs((double)tmp[i] - (double)ref[i]));
            amax = fmax(amax, fabs((double)ref[i]));
        }
        f.bit_equal = memcmp(tmp, ref, n * sizeof *ref) == 0 && f.loss == *ref_loss;
        f.grad_rel = amax > 0.0 ? dmax / amax : (dmax > 0.0 ? INFINITY : 0.0);
        f.loss_rel = fabs((double)f.loss - (double)*ref_loss) / fmax(fabs((double)*ref_loss), 1e-30);
        if (!(f.grad_rel <= GRAD_TOL) || !(f.loss_rel <= GRAD_TOL) || !isfinite(f.loss) || !(f.loss > 0))
            mc_verify_failed(run, VAR(var), "B=%lld: gradients differ from keep's by %.3g (max abs "
                             "diff / max abs), loss %.9g vs %.9g", (long long)B, f.grad_rel,
                             (double)f.loss, (double)*ref_loss);
    }
    free(pk);
    mc_offload_destroy(&m);
    return f;
}

/* ------------------------------------------------------------ main */

static void emit_variant(mc_run *run, int var, int64_t B, const vfig *f)
{
    const char *v = VAR(var);
    const double pv = (double)B;
    if (f->oom) {
        mc_emit(run, v, "batch", pv, "peak_allocated", "bytes", mc_stats_one(NAN), "oom", "out of memory");
        return;
    }
    mc_emit(run, v, "batch", pv, "peak_allocated", "bytes", f->peak, "ok",
            "max_memory_allocated() of the measured steps");
    mc_emit(run, v, "batch", pv, "peak_reserved", "bytes", f->resv, "ok", "max_memory_reserved()");
    mc_emit_value(run, v, "batch", pv, "peak_activations", "bytes", f->act_at_peak,
                  "activation bytes live at the peak (last measured step)");
    mc_emit_value(run, v, "batch", pv, "peak_grads", "bytes", f->grads_at_peak,
                  "gradient bytes live at the peak (last measured step)");
    if (var != KEEP)
        mc_emit_value(run, v, "batch", pv, "pcie_bytes", "bytes", f->pcie,
                      "bytes copied D2H + H2D per step");
    if (!run->on_gpu) return;
    mc_emit(run, v, "batch", pv, "step_time", "s", f->time, "ok", "CUDA events around the step");
    if (var != KEEP) {
        mc_emit_value(run, v, "batch", pv, "grad_max_rel_diff", "ratio", f->grad_rel,
                      f->bit_equal ? "gradients and loss bit-identical to keep's"
                                   : "max |grad - keep's| / max |keep's grad|, step 1");
        mc_emit_value(run, v, "batch", pv, "loss_rel_diff", "ratio", f->loss_rel,
                      "|loss - keep's| / keep's, step 1");
    }
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const int64_t *batches = run.opt.quick ? BATCHES_QUICK : BATCHES;
    const int nb = run.opt.quick ? 2 : (int)(sizeof BATCHES / sizeof *BATCHES);
    const int L = layers_opt;
    const int64_t H = width_opt, bmax = batches[nb - 1];
    const uint64_t act_max = (uint64_t)bmax * (uint64_t)H * 4;
    float *pinned[MC_OFFLOAD_MAX_LAYERS] = {0}, *ref = NULL, *tmp = NULL;
    void *dev = NULL;
    if (run.on_gpu) { /* host buffers once, at the largest batch (PyTorch caches pinned blocks too) */
        for (int l = 0; l < L; l++) CHECK_CUDA(cudaMallocHost((void **)&pinned[l], act_max));
        CHECK_CUDA(cudaMalloc(&dev, act_max)); /* bandwidth only; outside the model */
        ref = (float *)mc_xmalloc((uint64_t)L * (uint64_t)(H * H) * 4);
        tmp = (float *)mc_xmalloc((uint64_t)L * (uint64_t)(H * H) * 4);
    }
    int relieved = 0, slow_ok = 0, points = 0;
    bool oom = false;
    double worst_slow = 0.0;
    char per_b[1024] = "";
    size_t used = 0;
    for (int i = 0; i < nb; i++) {
        const int64_t B = batches[i];
        const uint64_t act = (uint64_t)B * (uint64_t)H * 4;
        mc_stats d2h = {0}, h2d = {0};
        if (run.on_gpu) {
            CHECK_CUDA(cudaMemset(dev, 0x5a, act));
            d2h = copy_bw(&run, dev, pinned[0], act, true);
            h2d = copy_bw(&run, dev, pinned[0], act, false);
            mc_emit(&run, "pinned_copy", "batch", (double)B, "d2h_bandwidth", "B/s", d2h, "ok",
                    "one activation's bytes, gated, CUDA events");
            mc_emit(&run, "pinned_copy", "batch", (double)B, "h2d_bandwidth", "B/s", h2d, "ok",
                    "one activation's bytes, gated, CUDA events");
        }
        vfig f[NVAR];
        float ref_loss = NAN;
        for (int v = 0; v < NVAR; v++) {
            mc_log(&run, "B=%lld, %s", (long long)B, VAR(v));
            f[v] = run_variant(&run, v, B, pinned, ref, tmp, &ref_loss);
            emit_variant(&run, v, B, &f[v]);
            oom |= f[v].oom;
        }
        if (f[KEEP].oom || f[OFFLOAD].oom || f[SERIAL].oom) continue;
        if (run.on_gpu && !(isfinite(ref_loss) && ref_loss > 0))
            mc_verify_failed(&run, "keep", "B=%lld: loss %g", (long long)B, (double)ref_loss);
        const vfig *k = &f[KEEP], *o = &f[OFFLOAD], *s = &f[SERIAL];
        const double red = k->peak.median - o->peak.median, share = k->act_at_peak / k->peak.median;
        const bool rel = red >= RELIEF * k->peak.median;
        const double slow = o->time.median / k->time.median, slow_s = s->time.median / k->time.median;
        const double implied = run.on_gpu ? (double)L * act / d2h.median + (double)L * act / h2d.median : NAN;
        points++;
        relieved += rel;
        if (run.on_gpu) {
            slow_ok += slow <= MAX_SLOWDOWN;
            worst_slow = fmax(worst_slow, slow);
        }
        for (int v = OFFLOAD; v <= SERIAL; v++) {
            mc_emit_value(&run, VAR(v), "batch", (double)B, "peak_ratio", "ratio",
                          f[v].peak.median / k->peak.median, "steady peak allocated / keep's");
            mc_emit_value(&run, VAR(v), "batch", (double)B, "peak_reduction", "bytes",
                          k->peak.median - f[v].peak.median, "keep's steady peak - this one's");
            if (run.on_gpu)
                mc_emit_value(&run, VAR(v), "batch", (double)B, "slowdown", "ratio",
                              f[v].time.median / k->time.median, "median step time / keep's");
        }
        mc_emit_value(&run, "keep", "batch", (double)B, "activation_share", "ratio", share,
                      "activations at keep's peak / keep's peak");
        if (run.on_gpu)
            mc_emit_value(&run, "offload", "batch", (double)B, "implied_copy_time", "s", implied,
                          "L activations D2H at the measured D2H rate + L back at the H2D rate");
        char why[256] = ""; /* grads are made only in the backward: none live = a forward peak */
        if (!rel)
            snprintf(why, sizeof why, ": no relief; keep's peak is in the %s, offload's in the %s "
                     "with %.1f MiB of gradients live, which the copies do not lower",
                     k->grads_at_peak > 0 ? "backward" : "forward",
                     o->grads_at_peak > 0 ? "backward" : "forward", MC_MIB(o->grads_at_peak));
        mc_emit_finding(&run,
            "B=%lld: keep peaks at %.1f MiB (activations %.1f MiB = %.0f%%, grads %.1f MiB); offload "
            "%.1f MiB (%+.1f%%, activations %.1f MiB), offload_serial %.1f MiB; PCIe %.1f MiB per "
            "step%s.", (long long)B, MC_MIB(k->peak.median), MC_MIB(k->act_at_peak), 100.0 * share,
            MC_MIB(k->grads_at_peak), MC_MIB(o->peak.median), -100.0 * red / k->peak.median,
            MC_MIB(o->act_at_peak), MC_MIB(s->peak.median), MC_MIB(o->pcie), why);
        if (run.on_gpu)
            mc_emit_finding(&run,
                "B=%lld: step time keep %.3f ms, offload %.3f ms (%.2fx), offload_serial %.3f ms "
                "(%.2fx); the copies alone take %.3f ms at the measured %.1f GB/s D2H and %.1f GB/s "
                "H2D; gradients vs keep: max rel diff %.2g%s.", (long long)B, 1e3 * k->time.median,
                1e3 * o->time.median, slow, 1e3 * s->time.median, slow_s, 1e3 * implied,
                d2h.median / 1e9, h2d.median / 1e9, fmax(o->grad_rel, s->grad_rel),
                o->bit_equal && s->bit_equal ? " (bit-identical)" : "");
        used += (size_t)snprintf(per_b + used, used < sizeof per_b ? sizeof per_b - used : 0,
                                 "%sB=%lld %+.1f%%", used ? ", " : "", (long long)B,
                                 -100.0 * red / k->peak.median);
        if (run.on_gpu)
            used += (size_t)snprintf(per_b + used, used < sizeof per_b ? sizeof per_b - used : 0,
                                     " %.2fx", slow);
    }
    mc_verdict v;
    if (oom || points == 0) v = MC_INCONCLUSIVE;
    else if (relieved == 0) v = MC_DOES_NOT_HOLD;
    else if (relieved < points || (run.on_gpu && slow_ok < points)) v = MC_HOLDS_PARTLY;
    else v = MC_HOLDS;
    mc_emit_verdict(&run, v, "offload's steady peak allocated vs keep's (L=%d, H=%lld)%s: %s; "
                    "relieved (>= 1%% lower) at %d of %d batches%s.", L, (long long)H,
                    run.on_gpu ? ", and step-time slowdown" : "", per_b, relieved, points,
                    run.on_gpu ? "" : "; no GPU: memory only, no step times");
    if (run.on_gpu) {
        mc_emit_finding(&run, "Worst offload slowdown %.2fx (limit for holds: %.1fx).", worst_slow,
                        MAX_SLOWDOWN);
        for (int l = 0; l < L; l++) CHECK_CUDA(cudaFreeHost(pinned[l]));
        CHECK_CUDA(cudaFree(dev));
    }
    free(ref);
    free(tmp);
    return mc_run_end(&run);
}
