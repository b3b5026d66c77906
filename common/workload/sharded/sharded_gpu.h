/* sharded_gpu.h: the data-parallel training step of sharded_seq.h (or of
 * another network that makes the same calls: mc_sh_model below, the
 * Transformer's encoder under FSDP2) run for real on N GPUs, one thread per
 * GPU (rank r on device r), or one process a rank, each with its
 * own caching-allocator model over the CUDA backend (so its figures are
 * the allocator's, request for request the host model's), its own NCCL
 * communicator (ncclCommInitRank over one unique id) and its own streams:
 *
 *   default       the forward, the loss, the backward, the optimizer step
 *                 (the workload's kernels, core/wl_gpu.h), and the copies
 *                 PyTorch makes there (DDP's into and out of the buckets,
 *                 FSDP2's copy-out and chunk_cat);
 *   all-reduce    DDP: each bucket's all-reduce, launched when its last
 *                 gradient is in, overlapping the rest of the backward;
 *   all-gather    FSDP2: the copy-in and all-gather of each layer, which
 *                 run ahead of the forward (PyTorch's implicit prefetch)
 *                 and one layer ahead in the backward (explicit prefetch);
 *   reduce-scatter FSDP2: each layer's gradients, overlapping the backward
 *                 of the layers below.
 *
 * Every cross-stream use is ordered by events as PyTorch orders it: an
 * all-gather waits for the copy-out before it (whose all-gather output it
 * may reuse) and, at the step's start, for the optimizer; the default
 * stream waits for an all-gather before its copy-out, for a reduce-scatter
 * before its input is freed, and for every collective at the end of the
 * backward. Reductions average (ncclAvg), as DDP's 1/N and FSDP2's divide.
 *
 * The check (verify), a run of its own before the timed one: the ranks
 * and a one-GPU run of the same global batch (plain, the N ranks' batches
 * drawn on one GPU, fixed from step to step, on device 0) train the same
 * steps; then every rank's parameters (its shard under zero2/fsdp) must
 * equal the one GPU's within a relative 1e-5 (|a - b| over max |b| of each
 * parameter), and each rank's loss must fall. Where the run trains with
 * Adam the check trains with SGD with momentum instead: Adam divides each
 * element's step by its gradient's size, so fp32's rounding of the sum
 * over the batch (which the GPU count changes) moves elements of tiny
 * gradient by about lr either way: after 8 steps at width 1024, 24% of the
 * elements were beyond 1e-5 on two H100s, the largest 1.3e-3, while
 * momentum stayed within 1.2e-7. The Transformer's one GPU takes the
 * ranks' batches as micro-batches of gradient accumulation (loss / N
 * each, rank r's batch the r-th), so that its sums over tokens group as
 * the ranks' do, and both train deterministically (mc_tfm_config's
 * deterministic): the attention backward's dQ is summed by atomics
 * otherwise (as FlashAttention-2's and PyTorch's efficient backward sum
 * it), in an order that changes from run to run, which put 1 to 4 of
 * tfm1024's 50 M elements (layer 2's norm2.bias, about 0.01) just beyond
 * 1e-5 on two H100s (1.11e-5, 1.15e-5) and not on four; trained
 * deterministically, both equal bit for bit there (0 elements apart at
 * tfm768 and tfm1024, ZeRO-2 and FSDP2). The
 * optimizer's kernels are the workload's, checked against float64 by
 * build/workload --verify.
 *
 * NCCL_NVLS_ENABLE=0 is set before the communicators are made: NVLink
 * multicast stays off. A rank that runs out of memory, or a step that does
 * not finish within the deadline, makes the runner abort every
 * communicator (ncclCommAbort from the watchdog), so every rank stops.
 *
 * Built without NCCL (no -DMC_HAVE_NCCL), mc_sh_gpu_available says so and
 * mc_sh_gpu_run refuses. */
#ifndef MC_SHARDED_GPU_H
#define MC_SHARDED_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "launcher.h"
#include "sharded_seq.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_SH_MAX_GPUS 16
#define MC_SH_MAX_STEPS 64
#define MC_SH_DEFAULT_DEADLINE_S 300.0 /* s: a step (or the rendezvous) not done by then stops the run */
#define MC_SH_VERIFY_TOL 1e-5 /* relative: max |a - b| / max |b| of a parameter */

/* The one-GPU check's outcome (the rule above). */
typedef struct {
    bool verified;         /* the check ran */
    bool passed;           /* and passed */
    double max_rel;        /* its worst element, relative */
    double max_abs;        /* and absolute */
    int worst_rank, worst_param;
    uint64_t elems, elems_off; /* compared; beyond MC_SH_VERIFY_TOL */
    bool loss_falls;       /* every rank's last loss < its first */
    bool oom;              /* the check ran out of memory */
} mc_sh_check;

