/* wl_profile.h: build/workload --profile on the GPU: a pool of CUDA event
 * pairs, one pair recorded on the step's stream around each GPU operation
 * (wl_profile.cu), summed by kind into wl_profile_table.h's table.
 *
 * Every launch wrapper (wl_gpu.cu, wl_kernels.cu, wl_grads.cu,
 * optimizer_kernels.cu, the Transformer's tfm_*.cu; the attention kernels at
 * their call sites in tfm_attn.c) opens a scope of its kind; those that put
 * nothing on the stream (set-up, the step's events, host reads of pinned
 * slots, pinned allocation) have none. Off (the default, and every
 * measured step), the scope reads one pointer of the GPU context, finds it
 * NULL and records nothing. On (mc_gpu_profile_start), the outermost scope
 * records a begin and an end event: a wrapper that calls another is counted
 * once, as its own kind. Events on one stream, so the operations never
 * overlap and their times add up. An operation runs from its begin event to
 * its end event: where the GPU waits inside a wrapper (its launch, with the
 * queue empty) the wait counts to the operation, not to idle. */
#ifndef MC_WL_PROFILE_H
#define MC_WL_PROFILE_H

#include "wl_gpu.h"
#include "wl_profile_table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mc_wl_prof mc_wl_prof;
struct CUstream_st; /* cudaStream_t's struct: this header needs no CUDA */

/* wl_gpu.cu's: from start, every operation on the context's stream is
 * timed; stop waits for them and fills t, total being the elapsed time of
 * the steps ended in between (mc_gpu_step_end; 0 if none). */
void mc_gpu_profile_start(mc_wl_gpu *g);
void mc_gpu_profile_stop(mc_wl_gpu *g, mc_prof_table *t);
/* The context's recorder while profiling, else NULL. */
mc_wl_prof *mc_gpu_prof(mc_wl_gpu *g);

/* A recorder on `stream` with `ops` event pairs made now (more are made
 * during the step if it needs them: mc_prof_grown counts them). */
mc_wl_prof *mc_prof_create(struct CUstream_st *stream, long ops);
void mc_prof_destroy(mc_wl_prof *p);
/* One operation of `kind` starts / ends on the stream. p NULL: nothing. */
void mc_prof_begin(mc_wl_prof *p, mc_prof_kind kind);
void mc_prof_end(mc_wl_prof *p);
/* Each recorded operation's elapsed time into t (mc_prof_table_add). Waits
 * for the stream first. Every begin must have had its end. */
void mc_prof_sum(mc_wl_prof *p, mc_prof_table *t);
/* Event pairs made after mc_prof_create, during the step (host time the
 * step's idle includes). */
long mc_prof_grown(const mc_wl_prof *p);

#ifdef __cplusplus
}

/* The launchers' hook, one line at the top of each: MC_PROF(g, MC_PROF_GEMM);
 * times the rest of the enclosing block as one operation of that kind. */
struct mc_prof_scope {
    mc_wl_prof *p;
    mc_prof_scope(mc_wl_gpu *g, mc_prof_kind kind) : p(mc_gpu_prof(g))
    {
        if (p) mc_prof_begin(p, kind);
    }
    ~mc_prof_scope()
    {
        if (p) mc_prof_end(p);
    }
    mc_prof_scope(const mc_prof_scope &) = delete;
    mc_prof_scope &operator=(const mc_prof_scope &) = delete;
};
#define MC_PROF(g, kind) mc_prof_scope mc_prof_scope_((g), (kind))
#endif

#endif
