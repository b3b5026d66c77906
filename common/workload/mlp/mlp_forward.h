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
 * whether or not grad is enabled, which this file does not model. The
 * figures are core/wl_types.h's mc_workload_forward_result. The MLP has no
 * dropout and no fast path, so eval() is train() and inference_mode is
 * no_grad for it (its handle's forward maps the modes so). */
#ifndef MC_WORKLOAD_FORWARD_H
#define MC_WORKLOAD_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "mlp.h"

#ifdef __cplusplus
extern "C" {
#endif

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
