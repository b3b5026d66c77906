/* alloc_model.c: the rules of PyTorch's caching allocator (alloc_model.h),
 * function by function after DeviceCachingAllocator in
 * c10/cuda/CUDACachingAllocator.cpp: malloc, get_free_block, alloc_block,
 * release_available_cached_blocks, release_cached_blocks,
 * garbage_collect_cached_blocks, alloc_found_block, free, free_block,
 * try_merge_blocks. Statistics are updated where and as the reference
 * updates them (same amounts, same order), so peaks and the allocated/freed
 * totals agree too. The size rules (round_size, get_allocation_size) are in
 * alloc_size.c, the configuration's defaults and checks in alloc_settings.c
 * (its fields in alloc_settings.h), the data structures in alloc_pool.c,
 * expandable segments in alloc_es.c, the configuration parser in
 * alloc_conf.c, state from before a recording in
 * alloc_preload.c, the invariant check in alloc_check.c. */
#include "alloc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void check_or_abort(const ca_allocator *a, const char *op);

/* ------------------------------------------------------------ statistics */

void ca_stat_inc(ca_stat *s, uint64_t amount)  /* increase_stat */
{
    s->current += (int64_t)amount;
    if (s->current > s->peak) s->peak = s->current;
    s->allocated += (int64_t)amount;
}

void ca_stat_dec(ca_stat *s, uint64_t amount)  /* decrease_stat */
{
    s->current -= (int64_t)amount;
    s->freed += (int64_t)amount;
}

#define stat_inc ca_stat_inc
#define stat_dec ca_stat_dec

/* free_block applies a net change as one increase or one decrease. */
static void stat_net(ca_stat *s, int64_t delta)
{
    if (delta > 0) stat_inc(s, (uint64_t)delta);
    if (delta < 0) stat_dec(s, (uint64_t)-delta);
}

void ca_reset_peak(ca_allocator *a)  /* resetPeakStats */
{
    ca_stat *all[] = {&a->st.allocated_bytes, &a->st.reserved_bytes, &a->st.active_bytes,
                      &a->st.inactive_split_bytes, &a->st.requested_bytes, &a->st.allocation,
                      &a->st.segment, &a->st.active, &a->st.inactive_split,
                      &a->st.oversize_allocations, &a->st.oversize_segments};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) all[i]->peak = all[i]->current;
    check_or_abort(a, "ca_reset_peak");
}

const ca_stats *ca_get_stats(const ca_allocator *a) { return &a->st; }

/* ------------------------------------------------------------ create */

/* The debug check (CA_DEBUG or ca_set_debug) after every public operation. */
static void check_or_abort(const ca_allocator *a, const char *op)
{
    char err[256];
    if (a->debug && ca_check_invariants(a, err, sizeof err) != 0) {
        fprintf(stderr, "allocator model: invariant broken after %s: %s\n", op, err);
        abort();
    }
}

ca_allocator *ca_create(const ca_config *cfg, ca_backend backend)
{
    ca_config c = cfg ? *cfg : ca_config_default();
    char err[160];
    if (ca_config_check(&c, err, sizeof err) != 0 || !backend.dev_malloc || !backend.dev_free)
        return NULL;
    if (c.expandable_segments && (!backend.dev_map || !backend.dev_unmap || !backend.total_bytes))
        return NULL; /* the backend cannot map pages */
    ca_allocator *a = mc_xmalloc(sizeof *a);
    memset(a, 0, sizeof *a);
    a->cfg = c;
    a->be = backend;
    ca_pool_init(&a->small, true);
    ca_pool_init(&a->large, false);
    a->pools[0] = &a->large;
    a->pools[1] = &a->small;
    a->n_streams = 1;
    a->es_next = CA_ES_SPACE_LO;
    a->map_cap = 1024;
    a->map = calloc(a->map_cap, sizeof *a->map);
    a->map_key = calloc(a->map_cap, sizeof *a->map_key);
    CHECK(a->map != NULL && a->map_key != NULL, "out of host memory");
    a->debug = ca_debug_default();
    return a;
}

bool ca_debug_default(void)
{
#ifdef CA_DEBUG
    const char *env = getenv("MEMCLAIMS_MODEL_CHECKS");
    return !(env && strcmp(env, "0") == 0);
#else
    return false;
#endif
}

void ca_set_debug(ca_allocator *a, bool on) { a->debug = on; }

