/* wl_types.h: what every training workload of the suite (mlp/, transformer/,
 * sharded/) reports in the same terms: the compute precision, a step's
 * status, the categories each allocated byte is counted in, a step's
 * figures and the CSV row build/workload and the PyTorch references write;
 * a forward pass's modes and figures (C27). */
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

/* How a forward pass alone is evaluated (C27): the module's mode and autograd's. */
typedef enum {
    MC_WL_FWD_GRAD,      /* model.train(), autograd on: the graph keeps its saved tensors */
    MC_WL_FWD_NO_GRAD,   /* model.train() under torch.no_grad(): dropout on, nothing saved */
    MC_WL_FWD_EVAL,      /* model.eval() under torch.no_grad(): no dropout; PyTorch's
                            inference fast paths where their conditions hold */
    MC_WL_FWD_INFERENCE, /* model.eval() under torch.inference_mode() */
    MC_WL_FWD_NMODE
} mc_wl_fwd_mode;

/* One forward pass of a fresh model, as evaluation runs it:
 *   [peak reset] x = randn (the Transformer: src, tgt); out = model(...);  del out, x
 * with the figures PyTorch's allocator statistics give at each point. */
typedef struct {
    mc_wl_status status;
    uint64_t allocated_before; /* memory_allocated() before x: the weights (and any workspace
                                  made earlier) */
    uint64_t peak_allocated;   /* max_memory_allocated(), peak reset just before x = randn */
    uint64_t allocated_out;    /* memory_allocated() when model(x) returns, out held (with
                                  grad: and the graph's saved tensors) */
    uint64_t allocated_end;    /* memory_allocated() after del out, x */
    uint64_t peak_reserved;    /* max_memory_reserved() over the same span */
    uint64_t saved_bytes;      /* block bytes the graph alone keeps when model(x) returns
                                  (freed with it at del out); 0 without a graph */
    uint64_t output_bytes;     /* out.numel() * out.element_size() */
    int fast_layers;           /* layers run by torch._transformer_encoder_layer_fwd */
    int fast_mha;              /* attentions run by torch._native_multi_head_attention from
                                  MultiheadAttention.forward (the decoder's self-attention) */
    uint64_t peak_by_category[MC_WL_NCAT]; /* live bytes of each at the peak; they sum to it */
    double time_s;             /* CUDA events around x = randn ... model(x); NaN in model-only */
} mc_workload_forward_result;

const char *mc_wl_category_name(mc_wl_category c);   /* "weights", "casts", ... */
/* "grad", "no_grad", "eval_no_grad", "inference_mode" (C27's variants, and the
 * modes of tests/torch/no_grad_reference.py). */
const char *mc_wl_fwd_mode_name(mc_wl_fwd_mode m);
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
