/* alloc_internal.h: the allocator model's data structures, shared by
 * alloc_model.c (the rules), alloc_pool.c (the structures) and alloc_check.c
 * (the invariant check) and visible to the tests; not part of the API.
 *
 *   ca_block    PyTorch's Block: a range of a segment, live or free, linked to
 *               its neighbours in the segment (prev/next).
 *   ca_pool     PyTorch's BlockPool: the free blocks of one pool ordered by
 *               (size, address). They are kept by size class (sixteen
 *               classes per power of two), each class a treap, with a bitmap
 *               of the classes that hold blocks: the search order is the
 *               classes' order, then each treap's, and a search descends a
 *               treap of a few blocks instead of one of all of them. Plus a
 *               list of the free blocks that are whole segments (what
 *               empty_cache releases, found without a scan). One pair of
 *               pools (small, large) per stream: PyTorch keeps one set
 *               ordered by (stream, size, address), which is the same.
 *               Expandable segments' unmapped ranges are in a list by
 *               address (BlockPool::unmapped).
 *   live map    address -> live block, open addressing (PyTorch's
 *               allocated_blocks), for ca_free; each slot keeps its block's
 *               address beside it, so that probes read no block.
 *   segments    a list of every segment, for ca_destroy and the checks. */
#ifndef MC_ALLOC_INTERNAL_H
#define MC_ALLOC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc_model.h"
#include "alloc_tree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Expandable segments' address spaces lie in [CA_ES_SPACE_LO, CA_ES_SPACE_HI),
 * above everything the host backend hands out (CA_HOST_SPACE_HI), so that
 * their blocks never share an address with a cudaMalloc'd segment's. */
#define CA_ES_SPACE_LO (1ULL << 62)
#define CA_ES_SPACE_HI (1ULL << 63)

typedef struct ca_segment {
    uint64_t addr, size;             /* expandable: the whole address space */
    bool small;
    bool preloaded;                  /* from ca_preload_segment: any size */
    bool expandable;                 /* an ExpandableSegment */
    uint32_t sidx;                   /* its stream's index */
    uint64_t page;                   /* expandable: the page (segment_size_) */
    struct ca_segment *prev, *next;  /* the allocator's list of segments */
} ca_segment;

typedef struct ca_block {
    ca_tnode node;                  /* first: in its pool's treap while free;
                                       node.val: gc_count_base */
    uint64_t addr, size;
    uint64_t requested;             /* requested_size of a live block */
    struct ca_block *prev, *next;   /* neighbours in the segment */
    struct ca_block *wprev, *wnext; /* the pool's whole-segment list, or
                                       its unmapped list (unmapped blocks) */
    ca_segment *seg;
    bool allocated, small, in_whole;
    bool unmapped;                  /* expandable: no pages behind it */
    uint32_t sidx;                  /* its stream's index (pools[2 * sidx + small]) */
} ca_block;

/* Classes per power of two: 2^CA_POOL_CLASS_BITS. Sixteen keep most
 * treaps at a block or two, so that their updates rarely descend or
 * rotate: the model ran 12% faster than with four on make bench's trace,
 * for the same instruction count; more classes gained little more. */
#define CA_POOL_CLASS_BITS 4
#define CA_POOL_CLASSES (64u << CA_POOL_CLASS_BITS) /* > ca_pool_class of any size */

typedef struct {
    ca_tree cls[CA_POOL_CLASSES];                /* free blocks by class, key (size, address) */
    uint64_t nonempty[CA_POOL_CLASSES / 64];     /* bit c set: cls[c] holds blocks */
    size_t n;                                    /* free blocks in the pool */
    ca_block *whole;                             /* free blocks with no neighbours */
    ca_block *unmapped;                          /* unmapped blocks by address */
    bool small;
} ca_pool;

