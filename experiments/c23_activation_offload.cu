/* c23_activation_offload: C23. Does copying saved activations to pinned host
 * memory during the forward, and back for the backward, lower the device
 * peak, and what does it cost in step time? Two models. The suite's
 * Transformer (seed 000's nn.Transformer(d_model=256) on (64, 100, 256),
 * fp32, Adam, and two other batches) with saved activations kept or
 * offloaded as save_on_cpu(pin_memory=True) (build/workload --offload,
 * common/workload/transformer/tfm_offload.c). And a compact MLP training step of
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
 * (the workload library, mlp.h, has no offload mode); this file holds
 * the sweep over batches, the pinned copy bandwidth, the check of the
 * gradients against keep's, the rows, findings and verdict. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "alloc/alloc_probe.h"
#include "band.h"
#include "check.h"
#include "check_cuda.h"
#include "event_timer.h"
#include "experiment.h"
#include "gate.h"
#include "support/offload_mlp.h"
#include "support/steady.h"
#include "workload/transformer/tfm.h"

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
    .title = "Saved activations kept on the GPU vs offloaded to pinned host memory: peak and step time "
             "(nn.Transformer and an MLP)",
    .seed_claim = "Offloading activations or parameters to CPU relieves GPU memory.",
    .method = "Transformer: seed 000's nn.Transformer(d_model=256) (8 heads, 6+6 layers, ff 2048, "
              "dropout 0.1; built on the host and moved (.cuda()) as the seed builds it) trained on (seq 64, batch B, 256) with MSE and Adam in fp32, B = 25, 50, "
              "100 (seed 000's point; --quick: 100 alone), PyTorch 2.11's eager requests "
              "(common/workload/transformer/): keep, and offload as "
              "torch.autograd.graph.save_on_cpu(pin_memory=True) for the saved activations (not "
              "parameters, weight casts or philox seeds): each copied to pinned host memory when "
              "saved, its device block freed when the forward lets go, brought back into a new "
              "block when its node's backward runs, all on the compute stream. Peak allocated of "
              "the steady step 3 through the allocator model; on a GPU the same over the CUDA "
              "backend (checked against the host model's), the step time (CUDA events, median of "
              "--repeats steps after --warmup) and keep's and offload's losses of steps 1-3 "
              "compared (same data and weights: within 1e-5 relative); every timed step's time kept "
              "for the verdict. "
              "MLP: a training step of its own (fp32 MLP of L=8 bias-free Linear+ReLU layers, width "
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
    .verdict_rule = "At each point (the Transformer's B and the MLP's B): memory relieved if "
                    "offload's steady peak allocated is at least 1% below keep's; slowdown = median "
                    "step time offload / keep (GPU only), judged by its uncertainty: the 10th-90th "
                    "percentile of that ratio over bootstrap resamples of each side's step times "
                    "(band.h); slowdown <= 2 is established only when that interval lies at or below "
                    "2 (an interval that straddles 2 establishes neither side and counts as not "
                    "<= 2, so a point whose median is near 2 reads the same on every machine; the "
                    "verdict's findings name it). inconclusive if a run is out of memory; "
                    "holds if memory is relieved at every point and (on a GPU) slowdown <= 2 is "
                    "established at every point; holds-partly if memory is relieved at some points "
                    "only, or everywhere but without slowdown <= 2 established somewhere; "
                    "does-not-hold if memory is relieved at no point. Without a GPU the memory part "
                    "alone decides. Step times with two modes are reported as both modes and their "
                    "shares.",
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

/* ------------------------------------------------------------ the slowdown's judgement */

/* One finding when a variant's step times have two modes (band.h): their
 * median then depends on the shares, which differ from run to run. */
static void modes_finding(mc_run *run, const char *what, int64_t B, const double *t, int n)
{
    const mc_modes md = mc_modes_of(t, (size_t)n);
    if (md.n == 2)
        mc_emit_finding(run, "%s B=%lld: step time is bimodal over %d timed steps: %.3f ms (%.0f%%) "
                        "and %.3f ms (%.0f%%)", what, (long long)B, n, 1e3 * md.median[0],
                        100.0 * md.share[0], 1e3 * md.median[1], 100.0 * md.share[1]);
}

