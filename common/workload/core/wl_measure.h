/* wl_measure.h: the one measuring loop every experiment runs over a
 * training workload (wl_handle.h, the MLP's or the Transformer's): steps to
 * a steady state, reads the measured steps' peak, reserved bytes and
 * categories, then on a GPU times further steps; and says what it found
 * wrong, for the experiment to record (this library reports nothing itself).
 *
 *   mc_wl_plan p = {.warm = 1, .reps = 2, .on_gpu = run->on_gpu};
 *   mc_wl_measured f = mc_wl_measure(w, &p);
 *   for (int i = 0; i < mc_wl_problems(&f); i++)
 *       mc_verify_failed(run, what, "%s", f.problem[i]);
 *   ... f.peak, f.cat, f.time ...
 *   mc_wl_measured_free(&f);
 */
#ifndef MC_WL_MEASURE_H
#define MC_WL_MEASURE_H

#include <stdbool.h>
#include <stdint.h>

#include "stats.h"
#include "wl_handle.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int warm;        /* steps before the measured ones, >= 0 (step 1 creates the optimizer's state) */
    int reps;        /* measured steps, >= 1 */
    int timed_warm;  /* on a GPU, after the measured steps: steps left untimed, */
    int timed_reps;  /* then steps timed alone (0: time is the measured steps') */
    bool on_gpu;     /* the workload computes: its losses are checked, the timed steps run */
    bool peak_may_move; /* measured peaks that differ are not a problem (steady still says) */
    bool profile;    /* on a GPU, one more step at the end with its GPU time by kind
                      * (where the workload has one: mc_wl_can_profile) */
} mc_wl_plan;

#define MC_WL_PROBLEMS 8      /* problems kept; more are counted in nproblem */
#define MC_WL_PROBLEM_LEN 320

typedef struct {
    bool oom;                  /* a warm or measured step ran out of memory: they ended there */
    int n;                     /* warm and measured steps that ran (the OOM one not counted) */
    mc_workload_step_result *step; /* [n] their results, in order (mc_wl_measured_free) */
    int measured;              /* how many of them are measured steps */
    uint64_t peak, reserved;   /* max over the measured steps, bytes */
    uint64_t cat[MC_WL_NCAT];  /* live bytes per category at the first measured step's peak */
    bool steady;               /* the same peak allocated at every measured step */
    int skipped;               /* warm and measured steps GradScaler skipped */
    mc_stats time;             /* step time, s (CUDA events): of the timed steps when the plan
                                * has them, else of the measured ones; NaN in model-only or
                                * with no step to time */
    double *times;             /* [ntimes] the step times time was computed from, s, in order:
                                * a verdict judges their distribution (band.h), not one median;
                                * NULL when there are none (mc_wl_measured_free) */
    int ntimes;
    bool have_prof;            /* plan.profile: the profiled step ran (no OOM) */
    mc_prof_table prof;        /* its GPU time by kind (wl_profile_table.h) */
    int nproblem;              /* verification failures found (the first MC_WL_PROBLEMS kept) */
    char problem[MC_WL_PROBLEMS][MC_WL_PROBLEM_LEN];
} mc_wl_measured;

/* Steps w by plan p and checks: every step's categories sum to its peak,
 * a loss is finite (GPU), the allocator's invariants hold after, the
 * measured steps' peaks are equal (a steady state; unless p->peak_may_move). An OOM is a result, not
 * a problem: it ends the steps (a timed step's too, leaving fewer times).
 * w stays the caller's to destroy. */
mc_wl_measured mc_wl_measure(mc_wl *w, const mc_wl_plan *p);
/* The problems kept in f->problem (at most MC_WL_PROBLEMS, the last one
 * saying how many more there were). */
int mc_wl_problems(const mc_wl_measured *f);
void mc_wl_measured_free(mc_wl_measured *f);

#ifdef __cplusplus
}
#endif
#endif