void ca_destroy(ca_allocator *a)
{
    if (!a) return;
    for (ca_segment *s = a->segs, *n; s; s = n) {
        n = s->next;
        if (!s->expandable) a->be.dev_free(a->be.ctx, s->addr, s->size);
        free(s);
    }
    if (a->es_mapped) a->be.dev_unmap(a->be.ctx, a->es_mapped);
    for (uint32_t i = 1; i < a->n_streams; i++) free(a->pools[2 * i]); /* both pools, one allocation */
    for (size_t i = 0; i < a->n_slabs; i++) free(a->slabs[i]);
    free(a->slabs);
    free(a->map);
    free(a->map_key);
    free(a);
}

/* ------------------------------------------------------------ segments */

/* alloc_block: a new segment of alloc_size bytes as one whole block (not yet
 * in a pool), or NULL. The limit is checked before asking the device, with
 * alloc_size even for expandable segments, which then map pages for size. */
static ca_block *alloc_block(ca_allocator *a, uint32_t sidx, bool small, uint64_t alloc_size,
                             uint64_t size, bool is_retry)
{
    if (is_retry) a->st.num_alloc_retries++;
    if (a->cfg.limit_bytes != CA_UNLIMITED && a->total_reserved + alloc_size > a->cfg.limit_bytes)
        return NULL;
    if (a->cfg.expandable_segments) return ca_es_allocate(a, sidx, small, size);
    uint64_t addr = 0;
    if (a->be.dev_malloc(a->be.ctx, alloc_size, &addr) != 0) return NULL;
    a->total_reserved += alloc_size;
    ca_segment *s = mc_xmalloc(sizeof *s);
    *s = (ca_segment){.addr = addr, .size = alloc_size, .small = small, .sidx = sidx, .next = a->segs};
    if (a->segs) a->segs->prev = s;
    a->segs = s;
    a->n_segs++;
    ca_block *b = ca_block_new(a);
    b->addr = addr;
    b->size = alloc_size;
    b->small = small;
    b->sidx = sidx;
    b->seg = s;
    stat_inc(&a->st.segment, 1);
    stat_inc(&a->st.reserved_bytes, alloc_size);
    if (alloc_size >= a->cfg.max_split_size) stat_inc(&a->st.oversize_segments, 1);
    a->st.num_device_alloc++;
    return b;
}

/* release_block: b is free, in its pool and a whole segment. */
static void release_block(ca_allocator *a, ca_block *b)
{
    ca_pool_erase(a, b);
    a->st.num_device_free++;
    a->be.dev_free(a->be.ctx, b->addr, b->size);
    a->total_reserved -= b->size;
    stat_dec(&a->st.segment, 1);
    stat_dec(&a->st.reserved_bytes, b->size);
    if (b->size >= a->cfg.max_split_size) stat_dec(&a->st.oversize_segments, 1);
    ca_segment *s = b->seg;
    if (s->prev) s->prev->next = s->next; else a->segs = s->next;
    if (s->next) s->next->prev = s->prev;
    a->n_segs--;
    free(s);
    ca_block_delete(a, b);
}

/* Appends the free expandable-segment blocks of a treap to out. */
static void gather_es(const ca_tnode *n, ca_block ***out, size_t *k, size_t *cap)
{
    if (!n) return;
    gather_es(n->c[0], out, k, cap);
    ca_block *b = (ca_block *)n;
    if (b->seg->expandable) {
        if (*k == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *out = realloc(*out, *cap * sizeof **out);
            CHECK(*out != NULL, "out of host memory");
        }
        (*out)[(*k)++] = b;
    }
    gather_es(n->c[1], out, k, cap);
}

/* release_blocks: every free whole segment of one pool kind, on every
 * stream; the free blocks of expandable segments give back their whole
 * pages (unmap_block) and a segment left with nothing mapped goes. */
static void release_blocks(ca_allocator *a, bool small)
{
    for (uint32_t i = 0; i < a->n_streams; i++) {
        ca_pool *p = ca_pool_of(a, i, small);
        while (p->whole) release_block(a, p->whole);
    }
    if (!a->es_mapped) return;
    ca_block **todo = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t i = 0; i < a->n_streams; i++) {
        ca_pool *p = ca_pool_of(a, i, small);
        for (unsigned c = 0; c < CA_POOL_CLASSES && p->n; c++) gather_es(p->cls[c].root, &todo, &n, &cap);
    }
    for (size_t i = 0; i < n; i++) ca_es_unmap(a, todo[i]);
    free(todo);
}

/* release_cached_blocks (empty_cache): large pools first. Events are not
 * modelled (no record_stream), so there are none to wait for. */
