/* wl_measure.c: wl_measure.h's loop. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wl_measure.h"

/* Keeps the first MC_WL_PROBLEMS - 1 problems; the last slot says how many
 * did not fit (written by mc_wl_measure once the count is known). */
static void problem(mc_wl_measured *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(mc_wl_measured *f, const char *fmt, ...)
{
    if (f->nproblem < MC_WL_PROBLEMS - 1) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->problem[f->nproblem], MC_WL_PROBLEM_LEN, fmt, ap);
        va_end(ap);
    }
    f->nproblem++;
}

/* The checks of every step: categories summing to the peak, a finite loss. */
static void check_step(mc_wl_measured *f, const mc_workload_step_result *r, bool on_gpu)
{
    uint64_t sum = 0;
    for (int k = 0; k < MC_WL_NCAT; k++) sum += r->peak_by_category[k];
    if (sum != r->peak_allocated)
        problem(f, "step %d: the categories sum to %llu B, the peak is %llu B", r->step,
                (unsigned long long)sum, (unsigned long long)r->peak_allocated);
    if (on_gpu && !isfinite(r->loss))
        problem(f, "step %d: loss %g is not finite", r->step, r->loss);
}

mc_wl_measured mc_wl_measure(mc_wl *w, const mc_wl_plan *p)
{
    mc_wl_measured f;
    memset(&f, 0, sizeof f);
    f.steady = true;
    f.time = mc_stats_one(NAN);
    const int total = p->warm + p->reps;
    f.step = mc_xmalloc((size_t)(total > 0 ? total : 1) * sizeof *f.step);
    const int nt = p->reps > p->timed_reps ? p->reps : p->timed_reps;
    double *t = mc_xmalloc((size_t)(nt > 0 ? nt : 1) * sizeof *t); /* step times, s */
    for (int s = 0; s < total; s++) {
        mc_workload_step_result *r = &f.step[f.n];
        if (mc_wl_step(w, r) != MC_WL_OK) {
            f.oom = true;
            break;
        }
        f.n++;
        f.skipped += r->skipped;
        check_step(&f, r, p->on_gpu);
        if (s < p->warm) continue;
        if (f.measured == 0) memcpy(f.cat, r->peak_by_category, sizeof f.cat);
        else if (r->peak_allocated != f.peak) f.steady = false;
        if (r->peak_allocated > f.peak) f.peak = r->peak_allocated;
        if (r->peak_reserved > f.reserved) f.reserved = r->peak_reserved;
        t[f.measured++] = r->step_time_s;
    }
    if (p->timed_reps <= 0) {
        f.ntimes = f.measured;
    } else if (p->on_gpu && !f.oom) {
        for (int s = 0; s < p->timed_warm + p->timed_reps; s++) {
            mc_workload_step_result r;
            if (mc_wl_step(w, &r) != MC_WL_OK) break;
            check_step(&f, &r, true);
            if (s >= p->timed_warm) t[f.ntimes++] = r.step_time_s;
        }
    }
    if (p->profile && p->on_gpu && !f.oom && mc_wl_can_profile(w)) { /* after the timed steps: they are not slowed */
        mc_workload_step_result r;
        if (mc_wl_profile_step(w, &r, &f.prof) == MC_WL_OK) {
            f.have_prof = true;
            check_step(&f, &r, true);
        }
    }
    if (f.ntimes > 0) {
        f.time = mc_stats_of(t, (size_t)f.ntimes);
        f.times = t;
    } else {
        free(t);
    }
    char err[256];
    if (ca_check_invariants(mc_wl_allocator(w), err, sizeof err) != 0)
        problem(&f, "allocator invariants: %s", err);
    if (!f.oom && !f.steady && !p->peak_may_move)
        problem(&f, "the peak differs between measured steps (not a steady state)");
    if (f.nproblem >= MC_WL_PROBLEMS)
        snprintf(f.problem[MC_WL_PROBLEMS - 1], MC_WL_PROBLEM_LEN, "%d more problems not shown",
                 f.nproblem - (MC_WL_PROBLEMS - 1));
    return f;
}

int mc_wl_problems(const mc_wl_measured *f)
{
    return f->nproblem < MC_WL_PROBLEMS ? f->nproblem : MC_WL_PROBLEMS;
}

void mc_wl_measured_free(mc_wl_measured *f)
{
    free(f->step);
    free(f->times);
    f->step = NULL;
    f->times = NULL;
    f->ntimes = 0;
}
