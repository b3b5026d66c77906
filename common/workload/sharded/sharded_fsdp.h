/* sharded_fsdp.h: FSDP2's requests on one rank for any model whose
 * fully_shard units hold a list of fp32 parameters (fully_shard(unit) on
 * each unit in order, then fully_shard(root) with no parameters of its
 * own), the rules sharded_seq.h states for the MLP's Linear layers
 * (PyTorch 2.11, torch/distributed/fsdp/_fully_shard/), for k parameters
 * a unit:
 *
 *   set-up    each unit's padded shards in parameter order, then the whole
 *             parameters freed (fully_shard's return drops them); then
 *             dist.barrier()'s 512 B block, kept by the process group
 *   forward   pre-forward of unit u: the all-gather output (N x the unit's
 *             padded shards, on the all-gather stream), the copy-out into
 *             each parameter's padded unsharded storage, split_with_sizes_copy's
 *             metadata, then the previous unit's all-gather output freed;
 *             post-forward: reshard (fsdp; zero2 keeps them); the root's
 *             post-forward frees the last all-gather output
 *   backward  pre-backward of u (a hook on its output): gather u again
 *             unless prefetched or still gathered, its all-gather output
 *             freed at once, then (fsdp) unit u-1's all-gather prefetched;
 *             post-backward (RegisterPostBackwardFunction on u's inputs, or
 *             the root's final callback for a unit whose inputs need no
 *             gradient): reshard, the previous reduce-scatter input freed,
 *             this one made (N x padded shards), chunk_cat's metadata, the
 *             unsharded grads freed but the last (foreach_reduce's loop
 *             variable holds it), reduce_output (the padded shards, on the
 *             reduce-scatter stream) made, then the last grad freed; the
 *             final callback frees the last reduce-scatter input
 *   optimizer the local shards (the unpadded rows) with the sharded grads,
 *             views of their unit's reduce_output, which zero_grad frees
 *
 * The model's own parameters (wl_t) are where the unsharded storage goes
 * while a unit is gathered, and the model's .grad of each (AccumulateGrad's)
 * is what post-backward reduces: the model keeps its request sequence and
 * calls these at FSDP2's hook points. On a GPU (the context's gpu set) the
 * set-up copies this rank's rows into its shards, and the collectives and
 * their copies are asked of a runner (mc_sh_hooks, sharded_gpu.h) where
 * sharded_seq.c asks them for the MLP: the all-gather after its output is
 * made, the copy-out after the unsharded storage, chunk_cat after the
 * reduce-scatter input, the reduce-scatter after its output, the wait
 * before that input is freed, and the backward's end after the final
 * callback. The MLP's own copy of these rules is sharded_seq.c's. */
#ifndef MC_SHARDED_FSDP_H
#define MC_SHARDED_FSDP_H

#include <stdbool.h>
#include <stdint.h>

#include "sharded_seq.h"
#include "workload/core/optimizer_step.h"
#include "workload/core/wl_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FSDP2 makes two of its buffers on its own streams (sharded_seq.c says how
 * this was seen); the caching allocator keeps a pool per stream. Any two ids. */
#define MC_FSDP_STREAM_ALL_GATHER 1
#define MC_FSDP_STREAM_REDUCE_SCATTER 2

/* One parameter of a unit: the model's tensor (whole before sharding, the
 * padded unsharded storage while gathered, else not live) and its .grad,
 * its shape as dim0 rows of `rest` fp32 elements, a name for the trace. */
typedef struct {
    wl_t *full, *grad;
    int64_t dim0, rest;
    const char *name;
} mc_fsdp_param;

typedef struct {
    int first, n;              /* its parameters: p[first .. first + n) */
    wl_t ag, rs_in, rs_out;    /* all-gather output, reduce-scatter input and output */
    bool gathered;             /* the unsharded storage is live */
    bool reduced;              /* post-backward ran this step */
} mc_fsdp_unit;

typedef struct {
    wl_ctx *ctx;
    int world, rank, sm_count;
    bool reshard_after_forward; /* fsdp (ZeRO-3); false: zero2 */
    int nunits, np;
    mc_fsdp_unit *u;
    mc_fsdp_param *p;
    wl_t *shard, *sgrad;       /* per parameter: the padded shard; the sharded .grad (an
                                  address into its unit's rs_out, no block of its own) */
    wl_t *m, *v, *s;           /* the optimizer's state and _foreach_sqrt's temporaries */
    wl_opt_param *opt;         /* the local shards, in parameter order */
    wl_t copy_meta, barrier;
    wl_t *ag_state, *rs_state; /* the all-gather output whose free is deferred; the last
                                  reduce-scatter input */
    mc_sh_hooks hooks;         /* a GPU runner's (comm NULL: none) */
} mc_fsdp;

/* Units of unit_params[u] parameters each, params in order (kept by
 * reference), over world ranks as rank `rank`. 0, or -1 with err (a unit
 * without parameters, a bad world or rank). */
int mc_fsdp_init(mc_fsdp *f, wl_ctx *ctx, int world, int rank, bool reshard_after_forward, int sm_count,
                 const int *unit_params, int nunits, mc_fsdp_param *params, char *err, size_t len);
void mc_fsdp_free(mc_fsdp *f);
/* A GPU runner's hooks (kept by value), before mc_fsdp_setup. */
void mc_fsdp_set_hooks(mc_fsdp *f, const mc_sh_hooks *h);
/* Padded shard and local bytes of parameter i on this rank. */
uint64_t mc_fsdp_shard_bytes(const mc_fsdp *f, int i);
uint64_t mc_fsdp_local_bytes(const mc_fsdp *f, int i);

/* The hook points; each returns 0, or -1 when a request was refused. */
int mc_fsdp_setup(mc_fsdp *f);                /* fully_shard of every unit, then the barrier */
int mc_fsdp_pre_forward(mc_fsdp *f, int u);
void mc_fsdp_post_forward(mc_fsdp *f, int u);
void mc_fsdp_forward_end(mc_fsdp *f);         /* the root's post-forward */
int mc_fsdp_pre_backward(mc_fsdp *f, int u);
int mc_fsdp_post_backward(mc_fsdp *f, int u);
int mc_fsdp_backward_end(mc_fsdp *f);         /* the root's final callback */
void mc_fsdp_zero_grad(mc_fsdp *f);           /* zero_grad(set_to_none=True) */

#ifdef __cplusplus
}
#endif
#endif
