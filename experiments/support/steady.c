/* steady.c: steady.h's calls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "steady.h"

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

mc_tfm_figures mc_tfm_measure_run(mc_run *run, const mc_tfm_config *c, bool on_gpu, const char *what)
{
    char err[256];
    mc_wl *w = mc_tfm_handle(mc_tfm_create(c, on_gpu, NULL, err, sizeof err));
    CHECK(w != NULL, "transformer: %s", err);
    const mc_wl_plan p = {.warm = MC_TFM_STEADY_STEP - 1, .reps = 1, .timed_warm = run->opt.warmup,
                          .timed_reps = run->opt.repeats, .on_gpu = on_gpu, .profile = on_gpu};
    mc_wl_measured m = mc_wl_measure_run(run, w, what, &p);
    mc_tfm_figures f;
    memset(&f, 0, sizeof f);
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

void mc_tfm_figures_free(mc_tfm_figures *f)
{
    free(f->times);
    f->times = NULL;
    f->ntimes = 0;
}