/* Whether slowdown = median(o) / median(k) <= MAX_SLOWDOWN is established:
 * its bootstrap 10th-90th percentile inside [0, MAX_SLOWDOWN]. A straddling
 * interval is said in a finding and counts as not established; bimodal step
 * times are said too. t_o, t_k: step times, s, of variants what and keep. */
static bool slowdown_ok(mc_run *run, const char *what, const char *keep, int64_t B, const double *t_o,
                        int no, const double *t_k, int nk)
{
    const bool timed = no > 0 && nk > 0; /* else (an OOM in the timed steps) nothing is established */
    const mc_band b = mc_band_ratio_of(t_o, timed ? (size_t)no : 0, t_k, timed ? (size_t)nk : 0, 0.0,
                                       MAX_SLOWDOWN);
    if (b.place == MC_BAND_STRADDLES)
        mc_emit_finding(run, "%s B=%lld: the slowdown's 10th-90th percentile %.2f-%.2fx straddles "
                        "%.1fx (%.0f%% of resampled slowdowns at or below it): the measurement cannot "
                        "tell, not counted as <= %.1fx.", what, (long long)B, b.p_low, b.p_high,
                        MAX_SLOWDOWN, 100.0 * b.inside, MAX_SLOWDOWN);
    modes_finding(run, keep, B, t_k, nk);
    modes_finding(run, what, B, t_o, no);
    return b.place == MC_BAND_INSIDE;
}

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
    double *times;                      /* [ntimes] step times, s (vfig_free) */
    int ntimes;
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
    double *pk = (double *)mc_xmalloc((size_t)R * 2 * sizeof *pk), *rs = pk + R;
    double *tm = (double *)mc_xmalloc((size_t)R * sizeof *tm);
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
        f.times = tm; /* the verdict judges their distribution */
        f.ntimes = R;
        tm = NULL;
        f.act_at_peak = (double)m.peak_cat[MC_OFFLOAD_CAT_ACT];
        f.grads_at_peak = (double)m.peak_cat[MC_OFFLOAD_CAT_G];
        f.pcie = (double)m.pcie_bytes;
    }
    if (!f.oom && run->on_gpu && var == KEEP) *ref_loss = f.loss;
    if (!f.oom && run->on_gpu && var != KEEP) { /* same weights, same data: same gradients */
        const size_t n = (size_t)m.L * (size_t)(m.H * m.H);
        const bool same = memcmp(tmp, ref, n * sizeof *ref) == 0;
        f.bit_equal = same && f.loss == *ref_loss;
        /* Bit-identical gradients (the usual case: the same kernels in the same
         * order) differ by 0 everywhere: the element loop, L x H^2 = 33.5M
         * elements, ~0.25 s a variant on the host's CPU (twelve a run) where the
         * memcmp takes ~10 ms, runs only where some byte differs. A NaN in
         * either side counts as a difference (fmax would skip it). */
        f.grad_rel = 0.0;
        if (!same) {
            double dmax = 0.0, amax = 0.0;
            for (size_t i = 0; i < n; i++) {
                const double d = fabs((double)tmp[i] - (double)ref[i]);
                dmax = isnan(d) ? INFINITY : fmax(dmax, d);
                amax = fmax(amax, fabs((double)ref[i]));
            }
            f.grad_rel = amax > 0.0 ? dmax / amax : (dmax > 0.0 ? INFINITY : 0.0);
        }
        f.loss_rel = fabs((double)f.loss - (double)*ref_loss) / fmax(fabs((double)*ref_loss), 1e-30);
        if (!(f.grad_rel <= GRAD_TOL) || !(f.loss_rel <= GRAD_TOL) || !isfinite(f.loss) || !(f.loss > 0))
            mc_verify_failed(run, VAR(var), "B=%lld: gradients differ from keep's by %.3g (max abs "
                             "diff / max abs), loss %.9g vs %.9g", (long long)B, f.grad_rel,
                             (double)f.loss, (double)*ref_loss);
    }
    free(pk);
    free(tm);
    mc_offload_destroy(&m);
    return f;
}

static void vfig_free(vfig *f)
{
    free(f->times);
    f->times = NULL;
    f->ntimes = 0;
}

/* ------------------------------------------------------------ the Transformer */

/* Seed 000: nn.Transformer(d_model=256) on torch.randn(64, 100, 256) (sequence-major: seq 64,
 * batch 100), Adam, fp32; two smaller batches below it. Not B=200: on the H100 its offloaded
 * step takes 0.26 s and the point 6.5 s of the run, for the same finding as B=100. */