static void release_cached_blocks(ca_allocator *a)
{
    a->st.num_sync_all_streams++;  /* synchronize_and_free_events */
    release_blocks(a, false);
    release_blocks(a, true);
}

/* garbage_collect_cached_blocks: when reserved memory passes the threshold
 * fraction of the allowed memory, free whole cached large blocks (every
 * stream) whose age (get_free_block calls on the pool since the block went
 * back to it: gc_count) is at least the average, pass after pass, until
 * the excess is reclaimed or no block goes. */
static void garbage_collect_cached_blocks(ca_allocator *a)
{
    uint64_t gc_threshold = (uint64_t)(a->cfg.gc_threshold * (double)a->cfg.limit_bytes);
    if (a->total_reserved <= gc_threshold) return;
    uint64_t target = a->total_reserved - gc_threshold, reclaimed = 0, total_age = 0;
    int64_t freeable = 0;
    for (uint32_t i = 0; i < a->n_streams; i++)
        for (ca_block *b = ca_pool_of(a, i, false)->whole; b; b = b->wnext) {
            total_age += a->gc_calls[0] - b->node.val;
            freeable++;
        }
    if (freeable == 0) return;
    bool freed = true;
    while (reclaimed < target && freed && freeable > 0) {
        double age_threshold = (double)total_age / (double)freeable;
        freed = false;
        for (uint32_t i = 0; i < a->n_streams; i++) {
            for (ca_block *b = ca_pool_of(a, i, false)->whole, *n; b; b = n) {
                n = b->wnext;
                uint64_t age = a->gc_calls[0] - b->node.val;
                if ((double)age >= age_threshold) {
                    freed = true;
                    reclaimed += b->size;
                    total_age -= age;
                    freeable--;
                    release_block(a, b);
                }
            }
        }
    }
}

void ca_empty_cache(ca_allocator *a)
{
    release_cached_blocks(a);
    check_or_abort(a, "ca_empty_cache");
}

/* b lies in an expandable segment (the reference's release_block asserts
 * on those). */
static bool in_es(const ca_allocator *a, const ca_block *b)
{
    return a->cfg.expandable_segments && b->seg->expandable;
}

/* Under one setting for the whole run every free block >= max_split_size is
 * a whole segment (max_split_size is a whole number of MiB >= 20, and an
 * oversize block is never split), so the reference never meets a split one
 * in release_available_cached_blocks. A segment from before the recording
 * (ca_preload_segment) replayed under a what-if max_split_size can hold one;
 * the reference would cudaFree the middle of a segment there, so the model
 * leaves such blocks alone, as release_cached_blocks does. */
static bool is_split(const ca_block *b)
{
    return b->prev || b->next;
}

/* release_available_cached_blocks: frees one oversize block of at least
 * max(size, max_split_size), or else oversize blocks from the largest down
 * until that many bytes are freed. Releases what it passes even when the
 * total falls short (then returns false), as the reference does. An
 * expandable block ends either search (release_block would assert); a
 * split block (above) is passed over: the first whole one at or above the
 * key is freed, and the walk from the largest down goes on past it. */
static bool release_available_cached_blocks(ca_allocator *a, ca_pool *p, uint64_t size)
{
    uint64_t m = a->cfg.max_split_size;
    if (m == CA_UNLIMITED) return false;
    uint64_t key = size < m ? m : size;
    ca_block *b = ca_pool_lower_bound(p, key, 0);
    while (b && is_split(b) && !in_es(a, b)) b = ca_pool_next(p, b);
    if (b) {
        if (in_es(a, b)) return false;
        release_block(a, b);
        return true;
    }
    b = ca_pool_last(p);
    uint64_t released = 0;
    while (b && released < key && b->size >= m && !in_es(a, b)) {
        ca_block *cur = b;
        b = ca_pool_before(p, cur->size, cur->addr);
        if (!is_split(cur)) {
            released += cur->size;
            release_block(a, cur);
        }
    }
    return released >= key;
}

/* ------------------------------------------------------------ malloc */

/* get_free_block: best fit by (size, address), refusing an oversize block
 * for a request below max_split_size, and one too much larger for an
 * oversize request. The block stays in the pool for alloc_found_block. */
