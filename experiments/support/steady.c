/* steady.c: steady.h's calls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "steady.h"
#include "workload/core/wl_placed.h"
#include "workload/transformer/tfm_wrap.h"

mc_wl_measured mc_wl_measure_run(mc_run *run, mc_wl *w, const char *what, const mc_wl_plan *p)
{
    mc_wl_measured f = mc_wl_measure(w, p);
    for (int i = 0; i < mc_wl_problems(&f); i++) mc_verify_failed(run, what, "%s", f.problem[i]);
    mc_wl_destroy(w);
    return f;
}

bool mc_wl_measure_tfm(mc_run *run, const mc_tfm_config *c, const char *what, const mc_wl_plan *p,
                       mc_wl_measured *f, char *why, size_t why_len)
{
    char err[256];
    mc_wl *w = mc_tfm_handle(mc_tfm_create(c, run->on_gpu, NULL, err, sizeof err));
    if (!w) {
        mc_verify_failed(run, what, "the Transformer workload cannot run here: %s", err);
        snprintf(why, why_len, "%s", err);
        return false;
    }
    *f = mc_wl_measure_run(run, w, what, p);
    return true;
}

/* Copies the driver's segments of a GPU run (wl_ctx_segments) into f. */
static void keep_segments(mc_tfm *T, mc_tfm_figures *f)
{
    const uint64_t *addr, *bytes;
    const int n = wl_ctx_segments(mc_tfm_ctx(T), &addr, &bytes);
    if (n <= 0) return;
    f->seg_addr = malloc((size_t)n * sizeof *f->seg_addr);
    f->seg_bytes = malloc((size_t)n * sizeof *f->seg_bytes);
    CHECK(f->seg_addr && f->seg_bytes, "out of host memory");
    memcpy(f->seg_addr, addr, (size_t)n * sizeof *addr);
    memcpy(f->seg_bytes, bytes, (size_t)n * sizeof *bytes);
    f->nseg = n;
}

/* mc_tfm_measure_run's loop over T (destroyed), on_gpu or T's host backend. */
static mc_tfm_figures measure_tfm(mc_run *run, mc_tfm *T, bool on_gpu, const char *what)
{
    mc_wl *w = mc_tfm_handle(T);
    const mc_wl_plan p = {.warm = MC_TFM_STEADY_STEP - 1, .reps = 1, .timed_warm = run->opt.warmup,
                          .timed_reps = run->opt.repeats, .on_gpu = on_gpu, .profile = on_gpu};
    mc_tfm_figures f;
    memset(&f, 0, sizeof f);
    mc_wl_measured m = mc_wl_measure(w, &p);
    for (int i = 0; i < mc_wl_problems(&m); i++) mc_verify_failed(run, what, "%s", m.problem[i]);
    if (on_gpu) keep_segments(T, &f);
    mc_wl_destroy(w);
    f.oom = m.oom;
    f.skipped = m.skipped;
    for (int s = 0; s < m.n && s < MC_TFM_STEADY_STEP; s++) f.loss[s] = m.step[s].loss;
    if (!m.oom) {
        f.peak = m.peak;
        f.peak_act = m.cat[MC_WL_ACTIVATIONS];
    }
    f.time = m.time;
    f.have_prof = m.have_prof;
    f.prof = m.prof;
    if (on_gpu) { /* the host model's step times are not times */
        f.times = m.times;
        f.ntimes = m.ntimes;
        m.times = NULL;
    }
    mc_wl_measured_free(&m);
    return f;
}

mc_tfm_figures mc_tfm_measure_run(mc_run *run, const mc_tfm_config *c, bool on_gpu, const char *what)
{
    char err[256];
    mc_tfm *T = mc_tfm_create(c, on_gpu, NULL, err, sizeof err);
    CHECK(T != NULL, "transformer: %s", err);
    return measure_tfm(run, T, on_gpu, what);
}

void mc_tfm_figures_free(mc_tfm_figures *f)
{
    free(f->times);
    free(f->seg_addr);
    free(f->seg_bytes);
    f->times = NULL;
    f->seg_addr = f->seg_bytes = NULL;
    f->ntimes = f->nseg = 0;
}

bool mc_tfm_check_gpu_peak(mc_run *run, const mc_tfm_config *c, const mc_tfm_figures *gpu, const char *what,
                           bool note)
{
    char err[256];
    mc_tfm_figures rule = mc_tfm_measure_run(run, c, false, what);
    wl_placed pl;
    mc_tfm *T = mc_tfm_create_on(c, wl_placed_open(&pl, c->host_capacity, gpu->seg_addr, gpu->seg_bytes, gpu->nseg),
                                 NULL, err, sizeof err);
    CHECK(T != NULL, "transformer: %s", err);
    mc_tfm_figures at = measure_tfm(run, T, false, what); /* T's segments go back before the device */
    wl_placed_close(&pl);
    bool ok = true;
    if (at.oom || at.peak != gpu->peak) {
        mc_verify_failed(run, what, "GPU peak %llu B, its host model at the GPU's addresses %llu B%s: the requests differ",
                         (unsigned long long)gpu->peak, (unsigned long long)at.peak, at.oom ? " (out of memory)" : "");
        ok = false;
    } else if (note && rule.peak != gpu->peak) {
        mc_emit_finding(run, "%s: the GPU's peak is %llu B, the host model's %llu B (%+.3f%%): the same requests "
                             "(at the GPU's segment addresses the model's peak is the GPU's to the byte), a block "
                             "placed elsewhere by the host device's placement rule",
                        what, (unsigned long long)gpu->peak, (unsigned long long)rule.peak,
                        100.0 * ((double)rule.peak / (double)gpu->peak - 1));
    }
    mc_tfm_figures_free(&rule);
    mc_tfm_figures_free(&at);
    return ok;
}
