/* sharded_gpu.h: the data-parallel step of sharded_seq.h on real GPUs, one
 * thread per GPU (rank r on device r), each with its own caching-allocator
 * model over the CUDA backend and its own NCCL communicator
 * (ncclCommInitRank with one unique id). Every collective the step needs
 * (sharded_seq.h mc_sh_comm) runs for real on the blocks the rank's
 * allocator handed out: DDP's bucket all-reduce, FSDP's all-gather and
 * reduce-scatter, with the copies around them. The network's arithmetic is
 * not run (it is the same in every mode); the gradients and shards hold
 * seeded values instead, so that every collective is verified: an
 * all-reduced bucket must equal the sum of every rank's values, a gathered
 * parameter the values its owners hold, a reduce-scattered shard the sum of
 * the ranks' gradient rows. The 1/N averaging PyTorch applies (DDP while
 * copying into the bucket, FSDP2 around the reduce-scatter) is left out:
 * it moves no byte and allocates nothing, and sums of small integers stay
 * exact. Device time of the collectives and their copies is taken with
 * CUDA events around each; every rank issues its work on one stream of
 * its own (PyTorch overlaps the collectives with compute on side streams;
 * with no compute here there is nothing to overlap).
 *
 * NCCL_NVLS_ENABLE=0 is set (setenv, unless already set) before the
 * communicators are made: NVLink multicast stays off.
 *
 * Built without NCCL (no -DMC_HAVE_NCCL), mc_sh_gpu_available says so and
 * mc_sh_gpu_run refuses. */
#ifndef MC_SHARDED_GPU_H
#define MC_SHARDED_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "sharded_seq.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_SH_MAX_GPUS 16
#define MC_SH_MAX_STEPS 64

typedef struct {
    int ranks, steps;
    uint64_t peak[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS];   /* each rank's max_memory_allocated per step */
    uint64_t model[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS];  /* the same rank's host-backend prediction */
    double comm_s[MC_SH_MAX_GPUS][MC_SH_MAX_STEPS];   /* events: the step's collectives and copies */
    uint64_t collectives;                             /* collectives run, all ranks */
    uint64_t bad_values;                              /* verification mismatches, all ranks */
    int oom;                                          /* a rank ran out of memory */
} mc_sh_gpu_result;

/* 1 if this build has NCCL and `ranks` CUDA devices exist; else 0 with the
 * reason ("built without NCCL (set NCCL_HOME)", "needs 2 GPUs, found 1"). */
int mc_sh_gpu_available(int ranks, char *why, size_t len);

/* Runs `steps` steps of c->mode over c->world GPUs (c->rank is ignored).
 * Returns 0, or -1 with the reason in err. */
int mc_sh_gpu_run(const mc_sh_config *c, int steps, mc_sh_gpu_result *res, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
