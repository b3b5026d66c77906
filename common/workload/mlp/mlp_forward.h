/* mlp_forward.h: one forward pass of the training workload's network
 * (mlp.h), as evaluation runs it, with and without autograd:
 *
 *   x = randn(B, in)
 *   out = model(x)                  grad: as in training, the graph keeps
 *                                   what each layer's backward needs
 *   with torch.no_grad(): out = model(x)   nothing is saved; a layer's input
 *                                   goes once the next layer has its output
 *   del out, x
 *
 * Every tensor comes from the workload's allocator in the order PyTorch 2.11
 * requests it (mlp_forward.c says which tensors autograd keeps), so the
 * peak equals PyTorch's max_memory_allocated() for the same forward. fp32
 * without checkpointing only: under autocast the weight casts are cached
 * whether or not grad is enabled, which this file does not model. */
#ifndef MC_WORKLOAD_FORWARD_H
#define MC_WORKLOAD_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "mlp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    mc_wl_status status;
    uint64_t peak_allocated;   /* max_memory_allocated(), peak reset just before x = randn */
    uint64_t allocated_out;    /* memory_allocated() when model(x) returns, out held (with
                                  grad: and the graph's saved tensors) */
    uint64_t allocated_end;    /* memory_allocated() after del out, x */
    uint64_t peak_reserved;    /* max_memory_reserved() over the same span */
    uint64_t saved_bytes;      /* block bytes the graph alone keeps when model(x) returns:
                                  the ReLU outputs; 0 under no_grad (x is the caller's) */
    uint64_t peak_by_category[MC_WL_NCAT]; /* live bytes of each at the peak; they sum to it */
    double time_s;             /* CUDA events around x = randn ... model(x); NaN in model-only */
} mc_workload_forward_result;

/* One forward of a micro-batch (B/K rows) on w, grad or under no_grad. The
 * weights are w's (made by mc_workload_create); the cuBLAS and cuBLASLt
 * workspaces of the forward thread are made at the first addmm if w has none
 * yet and stay, as in training. On a GPU out_host (if not NULL) receives the
 * output, B/K x out floats. An OOM frees what the forward held and returns
 * MC_WL_OOM; the figures are then those at the failure. Exits (CHECK) for a
 * configuration other than fp32 without checkpointing. */
mc_wl_status mc_workload_forward(mc_workload *w, bool grad, float *out_host,
                                 mc_workload_forward_result *r);

#ifdef __cplusplus
}
#endif
#endif
