/* alloc_model.h: a C model of PyTorch 2.11's CUDA caching allocator
 * (c10/cuda/CUDACachingAllocator.cpp), one device, any number of streams
 * (per-stream pools), with the PYTORCH_CUDA_ALLOC_CONF settings that change
 * its accounting: max_split_size_mb, max_non_split_rounding_mb,
 * roundup_power2_divisions, garbage_collection_threshold and
 * expandable_segments (declared in alloc_settings.h, parsed in
 * alloc_conf.c). With the defaults its statistics equal PyTorch's
 * memory_stats() for the same sequence of requests, given the addresses of
 * new segments (ALLOCATOR.md; function names below are the reference's;
 * docs/TRACE.md says what the non-default settings simplify).
 *
 * The model asks a backend for segments: the host backend (alloc_host.h)
 * simulates a device of a given capacity with no GPU; the CUDA backend
 * (alloc_cuda.h) calls cudaMalloc / cudaFree. Addresses are uint64_t device
 * addresses in both. All sizes are in bytes.
 *
 * Debug checking: with CA_DEBUG defined at compile time, or after
 * ca_set_debug(a, true), every public operation ends with
 * ca_check_invariants and aborts with its message if one is broken. */
#ifndef MC_ALLOC_MODEL_H
#define MC_ALLOC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_settings.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Constants, named after the reference's (CUDACachingAllocator.cpp unless
 * said otherwise). */
#define CA_MIN_BLOCK_SIZE   512ULL              /* kMinBlockSize */
#define CA_SMALL_SIZE       (1ULL << 20)        /* kSmallSize: 1 MiB */
#define CA_SMALL_BUFFER     (2ULL << 20)        /* kSmallBuffer: 2 MiB */
#define CA_MIN_LARGE_ALLOC  (10ULL << 20)       /* kMinLargeAlloc: 10 MiB */
#define CA_LARGE_BUFFER     (20ULL << 20)       /* kLargeBuffer: 20 MiB */
#define CA_ROUND_LARGE      (2ULL << 20)        /* kRoundLarge: 2 MiB */
#define CA_MB               (1ULL << 20)        /* kMB (AllocatorConfig.cpp): the unit of *_mb options */
#define CA_MAX_REQUEST      (1ULL << 60)        /* one_exa_bytes (NativeCachingAllocator::allocate):
                                                   requests at or above it fail before the allocator */
#define CA_UNLIMITED        UINT64_MAX          /* max_split_size / limit unset */
#define CA_ROUNDUP_INTERVALS 16                 /* kRoundUpPowerOfTwoIntervals (AllocatorConfig.cpp):
                                                   one per power of two from 1 MiB to 64 GiB */
#define CA_MAX_STREAMS      256                 /* distinct streams one model keeps pools for */
/* Expandable segments map physical pages of these sizes (find_expandable_block:
 * kSmallBuffer for the small pool, large_segment_size() = kLargeBuffer by
 * default for the large pool). */
#define CA_ES_SMALL_PAGE    CA_SMALL_BUFFER
#define CA_ES_LARGE_PAGE    CA_LARGE_BUFFER

/* A segment source. dev_malloc returns 0 and sets *addr (never 0), or
 * nonzero when the device is out of memory (the model then frees cached
 * blocks and retries, as PyTorch does). dev_free returns a segment. */
typedef struct {
    int (*dev_malloc)(void *ctx, uint64_t bytes, uint64_t *addr);
    void (*dev_free)(void *ctx, uint64_t addr, uint64_t bytes);
    void *ctx;
    /* Optional, for expandable segments (NULL: the backend cannot map pages,
     * and ca_create refuses expandable_segments): dev_map takes bytes of
     * physical memory (0, or nonzero when out of memory: cuMemCreate failing),
     * dev_unmap gives them back. total_bytes: the device's memory, which sizes
     * each expandable segment's address space (ExpandableSegment: 9/8 of it). */
    int (*dev_map)(void *ctx, uint64_t bytes);
    void (*dev_unmap)(void *ctx, uint64_t bytes);
    uint64_t total_bytes;
} ca_backend;

/* The model's settings: one field per row of CA_SETTINGS (alloc_settings.h,
 * which says what each one means and PyTorch's default). */
typedef struct {
#define CA_SETTING_FIELD(kind, ctype, field, dims, trace, conf, unit, def) ctype field dims;
    CA_SETTINGS(CA_SETTING_FIELD)
#undef CA_SETTING_FIELD
} ca_config;

