/* sharded_copies.h: FSDP2's two copies around its collectives, as lists of
 * strided copies (pure functions, no GPU; sharded_gpu.cu queues each as one
 * cudaMemcpy2DAsync, tests/test_sharded_copies.c runs them on the host),
 * for a unit of n parameters, parameter k of shape [rows_k, cols_k]
 * (a bias: cols 1), sharded on its rows: p_k = ceil(rows_k / N) rows a rank,
 * and a rank's chunk is its padded shard of each parameter in turn:
 *
 *   chunk_cat  (before the reduce-scatter) the unsharded gradients into the
 *              reduce-scatter input: for each of the N ranks, its chunk
 *              (zeros past each parameter's last row);
 *   copy-out   (after the all-gather, split_with_sizes_copy) that layout,
 *              gathered from every rank, into each unsharded parameter
 *              [N p_k, cols_k], whose first rows_k rows are the parameter.
 *
 * Buffers are numbered: chunk_cat reads k (parameter k's grad) and writes 0
 * (the input); the copy-out reads 0 (the all-gather output) and writes k
 * (parameter k). Offsets, widths and pitches are in bytes of fp32. The
 * MLP's unit is a Linear's [rows, cols] weight and its [rows] bias. */
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

#define MC_SH_UNIT_MAX 64                     /* parameters in a unit */
#define MC_SH_MAX_COPIES (2 * MC_SH_UNIT_MAX) /* chunk_cat: two copies a parameter */

typedef struct {
    bool zero_dst;             /* clear destination 0 first (the padding) */
    int n;
    mc_sh_copy c[MC_SH_MAX_COPIES];
} mc_sh_copy_plan;

/* 1 <= n <= MC_SH_UNIT_MAX; rows[k], cols[k] >= 1; 1 <= world. */
void mc_sh_chunk_cat_plan_n(int n, const int64_t *rows, const int64_t *cols, int world, mc_sh_copy_plan *p);
void mc_sh_copy_out_plan_n(int n, const int64_t *rows, const int64_t *cols, int world, mc_sh_copy_plan *p);
/* The MLP's unit: a [rows, cols] weight and its [rows] bias. */
void mc_sh_chunk_cat_plan(int64_t rows, int64_t cols, int world, mc_sh_copy_plan *p);
void mc_sh_copy_out_plan(int64_t rows, int64_t cols, int world, mc_sh_copy_plan *p);

#ifdef __cplusplus
}
#endif
#endif
