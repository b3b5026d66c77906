/* alloc_es.c: expandable segments (PYTORCH_CUDA_ALLOC_CONF
 * expandable_segments:True), after Note [Expandable Segments] and the
 * functions find_expandable_block, map_block, try_allocate_expandable_block,
 * unmap_block and release_expandable_segment of DeviceCachingAllocator in
 * c10/cuda/CUDACachingAllocator.cpp.
 *
 * An expandable segment is an address space of 9/8 of the device's memory,
 * rounded up to whole pages, with physical pages (2 MiB in the small pool,
 * 20 MiB in the large one) mapped where blocks need them. Its blocks tile the
 * address space: live blocks, free mapped blocks (in the pool, where the usual
 * best fit finds them) and unmapped ranges (in the pool's unmapped list).
 * Reserved bytes are the mapped bytes; the segment statistic does not count
 * expandable segments (map_block updates reserved_bytes only), and neither
 * do the inactive_split figures.
 *
 * Simplified: addresses are the model's (each new address space follows the
 * last one from CA_ES_SPACE_LO up), not the driver's; the pages a mapping
 * takes come from the backend's capacity all at once (the reference maps page
 * by page and gives back what it took if one fails, which is the same). */
#include <stdlib.h>

#include "alloc_internal.h"
#include "check.h"

/* allocatable: free, mapped or not (events and stream uses are not modelled). */
static bool allocatable(const ca_block *b) { return b && !b->allocated; }

static bool has_available_address_space(const ca_block *b, uint64_t size)
{
    uint64_t bytes = 0;
    while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
    }
    return bytes >= size;
}

/* find_expandable_block: the lowest unmapped range of this stream's pool
 * (with the free block before it, if any) that has room for size bytes, or
 * else a new expandable segment, one unmapped block. NULL if the model's
 * address space for expandable segments is used up, or the new segment
 * could not hold size bytes at all. */
static ca_block *find_expandable_block(ca_allocator *a, uint32_t sidx, bool small, uint64_t size)
{
    ca_pool *p = ca_pool_of(a, sidx, small);
    for (ca_block *c = p->unmapped; c; c = c->wnext) {
        ca_block *cand = allocatable(c->prev) ? c->prev : c;
        if (has_available_address_space(cand, size)) return cand;
    }
    uint64_t page = small ? CA_ES_SMALL_PAGE : CA_ES_LARGE_PAGE;
    uint64_t total = a->be.total_bytes;
    uint64_t want = total + total / 8;                     /* address_space_size */
    if (want < total || want > CA_ES_SPACE_HI - CA_ES_SPACE_LO) return NULL;
    uint64_t va = (want + page - 1) / page * page;           /* numSegments * segment_size */
    uint64_t base = (a->es_next + CA_SMALL_BUFFER - 1) / CA_SMALL_BUFFER * CA_SMALL_BUFFER;
    if (va < size || base > CA_ES_SPACE_HI - va) return NULL;
    a->es_next = base + va;
    ca_segment *s = mc_xmalloc(sizeof *s);
    *s = (ca_segment){.addr = base, .size = va, .small = small, .expandable = true, .sidx = sidx,
                      .page = page, .next = a->segs};
    if (a->segs) a->segs->prev = s;
    a->segs = s;
    a->n_segs++;
    ca_block *b = ca_block_new(a);
    b->addr = base;
    b->size = va;
    b->small = small;
    b->sidx = sidx;
    b->seg = s;
    b->unmapped = true;
    ca_unmapped_insert(a, b);
    return b;
}

/* map_block: maps the pages under the first size bytes of the unmapped
 * block to_map (a page-aligned range), splits off what stays unmapped,
 * merges with free mapped neighbours and puts the block in its pool. */
