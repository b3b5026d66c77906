/* wl_ctx.h: the tensor context the training workloads (mlp/, transformer/,
 * sharded/) build on: the caching-allocator model over the host backend
 * (model-only) or the CUDA one (with the GPU context, wl_gpu.h), and every
 * tensor requested through it: the live list an OOM unwinds, the bytes of
 * each category and their breakdown at the peak, the request trace
 * (memclaims-trace v1) of set-up and the first trace_steps steps. Internal
 * to the workloads: experiments use the models' public headers. */
#ifndef MC_WL_CTX_H
#define MC_WL_CTX_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "alloc/alloc_host.h"
#include "alloc/alloc_model.h"
#include "wl_gpu.h"
#include "wl_profile_table.h"
#include "wl_types.h"

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

typedef struct {
    ca_host_device *host;      /* model-only: the simulated device (else NULL) */
    ca_allocator *a;
    mc_wl_gpu *gpu;            /* handles, stream, events; NULL in model-only */
    FILE *trace;               /* NULL: no trace */
    int step;                  /* steps begun (0 during set-up), for the trace */
    int trace_steps;           /* steps written to the trace after set-up */
    uint64_t next_id;          /* the last request's number */
    bool oom;                  /* a request was refused (set by wl_alloc; the model clears it) */
    mc_wl_status setup_status; /* MC_WL_OOM: set-up did not fit, every step says so */

    wl_t **live;               /* every live tensor (for the OOM unwind) */
    int32_t n_live, cap_live;
    uint64_t cat_bytes[MC_WL_NCAT];           /* live bytes of each category (block sizes) */
    uint64_t peak_seen, peak_cat[MC_WL_NCAT]; /* the step's peak so far and its breakdown */
    ca_backend cuda;           /* on a GPU: the CUDA backend, whose segments are recorded here */
    uint64_t *seg_addr, *seg_bytes; /* ... in the order the driver gave them */
    int nseg, cap_seg;
} wl_ctx;

/* Opens the allocator model with `alloc` over the CUDA backend (on_gpu:
 * with the GPU's streams, handles and events for micro_steps losses) or
 * over a host device of host_capacity bytes. trace as wl_ctx.trace. */
void wl_ctx_open(wl_ctx *x, const ca_config *alloc, bool on_gpu, uint64_t host_capacity,
                 int micro_steps, FILE *trace, int trace_steps);
/* The same over a backend the caller made (no GPU context, no trace). */
void wl_ctx_open_backend(wl_ctx *x, const ca_config *alloc, ca_backend be);
/* On a GPU: the segments the driver gave, in order (addresses and bytes;
 * n of them), to place a host model's where these went; else 0. */
int wl_ctx_segments(const wl_ctx *x, const uint64_t **addr, const uint64_t **bytes);
/* Frees every live tensor (untraced), the allocator, the host device, the GPU context. */
void wl_ctx_close(wl_ctx *x);

/* --profile (wl_gpu.h): every GPU operation of the steps run between begin
 * and end is timed (on a GPU only); t gets their split by kind. Those steps
 * are not traced: the trace keeps the steps of the CSV. */
void wl_ctx_profile_begin(wl_ctx *x);
void wl_ctx_profile_end(wl_ctx *x, mc_prof_table *t);

/* A request of `bytes` into t (not live), counted as cat; keep: survives
 * wl_unwind. Returns 0, or -1 when the allocator is out of memory (nothing
 * allocated, x->oom set, a "# oom" line traced). */
int wl_alloc(wl_ctx *x, wl_t *t, uint64_t bytes, mc_wl_category cat, bool keep,
             const char *what);
/* The same on a stream (0: the default stream, wl_alloc's): the block
 * returns to that stream's pool and is reused only there. */
int wl_alloc_on(wl_ctx *x, uint64_t stream, wl_t *t, uint64_t bytes, mc_wl_category cat, bool keep,
                const char *what);
void wl_free(wl_ctx *x, wl_t *t);            /* no-op when t is not live */
void wl_move(wl_ctx *x, wl_t *dst, wl_t *src); /* dst takes src's block */
/* After an OOM: every live tensor not kept goes, newest first, as when a
 * caught OutOfMemoryError drops its frames. */
void wl_unwind(wl_ctx *x);
void wl_free_all(wl_ctx *x);                 /* every live tensor, newest first */

/* The step's start: "reset_peak" traced, the allocator's peak reset, the
 * peak breakdown restarted from what is live. */
void wl_reset_peak(wl_ctx *x);
/* The step's figures from the allocator's statistics and the peak's categories. */
void wl_fill_stats(const wl_ctx *x, mc_workload_step_result *r);
void wl_live_by_category(const wl_ctx *x, uint64_t out[MC_WL_NCAT]);

/* One trace line (a newline added) while set-up or the first trace_steps
 * steps run; wl_tracing says whether lines are written now. */
void wl_trace(wl_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool wl_tracing(const wl_ctx *x);

/* Shorthands of a request sequence, for functions that return -1 when a
 * request is refused: A requests a tensor of `cat`, AK one kept past the
 * step (wl_unwind spares it), F frees it. They act on WL_CTX, the context
 * expression the model's internal header defines (e.g. (&w->ctx)). */
#define A(t, bytes, cat, what)                                                              \
    do {                                                                                    \
        if (wl_alloc(WL_CTX, &(t), (uint64_t)(bytes), (cat), false, (what)) != 0) return -1; \
    } while (0)
#define AK(t, bytes, cat, what)                                                             \
    do {                                                                                    \
        if (wl_alloc(WL_CTX, &(t), (uint64_t)(bytes), (cat), true, (what)) != 0) return -1; \
    } while (0)
#define F(t) wl_free(WL_CTX, &(t))

#ifdef __cplusplus
}
#endif
#endif
