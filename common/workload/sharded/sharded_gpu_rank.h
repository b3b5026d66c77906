/* sharded_gpu_rank.h: what sharded_gpu.cu (the ranks' threads, the check),
 * sharded_gpu_hooks.cu (the step's collectives and copies on the rank's
 * streams) and sharded_gpu_fail.cu (failures and waits) share: one rank's
 * context. Internal to
 * the runner; built only with NCCL. */
#ifndef MC_SHARDED_GPU_RANK_H
#define MC_SHARDED_GPU_RANK_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "check.h"
#include "sharded_gpu.h"

/* What the ranks share: the first failure, which every rank's wait sees. */
typedef struct {
    pthread_mutex_t mu;
    volatile int failed;   /* set once, under mu */
    int fatal;             /* the failure is an error (past the deadline, NCCL), not an OOM */
    char why[320];
    const struct rank_ctx *ranks; /* every rank's, to say which one is behind */
    int nranks;
} shared;

typedef struct rank_ctx {
    int rank, world;
    int device;              /* the CUDA device it runs on (of those this process sees) */
    mc_sh_config c;
    const mc_sh_gpu_opts *o;
    const ncclUniqueId *id;  /* NULL: the one-GPU reference, no communicator */
    ncclComm_t comm;
    bool aborted;
    cudaStream_t def, s_ag, s_rs, s_ar;
    cudaEvent_t ev_start, ev_stop, ev_dep, ev_ag_dep, ev_rs, ev_side[3];
    cudaEvent_t *ev_ag;      /* per layer: its all-gather is done */
    int step;                /* the step running (1-based) */
    volatile const char *at; /* the last call queued (a static string), for the deadline's line */
    double time_s;           /* the last step's, from ev_start to ev_stop */
    bool step_ok;            /* the last step finished (not aborted) */
    bool skipped;            /* a call of this step was not queued: a rank had failed */
    uint64_t ncoll;
    shared *sh;
    mc_sh_gpu_result *res;
    float *const *ref;       /* verify: the reference's parameters (whole, the model's numbering), or NULL */
    uint64_t *seg_addr, *seg_bytes; /* the GPU model's segments, in order (mc_sh_model.segments) */
    int nseg;
    double max_rel, max_abs;
    int worst_param;
    uint64_t elems, elems_off;
} rank_ctx;

#define CHECK_NCCL(call)                                                                  \
    do {                                                                                  \
        ncclResult_t mc_r_ = (call);                                                      \
        if (mc_r_ != ncclSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
                    ncclGetErrorString(mc_r_));                                           \
            exit(MC_EXIT_CUDA);                                                           \
        }                                                                                 \
    } while (0)

/* sharded_gpu_fail.cu: the first failure of any rank wins (msg after "rank R: ";
 * fatal: an error, not an out-of-memory result); whether one happened;
 * a SIGUSR1 taken as a failure (sh_gpu_catch_peer_end);
 * this rank's communicator aborted, so that its kernels waiting for a peer
 * return; a wait for e that gives up (aborting) on a failure anywhere, an
 * NCCL error or the deadline ("what" names it in the failure's line). */
void sh_gpu_fail(rank_ctx *k, int fatal, const char *msg);
bool sh_gpu_failed(rank_ctx *k);
/* A rank that is a process: SIGUSR1 from its launcher (another rank ended)
 * fails it at its next wait or step, naming where it was. */
void sh_gpu_catch_peer_end(void);
void sh_gpu_abort(rank_ctx *k);
bool sh_gpu_wait(rank_ctx *k, cudaEvent_t e, const char *what);
/* The deadline of a step (and of the rendezvous), seconds: o->deadline_s or the default. */
double sh_gpu_deadline_s(const mc_sh_gpu_opts *o);

/* sharded_gpu_hooks.cu: mc_sh_hooks.comm of a rank (ctx: its rank_ctx). */
void sh_gpu_on_comm(void *ctx, const mc_sh_comm *c);

#endif
