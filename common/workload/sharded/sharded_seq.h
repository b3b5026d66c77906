/* sharded_seq.h: one rank's allocator requests when the MLP workload
 * (mlp.h: Linear+ReLU stack, MSE loss, fp32, SGD/momentum/Adam, one
 * micro-step per step) trains data-parallel over N ranks, each with its own
 * batch of B rows, in PyTorch 2.11's order:
 *
 *   plain   the single-GPU step (equals build/workload for fp32, accum 1,
 *           no checkpointing: tests/test_sharded_seq.c checks it)
 *   ddp     DistributedDataParallel(model): plain + the Reducer's flat bucket
 *           tensors, made at construction (one bucket of every parameter),
 *           rebuilt at step 2's forward, after x and y (1 MiB first, then
 *           25 MiB; sync_bucket_indices' two small device tensors first),
 *           all live for good. Gradients are copied into them and all-reduced in place
 *           (no further request: the 1/N scalar is a CPU tensor).
 *   zero2   fully_shard(layer, reshard_after_forward=False) on each Linear and
 *           the root: FSDP2's own ZeRO-2 (its docstring): parameters sharded
 *           at rest, gathered in forward and kept until each layer's
 *           post-backward; gradients reduce-scattered; optimizer state sharded.
 *   fsdp    fully_shard(layer) (reshard_after_forward=True, ZeRO-3): each
 *           layer gathered before its forward and freed after, gathered again
 *           in backward (the next layer's all-gather prefetched), gradients
 *           reduce-scattered into a per-layer flat buffer whose views are the
 *           sharded .grad.
 *
 * Where each FSDP2 request comes from (torch/distributed/fsdp/_fully_shard/):
 * _fsdp_param.py _init_sharded_param (padded shard per parameter);
 * _fsdp_collectives.py foreach_all_gather (all_gather_output, N x the
 * group's padded shard numel, on the copy-in stream), foreach_all_gather_copy_out
 * (each parameter's padded unsharded storage, alloc_storage after the first
 * step), foreach_reduce (reduce_scatter_input of the padded unsharded numel,
 * the unsharded grads freed after chunk_cat, reduce_output of the sharded
 * numel on the reduce-scatter stream); _fsdp_param_group.py
 * wait_for_unshard (forward: the previous layer's all-gather output freed
 * after this layer's copy-out, as a memory trace on two H200s shows; backward:
 * freed at once, then the previous layer prefetched), post_backward (reshard, then the previous reduce_scatter_input
 * freed before the next is made); _fsdp_state.py (the root frees the last
 * forward all-gather output at its post-forward, the last reduce-scatter
 * input in the final backward callback, which also runs the post-backward of
 * layer 0, whose input needs no gradient). With N = 1 FSDP2 makes no
 * all-gather output (torch.empty(0)) and copies the shard into the
 * unsharded storage; the reduce-scatter buffers are still made.
 *
 * Streams: the all-gather output is made on the copy-in stream and
 * reduce_output on the reduce-scatter stream, everything else on the default
 * stream; the caching allocator keeps a pool per stream, which decides which
 * cached block a request reuses and so whether a block is split (allocated
 * bytes count whole blocks): the model requests each on its own stream
 * (ca_malloc_stream). The copy-out and the copy-in also make the device
 * copy of their kernels' metadata (split_with_sizes_copy, chunk_cat: a few
 * hundred bytes to tens of KiB, freed at once).
 *
 * Every wrapper's set-up ends with dist.barrier() (as the reference does),
 * whose one-element tensor the process group keeps: a 512 B block.
 *
 * Checked on 24 configurations drawn at random (tests/fixtures/random_c24/)
 * and the 4 of tests/fixtures/fsdp/: every step's peak and end-of-step
 * allocated equal PyTorch 2.11's on both ranks.
 *
 * On a GPU (mc_sh_create_gpu) the same requests are followed by the step's
 * arithmetic, and the collectives and copies are asked of a runner through
 * mc_sh_hooks at the points PyTorch makes them (sharded_gpu.h runs them on
 * N GPUs; tests/fixtures/sharded_gpu/ holds its runs beside PyTorch's). */
