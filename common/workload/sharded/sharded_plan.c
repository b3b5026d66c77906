/* sharded_plan.c: DDP's bucket assignment and FSDP2's shard sizes
 * (sharded_plan.h cites the reference). */
#include "sharded_plan.h"

int mc_ddp_buckets(const uint64_t *tensor_bytes, int n, const uint64_t *limits, int nlimits,
                   uint64_t *bucket_bytes)
{
    int nb = 0, li = 0;
    uint64_t cur = 0;
    int open = 0;
    for (int i = 0; i < n; i++) {
        cur += tensor_bytes[i];
        open = 1;
        uint64_t limit = limits[li];
        /* reducer.cpp: `if (bucket.size >= bucket_size_limit)` closes it and
         * moves to the next limit, the last one staying. */
        if (limit && cur >= limit) {
            bucket_bytes[nb++] = cur;
            cur = 0;
            open = 0;
            if (li + 1 < nlimits) li++;
        }
    }
    if (open) bucket_bytes[nb++] = cur;
    return nb;
}

int64_t mc_fsdp_padded_rows(int64_t dim0, int world)
{
    return (dim0 + world - 1) / world;
}

int64_t mc_fsdp_local_rows(int64_t dim0, int world, int rank)
{
    int64_t p = mc_fsdp_padded_rows(dim0, world), left = dim0 - (int64_t)rank * p;
    return left <= 0 ? 0 : left < p ? left : p;
}

/* Blocks of 128 threads of 16 bytes (2048 B); split_with_sizes_copy caps
 * its grid at 2 waves of 2048 threads per SM (maxThreadsPerMultiProcessor
 * of an H100 or H200) and makes each block copy more instead. */
#define FSDP_COPY_BLOCK_BYTES 2048
#define FSDP_COPY_THREADS_PER_SM 2048
#define FSDP_COPY_BLOCK_THREADS 128

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

uint64_t mc_fsdp_split_copy_meta_bytes(const uint64_t *chunk, int k, int world, int sm_count)
{
    int64_t blocks = 0;
    for (int i = 0; i < k; i++) blocks += div_up((int64_t)chunk[i], FSDP_COPY_BLOCK_BYTES);
    const int64_t max_blocks = (int64_t)sm_count * FSDP_COPY_THREADS_PER_SM / FSDP_COPY_BLOCK_THREADS * 2;
    const int64_t iter = div_up(blocks * world, max_blocks);
    int64_t per_block = 1; /* ceil(sqrt(iter)), in integers */
    while (per_block * per_block < iter) per_block++;
    if (per_block > world) per_block = world;
    const int64_t iters = div_up(iter, per_block);
    int64_t entries = 3 * (int64_t)k + (k + 1);
    for (int i = 0; i < k; i++) entries += div_up((int64_t)chunk[i], FSDP_COPY_BLOCK_BYTES * iters);
    return (uint64_t)entries * 8;
}

uint64_t mc_fsdp_chunk_cat_meta_bytes(const uint64_t *chunk, int k)
{
    int64_t entries = 6 * (int64_t)k + 2;
    for (int i = 0; i < k; i++) entries += div_up((int64_t)chunk[i], FSDP_COPY_BLOCK_BYTES);
    return (uint64_t)entries * 8;
}