/* The rows of CA_SETTINGS as data, in the table's order (alloc_settings.c):
 * for the parsers and printers, and `build/replay --settings`. */
typedef struct {
    ca_setting_kind kind;
    const char *trace;  /* `set TRACE BYTES` in a trace, or NULL */
    const char *conf;   /* PYTORCH_CUDA_ALLOC_CONF key, or NULL */
    const char *unit;   /* of the conf value; of the set line without a conf key */
    const char *field;  /* the ca_config member's name */
    size_t offset;      /* offsetof(ca_config, field) */
} ca_setting;
enum {
#define CA_SETTING_COUNT(kind, ctype, field, ...) CA_SETTING_INDEX_##field,
    CA_SETTINGS(CA_SETTING_COUNT)
#undef CA_SETTING_COUNT
    CA_N_SETTINGS
};
extern const ca_setting ca_settings[CA_N_SETTINGS];
/* Its name in messages: the trace name, else the conf key. */
const char *ca_setting_name(const ca_setting *s);
/* The setting's field in cfg: a uint64_t (BYTES, MIB), double (FRACTION),
 * uint32_t[CA_ROUNDUP_INTERVALS] (DIVISIONS) or bool (BOOL). */
void *ca_setting_field(ca_config *cfg, const ca_setting *s);
const void *ca_setting_cfield(const ca_config *cfg, const ca_setting *s);
/* Whether the setting has the same value in x and y. */
bool ca_setting_equal(const ca_setting *s, const ca_config *x, const ca_config *y);

/* The defaults: no limit, no split limit, 20 MiB non-split rounding, no
 * rounding divisions, no garbage collection, no expandable segments. */
ca_config ca_config_default(void);
/* 0 if PyTorch would accept cfg (AllocatorConfig::parseMaxSplitSize etc.:
 * whole MiB, >= 20 MiB, here also <= 2^60; divisions 0 or a power of two;
 * threshold 0 or in (0, 1)), else -1 with the reason in err. */
int ca_config_check(const ca_config *cfg, char *err, size_t len);
/* Whether two configurations are the same (field by field). */
bool ca_config_equal(const ca_config *x, const ca_config *y);

/* Parses s in PYTORCH_CUDA_ALLOC_CONF syntax ("key:value,key:value", lists
 * as "[256:1,512:2,>:8]"; spaces ignored, as AllocatorConfig::lexArgs does)
 * into cfg, starting from cfg's current values (a key given twice: the last
 * wins, as in PyTorch). Strict where PyTorch's stoi/stod are lax: a value
 * must be a whole number (or, for the threshold, a decimal) and nothing
 * else. Keys PyTorch knows that do not change the device allocator's
 * accounting (release_lock_on_cudamalloc, pinned_use_cuda_host_register,
 * pinned_num_register_threads, pinned_use_background_threads, backend:native)
 * are checked and ignored; backend:cudaMallocAsync is refused (a different
 * allocator). Returns 0, or -1 with one line in err (unknown key, bad value);
 * cfg may then be partly changed. The limit is not a conf key (--limit). */
int ca_conf_parse(const char *s, ca_config *cfg, char *err, size_t len);
/* Writes cfg's settings as a PYTORCH_CUDA_ALLOC_CONF string ("" for the
 * defaults; the limit is not included). Returns the length snprintf would. */
int ca_conf_format(const ca_config *cfg, char *out, size_t len);

/* One statistic as PyTorch keeps it ("all" pools aggregated): increase_stat
 * adds to current and allocated and raises peak; decrease_stat subtracts from
 * current and adds to freed. */
typedef struct {
    int64_t current, peak, allocated, freed;
} ca_stat;

typedef struct {
    ca_stat allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
    ca_stat allocation, segment, active, inactive_split; /* counts */
    ca_stat oversize_allocations, oversize_segments;     /* blocks >= max_split_size */
    int64_t num_alloc_retries, num_ooms;
    int64_t num_sync_all_streams;                       /* release_cached_blocks calls */
    int64_t num_device_alloc, num_device_free;          /* segments asked / returned */
} ca_stats;

typedef struct ca_allocator ca_allocator;

/* Results of ca_malloc / ca_malloc_stream. CA_TOO_MANY_STREAMS: the
 * request names a stream beyond the CA_MAX_STREAMS the model keeps pools for
 * (nothing allocated, nothing counted). */
enum { CA_OK = 0, CA_OOM = 1, CA_TOO_MANY_STREAMS = 2 };