#ifndef MC_SHARDED_SEQ_H
#define MC_SHARDED_SEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "alloc/alloc_model.h"
#include "sharded_copies.h"
#include "workload/core/optimizer.h"
#include "workload/core/wl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MC_SH_PLAIN, MC_SH_DDP, MC_SH_ZERO2, MC_SH_FSDP, MC_SH_NMODE } mc_sh_mode;

/* The network each rank trains: the MLP workload's (mlp/mlp.h) in fp32,
 * one micro-step, no checkpointing (workload_args.h's mc_workload_sharded_net
 * makes one from the MLP's configuration, refusing what it does not cover). */
typedef struct {
    int layers;                 /* L >= 2 Linear layers */
    int64_t in, width, out;     /* D, H, O features */
    int64_t batch;              /* B rows per rank and step */
    mc_wl_optimizer optimizer;  /* sgd, momentum or adam */
    double lr;                  /* 0: the default (no figure depends on it) */
    ca_config alloc;            /* allocator settings */
    uint64_t host_capacity;     /* model-only: the simulated device, bytes */
    int sm_count;               /* for PyTorch's reduction scratch */
    uint64_t seed;              /* GPU: the weights' and the data's */
    bool fixed_data;            /* GPU: every step draws the same batch (the loss must fall) */
} mc_sh_net;

/* No shape set (layers 0); SGD, the allocator's defaults, an 80 GiB card of 132 SMs. */
mc_sh_net mc_sh_net_default(void);

typedef struct {
    mc_sh_net wl;          /* the network (batch per rank) */
    mc_sh_mode mode;
    int world;             /* N >= 1 ranks */
    int rank;              /* 0 .. N-1: the rank whose requests these are */
    FILE *trace;           /* model only: the requests (memclaims-trace v1), or NULL */
    int trace_steps;       /* steps written to trace after set-up */
    int data_chunks;       /* GPU: the batch is this many chunks of batch / data_chunks rows,
                              chunk q drawn as rank rank * data_chunks + q draws its batch
                              (0 or 1: one chunk), so that one GPU can train on the batch
                              of N ranks (the check of sharded_gpu.h) */
    const struct mc_sh_model *model; /* GPU runner: NULL, the MLP of wl; else another network
                              (sharded_gpu.h), of which wl gives the batch, optimizer, lr, seed,
                              fixed_data, SM count and, as layers, its units */
} mc_sh_config;

/* What the step asks of a GPU runner at this point (sharded_gpu.cu carries
 * it out with NCCL, each collective on its own stream as PyTorch issues it;
 * a model-only run has no runner). Addresses are device addresses from the
 * allocator's backend, bytes what the step uses. */
typedef enum {
    MC_SH_STEP_BEGIN,       /* the step's first request is next: all-gathers come after the
                               previous optimizer step (FSDP2's root pre-forward) */
    MC_SH_COPY_TO_BUCKET,   /* DDP: grad src[0] is ready: copy it into the bucket at dst */
    MC_SH_ALLREDUCE,        /* DDP: bucket `layer` (dst) is full: all-reduce it (average) */
    MC_SH_COPY_FROM_BUCKET, /* DDP: end of backward: the bucket view src[0] into grad dst */
    MC_SH_ALLGATHER,        /* FSDP: unshard: the padded shards src[0..n) into this rank's chunk
                               of the all-gather output dst, all-gathered (N = 1: no dst, nothing) */
    MC_SH_COPY_OUT,         /* FSDP: wait_for_unshard: dst (N = 1: the shards src[0..n))
                               split into the unsharded out[0..n) */
    MC_SH_CHUNK_CAT,        /* FSDP: grads src[0..n) into the reduce-scatter input dst, each
                               rank's rows padded to its shard */
    MC_SH_REDUCE_SCATTER,   /* FSDP: dst reduce-scattered (average) into out[0], the flat
                               sharded grads of layer `layer` */
    MC_SH_INPUT_FREED,      /* FSDP: the reduce-scatter input dst is about to be freed */
    MC_SH_BACKWARD_END,     /* the final callback: every collective's result is needed now */
    MC_SH_STEP_END          /* after zero_grad: the step is queued; the runner waits for it */
} mc_sh_comm_kind;

