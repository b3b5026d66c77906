/* tfm_measure.c: the figures an experiment reads from one
 * Transformer configuration (tfm.h, mc_tfm_measure): the steady
 * step's peak and activations, the first steps' losses, and on a GPU the
 * median step time after a warm-up. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tfm.h"

int mc_tfm_measure(const mc_tfm_config *c, bool on_gpu, int warmup, int repeats, mc_tfm_figures *f,
                   char *err, size_t len)
{
    memset(f, 0, sizeof *f);
    f->time = mc_stats_one(NAN);
    mc_tfm *t = mc_tfm_create(c, on_gpu, NULL, err, len);
    if (!t) return -1;
    mc_workload_step_result r;
    for (int s = 1; s <= MC_TFM_STEADY_STEP; s++) {
        if (mc_tfm_step(t, &r) != MC_WL_OK) {
            f->oom = true;
            break;
        }
        f->loss[s - 1] = r.loss;
        f->skipped += r.skipped;
    }
    if (!f->oom) {
        f->peak = r.peak_allocated;
        f->peak_act = r.peak_by_category[MC_WL_ACTIVATIONS];
    }
    if (!f->oom && on_gpu && repeats > 0) {
        double *ts = mc_xmalloc((size_t)repeats * sizeof *ts);
        int n = 0;
        for (int i = 0; i < warmup + repeats; i++) {
            if (mc_tfm_step(t, &r) != MC_WL_OK) break;
            if (i >= warmup) ts[n++] = r.step_time_s;
        }
        if (n > 0) f->time = mc_stats_of(ts, (size_t)n);
        free(ts);
    }
    mc_tfm_destroy(t);
    return 0;
}
