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

/* The device copy of the metadata that FSDP2's two fused copy kernels pack
 * into one int64 tensor (ATen's cuda/TensorShape.cu, pack_vecs): allocated
 * and freed around the kernel on the current stream. Blocks are of 128
 * threads of 16 bytes (2048 B); split_with_sizes_copy caps its grid at 2
 * waves of 2048 threads per SM (H100, H200) and makes each block copy more
 * instead. Both over the layer's two splits (weight, bias), whose chunk per
 * rank is the padded shard. Checked against PyTorch 2.11's snapshots on two
 * H100s: 88 and 1648 B (split), 128 and 1688 B (chunk_cat). */
#define SH_COPY_BLOCK_BYTES 2048
#define SH_COPY_THREADS_PER_SM 2048
#define SH_COPY_BLOCK_THREADS 128

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* split_with_sizes_copy (the copy-out of the all-gather): destination and
 * source addresses and chunk sizes (2 each), a split index per block, and
 * the blocks' cumulative sums (3). */
uint64_t sh_split_copy_scratch_bytes(const mc_sh_run *r, int l)
{
    const int64_t chunk[2] = {(int64_t)sh_shard_bytes(r, l, false), (int64_t)sh_shard_bytes(r, l, true)};
    const int64_t world = r->c.world;
    int64_t blocks = 0;
    for (int i = 0; i < 2; i++) blocks += div_up(chunk[i], SH_COPY_BLOCK_BYTES);
    const int64_t max_blocks =
        (int64_t)r->c.wl.sm_count * SH_COPY_THREADS_PER_SM / SH_COPY_BLOCK_THREADS * 2;
    const int64_t iter = div_up(blocks * world, max_blocks);
    int64_t per_block = 1; /* ceil(sqrt(iter)), in integers */
    while (per_block * per_block < iter) per_block++;
    if (per_block > world) per_block = world;
    const int64_t iters = div_up(iter, per_block);
    int64_t entries = 2 + 2 + 2 + 3;
    for (int i = 0; i < 2; i++) entries += div_up(chunk[i], SH_COPY_BLOCK_BYTES * iters);
    return (uint64_t)entries * 8;
}

/* _chunk_cat (the reduce-scatter's copy-in of the two gradients): a tensor
 * index per block and 14 fixed entries for two tensors (sources, offsets,
 * start blocks, sizes, padded chunk sizes, blocks per chunk). */
uint64_t sh_chunk_cat_scratch_bytes(const mc_sh_run *r, int l)
{
    const int64_t blocks = div_up((int64_t)sh_shard_bytes(r, l, false), SH_COPY_BLOCK_BYTES) +
                           div_up((int64_t)sh_shard_bytes(r, l, true), SH_COPY_BLOCK_BYTES);
    return (uint64_t)(14 + blocks) * 8;
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