#define TFM_SEQ MC_TFM_SEED000_ACCUM_SEQ
#define TFM_SEED_BATCH 100
#define TFM_STEADY MC_TFM_STEADY_STEP
#define TFM_LOSS_TOL 1e-5     /* keep's and offload's losses, relative (fp32: the same arithmetic) */
static const int64_t TFM_BATCHES[] = {25, 50, TFM_SEED_BATCH};
static const int64_t TFM_BATCHES_QUICK[] = {TFM_SEED_BATCH};
#define TFM_MODEL "nn.Transformer(d_model=256) fp32 Adam, seq 64"

typedef mc_tfm_figures tfig;

static tfig run_tfm(mc_run *run, int64_t B, bool offload, bool on_gpu)
{
    mc_tfm_config c = mc_tfm_seed000_accum(TFM_SEQ, B);
    c.offload = offload;
    c.seed = 23;
    char what[96];
    snprintf(what, sizeof what, "transformer_%s B=%lld%s", offload ? "offload" : "keep", (long long)B,
             on_gpu ? "" : " (host model)");
    return mc_tfm_measure_run(run, &c, on_gpu, what);
}

static tfig run_tfm_checked(mc_run *run, int64_t B, bool offload)
{
    const char *v = offload ? "transformer_offload" : "transformer_keep";
    tfig f = run_tfm(run, B, offload, run->on_gpu);
    if (run->on_gpu && !f.oom) { /* the same requests: the model's peak */
        tfig h = run_tfm(run, B, offload, false);
        char what[96];
        snprintf(what, sizeof what, "%s B=%lld", v, (long long)B);
        if (h.oom) mc_verify_failed(run, what, "the host model ran out of memory where the GPU did not");
        else mc_check_gpu_peak(run, what, f.peak, h.peak, MC_PLACEMENT_TOL, true);
        mc_tfm_figures_free(&h);
    }
    const double pv = (double)B;
    if (f.oom) {
        mc_emit(run, v, "batch", pv, "peak_allocated", "bytes", mc_stats_one(NAN), "oom",
                "out of memory in the first steps");
        return f;
    }
    mc_emit_value(run, v, "batch", pv, "peak_allocated", "bytes", (double)f.peak,
                  "max_memory_allocated() of step 3 (peak reset at each step's start)");
    mc_emit_value(run, v, "batch", pv, "peak_activations", "bytes", (double)f.peak_act,
                  "activations live at that peak");
    if (run->on_gpu)
        mc_emit(run, v, "batch", pv, "step_time", "s", f.time, "ok",
                "CUDA events around the step, after the warm-up");
    return f;
}

typedef struct {
    int relieved, slow_ok, points;
    bool oom;
    double worst_slow;
} tally;

