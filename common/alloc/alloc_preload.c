/* alloc_preload.c: state from before a recording began (ca_preload_segment,
 * alloc_model.h): a segment with its live blocks, built directly, as the
 * snapshot's `segments` (or the history) say it stood. Its figures count
 * from then on as if the allocator had made them (reserved, allocated,
 * inactive split), but no device call, retry or limit is involved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "check.h"

static int by_addr(const void *x, const void *y)
{
    uint64_t a = ((const ca_preload_block *)x)->addr, b = ((const ca_preload_block *)y)->addr;
    return a < b ? -1 : a > b;
}

/* A new block [addr, addr + size) of segment s, linked after prev. */
static ca_block *piece(ca_allocator *a, ca_segment *s, ca_block *prev, uint64_t addr, uint64_t size)
{
    ca_block *b = ca_block_new(a);
    b->addr = addr;
    b->size = size;
    b->small = s->small;
    b->sidx = s->sidx;
    b->seg = s;
    b->prev = prev;
    if (prev) prev->next = b;
    return b;
}

int ca_preload_segment(ca_allocator *a, uint64_t addr, uint64_t bytes, uint64_t stream, bool small,
                       const ca_preload_block *live, size_t n, char *err, size_t len)
{
    if (addr == 0 || addr % CA_MIN_BLOCK_SIZE || bytes == 0 || bytes % CA_MIN_BLOCK_SIZE ||
        addr > UINT64_MAX - bytes) {
        snprintf(err, len, "segment 0x%llx of %llu bytes: address and size must be nonzero multiples of 512",
                 (unsigned long long)addr, (unsigned long long)bytes);
        return -1;
    }
    int sidx = ca_stream_index(a, stream);
    if (sidx < 0) {
        snprintf(err, len, "more than %d streams", CA_MAX_STREAMS);
        return -1;
    }
    ca_preload_block *v = mc_xmalloc((n + 1) * sizeof *v);
    memcpy(v, live, n * sizeof *v);
    qsort(v, n, sizeof *v, by_addr);
    uint64_t end = addr + bytes;
    for (size_t i = 0; i < n; i++) { /* sizes first, so that nothing is made before all is known */
        uint64_t at = v[i].addr, next = i + 1 < n ? v[i + 1].addr : end;
        if (v[i].requested == 0 || at < addr || at >= end || at % CA_MIN_BLOCK_SIZE) {
            snprintf(err, len, "live block 0x%llx: not a 512-aligned address inside segment 0x%llx, or no bytes",
                     (unsigned long long)at, (unsigned long long)addr);
            free(v);
            return -1;
        }
        if (v[i].size == 0) { /* round_size, and in a large segment the gap PyTorch could not leave free */
            v[i].size = ca_round_size(v[i].requested);
            if (!small && v[i].size < next - at && next - at - v[i].size <= CA_SMALL_SIZE) v[i].size = next - at;
        }
        if (v[i].size % CA_MIN_BLOCK_SIZE || ca_round_size(v[i].requested) > v[i].size || v[i].size > next - at) {
            snprintf(err, len, "live block 0x%llx of %llu bytes (%llu requested) does not fit before 0x%llx",
                     (unsigned long long)at, (unsigned long long)v[i].size,
                     (unsigned long long)v[i].requested, (unsigned long long)next);
            free(v);
            return -1;
        }
    }
    uint64_t got = 0;
    if (a->be.dev_malloc(a->be.ctx, bytes, &got) != 0) {
        snprintf(err, len, "segment 0x%llx of %llu bytes does not fit the device",
                 (unsigned long long)addr, (unsigned long long)bytes);
        free(v);
        return CA_PRELOAD_NO_ROOM;
    }
    if (got != addr) {
        a->be.dev_free(a->be.ctx, got, bytes);
        snprintf(err, len, "segment 0x%llx of %llu bytes cannot be placed there (another segment, or "
                           "outside the device's addresses [2 MiB, 2^62))", (unsigned long long)addr,
                 (unsigned long long)bytes);
        free(v);
        return -1;
    }
    ca_segment *s = mc_xmalloc(sizeof *s);
    *s = (ca_segment){.addr = addr, .size = bytes, .small = small, .preloaded = true,
                      .sidx = (uint32_t)sidx, .next = a->segs};
    if (a->segs) a->segs->prev = s;
    a->segs = s;
    a->n_segs++;
    a->total_reserved += bytes;
    a->preloaded_bytes += bytes;
    ca_stat_inc(&a->st.segment, 1);
    ca_stat_inc(&a->st.reserved_bytes, bytes);
    if (bytes >= a->cfg.max_split_size) ca_stat_inc(&a->st.oversize_segments, 1);
    /* The blocks, in address order, then the free ones into the pool (their
     * links must be final first: the whole-segment list depends on them). */
    ca_block *first = NULL, *prev = NULL;
    uint64_t at = addr;
    for (size_t i = 0; i <= n; i++) {
        uint64_t start = i < n ? v[i].addr : end;
        if (start > at) prev = piece(a, s, prev, at, start - at); /* a free gap */
        if (!first) first = prev;
        if (i == n) break;
        prev = piece(a, s, prev, start, v[i].size);
        if (!first) first = prev;
        prev->allocated = true;
        prev->requested = v[i].requested;
        at = start + v[i].size;
    }
    bool split = first->next != NULL;
    for (ca_block *b = first; b; b = b->next) {
        if (b->allocated) {
            ca_map_put(a, b);
            ca_stat_inc(&a->st.allocation, 1);
            ca_stat_inc(&a->st.allocated_bytes, b->size);
            ca_stat_inc(&a->st.active, 1);
            ca_stat_inc(&a->st.active_bytes, b->size);
            ca_stat_inc(&a->st.requested_bytes, b->requested);
            if (b->size >= a->cfg.max_split_size) ca_stat_inc(&a->st.oversize_allocations, 1);
        } else {
            ca_pool_insert(a, b);
            if (split) {
                ca_stat_inc(&a->st.inactive_split, 1);
                ca_stat_inc(&a->st.inactive_split_bytes, b->size);
            }
        }
    }
    free(v);
    return 0;
}
