/* mlp_internal.h: what the workload's files share (mlp.c: life
 * cycle, tensors, accounting, trace; mlp_seq.c: the request sequence of
 * a step; mlp_segments.c: that of checkpoint_sequential's forward and
 * backward; wl_gpu.cu: the arithmetic; mlp_verify.c: the GPU check). Not for
 * experiments: they use mlp.h. */
#ifndef MC_WORKLOAD_INTERNAL_H
#define MC_WORKLOAD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "alloc/alloc_host.h"
#include "alloc/alloc_model.h"
#include "workload/core/wl_gpu.h"
#include "mlp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor: a block of the allocator. addr 0: not live. */
typedef struct {
    uint64_t addr;
    uint64_t bytes;    /* requested */
    uint64_t id;       /* request number, for the trace */
    int32_t slot;      /* index in the live list */
    uint8_t cat;       /* mc_wl_category */
    bool keep;         /* survives an OOM unwind (parameters, state, workspaces) */
} wl_t;

#define WL_PTR(t) ((void *)(uintptr_t)(t).addr)

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
    mc_workload_config c;
    bool on_gpu;
    ca_host_device *host;
    ca_allocator *a;
    mc_wl_gpu *gpu;            /* NULL in model-only */
    FILE *trace;
    uint64_t next_id;
    mc_wl_status setup_status;

    wl_t **live;               /* every live tensor (for the OOM unwind) */
    int32_t n_live, cap_live;
    uint64_t cat_bytes[MC_WL_NCAT];
    uint64_t peak_seen, peak_cat[MC_WL_NCAT];

    int L;
    int64_t mb;                /* micro-batch rows B/K */
    int es;                    /* compute element size: 4 fp32, 2 fp16/bf16 */
    wl_layer *ly;
    wl_t x, y, x16, out32, mse, mse_tmp, loss, ones, gmul, gdiv, gout32, gout; /* mse: [b,out] */
    wl_t red_buf, red_sem;     /* reduction scratch (gpu_reduce_kernel) */
    wl_t scaled, scale, growth;                 /* GradScaler */
    wl_t inv_d, inv_r, inv_f, found, found_c, inv_c;
    wl_t ws_fwd, lt_fwd, ws_bwd, lt_bwd;        /* cuBLAS/cuBLASLt workspaces */
    wl_t x16r, h2, r2;                          /* checkpoint recomputation */
    int *seg;                  /* checkpoint_sequential: each module's segment (2L-1 of them,
                                * Linear l is 2l, ReLU l is 2l+1), -1 in the plain tail;
                                * NULL unless cfg.checkpoint_segments */

    int step;                  /* steps begun */
    bool opt_ready;            /* optimizer state exists */
    int opt_steps;             /* optimizer steps taken (Adam's step count) */
    double scale_host;         /* GradScaler scale, mirrored on the host */
    int growth_tracker;
    wl_capture cap;
};

/* mlp.c: tensors and accounting. wl_alloc returns 0, or -1 when the
 * allocator is out of memory (nothing allocated). */
int wl_alloc(mc_workload *w, wl_t *t, uint64_t bytes, mc_wl_category cat, bool keep,
             const char *what);
void wl_free(mc_workload *w, wl_t *t);
/* The step's figures from the allocator's statistics and the peak's categories. */
void wl_fill_stats(const mc_workload *w, mc_workload_step_result *r);
/* The allocator model over the CUDA backend (on_gpu: with the GPU's streams,
 * handles and events for micro_steps losses) or over a host device of
 * host_capacity bytes. */
void wl_open_allocator(mc_workload *w, const ca_config *alloc, bool on_gpu, uint64_t host_capacity,
                       int micro_steps);
void wl_move(mc_workload *w, wl_t *dst, wl_t *src);   /* dst takes src's block */
void wl_trace(mc_workload *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool wl_tracing(const mc_workload *w);

/* mlp_seq.c: the requests (and, on a GPU, the arithmetic) of one step.
 * Each returns 0, or -1 on OOM (the caller unwinds). */
int wl_seq_params(mc_workload *w);
int wl_seq_micro_step(mc_workload *w, int k);
int wl_seq_optimizer(mc_workload *w, bool *skipped);
void wl_seq_zero_grad(mc_workload *w);

/* Pieces of mlp_seq.c that mlp_segments.c shares: an addmm's
 * workspaces at first use on handle 0 (forward) or 1 (backward); reduction
 * scratch; Linear l's forward (casts, output *h, workspaces); the parameter
 * gradients of layer l reaching .grad. Each returns 0, or -1 on OOM. */
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

/* PyTorch's gpu_reduce_kernel scratch (Reduce.cuh setReduceConfig) for a
 * reduction of `inputs` values into each of `outputs` outputs; along_rows:
 * the reduced dimension is not the fastest-moving one (a bias gradient's
 * sum over rows); arg and scalar sizes in bytes. Sets the bytes of the global
 * buffer and of the semaphores, both 0 when no global reduction is needed. */
void wl_reduce_scratch(int64_t outputs, int64_t inputs, bool along_rows, int arg_size,
                       int scalar_size, int sm_count, uint64_t *buf, uint64_t *sem);

/* Shorthands of the request sequence (mlp_seq.c, mlp_opt.c), for
 * functions with a `mc_workload *w` that return -1 when a request is refused:
 * A requests a tensor of `cat`, AK one kept past the step, F frees it, G is
 * the GPU context (NULL in model-only). */
#define G (w->gpu)
#define A(t, bytes, cat, what)                                                      \
    do {                                                                            \
        if (wl_alloc(w, &(t), (uint64_t)(bytes), (cat), false, (what)) != 0) return -1; \
    } while (0)
#define AK(t, bytes, cat, what)                                                     \
    do {                                                                            \
        if (wl_alloc(w, &(t), (uint64_t)(bytes), (cat), true, (what)) != 0) return -1; \
    } while (0)
#define F(t) wl_free(w, &(t))

#ifdef __cplusplus
}
#endif
#endif
