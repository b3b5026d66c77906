/* sharded_plan.h: the sizes data-parallel training gives each rank, as
 * PyTorch 2.11 computes them (pure functions, no allocator):
 *
 * - DDP's gradient buckets (torch/csrc/distributed/c10d/reducer.cpp
 *   compute_bucket_assignment_by_size): parameters are added in order to a
 *   bucket until its bytes reach the limit, then the next limit applies (the
 *   last one repeats). DDP's constructor passes [sys.maxsize] when
 *   find_unused_parameters is False (torch/nn/parallel/distributed.py
 *   _ddp_init_helper: "we only disable bucketing for the first iteration"),
 *   so step 1 has ONE bucket holding every parameter; the first backward
 *   records the order gradients became ready and the next forward rebuilds
 *   the buckets (Reducer::rebuild_buckets) with [first_bucket_bytes 1 MiB
 *   (dist._DEFAULT_FIRST_BUCKET_BYTES), bucket_cap_mb 25 MiB].
 * - FSDP2's shards (torch/distributed/fsdp/_fully_shard/_fsdp_param.py
 *   _init_sharded_param): torch.chunk along dim 0, so each rank's shard has
 *   ceil(dim0 / N) rows, padded to that for every rank (new_zeros of the
 *   padded size); the local tensor is the unpadded part, which is smaller
 *   (or empty) for the last ranks. */
#ifndef MC_SHARDED_PLAN_H
#define MC_SHARDED_PLAN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_DDP_FIRST_BUCKET_BYTES (1ULL << 20) /* dist._DEFAULT_FIRST_BUCKET_BYTES */
#define MC_DDP_BUCKET_CAP_BYTES (25ULL << 20)  /* DDP(bucket_cap_mb=25) default */

/* Assigns n tensors of the given bytes, in that order, to buckets under the
 * limits (nlimits >= 1; the last repeats; 0 means no limit). Writes each
 * bucket's bytes to bucket_bytes (room for n) and returns the bucket count. */
int mc_ddp_buckets(const uint64_t *tensor_bytes, int n, const uint64_t *limits, int nlimits,
                   uint64_t *bucket_bytes);

/* FSDP2's shard of a dim0 x rest parameter (rest = 1 for a bias) over
 * world ranks: padded rows ceil(dim0 / world), and the rows rank `rank`
 * holds, min(padded, max(0, dim0 - rank * padded)). */
int64_t mc_fsdp_padded_rows(int64_t dim0, int world);
int64_t mc_fsdp_local_rows(int64_t dim0, int world, int rank);

#ifdef __cplusplus
}
#endif
#endif
