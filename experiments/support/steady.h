/* steady.h: an experiment's side of the measuring loop (core/wl_measure.h):
 * what the loop finds wrong recorded as failed verifications, and seed
 * 000's Transformer made or the reason it cannot run here said (C07, C08). */
#ifndef MC_SUPPORT_STEADY_H
#define MC_SUPPORT_STEADY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "experiment.h"
#include "stats.h"
#include "workload/core/wl_handle.h"
#include "workload/core/wl_measure.h"
#include "workload/transformer/tfm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mc_wl_measure(w, p), each problem it found a failed verification named
 * `what`; then destroys w. The caller frees the result (mc_wl_measured_free). */
mc_wl_measured mc_wl_measure_run(mc_run *run, mc_wl *w, const char *what, const mc_wl_plan *p);

/* The Transformer of c made (on the GPU when run->on_gpu) and measured as
 * above, into *f. false when it cannot run here (a head size the GPU's
 * kernels lack): a verification failure named `what`, and the reason in why. */
bool mc_wl_measure_tfm(mc_run *run, const mc_tfm_config *c, const char *what, const mc_wl_plan *p,
                       mc_wl_measured *f, char *why, size_t why_len);

/* The figures C23 and C25 read of one Transformer configuration: steps to
 * MC_TFM_STEADY_STEP (the last one's peak is the steady one: Adam's state
 * exists and block placement has settled, as in PyTorch), then on a GPU
 * --warmup + --repeats timed steps and one profiled step. */
typedef struct {
    bool oom;                        /* a step ran out of memory (figures unset) */
    int skipped;                     /* steps GradScaler skipped (an inf or NaN gradient) */
    uint64_t peak, peak_act;         /* bytes: peak allocated, activations at it, step 3 */
    double loss[MC_TFM_STEADY_STEP]; /* the first steps' losses (NAN without a GPU) */
    mc_stats time;                   /* step time, s (NAN without a GPU) */
    double *times;                   /* [ntimes] every timed step's time, s, for band.h's
                                      * verdicts (NULL without a GPU; mc_tfm_figures_free) */
    int ntimes;
    bool have_prof;                  /* on a GPU: one more step, profiled, after the timed ones */
    mc_prof_table prof;              /* its GPU time by kind (wl_profile_table.h) */
    uint64_t *seg_addr, *seg_bytes;  /* on a GPU: the segments the driver gave, in order */
    int nseg;                        /* (mc_tfm_check_gpu_peak follows them) */
} mc_tfm_figures;
/* The Transformer of c made (on the GPU when on_gpu; one that cannot be made
 * ends the run) and measured so, the loop's problems failed verifications
 * named what. The caller frees the result (mc_tfm_figures_free). */
mc_tfm_figures mc_tfm_measure_run(mc_run *run, const mc_tfm_config *c, bool on_gpu, const char *what);
void mc_tfm_figures_free(mc_tfm_figures *f);

/* Whether a GPU run's peak is its model's: c's host model, measured as
 * above, once under the host device's placement rule and once with its
 * segments where the GPU's went (gpu->seg_addr; wl_placed.h). At the GPU's
 * addresses the model makes the GPU's choices, so its peak must equal the
 * GPU's to the byte; where it does not, the requests differ: a failed
 * verification named what. Under the rule, a block may land elsewhere among
 * real addresses: a difference there is a finding (note). false when the
 * verification failed. */
bool mc_tfm_check_gpu_peak(mc_run *run, const mc_tfm_config *c, const mc_tfm_figures *gpu, const char *what,
                           bool note);

#ifdef __cplusplus
}
#endif
#endif
