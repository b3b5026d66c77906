/* mlp_internal.h: what the MLP workload's files share (mlp.c: life
 * cycle; mlp_seq.c: the request sequence of a step; mlp_segments.c: that of
 * checkpoint_sequential's forward and backward; mlp_opt.c: the optimizer's
 * end of the step; mlp_verify.c: the GPU check). Tensors, accounting and
 * the trace are core/wl_ctx.h's, the arithmetic core/wl_gpu.h's. Not for
 * experiments: they use mlp.h. */
#ifndef MC_WORKLOAD_INTERNAL_H
#define MC_WORKLOAD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mlp.h"
#include "workload/core/optimizer_step.h"
#include "workload/core/wl_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One Linear layer and what hangs off it. Step-local fields are live only
 * during a micro-step (or, for grads, until zero_grad). */
typedef struct {
    int64_t in, out;
    wl_t W, b;                 /* parameters, fp32 [out,in], [out] */
    wl_t gW, gb;               /* .grad, fp32 */
    wl_t mW, mb, vW, vb;       /* momentum_buffer or exp_avg; exp_avg_sq */
    wl_t sW, sb;               /* Adam's foreach sqrt temporaries */
    wl_t W16, b16;             /* autocast casts (cached for the forward) */
    wl_t h;                    /* Linear output [b,out] (pre-ReLU; the last layer's is `out`) */
    wl_t r;                    /* ReLU output [b,out] (layers 0..L-2) */
    wl_t gr;                   /* gradient w.r.t. r, from the next layer's mm */
    wl_t gh;                   /* gradient w.r.t. h */
    wl_t gWt, gbt;             /* the mm's and the bias sum's gradient, compute dtype */
    wl_t gW32, gb32;           /* fp16/bf16: ToCopyBackward's fp32 gradients */
    wl_t rr;                   /* checkpoint_sequential: ReLU output recomputed in backward */
} wl_layer;

/* Data the GPU check asks the step to keep (host copies, fp32). */
typedef struct {
    bool on;
    float **x, **y;            /* each micro-step's inputs */
    float **gW, **gb;          /* .grad before the optimizer (after unscale) */
} wl_capture;

struct mc_workload {
    wl_ctx ctx;                /* allocator, tensors, accounting, trace; ctx.step: steps begun */
    mc_workload_config c;

    int L;
    int64_t mb;                /* micro-batch rows B/K */
    int es;                    /* compute element size: 4 fp32, 2 fp16/bf16 */
    wl_layer *ly;
    wl_t x, y, x16, out32, mse, mse_tmp, loss, ones, gmul, gdiv, gout32, gout; /* mse: [b,out] */
    wl_t red_buf, red_sem;     /* reduction scratch (gpu_reduce_kernel) */
    wl_t scaled;                                /* scaler.scale(loss) */
    wl_t ws_fwd, lt_fwd, ws_bwd, lt_bwd;        /* cuBLAS/cuBLASLt workspaces */
    wl_t x16r, h2, r2;                          /* checkpoint recomputation */
    int *seg;                  /* checkpoint_sequential: each module's segment (2L-1 of them,
                                * Linear l is 2l, ReLU l is 2l+1), -1 in the plain tail;
                                * NULL unless cfg.checkpoint_segments */

    wl_optim opt;              /* the optimizer and its GradScaler (core/optimizer_step.c) */
    wl_opt_param *params;      /* W0, b0, W1, b1, ...: model.parameters() */
    wl_capture cap;
};

/* mlp_seq.c: the requests (and, on a GPU, the arithmetic) of one step.
 * Each returns 0, or -1 on OOM (the caller unwinds). */
int wl_seq_params(mc_workload *w);
int wl_seq_micro_step(mc_workload *w, int k);
int wl_seq_optimizer(mc_workload *w, bool *skipped);
void wl_seq_zero_grad(mc_workload *w);

/* mlp_layer.c: the pieces mlp_seq.c and mlp_segments.c share: an addmm's
 * workspaces at first use on handle 0 (forward) or 1 (backward); reduction
 * scratch; Linear l's forward (casts, output *h, workspaces); the parameter
 * gradients of layer l reaching .grad. Each returns 0, or -1 on OOM.
 * mlp_name: "WHAT l", a request's label (a static buffer, valid until the
 * next call). */
const char *mlp_name(const char *what, int l);
int wl_workspaces(mc_workload *w, int handle, bool lt);
int wl_reduce_begin(mc_workload *w, int64_t outputs, int64_t inputs, bool along_rows,
                    int scalar_size);
void wl_reduce_end(mc_workload *w);
int wl_linear_fwd(mc_workload *w, int l, const wl_t *in, wl_t *x16, wl_t *h, int handle);
int wl_param_grads(mc_workload *w, int l);

/* mlp_segments.c: torch.utils.checkpoint.checkpoint_sequential(model, S,
 * x, use_reentrant=False) over the 2L-1 modules of the Sequential. The plan
 * writes each module's segment into seg (-1: the plain tail); 0, or -1 when
 * PyTorch refuses S (S < 1 or S > 2L-1: a segment of no module). */
int wl_seg_plan(int layers, int segments, int *seg);
int wl_seg_forward(mc_workload *w);
int wl_seg_backward(mc_workload *w);

/* The context core/wl_ctx.h's shorthands (A, AK, F) act on, in functions
 * with a `mc_workload *w`; G: the GPU context (NULL in model-only). */
#define WL_CTX (&w->ctx)
#define G (w->ctx.gpu)
#define P(t) WL_PTR(t)
#define FP(t) ((float *)WL_PTR(t))

/* autocast casts linear's arguments bias, weight, input (mlp_seq.c's notes). */
#define CAST_BIAS_FIRST 1

/* The compute dtype (MC_DT_*), and whether it is fp16/bf16 under autocast. */
static inline int mlp_dtype(const mc_workload *w)
{
    return w->c.precision == MC_WL_FP16 ? MC_DT_F16 : w->c.precision == MC_WL_BF16 ? MC_DT_BF16
                                                                                  : MC_DT_F32;
}
static inline bool mlp_lowp(const mc_workload *w) { return w->c.precision != MC_WL_FP32; }

#ifdef __cplusplus
}
#endif
#endif
