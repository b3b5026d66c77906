/* tfm_wrap.h: what a data-parallel wrapper of the Transformer sees
 * (FSDP2's fully_shard on each encoder layer, then on the whole model:
 * common/workload/sharded_tfm.c). The model keeps its own request sequence
 * and calls the wrapper's hooks where PyTorch 2.11 runs FSDP2's:
 *
 *   pre_forward(l)    the layer's forward pre-hook (before its first op);
 *                     then, for a layer whose input needs a gradient (l > 0),
 *                     RegisterPostBackwardFunction on that input: an
 *                     identity node on the tape, whose backward calls
 *   post_backward(l)  ... once every node of the layer has run
 *   post_forward(l)   the forward hook, when the layer returns
 *   forward_end       the root's post-forward, when model(src) returns
 *   pre_backward(l)   a hook on the layer's output: before the node that
 *                     made it runs in backward
 *   backward_end      the engine's final callback, before backward() returns
 *   zero_grad         in zero_grad(set_to_none=True), after the model's own
 *   step_begin        after the step's peak is reset, before its first request
 *   step_end          after zero_grad of a step that ran whole, before the
 *                     model waits for the GPU (a runner waits for the step
 *                     here, under its deadline)
 *
 * Each int hook returns 0, or -1 when a request was refused (the step is
 * then out of memory). The wrapper takes the parameters' storage over
 * (mc_tfm_param: whole after set-up, its to shard and free; while a layer
 * is gathered, its unsharded storage) and their .grad (mc_tfm_grad:
 * AccumulateGrad's, its to reduce and free), and gives the optimizer its
 * own list (the local shards). nn.TransformerEncoder only, fp32, one
 * micro-step, no checkpointing, offload, --fused or causal mask. On a GPU
 * the model's kernels read each parameter where the wrapper put its
 * storage, and write each .grad where AccumulateGrad's request put it. */
#ifndef MC_TFM_WRAP_H
#define MC_TFM_WRAP_H

#include <stddef.h>
#include <stdint.h>

#include "alloc/alloc_model.h"
#include "tfm.h"
#include "workload/core/optimizer_step.h"
#include "workload/core/wl_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    void *ctx;
    int (*pre_forward)(void *ctx, int layer);
    void (*post_forward)(void *ctx, int layer);
    void (*forward_end)(void *ctx);
    int (*pre_backward)(void *ctx, int layer);
    int (*post_backward)(void *ctx, int layer);
    int (*backward_end)(void *ctx);
    void (*zero_grad)(void *ctx);
    void (*step_begin)(void *ctx);
    void (*step_end)(void *ctx);
} mc_tfm_wrap_hooks;

/* mc_tfm_create(c, false, trace, ...) over the caller's backend (a host
 * device whose segments go where a PyTorch run put its own, for one). */
mc_tfm *mc_tfm_create_on(const mc_tfm_config *c, ca_backend be, FILE *trace, char *err, size_t len);

/* 0, or -1 with one line in err: what the wrapper does not cover. */
int mc_tfm_wrap_check(const mc_tfm_config *c, char *err, size_t len);
/* Installs the hooks (kept by value; any may be NULL) and the optimizer's
 * list (np parameters in model.parameters() order, kept by reference;
 * NULL: the model's own) on a model before its first step. 0, or -1 with
 * err. */
int mc_tfm_wrap(mc_tfm *T, const mc_tfm_wrap_hooks *h, const wl_opt_param *ps, int np, char *err, size_t len);

/* step_begin and step_end alone, on a model that no wrapper holds (a
 * runner's one-GPU check), before its first step. */
void mc_tfm_step_hooks(mc_tfm *T, void *ctx, void (*begin)(void *ctx), void (*end)(void *ctx));

wl_ctx *mc_tfm_ctx(mc_tfm *T);
int mc_tfm_nparams(const mc_tfm *T);               /* model.parameters(): 12 a layer */
int mc_tfm_layer_params(void);                     /* 12 */
wl_t *mc_tfm_param(mc_tfm *T, int i);
wl_t *mc_tfm_grad(mc_tfm *T, int i);
const char *mc_tfm_param_name(const mc_tfm *T, int i);
/* Parameter i's shape as dim0 rows of rest elements (a bias: rest 1). */
void mc_tfm_param_dims(const mc_tfm *T, int i, int64_t *dim0, int64_t *rest);

#ifdef __cplusplus
}
#endif
#endif
