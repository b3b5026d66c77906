/* sharded_layout.c: what one rank holds of each parameter (FSDP2's padded
 * shards, the rank's local rows) and DDP's gradient buckets (their order,
 * sizes and the parameters' offsets in them). sharded_seq.c (the step) and
 * sharded_run.c (set-up) call these; nothing here calls either. */
#include <stdlib.h>

#include "check.h"
#include "sharded_internal.h"
#include "sharded_plan.h"

/* ------------------------------------------------------------ shards */

bool sh_sharded(const mc_sh_run *r)
{
    return r->c.mode == MC_SH_ZERO2 || r->c.mode == MC_SH_FSDP;
}

static int64_t cols(const sh_layer *y, bool bias) { return bias ? 1 : y->in; }

uint64_t sh_shard_bytes(const mc_sh_run *r, int l, bool bias)
{
    const sh_layer *y = &r->ly[l];
    int world = sh_sharded(r) ? r->c.world : 1;
    return (uint64_t)(mc_fsdp_padded_rows(y->out, world) * cols(y, bias)) * 4;
}

/* FSDP2's copy kernels' metadata over the layer's two splits (weight,
 * bias), whose chunk per rank is the padded shard (sharded_plan.h). */
uint64_t sh_split_copy_scratch_bytes(const mc_sh_run *r, int l)
{
    const uint64_t chunk[2] = {sh_shard_bytes(r, l, false), sh_shard_bytes(r, l, true)};
    return mc_fsdp_split_copy_meta_bytes(chunk, 2, r->c.world, r->c.wl.sm_count);
}

uint64_t sh_chunk_cat_scratch_bytes(const mc_sh_run *r, int l)
{
    const uint64_t chunk[2] = {sh_shard_bytes(r, l, false), sh_shard_bytes(r, l, true)};
    return mc_fsdp_chunk_cat_meta_bytes(chunk, 2);
}

uint64_t sh_local_bytes(const mc_sh_run *r, int l, bool bias)
{
    const sh_layer *y = &r->ly[l];
    int world = sh_sharded(r) ? r->c.world : 1, rank = sh_sharded(r) ? r->c.rank : 0;
    return (uint64_t)(mc_fsdp_local_rows(y->out, world, rank) * cols(y, bias)) * 4;
}

/* ------------------------------------------------------------ DDP buckets */

/* Parameters in the order their gradients become ready (b, W of the last
 * layer first): the rebuilt buckets' order, and the order of the one
 * bucket of step 1 (its layout inside does not change a figure). */
void sh_ddp_assign(mc_sh_run *r, bool rebuilt)
{
    const int n = 2 * r->L;
    uint64_t *by = calloc((size_t)n, sizeof *by), *bucket = calloc((size_t)n, sizeof *bucket);
    CHECK(by && bucket, "out of host memory");
    for (int i = 0; i < n; i++) {
        const sh_layer *y = &r->ly[r->L - 1 - i / 2];
        by[i] = (uint64_t)(y->out * cols(y, i % 2 == 0)) * 4;
    }
    const uint64_t first[1] = {0}, later[2] = {MC_DDP_FIRST_BUCKET_BYTES, MC_DDP_BUCKET_CAP_BYTES};
    r->nbucket = rebuilt ? mc_ddp_buckets(by, n, later, 2, bucket) : mc_ddp_buckets(by, n, first, 1, bucket);
    int b = 0;
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        sh_layer *y = &r->ly[r->L - 1 - i / 2];
        int bias = i % 2 == 0;
        if (off >= bucket[b]) {
            b++;
            off = 0;
        }
        y->bucket_of[bias] = b;
        y->bucket_off[bias] = off;
        off += by[i];
    }
    for (int k = 0; k < r->nbucket; k++) r->bucket[k].bytes = bucket[k]; /* sizes to allocate */
    free(by);
    free(bucket);
}

/* Reducer::initialize_buckets: at::empty of each bucket's numel. */
int sh_ddp_alloc_buckets(mc_sh_run *r)
{
    for (int k = 0; k < r->nbucket; k++) {
        uint64_t bytes = r->bucket[k].bytes;
        r->bucket[k].bytes = 0;
        AK(r->bucket[k], bytes, MC_WL_GRADS, "DDP bucket");
    }
    return 0;
}