/* cfg NULL means the defaults. Returns NULL if ca_config_check refuses cfg. */
ca_allocator *ca_create(const ca_config *cfg, ca_backend backend);
/* Returns every segment to the backend and frees the model. */
void ca_destroy(ca_allocator *a);
/* Turns the check after every operation on or off (default: ca_debug_default). */
void ca_set_debug(ca_allocator *a, bool on);
/* Whether a new model checks its invariants after every operation: in the
 * test build (CA_DEBUG) yes, unless MEMCLAIMS_MODEL_CHECKS=0, which make
 * test's fixture comparisons set for the large configurations they only
 * compare figures of (the check walks every block: O(blocks) per operation,
 * 4 s under ASan for one 6-step Transformer run instead of 0.02 s); without
 * CA_DEBUG no. */
bool ca_debug_default(void);

/* torch.empty(bytes, dtype=uint8): CA_OK and the block's address in *addr,
 * or CA_OOM (nothing allocated; num_ooms counted, cache already emptied).
 * bytes == 0 allocates nothing: CA_OK with *addr = 0. bytes >= CA_MAX_REQUEST
 * is CA_OOM without touching the allocator (num_ooms unchanged, as PyTorch). */
int ca_malloc(ca_allocator *a, uint64_t bytes, uint64_t *addr);
/* The same on a stream (any 64-bit id; 0 is the default stream, what
 * ca_malloc uses). A freed block returns to its own stream's pool and is
 * reused only by requests on that stream (BlockComparatorSize orders pools
 * by stream first; get_free_block stops at another stream's blocks). */
int ca_malloc_stream(ca_allocator *a, uint64_t bytes, uint64_t stream, uint64_t *addr);
/* Frees the live block at addr. Returns 0, or -1 if no live block starts
 * there. addr 0 is a no-op returning 0 (free(nullptr)). */
int ca_free(ca_allocator *a, uint64_t addr);
/* torch.cuda.empty_cache(): releases every free block that is a whole segment. */
void ca_empty_cache(ca_allocator *a);
/* torch.cuda.reset_peak_memory_stats(): every peak to its current value. */
void ca_reset_peak(ca_allocator *a);
const ca_stats *ca_get_stats(const ca_allocator *a);

/* State from before a recording began (docs/TRACE.md "segment", "live"):
 * one segment of bytes on a stream, in the small or large pool, holding
 * the live blocks given (sorted or not; addresses inside the segment, not
 * overlapping). A block of size 0 takes round_size(requested) bytes, and in
 * a large segment also a following gap of at most 1 MiB (which PyTorch
 * cannot leave free: should_split). The caller hints the backend to place
 * the segment at addr; if it lands elsewhere the segment is given back and
 * -1 returned. The segment is counted as reserved even above the limit.
 * Returns 0, or -1 with the reason in err: CA_PRELOAD_NO_ROOM (-2) where the
 * device has no room left for it (the run's memory from before does not
 * fit this device: an answer, not a malformed state). */
#define CA_PRELOAD_NO_ROOM (-2)
typedef struct {
    uint64_t addr, size, requested;
} ca_preload_block;
int ca_preload_segment(ca_allocator *a, uint64_t addr, uint64_t bytes, uint64_t stream, bool small,
                       const ca_preload_block *live, size_t n, char *err, size_t len);

/* The size of the block the live allocation at addr occupies (what
 * allocated_bytes counts for it), or 0 if none. */
uint64_t ca_block_size(const ca_allocator *a, uint64_t addr);
/* Free bytes cached in the pools, and the largest free block among them. */
uint64_t ca_cached_free_bytes(const ca_allocator *a);
uint64_t ca_largest_free_block(const ca_allocator *a);

/* The size rules alone, for experiments that explain a figure. */
uint64_t ca_round_size(uint64_t bytes);           /* round_size, no divisions (saturates near 2^64) */
/* round_size under cfg's roundup_power2_divisions (roundup_power2_next_division). */
uint64_t ca_round_size_cfg(const ca_config *cfg, uint64_t bytes);
uint64_t ca_allocation_size(uint64_t rounded);    /* get_allocation_size */

/* Checks that blocks tile every segment, nothing overlaps, neighbours are
 * linked both ways, no two free blocks touch, pools hold exactly the free
 * blocks (in search order), and every statistic's current value equals a
 * recount. Returns 0, or -1 with the first broken invariant in err. O(n log n). */
int ca_check_invariants(const ca_allocator *a, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
