/* mlp.h: the suite's training workload (DESIGN.md "The training
 * workload"): a stack of Linear layers (with bias) and ReLU trained with MSE
 * on random targets, in CUDA C with cuBLAS, every tensor taken from the
 * caching-allocator model (alloc_model.h) in the order PyTorch 2.11's eager
 * mode requests it, so that the model's memory_allocated equals PyTorch's
 * for the same network:
 *
 *   model = Sequential(Linear(in,H), ReLU(), [Linear(H,H), ReLU()] * (L-2), Linear(H,out))
 *   [checkpoint: each Linear+ReLU pair under checkpoint(use_reentrant=False);
 *    checkpoint_segments S: checkpoint_sequential(model, S, x, use_reentrant=False)]
 *   opt   = SGD(lr) | SGD(lr, momentum=0.9) | Adam(lr)      (foreach, as on CUDA)
 *   per step: reset_peak; K micro-steps of randn x, y; [autocast] forward,
 *             mse_loss/K; backward [GradScaler]; then optimizer step, zero_grad
 *
 * Use:
 *   mc_workload_config c = mc_workload_config_default();
 *   c.layers = 4; c.in = c.width = c.out = 1024; c.batch = 256; ...
 *   mc_workload *w = mc_workload_create(&c, on_gpu, NULL, err, sizeof err);
 *   for (...) { mc_workload_step_result r; mc_workload_step(w, &r); ... }
 *   mc_workload_destroy(w);
 *
 * on_gpu: the allocator runs over the CUDA backend (real cudaMalloc
 * segments) and every step computes on the current device (the caller has
 * opened it, e.g. with mc_gpu_open); otherwise the model-only mode runs the
 * same allocation sequence over the host backend, with no GPU and no
 * arithmetic (loss and step time are NaN).
 *
 * An out-of-memory (the device's, or cfg.alloc.limit_bytes as
 * set_per_process_memory_fraction leaves it) is a result: the step returns
 * MC_WL_OOM after releasing what the step held (as a caught OutOfMemoryError
 * followed by zero_grad would), never a crash. Where the request sequence
 * follows PyTorch, and where it had to guess, is said in mlp_seq.c. */
#ifndef MC_WORKLOAD_H
#define MC_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "alloc/alloc_model.h"
#include "workload/core/optimizer.h"
#include "workload/core/wl_profile_table.h"
#include "workload/core/wl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int layers;                 /* L >= 2 Linear layers */
    int64_t in, width, out;     /* D, H, O features (>= 1) */
    int64_t batch;              /* B >= 1 rows per step, divisible by accum */
    int accum;                  /* K >= 1 micro-steps of B/K rows */
    mc_wl_optimizer optimizer;  /* sgd, momentum or adam */
    mc_wl_precision precision;  /* fp16, bf16: autocast compute, fp32 master weights */
    bool checkpoint;            /* non-reentrant checkpoint of each Linear+ReLU pair */
    int checkpoint_segments;    /* S >= 1: checkpoint_sequential(model, S, x, use_reentrant=False)
                                 * over the 2L-1 modules, fp32 only, not with checkpoint;
                                 * 0: off (the default) */
    double lr;                  /* 0: the default (sgd and momentum 0.01, adam 1e-3) */
    ca_config alloc;            /* allocator settings; limit_bytes is --limit */
    uint64_t host_capacity;     /* model-only: the simulated device, bytes (default 80 GiB) */
    int inject_overflow_step;   /* fp16: step whose gradients are made infinite (0: none) */
    bool fixed_data;            /* every micro-step draws the same x, y (loss must fall) */
    uint64_t seed;              /* weights and data */
    int sm_count;               /* the GPU's SMs, for PyTorch's reduction scratch (132) */
    int trace_steps;            /* steps written to the trace (default 2, as mlp_reference.py) */
} mc_workload_config;

typedef struct mc_workload mc_workload;

/* No shape set (layers 0): the caller fills layers, in, width, out, batch. */
mc_workload_config mc_workload_config_default(void);
/* 0, or -1 with one line in err: layers < 2, a zero size, batch not
 * divisible by accum, an allocator setting PyTorch refuses, sizes whose
 * bytes overflow, checkpoint_segments outside 0..2L-1, with checkpoint, or
 * with fp16/bf16 (autocast under checkpoint_sequential is not modelled). */
int mc_workload_config_check(const mc_workload_config *c, char *err, size_t len);

/* Builds the model (its parameters are the first requests). trace, if not
 * NULL, receives the request sequence as memclaims-trace v1 (set-up and the
 * first cfg.trace_steps steps; the caller closes it). Returns NULL with the
 * reason in err for a bad config. Parameters that do not fit are not an
 * error: mc_workload_setup_status says MC_WL_OOM and every step returns it. */
mc_workload *mc_workload_create(const mc_workload_config *c, bool on_gpu, FILE *trace,
                                char *err, size_t len);
mc_wl_status mc_workload_setup_status(const mc_workload *w);
/* One training step; fills r and returns r->status. */
mc_wl_status mc_workload_step(mc_workload *w, mc_workload_step_result *r);
/* build/workload --profile (on a GPU only): one more step, as
 * mc_workload_step, with each GPU operation timed by a pair of CUDA events;
 * t gets its GPU time by kind (wl_profile_table.h). Not traced. Where
 * set-up did not fit no step runs: t->total_ms is 0. */
mc_wl_status mc_workload_profile_step(mc_workload *w, mc_workload_step_result *r, mc_prof_table *t);
/* Frees every tensor, the allocator, and on a GPU the handles and streams. */
void mc_workload_destroy(mc_workload *w);

const mc_workload_config *mc_workload_get_config(const mc_workload *w);
const ca_allocator *mc_workload_allocator(const mc_workload *w);
/* Bytes now live in each category (they sum to allocated_bytes.current). */
void mc_workload_live_by_category(const mc_workload *w, uint64_t out[MC_WL_NCAT]);

/* The workload behind core/wl_handle.h's handle, which owns it from then on
 * (mc_wl_destroy destroys it); NULL for NULL, so a failed create passes
 * through: mc_workload_handle(mc_workload_create(...)). */
typedef struct mc_wl mc_wl;
mc_wl *mc_workload_handle(mc_workload *w);

/* Analytic figures: parameter count sum(in*out + out), and its fp32 bytes. */
uint64_t mc_workload_param_count(const mc_workload_config *c);

#ifdef __cplusplus
}
#endif
#endif