static ca_block *get_free_block(ca_allocator *a, ca_pool *p, uint64_t size)
{
    if (a->cfg.gc_threshold > 0.0 && a->cfg.limit_bytes != CA_UNLIMITED)
        a->gc_calls[p->small]++; /* get_free_blocks_call_count: ages for the garbage collection */
    ca_block *b = ca_pool_lower_bound(p, size, 0);
    if (!b) return NULL;
    if (in_es(a, b)) b = ca_es_best(a, p, b);
    uint64_t m = a->cfg.max_split_size;
    if (size < m && b->size >= m) return NULL;
    if (size >= m && b->size >= size + a->cfg.max_non_split_rounding_size) return NULL;
    return b;
}

static bool should_split(const ca_allocator *a, const ca_block *b, uint64_t size)
{
    uint64_t remaining = b->size - size;
    if (b->small || a->cfg.expandable_segments) return remaining >= CA_MIN_BLOCK_SIZE;
    return size < a->cfg.max_split_size && remaining > CA_SMALL_SIZE;
}

/* alloc_found_block: the request takes the front of b; a split leaves the
 * remainder (the back) in the pool. in_pool: b came from the pool (else it
 * is a new segment). As in the reference, the remainder is the old block. */
static ca_block *alloc_found_block(ca_allocator *a, ca_block *b, uint64_t size, uint64_t orig,
                                   bool split, bool in_pool)
{
    bool already_split = b->prev || b->next;
    bool es = in_es(a, b); /* not in inactive_split */
    if (split) {
        ca_block *rest = b;
        b = ca_block_new(a);
        b->addr = rest->addr;
        b->size = size;
        b->small = rest->small;
        b->sidx = rest->sidx;
        b->seg = rest->seg;
        b->prev = rest->prev;
        if (b->prev) b->prev->next = b;
        b->next = rest;
        rest->prev = b;
        if (in_pool) {
            ca_pool_rekey(a, rest, rest->addr + size, rest->size - size);
        } else {
            rest->addr += size;
            rest->size -= size;
            ca_pool_insert(a, rest);
        }
        if (es) {
        } else if (already_split) {
            stat_dec(&a->st.inactive_split_bytes, b->size);
        } else {
            stat_inc(&a->st.inactive_split_bytes, rest->size);
            stat_inc(&a->st.inactive_split, 1);
        }
    } else {
        if (in_pool) ca_pool_erase(a, b);
        if (already_split && !es) {
            stat_dec(&a->st.inactive_split_bytes, b->size);
            stat_dec(&a->st.inactive_split, 1);
        }
    }
    b->allocated = true;
    b->requested = orig;
    stat_inc(&a->st.allocation, 1);
    stat_inc(&a->st.allocated_bytes, b->size);
    stat_inc(&a->st.active, 1);
    stat_inc(&a->st.active_bytes, b->size);
    stat_inc(&a->st.requested_bytes, orig);
    if (b->size >= a->cfg.max_split_size) stat_inc(&a->st.oversize_allocations, 1);
    return b;
}

int ca_malloc(ca_allocator *a, uint64_t bytes, uint64_t *addr)
{
    return ca_malloc_stream(a, bytes, 0, addr);
}

int ca_malloc_stream(ca_allocator *a, uint64_t bytes, uint64_t stream, uint64_t *addr)
{
    *addr = 0;
    if (bytes == 0) return CA_OK;              /* allocate(0): no block */
    if (bytes >= CA_MAX_REQUEST) return CA_OOM; /* "more than 1EB": before malloc */
    int sidx = stream == 0 ? 0 : ca_stream_index(a, stream);
    if (sidx < 0) return CA_TOO_MANY_STREAMS;
    uint64_t size = ca_round_size_cfg(&a->cfg, bytes);
    bool small = size <= CA_SMALL_SIZE;         /* get_pool */
    ca_pool *p = ca_pool_of(a, (uint32_t)sidx, small);
    ca_block *b = get_free_block(a, p, size);
    bool in_pool = b != NULL;
    if (!b) {
        if (a->cfg.gc_threshold > 0.0 && a->cfg.limit_bytes != CA_UNLIMITED)
            garbage_collect_cached_blocks(a);
        uint64_t alloc_size = ca_allocation_size(size); /* only needed for a new segment */
        b = alloc_block(a, (uint32_t)sidx, small, alloc_size, size, false);
        if (!b && release_available_cached_blocks(a, p, size))
            b = alloc_block(a, (uint32_t)sidx, small, alloc_size, size, false);
        if (!b) {
            release_cached_blocks(a);
            b = alloc_block(a, (uint32_t)sidx, small, alloc_size, size, true);
        }
        if (!b) {
            a->st.num_ooms++;
            check_or_abort(a, "ca_malloc (out of memory)");
            return CA_OOM;
        }
    }
    b = alloc_found_block(a, b, size, bytes, should_split(a, b, size), in_pool);
    ca_map_put(a, b);
    *addr = b->addr;
    check_or_abort(a, "ca_malloc");
    return CA_OK;
}