struct ca_allocator {
    ca_config cfg;
    ca_backend be;
    ca_stats st;
    uint64_t total_reserved;  /* total_allocated_memory: sum of segment sizes */
    ca_pool small, large;     /* stream 0's */
    ca_pool *pools[2 * CA_MAX_STREAMS]; /* [2 * sidx + small]; 0 and 1 are large and small */
    uint64_t stream_id[CA_MAX_STREAMS]; /* sidx -> stream; stream_id[0] = 0 */
    uint32_t n_streams;
    uint64_t gc_calls[2];     /* get_free_blocks_call_count of the large [0] and small [1] pools */
    uint64_t es_next;         /* where the next expandable segment's address space goes */
    uint64_t es_mapped;       /* bytes mapped in expandable segments */
    uint64_t preloaded_bytes; /* reserved by ca_preload_segment (may pass the limit) */
    ca_segment *segs;
    size_t n_segs;
    ca_block **map;           /* live blocks by address; NULL = empty slot */
    uint64_t *map_key;        /* map[i]->addr (0: empty slot) */
    size_t map_cap, map_n;    /* capacity is a power of two */
    ca_block *spare;          /* recycled block structs, linked by next */
    void **slabs;             /* block struct slabs, freed by ca_destroy */
    size_t n_slabs, cap_slabs;
    bool debug;
};

/* ---- alloc_pool.c: the data structures under the rules ---- */

/* A zeroed block struct (from a slab); back to the slab's spare list. */
ca_block *ca_block_new(ca_allocator *a);
void ca_block_delete(ca_allocator *a, ca_block *b);

/* The live block at addr, or NULL. */
ca_block *ca_map_find(const ca_allocator *a, uint64_t addr);
/* Adds a live block; removes and returns the live block at addr (or NULL). */
void ca_map_put(ca_allocator *a, ca_block *b);
ca_block *ca_map_take(ca_allocator *a, uint64_t addr);

static inline ca_pool *ca_pool_of(ca_allocator *a, uint32_t sidx, bool small)
{
    return a->pools[2 * sidx + small];
}
static inline ca_pool *ca_pool_of_block(ca_allocator *a, const ca_block *b)
{
    return a->pools[2 * b->sidx + b->small];
}
void ca_pool_init(ca_pool *p, bool small);
/* The index of stream's pools, made if new; -1 past CA_MAX_STREAMS. */
int ca_stream_index(ca_allocator *a, uint64_t stream);
/* The size class of a block of size bytes: monotone in size. */
unsigned ca_pool_class(uint64_t size);
/* The free block with the smallest key >= (k1, k2); the largest key
 * < (k1, k2); the largest key. NULL if none. */
ca_block *ca_pool_lower_bound(const ca_pool *p, uint64_t k1, uint64_t k2);
ca_block *ca_pool_before(const ca_pool *p, uint64_t k1, uint64_t k2);
ca_block *ca_pool_last(const ca_pool *p);
/* A free block into / out of its pool (insert_into_blocks / blocks.erase);
 * a block with no neighbours also joins / leaves the whole-segment list. */
void ca_pool_insert(ca_allocator *a, ca_block *b);
void ca_pool_erase(ca_allocator *a, ca_block *b);
/* Gives b, in its pool with its neighbour links already final, the extent
 * (addr, size), changing its key in place where the search order allows. */
void ca_pool_rekey(ca_allocator *a, ca_block *b, uint64_t addr, uint64_t size);
/* The free block after b in its pool's search order, or NULL. */
ca_block *ca_pool_next(const ca_pool *p, const ca_block *b);
/* An unmapped block into / out of its pool's unmapped list. */
void ca_unmapped_insert(ca_allocator *a, ca_block *b);
void ca_unmapped_erase(ca_allocator *a, ca_block *b);

/* ---- alloc_es.c: expandable segments ---- */

/* try_allocate_expandable_block: a mapped free block of at least size bytes
 * on sidx's pool (not in the pool), or NULL (out of memory; pages mapped on
 * the way stay mapped, as in the reference). */
ca_block *ca_es_allocate(ca_allocator *a, uint32_t sidx, bool small, uint64_t size);
/* unmap_block, and release_expandable_segment when nothing stays mapped:
 * the whole pages of the free mapped block b go back to the device. */
void ca_es_unmap(ca_allocator *a, ca_block *b);
/* get_free_block's walk for expandable blocks: the block at or after b in
 * the pool's order whose expandable size is smallest, as the reference
 * walks it. */
ca_block *ca_es_best(ca_allocator *a, ca_pool *p, ca_block *b);
/* The rules alloc_es.c shares with alloc_model.c. */
size_t ca_try_merge(ca_allocator *a, ca_block *dst, ca_block *src);
void ca_stat_inc(ca_stat *s, uint64_t amount);
void ca_stat_dec(ca_stat *s, uint64_t amount);

#ifdef __cplusplus
}
#endif
#endif
