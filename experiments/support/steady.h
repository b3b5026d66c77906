/* steady.h: a training workload (the MLP or the Transformer) stepped to its
 * steady state and measured, as an experiment reads it (C07, C08). */
#ifndef MC_WORKLOAD_STEADY_H
#define MC_WORKLOAD_STEADY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "experiment.h"
#include "workload/core/wl_handle.h"
#include "workload/transformer/tfm.h"
#include "workload/mlp/mlp.h"

typedef struct {
    bool oom;
    uint64_t peak, reserved;  /* max over the measured steps, bytes */
    uint64_t cat[MC_WL_NCAT]; /* live bytes per category at the first measured step's peak */
    double *t;                /* step times (CUDA events), s, n of them; GPU only; the caller frees */
    int n;                    /* measured steps */
    bool steady;              /* the same peak allocated at every measured step */
} mc_wl_steady;

/* warm unmeasured steps (>= 1), then reps measured ones; then destroys the
 * model. Verification failures go to run, named `what`: a loss that is not
 * finite (GPU), the allocator's invariants, a peak that moves between the
 * measured steps. An OOM ends the steps and sets oom. */
mc_wl_steady mc_wl_measure_steady(mc_run *run, mc_wl *m, const char *what, int warm, int reps);

/* The Transformer of c made (on the GPU when run->on_gpu) and measured as
 * above, into *f. false when it cannot run here (a head size the GPU's
 * kernels lack): a verification failure named `what`, and the reason in why. */
bool mc_wl_measure_tfm(mc_run *run, const mc_tfm_config *c, const char *what, int warm, int reps,
                       mc_wl_steady *f, char *why, size_t why_len);

#endif