/* The Transformer's points; what the verdict says of them goes to per. */
static void transformer_part(mc_run *run, tally *tl, char *per, size_t cap)
{
    const int64_t *bs = run->opt.quick ? TFM_BATCHES_QUICK : TFM_BATCHES;
    const int nb = run->opt.quick ? 1 : (int)(sizeof TFM_BATCHES / sizeof *TFM_BATCHES);
    size_t used = nb > 1 ? (size_t)snprintf(per, cap, "%s, B=%lld..%lld (seed 000's B=%d):", TFM_MODEL,
                                            (long long)bs[0], (long long)bs[nb - 1], TFM_SEED_BATCH)
                         : (size_t)snprintf(per, cap, "%s, seed 000's B=%d only:", TFM_MODEL, TFM_SEED_BATCH);
    for (int i = 0; i < nb; i++) {
        const int64_t B = bs[i];
        mc_log(run, "Transformer B=%lld: keep, then offload", (long long)B);
        tfig k = run_tfm_checked(run, B, false), o = run_tfm_checked(run, B, true);
        if (k.oom || o.oom) {
            tl->oom = true;
            mc_tfm_figures_free(&k);
            mc_tfm_figures_free(&o);
            continue;
        }
        if (run->on_gpu) /* same data, weights and dropout streams: the same losses */
            for (int s = 0; s < TFM_STEADY; s++) {
                const double d = fabs(k.loss[s] - o.loss[s]) / fabs(k.loss[s]);
                if (!(d <= TFM_LOSS_TOL) || !isfinite(k.loss[s]))
                    mc_verify_failed(run, "transformer_offload", "B=%lld step %d: keep's loss %.9g, "
                                     "offload's %.9g (relative %.2g)", (long long)B, s + 1, k.loss[s],
                                     o.loss[s], d);
                else if (s == TFM_STEADY - 1)
                    mc_emit_value(run, "transformer_offload", "batch", (double)B, "loss_rel_diff", "ratio", d,
                                  "|loss - keep's| / keep's, step 3");
            }
        const double red = (double)k.peak - (double)o.peak, ratio = (double)o.peak / (double)k.peak;
        const bool rel = red >= RELIEF * (double)k.peak;
        const double slow = run->on_gpu ? o.time.median / k.time.median : NAN;
        mc_emit_value(run, "transformer_offload", "batch", (double)B, "peak_ratio", "ratio", ratio,
                      "steady peak allocated / keep's");
        mc_emit_value(run, "transformer_offload", "batch", (double)B, "peak_reduction", "bytes", red,
                      "keep's steady peak - offload's");
        if (run->on_gpu) {
            mc_emit_value(run, "transformer_offload", "batch", (double)B, "slowdown", "ratio", slow,
                          "median step time / keep's");
            tl->slow_ok += slowdown_ok(run, "transformer_offload", "transformer_keep", B, o.times, o.ntimes,
                                       k.times, k.ntimes);
            tl->worst_slow = fmax(tl->worst_slow, slow);
        }
        tl->points++;
        tl->relieved += rel;
        mc_emit_finding(run, "%s, B=%lld%s: keep peaks at %.1f MiB (activations %.1f MiB = %.0f%%), "
                        "offload at %.1f MiB (%+.1f%%, activations %.1f MiB)%s.", TFM_MODEL, (long long)B,
                        B == TFM_SEED_BATCH ? " (seed 000's shape)" : "", MC_MIB(k.peak), MC_MIB(k.peak_act),
                        100.0 * (double)k.peak_act / (double)k.peak, MC_MIB(o.peak), -100.0 * red / (double)k.peak,
                        MC_MIB(o.peak_act), rel ? "" : ": no relief");
        if (run->on_gpu)
            mc_emit_finding(run, "%s, B=%lld: step time keep %.3f ms, offload %.3f ms (%.2fx); losses of "
                            "steps 1-3 agree within %.0e.", TFM_MODEL, (long long)B, 1e3 * k.time.median,
                            1e3 * o.time.median, slow, TFM_LOSS_TOL);
        if (used < cap)
            used += (size_t)snprintf(per + used, cap - used, " B=%lld %+.1f%%", (long long)B,
                                     -100.0 * red / (double)k.peak);
        if (run->on_gpu && used < cap) used += (size_t)snprintf(per + used, cap - used, " %.2fx", slow);
        mc_tfm_figures_free(&k);
        mc_tfm_figures_free(&o);
    }
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
    tally tl = {0, 0, 0, false, 0.0};
    char per_tfm[512];
    transformer_part(&run, &tl, per_tfm, sizeof per_tfm);
    int relieved = tl.relieved, slow_ok = tl.slow_ok, points = tl.points;
    bool oom = tl.oom;
    double worst_slow = tl.worst_slow;
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
        if (f[KEEP].oom || f[OFFLOAD].oom || f[SERIAL].oom) {
            for (int v = 0; v < NVAR; v++) vfig_free(&f[v]);
            continue;
        }
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
            slow_ok += slowdown_ok(&run, VAR(OFFLOAD), VAR(KEEP), B, o->times, o->ntimes, k->times,
                                   k->ntimes);
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
        for (int v = 0; v < NVAR; v++) vfig_free(&f[v]);
    }
    mc_verdict v;
    if (oom || points == 0) v = MC_INCONCLUSIVE;
    else if (relieved == 0) v = MC_DOES_NOT_HOLD;
    else if (relieved < points || (run.on_gpu && slow_ok < points)) v = MC_HOLDS_PARTLY;
    else v = MC_HOLDS;
    mc_emit_verdict(&run, v, "offload's steady peak allocated vs keep's%s: %s; MLP (L=%d, H=%lld, "
                    "B=%lld..%lld): %s; relieved (>= 1%% lower) at %d of %d points%s.",
                    run.on_gpu ? ", and step-time slowdown" : "", per_tfm, L, (long long)H,
                    (long long)batches[0], (long long)bmax, per_b, relieved, points,
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
