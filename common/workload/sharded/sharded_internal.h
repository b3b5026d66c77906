/* sharded_internal.h: what sharded_seq.c (the step's requests) and
 * sharded_run.c (life cycle, set-up, prediction) share. Not for experiments:
 * they use sharded_seq.h. */
#ifndef MC_SHARDED_INTERNAL_H
#define MC_SHARDED_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc/alloc_model.h"
#include "sharded_seq.h"
#include "workload/core/optimizer_step.h"
#include "workload/core/wl_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t in, out;
    wl_t W, b;             /* plain, ddp: the parameters; zero2, fsdp: their padded shards */
    wl_t uW, ub;           /* zero2, fsdp: the unsharded (padded) storage while gathered */
    wl_t ag;               /* zero2, fsdp: this layer's all-gather output */
    wl_t rs_in;            /* zero2, fsdp: this layer's reduce-scatter input */
    wl_t rs_out;           /* zero2, fsdp: the flat sharded grads (.grad are views of it) */
    wl_t gWs, gbs;         /* zero2, fsdp: those views (addresses into rs_out, no block of
                              their own), what the optimizer reads on the GPU */
    wl_t gW, gb;           /* plain, ddp: .grad; zero2, fsdp: the unsharded param's .grad */
    wl_t mW, mb, vW, vb;   /* momentum_buffer or exp_avg; exp_avg_sq (local shard sizes) */
    wl_t sW, sb;           /* Adam's _foreach_sqrt temporaries */
    wl_t h, r, gr, gh, gWt, gbt;
    uint64_t bucket_off[2];/* ddp: W's and b's offset in their bucket */
    int bucket_of[2];      /* ddp: their bucket */
} sh_layer;

struct mc_sh_run {
    mc_sh_config c;
    mc_sh_hooks hooks;
    wl_ctx ctx;            /* allocator (the caller's backend, or a host device), tensors */
    mc_wl_status status;   /* MC_WL_OOM once a request was refused: the run is over */
    int L;
    sh_layer *ly;
    wl_t x, y, mse, mse_tmp, loss, ones, gdiv, red_buf, red_sem;
    wl_t barrier;          /* ddp, zero2, fsdp: the process group's barrier tensor */
    wl_t copy_meta;        /* zero2, fsdp: a copy kernel's metadata, freed at once */
    wl_t ws_fwd, lt_fwd, ws_bwd;       /* cuBLAS / cuBLASLt workspaces */
    wl_t *ag_state;                    /* forward: the all-gather output whose free is deferred */
    wl_t *rs_state;                    /* backward: the last reduce-scatter input */
    /* ddp */
    int nbucket;
    wl_t *bucket;                      /* room for 2L */
    int *bucket_left;                  /* grads still to arrive, per bucket, this step */
    bool rebuilt;
    int step;
    wl_optim opt;                      /* the optimizer over the local tensors (no GradScaler) */
    wl_opt_param *params;              /* W0, b0, W1, b1, ... with the rank's local sizes */
};

/* The context core/wl_ctx.h's shorthands (A, AK, F) act on, in functions
 * with a `mc_sh_run *r`. */
#define WL_CTX (&r->ctx)
/* On the GPU (NULL in a model-only run): the arithmetic's context, a tensor's pointer. */
#define G (r->ctx.gpu)
#define P(t) WL_PTR(t)
#define FP(t) ((float *)WL_PTR(t))

/* sharded_layout.c: what a rank holds of each parameter, and DDP's buckets. */
bool sh_sharded(const mc_sh_run *r);                 /* zero2 or fsdp */
/* Padded shard bytes and the rank's local bytes of layer l's weight (bias) */
uint64_t sh_shard_bytes(const mc_sh_run *r, int l, bool bias);
uint64_t sh_local_bytes(const mc_sh_run *r, int l, bool bias);
/* FSDP2's copy kernels' packed metadata on the device (bytes): the
 * all-gather's copy-out and the reduce-scatter's copy-in of layer l. */
uint64_t sh_split_copy_scratch_bytes(const mc_sh_run *r, int l);
uint64_t sh_chunk_cat_scratch_bytes(const mc_sh_run *r, int l);
void sh_ddp_assign(mc_sh_run *r, bool rebuilt);      /* bucket_of/off, nbucket, sizes */
int sh_ddp_alloc_buckets(mc_sh_run *r);

/* sharded_seq.c (calls sharded_layout.c; sharded_run.c calls both) */
int sh_seq_micro_step(mc_sh_run *r);
int sh_seq_optimizer(mc_sh_run *r);
void sh_seq_zero_grad(mc_sh_run *r);

#ifdef __cplusplus
}
#endif
#endif