/* ------------------------------------------------------------ free */

/* free_block with try_merge_blocks: the freed block b absorbs its free
 * neighbours and goes back to the pool; the net change of the inactive-split
 * figures is applied once, as the reference does. Which struct survives a
 * merge is not observable, so the one already in the pool does (its key is
 * updated in place where the order allows) rather than erasing it and
 * inserting b. */
static void free_block(ca_allocator *a, ca_block *b)
{
    uint64_t original_size = b->size, requested = b->requested;
    /* try_merge_blocks: free neighbours with pages behind them (mapped) */
    ca_block *prev = b->prev && !b->prev->allocated && !b->prev->unmapped ? b->prev : NULL;
    ca_block *next = b->next && !b->next->allocated && !b->next->unmapped ? b->next : NULL;
    int64_t net_blocks = -(int64_t)(prev != NULL) - (int64_t)(next != NULL);
    int64_t net_bytes = -(int64_t)(prev ? prev->size : 0) - (int64_t)(next ? next->size : 0);
    uint64_t addr = prev ? prev->addr : b->addr;
    uint64_t size = b->size + (prev ? prev->size : 0) + (next ? next->size : 0);
    ca_block *keep = prev ? prev : next ? next : b;
    if (prev && next) { /* [prev b next]: next goes */
        ca_pool_erase(a, next);
        prev->next = next->next;
        ca_block_delete(a, next);
    } else if (prev) { /* [prev b] */
        prev->next = b->next;
    } else if (next) { /* [b next] */
        next->prev = b->prev;
        if (b->prev) b->prev->next = next;
    }
    if (keep != b) {
        if (keep->next) keep->next->prev = keep;
        ca_block_delete(a, b);
        ca_pool_rekey(a, keep, addr, size);
    } else {
        ca_pool_insert(a, b);
    }
    if (keep->prev || keep->next) {
        net_blocks += 1;
        net_bytes += (int64_t)keep->size;
    }
    if (!a->cfg.expandable_segments || !keep->seg->expandable) {
        stat_net(&a->st.inactive_split, net_blocks);
        stat_net(&a->st.inactive_split_bytes, net_bytes);
    }
    stat_dec(&a->st.active, 1);
    stat_dec(&a->st.active_bytes, original_size);
    stat_dec(&a->st.requested_bytes, requested);
}

int ca_free(ca_allocator *a, uint64_t addr)
{
    if (addr == 0) return 0;
    ca_block *b = ca_map_take(a, addr);
    if (!b) return -1;
    b->allocated = false;
    stat_dec(&a->st.allocation, 1);
    stat_dec(&a->st.allocated_bytes, b->size);
    if (b->size >= a->cfg.max_split_size) stat_dec(&a->st.oversize_allocations, 1);
    free_block(a, b);
    check_or_abort(a, "ca_free");
    return 0;
}

/* ------------------------------------------------------------ queries */

uint64_t ca_block_size(const ca_allocator *a, uint64_t addr)
{
    const ca_block *b = addr ? ca_map_find(a, addr) : NULL;
    return b ? b->size : 0;
}

uint64_t ca_cached_free_bytes(const ca_allocator *a)
{
    return a->total_reserved - (uint64_t)a->st.allocated_bytes.current;
}

uint64_t ca_largest_free_block(const ca_allocator *a)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < 2 * a->n_streams; i++) {
        const ca_block *b = ca_pool_last(a->pools[i]);
        if (b && b->size > m) m = b->size;
    }
    return m;
}

/* try_merge_blocks for expandable segments (alloc_es.c): src, a free
 * neighbour of dst in the same mapped state, leaves its pool or unmapped
 * list and dst (in neither) takes its range. Returns the bytes taken. */
size_t ca_try_merge(ca_allocator *a, ca_block *dst, ca_block *src)
{
    if (!src || src->allocated || src->unmapped != dst->unmapped) return 0;
    if (src->unmapped)
        ca_unmapped_erase(a, src);
    else
        ca_pool_erase(a, src);
    if (dst->prev == src) {
        dst->addr = src->addr;
        dst->prev = src->prev;
        if (dst->prev) dst->prev->next = dst;
    } else {
        dst->next = src->next;
        if (dst->next) dst->next->prev = dst;
    }
    dst->size += src->size;
    size_t taken = src->size;
    ca_block_delete(a, src);
    return taken;
}
