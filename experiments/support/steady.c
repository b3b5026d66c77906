/* steady.c: steady.h's measuring loop, shared by C07 and C08. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_model.h"
#include "check.h"
#include "steady.h"

mc_wl_steady mc_wl_measure_steady(mc_run *run, mc_wl *m, const char *what, int warm, int reps)
{
    mc_wl_steady f = {.t = mc_xmalloc((size_t)reps * sizeof(double)), .steady = true};
    for (int s = 0; s < warm + reps; s++) {
        mc_workload_step_result r;
        if (mc_wl_step(m, &r) != MC_WL_OK) {
            f.oom = true;
            break;
        }
        if (run->on_gpu && !isfinite(r.loss))
            mc_verify_failed(run, what, "step %d: loss %g is not finite", r.step, r.loss);
        if (s < warm) continue;
        if (f.n == 0) memcpy(f.cat, r.peak_by_category, sizeof f.cat);
        else if (r.peak_allocated != f.peak) f.steady = false;
        if (r.peak_allocated > f.peak) f.peak = r.peak_allocated;
        if (r.peak_reserved > f.reserved) f.reserved = r.peak_reserved;
        f.t[f.n++] = r.step_time_s;
    }
    char err[256];
    if (ca_check_invariants(mc_wl_allocator(m), err, sizeof err) != 0)
        mc_verify_failed(run, what, "allocator invariants: %s", err);
    if (!f.oom && !f.steady)
        mc_verify_failed(run, what, "the peak differs between measured steps (not a steady state)");
    mc_wl_destroy(m);
    return f;
}

bool mc_wl_measure_tfm(mc_run *run, const mc_tfm_config *c, const char *what, int warm, int reps,
                       mc_wl_steady *f, char *why, size_t why_len)
{
    char err[256];
    mc_wl *m = mc_tfm_handle(mc_tfm_create(c, run->on_gpu, NULL, err, sizeof err));
    if (!m) {
        mc_verify_failed(run, what, "the Transformer workload cannot run here: %s", err);
        snprintf(why, why_len, "%s", err);
        return false;
    }
    *f = mc_wl_measure_steady(run, m, what, warm, reps);
    return true;
}