static bool map_block(ca_allocator *a, ca_block *to_map, uint64_t size)
{
    uint64_t page = to_map->seg->page;
    uint64_t mapped = (size + page - 1) / page * page;
    if (mapped > to_map->size) mapped = to_map->size;
    if (a->be.dev_map(a->be.ctx, mapped) != 0) return false;
    ca_unmapped_erase(a, to_map);
    to_map->unmapped = false;
    if (mapped < to_map->size) {
        ca_block *rest = ca_block_new(a);
        rest->addr = to_map->addr + mapped;
        rest->size = to_map->size - mapped;
        rest->small = to_map->small;
        rest->sidx = to_map->sidx;
        rest->seg = to_map->seg;
        rest->unmapped = true;
        rest->prev = to_map;
        rest->next = to_map->next;
        if (rest->next) rest->next->prev = rest;
        to_map->next = rest;
        to_map->size = mapped;
        ca_unmapped_insert(a, rest);
    }
    ca_try_merge(a, to_map, to_map->prev);
    ca_try_merge(a, to_map, to_map->next);
    ca_pool_insert(a, to_map);
    a->total_reserved += mapped;
    a->es_mapped += mapped;
    ca_stat_inc(&a->st.reserved_bytes, mapped);
    a->st.num_device_alloc++;
    return true;
}

ca_block *ca_es_allocate(ca_allocator *a, uint32_t sidx, bool small, uint64_t size)
{
    ca_block *c = find_expandable_block(a, sidx, small, size);
    if (!c) return NULL;
    if (c->unmapped && !map_block(a, c, c->size < size ? c->size : size)) return NULL;
    while (c->size < size) { /* free -> unmapped -> ...: map more and merge */
        ca_block *next = c->next;
        if (!next || !next->unmapped) return NULL; /* cannot happen: find_expandable_block saw room */
        uint64_t remaining = size - c->size;
        if (!map_block(a, next, remaining < next->size ? remaining : next->size)) return NULL;
        c = next; /* it took c over */
    }
    ca_pool_erase(a, c);
    return c;
}

void ca_es_unmap(ca_allocator *a, ca_block *b)
{
    ca_segment *s = b->seg;
    uint64_t page = s->page;
    uint64_t lo = s->addr + (b->addr - s->addr + page - 1) / page * page;   /* segmentRight(ptr) */
    uint64_t hi = s->addr + (b->addr + b->size - s->addr) / page * page;    /* segmentLeft(ptr + size) */
    if (lo >= hi) return;
    ca_pool_erase(a, b);
    uint64_t before = lo - b->addr, after = b->addr + b->size - hi;
    if (before) { /* prev? -> before_free -> b */
        ca_block *f = ca_block_new(a);
        *f = (ca_block){.addr = b->addr, .size = before, .small = b->small, .sidx = b->sidx,
                        .seg = s, .prev = b->prev, .next = b};
        if (f->prev) f->prev->next = f;
        b->prev = f;
        ca_pool_insert(a, f);
    }
    if (after) { /* b -> after_free -> next? */
        ca_block *f = ca_block_new(a);
        *f = (ca_block){.addr = hi, .size = after, .small = b->small, .sidx = b->sidx, .seg = s,
                        .prev = b, .next = b->next};
        if (f->next) f->next->prev = f;
        b->next = f;
        ca_pool_insert(a, f);
    }
    b->addr = lo;
    b->size = hi - lo;
    b->unmapped = true;
    ca_try_merge(a, b, b->prev);
    ca_try_merge(a, b, b->next);
    a->total_reserved -= hi - lo;
    a->es_mapped -= hi - lo;
    ca_stat_dec(&a->st.reserved_bytes, hi - lo);
    a->be.dev_unmap(a->be.ctx, hi - lo);
    a->st.num_device_free++;
    if (b->prev || b->next) {
        ca_unmapped_insert(a, b);
        return;
    }
    /* release_expandable_segment: nothing mapped is left */
    if (s->prev) s->prev->next = s->next; else a->segs = s->next;
    if (s->next) s->next->prev = s->prev;
    a->n_segs--;
    free(s);
    ca_block_delete(a, b);
}

/* expandable_size: a free block's size plus the unmapped range after it,
 * what it could grow to. */
static uint64_t expandable_size(const ca_block *b)
{
    return b->size + (b->next && b->next->unmapped ? b->next->size : 0);
}

ca_block *ca_es_best(ca_allocator *a, ca_pool *p, ca_block *b)
{
    (void)a;
    ca_block *next = ca_pool_next(p, b);
    while (b->seg->expandable && next && expandable_size(next) < expandable_size(b)) {
        b = next;
        next = ca_pool_next(p, b);
    }
    return b;
}
