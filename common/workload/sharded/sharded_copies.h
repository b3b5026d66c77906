/* sharded_copies.h: FSDP2's two copies around its collectives, as lists of
 * strided copies (pure functions, no GPU; sharded_gpu.cu queues each as one
 * cudaMemcpy2DAsync, tests/test_sharded_copies.c runs them on the host):
 *
 *   chunk_cat  (before the reduce-scatter) the unsharded gradients of a
 *              [rows, cols] weight and its [rows] bias into the
 *              reduce-scatter input: for each of the N ranks, its padded
 *              shard of the weight's rows, then of the bias's (p =
 *              ceil(rows / N) rows each, zeros past the last row);
 *   copy-out   (after the all-gather, split_with_sizes_copy) that layout,
 *              gathered from every rank, into the unsharded weight
 *              [N p, cols] and bias [N p], whose first `rows` rows are the
 *              parameters.
 *
 * Buffers are numbered: chunk_cat reads 0 (the weight's grad) and 1 (the
 * bias's) and writes 0 (the input); the copy-out reads 0 (the all-gather
 * output) and writes 0 (the weight) and 1 (the bias). Offsets, widths and
 * pitches are in bytes of fp32. */
#ifndef MC_SHARDED_COPIES_H
#define MC_SHARDED_COPIES_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int dst, src;              /* buffer numbers */
    uint64_t dst_off, src_off; /* where the first row starts */
    uint64_t width, rows;      /* bytes of a row, rows (>= 1 each) */
    uint64_t dpitch, spitch;   /* bytes from one row's start to the next's */
} mc_sh_copy;

#define MC_SH_MAX_COPIES 4

typedef struct {
    bool zero_dst;             /* clear destination 0 first (the padding) */
    int n;
    mc_sh_copy c[MC_SH_MAX_COPIES];
} mc_sh_copy_plan;

/* rows, cols >= 1; 1 <= world. */
void mc_sh_chunk_cat_plan(int64_t rows, int64_t cols, int world, mc_sh_copy_plan *p);
void mc_sh_copy_out_plan(int64_t rows, int64_t cols, int world, mc_sh_copy_plan *p);

#ifdef __cplusplus
}
#endif
#endif