typedef struct {
    mc_sh_comm_kind kind;
    int layer;             /* the FSDP unit (a Linear, a Transformer layer), or DDP's bucket */
    int n;                 /* FSDP: the unit's parameters, src/out/rows/cols [0, n) (the MLP's: 2,
                              the weight and its bias) */
    uint64_t dst, dst_bytes;
    uint64_t src[MC_SH_UNIT_MAX], src_bytes[MC_SH_UNIT_MAX];
    uint64_t out[MC_SH_UNIT_MAX], out_bytes[MC_SH_UNIT_MAX];
    int64_t rows[MC_SH_UNIT_MAX], cols[MC_SH_UNIT_MAX]; /* FSDP: parameter k's unsharded shape (a bias: cols 1) */
} mc_sh_comm;

typedef struct {
    void *ctx;
    void (*comm)(void *ctx, const mc_sh_comm *c);
} mc_sh_hooks;

typedef struct {
    int step;
    mc_wl_status status;
    uint64_t peak_allocated, allocated_end, peak_reserved;
    double loss;           /* GPU: this rank's loss on its batch; else NaN */
} mc_sh_step_result;

typedef struct mc_sh_run mc_sh_run;

const char *mc_sh_mode_name(mc_sh_mode m);        /* "plain", "ddp", "zero2", "fsdp" */
int mc_sh_mode_parse(const char *s, mc_sh_mode *m); /* 0 or -1 */

/* 0, or -1 with one line in err: the network's shape (as the MLP's), an
 * optimizer other than sgd, momentum, adam, a zero capacity or SM count, an
 * allocator setting PyTorch refuses, world < 1 or > 65536, rank outside
 * [0, world). */
int mc_sh_config_check(const mc_sh_config *c, char *err, size_t len);

/* Builds the model as the wrapper leaves it (parameters, then DDP's bucket
 * or FSDP's shards) over `backend` (a host device of wl.host_capacity when
 * backend is NULL). hooks may be NULL. Returns NULL with err for a bad config. */
mc_sh_run *mc_sh_create(const mc_sh_config *c, const ca_backend *backend, const mc_sh_hooks *hooks,
                        char *err, size_t len);
/* The same on the current CUDA device: the allocator model over the CUDA
 * backend, the step's arithmetic run (the workload's kernels, on one
 * stream of its own, core/wl_gpu.h's), the parameters initialised as
 * build/workload's (nn.Linear's init from wl.seed, the same on every rank)
 * and then sharded. */
mc_sh_run *mc_sh_create_gpu(const mc_sh_config *c, const mc_sh_hooks *hooks, char *err, size_t len);
mc_wl_status mc_sh_setup_status(const mc_sh_run *r);
/* One step: reset_peak, forward, loss, backward (with the wrapper's
 * collectives), optimizer step, zero_grad(set_to_none). */
mc_wl_status mc_sh_step(mc_sh_run *r, mc_sh_step_result *out);
const ca_allocator *mc_sh_allocator(const mc_sh_run *r);
void mc_sh_destroy(mc_sh_run *r);

/* GPU: the rank's part of parameter i (0 .. 2L-1: W0, b0, W1, ...) copied
 * to host (the whole parameter, or under zero2/fsdp the rank's rows, which
 * begin at row *first_row of the whole); returns its element count. host
 * needs room for the whole parameter. */
int64_t mc_sh_read_param(mc_sh_run *r, int i, float *host, int64_t *first_row);
int mc_sh_param_count(const mc_sh_run *r);          /* 2L */
int64_t mc_sh_param_numel(const mc_sh_run *r, int i); /* of the whole parameter */

/* Peak allocated over `steps` steps of one rank (the largest step peak), in
 * model-only mode. Returns 0, or -1 (bad config in err, or OOM). */
int mc_sh_predict_peak(const mc_sh_config *c, int steps, uint64_t *peak, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
