/* prefetch_pattern.h: seed 002's PrefetchLoader on the allocator model's
 * per-stream pools (C14). Each batch's device buffer is a block from the
 * model over the CUDA backend, allocated on the side stream's pool (the
 * tensor is created under torch.cuda.stream(side)); the copy runs on the side
 * stream, the main stream waits for it, and a long kernel on the main stream
 * reads the batch, counts words that differ from its seeded pattern and sums
 * them. The loader's order is kept: __next__ makes main wait, takes the
 * prefetched batch and prefetches the next one; then the loop drops the
 * previous batch and computes on this one. Variants:
 *   SERIAL               one stream, copy then compute (the reference time)
 *   SEED                 as seed 002: no record_stream, so a dropped batch's
 *                        block returns to the side stream's pool at once and
 *                        the next copy may take it while compute still reads it
 *   RECORD_STREAM        batch.record_stream(main): the free is deferred until
 *                        main's event after the compute completes (PyTorch's
 *                        free_requested -> free_completed, emulated by
 *                        cudaEventQuery before ca_free)
 *   COPY_AFTER_COMPUTE   no record_stream, but the side stream waits for the
 *                        last compute launched before each copy
 * Needs a GPU; CUDA errors exit MC_EXIT_CUDA. */
#ifndef MC_PREFETCH_PATTERN_H
#define MC_PREFETCH_PATTERN_H

#include <stdint.h>
#include <cuda_runtime.h>

#include "experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MC_PREFETCH_SERIAL,
    MC_PREFETCH_SEED,
    MC_PREFETCH_RECORD_STREAM,
    MC_PREFETCH_COPY_AFTER_COMPUTE,
    MC_PREFETCH_NVARIANTS
} mc_prefetch_variant;

extern const char *const MC_PREFETCH_NAME[MC_PREFETCH_NVARIANTS];

typedef struct {
    const unsigned char *host; /* n batches of `bytes`, pinned, batch i filled with seed_base + i */
    const uint64_t *sums;      /* host sum of each batch's 32-bit words */
    uint64_t seed_base;
    int n;                     /* batches, >= 2 */
    uint64_t bytes;            /* per batch, a multiple of 4 */
    int rounds;                /* arithmetic per word: compute should outlast the copy */
    int blocks;                /* compute grid */
    cudaStream_t main, side;
} mc_prefetch_setup;

typedef struct {
    double seconds;         /* events on main: before the first copy to after the last compute */
    int reuse_while_read;   /* copies given a block whose last reader (a compute) had not finished
                               when the block was handed out, the copy not ordered after it */
    int corrupted;          /* batches whose compute saw a wrong word or a wrong sum */
    uint64_t peak_reserved; /* the model's reserved_bytes peak (bytes) */
    int oom;                /* the model refused a batch: the run stopped */
} mc_prefetch_result;

/* One run of variant v over all batches, with a fresh allocator. */
void mc_prefetch_run(const mc_prefetch_setup *s, mc_prefetch_variant v, mc_prefetch_result *r);

/* Runs every variant `reps` times (after run's --warmup runs, interleaved) and
 * emits C14's rows for them (variants pool_<name>): time, saving against
 * SERIAL, reuses while read, corrupted batches, peak reserved; and one
 * finding. Corruption in any variant other than SEED is a failed
 * verification (mc_verify_failed). */
void mc_prefetch_report(mc_run *run, const mc_prefetch_setup *s, int reps);

#ifdef __cplusplus
}
#endif
#endif
