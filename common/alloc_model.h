/* alloc_model.h: a C model of PyTorch 2.11's CUDA caching allocator
 * (c10/cuda/CUDACachingAllocator.cpp), one device, one stream, no expandable
 * segments, no power-of-two rounding. Its statistics equal PyTorch's
 * memory_stats() for the same sequence of requests (../shared/ALLOCATOR.md).
 *
 * The model asks a backend for segments: the host backend (alloc_host.h)
 * simulates a device of a given capacity with no GPU; the CUDA backend
 * (alloc_cuda.h) calls cudaMalloc / cudaFree. Addresses are uint64_t device
 * addresses in both. */
#ifndef MC_ALLOC_MODEL_H
#define MC_ALLOC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Constants, named after the reference's (CachingAllocator.h / .cpp). */
#define CA_MIN_BLOCK_SIZE   512ULL              /* kMinBlockSize */
#define CA_SMALL_SIZE       (1ULL << 20)        /* kSmallSize: 1 MiB */
#define CA_SMALL_BUFFER     (2ULL << 20)        /* kSmallBuffer: 2 MiB */
#define CA_MIN_LARGE_ALLOC  (10ULL << 20)       /* kMinLargeAlloc: 10 MiB */
#define CA_LARGE_BUFFER     (20ULL << 20)       /* kLargeBuffer: 20 MiB */
#define CA_ROUND_LARGE      (2ULL << 20)        /* kRoundLarge: 2 MiB */
#define CA_UNLIMITED        UINT64_MAX          /* max_split_size / limit unset */

/* A segment source. dev_malloc returns 0 and sets *addr, or nonzero when the
 * device is out of memory (the model then frees cached blocks and retries,
 * as PyTorch does). */
typedef struct {
    int (*dev_malloc)(void *ctx, uint64_t bytes, uint64_t *addr);
    void (*dev_free)(void *ctx, uint64_t addr, uint64_t bytes);
    void *ctx;
} ca_backend;

typedef struct {
    /* set_per_process_memory_fraction: reserved bytes may not exceed this
     * (int(fraction * total_memory)); CA_UNLIMITED when unset. */
    uint64_t limit_bytes;
    /* PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N, in bytes (N << 20);
     * CA_UNLIMITED when unset. */
    uint64_t max_split_size;
    /* max_non_split_rounding_size; default CA_LARGE_BUFFER. */
    uint64_t max_non_split_rounding_size;
} ca_config;

/* The defaults: no limit, no split limit, 20 MiB non-split rounding. */
ca_config ca_config_default(void);

/* One statistic as PyTorch keeps it ("all" pools aggregated). */
typedef struct {
    int64_t current, peak, allocated, freed;
} ca_stat;

typedef struct {
    ca_stat allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
    ca_stat allocation, segment, active, inactive_split; /* counts */
    int64_t num_alloc_retries, num_ooms;
} ca_stats;

typedef struct ca_allocator ca_allocator;

/* Results of ca_malloc. */
enum { CA_OK = 0, CA_OOM = 1 };

ca_allocator *ca_create(const ca_config *cfg, ca_backend backend);
/* Returns every segment to the backend and frees the model. */
void ca_destroy(ca_allocator *a);

/* torch.empty(bytes, dtype=uint8): CA_OK and the block's address in *addr,
 * or CA_OOM (nothing allocated; num_ooms counted, cache already emptied). */
int ca_malloc(ca_allocator *a, uint64_t bytes, uint64_t *addr);
/* Frees the live block at addr. Returns 0, or -1 if no live block starts there. */
int ca_free(ca_allocator *a, uint64_t addr);
/* torch.cuda.empty_cache(): releases every free block that is a whole segment. */
void ca_empty_cache(ca_allocator *a);
/* torch.cuda.reset_peak_memory_stats(): every peak to its current value. */
void ca_reset_peak(ca_allocator *a);
const ca_stats *ca_get_stats(const ca_allocator *a);

/* The size of the block the live allocation at addr occupies (what
 * allocated_bytes counts for it), or 0 if none. */
uint64_t ca_block_size(const ca_allocator *a, uint64_t addr);
/* Free bytes cached in the pools, and the largest free block among them. */
uint64_t ca_cached_free_bytes(const ca_allocator *a);
uint64_t ca_largest_free_block(const ca_allocator *a);

/* The size rules alone, for experiments that explain a figure. */
uint64_t ca_round_size(uint64_t bytes);           /* round_size */
uint64_t ca_allocation_size(uint64_t rounded);    /* get_allocation_size */

/* Checks that blocks tile every segment, nothing overlaps, pools hold exactly
 * the free blocks, and every statistic equals a recount. Returns 0, or -1 with
 * the first broken invariant in err. Run after every operation in debug
 * builds (CA_DEBUG) and by the tests. */
int ca_check_invariants(const ca_allocator *a, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
