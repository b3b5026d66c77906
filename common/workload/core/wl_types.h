/* wl_types.h: what every training workload of the suite (mlp/, transformer/,
 * sharded/) reports in the same terms: the compute precision, a step's
 * status, the categories each allocated byte is counted in, a step's
 * figures and the CSV row build/workload and the PyTorch references write. */
#ifndef MC_WL_TYPES_H
#define MC_WL_TYPES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The card the model-only runs simulate unless told otherwise. */
#define MC_WL_DEFAULT_HOST_CAPACITY (80ULL << 30) /* bytes: an H100 80GB-class card */
#define MC_WL_DEFAULT_SM_COUNT 132                /* H100 SXM5: PyTorch's reduction scratch */

typedef enum { MC_WL_FP32, MC_WL_FP16, MC_WL_BF16 } mc_wl_precision;
typedef enum { MC_WL_OK = 0, MC_WL_OOM = 1 } mc_wl_status;

/* What each allocated byte is for (the step's peak is broken down by these). */
typedef enum {
    MC_WL_WEIGHTS,     /* fp32 parameters */
    MC_WL_CASTS,       /* autocast's fp16/bf16 copies of weights and biases */
    MC_WL_GRADS,       /* parameter gradients: .grad, and their fp16/bf16 forms in flight */
    MC_WL_OPTIMIZER,   /* momentum buffers, exp_avg, exp_avg_sq, the step's foreach temporaries */
    MC_WL_ACTIVATIONS, /* x, y, layer outputs, their gradients, loss temporaries, input casts */
    MC_WL_WORKSPACE,   /* cuBLAS and cuBLASLt workspaces */
    MC_WL_OTHER,       /* scalars (loss, its gradients, GradScaler state), reduction scratch */
    MC_WL_NCAT
} mc_wl_category;

typedef struct {
    int step;                   /* 1, 2, ... */
    mc_wl_status status;
    bool skipped;               /* GradScaler skipped the optimizer step (inf/NaN gradients) */
    uint64_t peak_allocated;    /* max_memory_allocated() over the step (peak reset at its start) */
    uint64_t allocated_end;     /* memory_allocated() after zero_grad */
    uint64_t peak_reserved, reserved_end;
    uint64_t peak_by_category[MC_WL_NCAT]; /* live bytes of each at the peak; they sum to it */
    double step_time_s;         /* CUDA events around the step; NaN in model-only */
    double loss;                /* sum over micro-steps of loss/K; NaN in model-only */
    double loss_scale;          /* GradScaler's scale after the step (1 unless fp16) */
} mc_workload_step_result;

const char *mc_wl_category_name(mc_wl_category c);   /* "weights", "casts", ... */
const char *mc_wl_precision_name(mc_wl_precision p); /* "fp32", "fp16", "bf16" */

/* The CSV build/workload and tests/torch/mlp_reference.py write: the header,
 * and one row per step (empty fields for NaN). */
#define MC_WORKLOAD_CSV_HEADER                                                            \
    "step,peak_allocated,allocated_end,peak_reserved,reserved_end,step_time_s,loss,"      \
    "loss_scale,skipped,status,peak_weights,peak_casts,peak_grads,peak_optimizer,"        \
    "peak_activations,peak_workspace,peak_other"
void mc_workload_csv_row(FILE *fp, const mc_workload_step_result *r);

#ifdef __cplusplus
}
#endif
#endif
