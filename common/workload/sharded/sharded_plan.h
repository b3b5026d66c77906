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

/* The device copy of the metadata that FSDP2's two fused copy kernels pack
 * into one int64 tensor (ATen's cuda/TensorShape.cu, pack_vecs), allocated
 * and freed around the kernel on the current stream, in bytes, for a group
 * of k parameters whose padded shards are chunk[0..k-1] bytes:
 * split_with_sizes_copy (the all-gather's copy-out over `world` ranks, on a
 * GPU of sm_count SMs): k destination and k source addresses, k chunk
 * sizes, a split index per block and k + 1 cumulative block counts;
 * _chunk_cat (the reduce-scatter's copy-in): k sources, a tensor index per
 * block, k + 1 start offsets, k + 1 start blocks, k sizes, k padded chunk
 * sizes and k block counts. Checked against PyTorch 2.11's snapshots on two
 * H100s (k = 2): 88 and 1648 B (split), 128 and 1688 B (chunk_cat). */
uint64_t mc_fsdp_split_copy_meta_bytes(const uint64_t *chunk, int k, int world, int sm_count);
uint64_t mc_fsdp_chunk_cat_meta_bytes(const uint64_t *chunk, int k);

#ifdef __cplusplus
}
#endif
#endif