typedef struct {
    int ranks, steps;
    int done[MC_SH_MAX_GPUS];                             /* steps each rank finished whole (their figures stand) */
    uint64_t peak[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS];       /* max_memory_allocated, each step */
    uint64_t end[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS];        /* memory_allocated after zero_grad */
    uint64_t model_peak[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS]; /* the same rank's host model */
    uint64_t model_end[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS];
    double time_s[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS];       /* CUDA events around the step, s */
    double loss[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS];         /* the rank's loss on its batch */
    uint64_t collectives;                                 /* collectives run, all ranks */
    int oom_rank;                                         /* the rank that ran out of memory, or -1 */
    int oom_step;                                         /* and its step (0: set-up) */
    mc_sh_check check;                                    /* verify: the check's run */
} mc_sh_gpu_result;

/* A rank that fails on purpose at the start of a step (the tests of the
 * stopping): it reports running out of memory; it hangs, queueing nothing
 * more and saying nothing, until the others give up; or (a rank that is a
 * process) it is killed (SIGKILL), as the OOM killer or a user would. */
typedef enum { MC_SH_FAULT_NONE, MC_SH_FAULT_OOM, MC_SH_FAULT_HANG, MC_SH_FAULT_KILL } mc_sh_fault;

typedef struct {
    int steps;             /* 1 .. MC_SH_MAX_STEPS */
    bool verify;           /* the one-GPU check first, a run of its own */
    double deadline_s;     /* a step (or set-up) that takes longer aborts the run; 0: 300 s */
    double pause_s;        /* idle time after each step (tests/torch/fsdp_reference.py pauses
                              0.3 s so that NCCL's watchdog lets go of the step's tensors) */
    mc_sh_fault fault;     /* and where: rank fault_rank at the start of step fault_step */
    int fault_rank, fault_step;
} mc_sh_gpu_opts;

/* The network the runner trains: the MLP (sharded_seq.h; mc_sh_config's
 * model NULL) or another whose step makes the same calls of the runner
 * (mc_sh_hooks) at the same points: the Transformer under FSDP2
 * (common/workload/sharded_tfm.h). create makes rank c->rank's model of
 * c->mode over c->world ranks (plain over 1 with data_chunks for the
 * check's one GPU), on the current device (gpu) or model-only; parameters
 * are numbered 0 .. param_count - 1, each [numel / row, row] sharded on
 * its rows; read_param as mc_sh_read_param; gpu: the GPU context its step
 * runs on (core/wl_gpu.h: its stream is the rank's default stream). Which
 * cached block a request gets depends on where the driver put each
 * segment; the model of a rank whose network says where (segments) is
 * built again after the GPU run with its segments where the GPU's went. */
typedef struct mc_sh_model {
    const void *net; /* the network's own configuration */
    int (*check)(const mc_sh_config *c, char *err, size_t len);
    void *(*create)(const mc_sh_config *c, bool gpu, const mc_sh_hooks *h, char *err, size_t len);
    mc_wl_status (*setup_status)(const void *m);
    mc_wl_status (*step)(void *m, mc_sh_step_result *out);
    int (*param_count)(const void *m);
    int64_t (*param_numel)(const void *m, int i);
    int64_t (*param_row)(const void *m, int i);
    int64_t (*read_param)(void *m, int i, float *host, int64_t *first_row);
    struct mc_wl_gpu *(*gpu)(void *m);
    void (*destroy)(void *m);
    /* Optional (NULL: the host model places its segments as the driver does
     * in this process, as the MLP's always matches): the segments a GPU
     * model got from the driver, in order; and a host model whose segments
     * go there, which the runner then holds the GPU run's figures to. */
    int (*segments)(void *m, const uint64_t **addr, const uint64_t **bytes);
    void *(*create_placed)(const mc_sh_config *c, const uint64_t *addr, const uint64_t *bytes, int n, char *err,
                           size_t len);
} mc_sh_model;

/* 1 if this build has NCCL and `ranks` CUDA devices exist; else 0 with the
 * reason ("built without NCCL (set NCCL_HOME)", "needs 2 GPUs, found 1"). */
int mc_sh_gpu_available(int ranks, char *why, size_t len);

/* Runs o->steps steps of c->mode over c->world GPUs (c->rank is ignored).
 * An out-of-memory rank is a result (oom_rank, the steps before it kept).
 * Returns 0, or -1 with one line in err (a bad configuration, too few GPUs,
 * a rank past the deadline: "rank 0: step 3 not done after 300 s (rank 1
 * stopped queueing at the start of step 3)"). */
int mc_sh_gpu_run(const mc_sh_config *c, const mc_sh_gpu_opts *o, mc_sh_gpu_result *res, char *err,
                  size_t len);

/* One rank of a run whose ranks are processes that a launcher started
 * (launcher.h: torchrun's or mpirun's variables; l->world must equal
 * c->world): rank l->rank runs on device l->local_rank of those this
 * process sees, with NCCL's ids from rank 0 over TCP at MASTER_ADDR:
 * MASTER_PORT (rendezvous.h, within the deadline). Only this rank's
 * figures are filled (res->ranks is the world); under verify every rank
 * trains the one-GPU reference on its own device first. Another process's
 * failure reaches this one as NCCL's error or as its deadline. Returns as
 * mc_sh_gpu_run. (Written after this session's GPU time was spent: not
 * yet run on GPUs.) */
int mc_sh_gpu_run_rank(const mc_sh_config *c, const mc_sh_gpu_opts *o, const mc_launch *l,
                       mc_sh_gpu_result *res, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
