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
