/* alloc_check.c: ca_check_invariants, the expensive check of the allocator
 * model (alloc_model.h), run after every operation in debug mode and by the
 * tests. It gathers every block (live ones from the address map, free ones
 * from the pools), sorts blocks and segments by address and walks them
 * together, then recounts every statistic from scratch. O(n log n). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_internal.h"

typedef struct {
    char *err;
    size_t len;
} fail_t;

static int fail(fail_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(fail_t *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->err, f->len, fmt, ap);
    va_end(ap);
    return -1;
}

static int by_addr(const void *x, const void *y)
{
    uint64_t a = (*(const ca_block *const *)x)->addr, b = (*(const ca_block *const *)y)->addr;
    return a < b ? -1 : a > b;
}

static int seg_by_addr(const void *x, const void *y)
{
    uint64_t a = (*(const ca_segment *const *)x)->addr, b = (*(const ca_segment *const *)y)->addr;
    return a < b ? -1 : a > b;
}

/* Appends the free blocks of a treap, in order, to out. */
static void gather(const ca_tnode *n, const ca_block **out, size_t *k)
{
    if (!n) return;
    gather(n->c[0], out, k);
    out[(*k)++] = (const ca_block *)n;
    gather(n->c[1], out, k);
}

/* Each free block: keys, pool, wholeness, no oversize block in a split segment. */
/* Appends a pool's free blocks in search order, checking each class's treap,
 * that every block is in its own class, the bitmap and the count. */
static int gather_pool(const ca_pool *p, const ca_block **out, size_t *k, fail_t *f)
{
    size_t start = *k;
    for (unsigned c = 0; c < CA_POOL_CLASSES; c++) {
        const ca_tree *t = &p->cls[c];
        if (ca_tree_check(t, f->err, f->len)) return -1;
        bool bit = (p->nonempty[c / 64] >> (c % 64)) & 1;
        if (bit != (t->n > 0)) return fail(f, "%s pool: class %u's bit is wrong", p->small ? "small" : "large", c);
        size_t from = *k;
        gather(t->root, out, k);
        for (size_t i = from; i < *k; i++)
            if (ca_pool_class(out[i]->node.k1) != c)
                return fail(f, "free block 0x%llx is in the wrong class", (unsigned long long)out[i]->addr);
    }
    if (*k - start != p->n) return fail(f, "%s pool counts %zu blocks, holds %zu", p->small ? "small" : "large", p->n, *k - start);
    for (size_t i = start + 1; i < *k; i++) /* the classes' order is the search order */
        if (out[i - 1]->node.k1 > out[i]->node.k1 ||
            (out[i - 1]->node.k1 == out[i]->node.k1 && out[i - 1]->node.k2 >= out[i]->node.k2))
            return fail(f, "free blocks 0x%llx and 0x%llx are out of order",
                        (unsigned long long)out[i - 1]->addr, (unsigned long long)out[i]->addr);
    return 0;
}

static int check_free(const ca_allocator *a, const ca_block *b, bool small, uint32_t sidx, fail_t *f)
{
    unsigned long long at = (unsigned long long)b->addr;
    if (b->allocated || b->unmapped) return fail(f, "live or unmapped block 0x%llx is in a pool", at);
    if (b->small != small || b->sidx != sidx) return fail(f, "free block 0x%llx is in the wrong pool", at);
    if (b->node.k1 != b->size || b->node.k2 != b->addr)
        return fail(f, "free block 0x%llx has a stale search key", at);
    if (b->in_whole != (!b->prev && !b->next))
        return fail(f, "free block 0x%llx: whole-segment list membership is wrong", at);
    if (b->size >= a->cfg.max_split_size && (b->prev || b->next) && !a->cfg.expandable_segments &&
        !b->seg->preloaded)
        return fail(f, "oversize free block 0x%llx is part of a split segment", at);
    return 0;
}

/* A pool's unmapped list: unmapped blocks of its stream and kind, by address. */
static int gather_unmapped(const ca_pool *p, uint32_t sidx, const ca_block **out, size_t *k,
                           size_t cap, fail_t *f)
{
    for (const ca_block *b = p->unmapped, *prev = NULL; b; prev = b, b = b->wnext) {
        if (*k == cap || b->wprev != prev || !b->unmapped || b->allocated || !b->seg->expandable ||
            b->sidx != sidx || b->small != p->small || (prev && prev->addr >= b->addr))
            return fail(f, "unmapped list is corrupt at 0x%llx", (unsigned long long)b->addr);
        out[(*k)++] = b;
    }
    return 0;
}

static int check_whole_list(const ca_pool *p, size_t expect, fail_t *f)
{
    size_t n = 0;
    for (const ca_block *b = p->whole, *prev = NULL; b; prev = b, b = b->wnext, n++) {
        if (b->wprev != prev || !b->in_whole || b->allocated || b->prev || b->next)
            return fail(f, "%s pool: whole-segment list is corrupt at 0x%llx",
                        p->small ? "small" : "large", (unsigned long long)b->addr);
        if (n > expect) break;
    }
    if (n != expect)
        return fail(f, "%s pool: whole-segment list holds %zu blocks, %zu expected",
                    p->small ? "small" : "large", n, expect);
    return 0;
}

/* Walks the blocks of one segment, starting at blocks[*k]. */
static int walk_segment(const ca_allocator *a, const ca_segment *s, const ca_block **blocks,
                        size_t n, size_t *k, fail_t *f)
{
    unsigned long long sa = (unsigned long long)s->addr;
    if (!s->preloaded && !s->expandable &&
        (s->small ? s->size != CA_SMALL_BUFFER : s->size % CA_ROUND_LARGE || s->size < CA_MIN_LARGE_ALLOC))
        return fail(f, "segment 0x%llx has an impossible size %llu", sa, (unsigned long long)s->size);
    bool loose = s->preloaded || a->cfg.expandable_segments; /* large-pool blocks of any size */
    uint64_t at = s->addr;
    const ca_block *prev = NULL;
    while (at < s->addr + s->size) {
        if (*k >= n || blocks[*k]->addr != at)
            return fail(f, "segment 0x%llx: no block starts at 0x%llx", sa, (unsigned long long)at);
        const ca_block *b = blocks[(*k)++];
        unsigned long long ba = (unsigned long long)b->addr;
        if (b->seg != s || b->small != s->small || b->sidx != s->sidx)
            return fail(f, "block 0x%llx does not belong to its segment", ba);
        if (b->unmapped && (!s->expandable || b->addr % s->page != s->addr % s->page || b->size % s->page))
            return fail(f, "unmapped block 0x%llx is not whole pages of an expandable segment", ba);
        if (b->size == 0 || b->size % CA_MIN_BLOCK_SIZE)
            return fail(f, "block 0x%llx has size %llu", ba, (unsigned long long)b->size);
        if (b->prev != prev || (prev && prev->next != b))
            return fail(f, "block 0x%llx: neighbour links are broken", ba);
        if (prev && !prev->allocated && !b->allocated && prev->unmapped == b->unmapped)
            return fail(f, "free blocks 0x%llx and 0x%llx touch", (unsigned long long)prev->addr, ba);
        if (!s->small && b->size <= CA_SMALL_SIZE && !loose)
            return fail(f, "large-pool block 0x%llx is not above 1 MiB", ba);
        if (b->allocated && (b->requested == 0 || ca_round_size(b->requested) > b->size))
            return fail(f, "live block 0x%llx of %llu bytes has request %llu", ba,
                        (unsigned long long)b->size, (unsigned long long)b->requested);
        at += b->size;
        prev = b;
    }
    if (at != s->addr + s->size || (prev && prev->next))
        return fail(f, "segment 0x%llx: blocks run past its end", sa);
    return 0;
}

/* Recounts every statistic's current value from the blocks and segments. */
static int check_stats(const ca_allocator *a, const ca_block **blocks, size_t n,
                       ca_segment **segs, fail_t *f)
{
    int64_t live = 0, live_bytes = 0, requested = 0, split_n = 0, split_bytes = 0;
    int64_t over_alloc = 0, reserved = 0, over_seg = 0, n_segments = 0;
    for (size_t i = 0; i < n; i++) {
        const ca_block *b = blocks[i];
        if (b->seg->expandable && !b->unmapped) reserved += (int64_t)b->size; /* mapped pages */
        if (b->allocated) {
            live++;
            live_bytes += (int64_t)b->size;
            requested += (int64_t)b->requested;
            over_alloc += b->size >= a->cfg.max_split_size;
        } else if ((b->prev || b->next) && !b->seg->expandable) {
            split_n++;
            split_bytes += (int64_t)b->size;
        }
    }
    for (size_t i = 0; i < a->n_segs; i++) {
        if (segs[i]->expandable) continue; /* not in the segment statistic */
        n_segments++;
        reserved += (int64_t)segs[i]->size;
        over_seg += segs[i]->size >= a->cfg.max_split_size;
    }
    const ca_stats *s = &a->st;
    struct { const char *name; const ca_stat *st; int64_t want; } rows[] = {
        {"allocated_bytes", &s->allocated_bytes, live_bytes},
        {"active_bytes", &s->active_bytes, live_bytes},
        {"requested_bytes", &s->requested_bytes, requested},
        {"allocation", &s->allocation, live},
        {"active", &s->active, live},
        {"reserved_bytes", &s->reserved_bytes, reserved},
        {"segment", &s->segment, n_segments},
        {"inactive_split_bytes", &s->inactive_split_bytes, split_bytes},
        {"inactive_split", &s->inactive_split, split_n},
        {"oversize_allocations", &s->oversize_allocations, over_alloc},
        {"oversize_segments", &s->oversize_segments, over_seg},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].st->current != rows[i].want)
            return fail(f, "%s.current is %lld, recount gives %lld", rows[i].name,
                        (long long)rows[i].st->current, (long long)rows[i].want);
        if (rows[i].st->peak < rows[i].st->current)
            return fail(f, "%s.peak is below its current value", rows[i].name);
        if (rows[i].st->allocated - rows[i].st->freed != rows[i].st->current)
            return fail(f, "%s: allocated - freed != current", rows[i].name);
    }
    if ((int64_t)a->total_reserved != reserved)
        return fail(f, "total reserved %llu != sum of segments", (unsigned long long)a->total_reserved);
    /* Expandable segments may pass it: alloc_block checks the limit against
     * get_allocation_size, then maps whole pages of up to 20 MiB for the request. */
    if (a->cfg.limit_bytes != CA_UNLIMITED && a->total_reserved > a->cfg.limit_bytes &&
        a->total_reserved > a->preloaded_bytes && !a->cfg.expandable_segments)
        return fail(f, "reserved bytes exceed the limit");
    return 0;
}

static int check_all(const ca_allocator *a, const ca_block **blocks, size_t cap, ca_segment **segs, fail_t *f)
{
    size_t k = 0;
    for (uint32_t i = 0; i < 2 * a->n_streams; i++) {
        const ca_pool *p = a->pools[i];
        size_t from = k;
        if (p->small != (i & 1)) return fail(f, "pool %u is of the wrong kind", i);
        if (gather_pool(p, blocks, &k, f)) return -1;
        size_t whole = 0;
        for (size_t j = from; j < k; j++) {
            if (check_free(a, blocks[j], p->small, i / 2, f)) return -1;
            whole += blocks[j]->in_whole;
        }
        if (check_whole_list(p, whole, f)) return -1;
    }
    size_t n_free = k;
    for (uint32_t i = 0; i < 2 * a->n_streams; i++)
        if (gather_unmapped(a->pools[i], i / 2, blocks, &k, cap, f)) return -1;
    n_free = k;
    for (size_t i = 0; i < a->map_cap; i++) {
        const ca_block *b = a->map[i];
        if (!b) continue;
        if (!b->allocated || ca_map_find(a, b->addr) != b || k == n_free + a->map_n)
            return fail(f, "address map entry 0x%llx is wrong", (unsigned long long)b->addr);
        blocks[k++] = b;
    }
    if (k != n_free + a->map_n) return fail(f, "address map count is wrong");
    qsort(blocks, k, sizeof *blocks, by_addr);
    size_t ns = 0;
    for (ca_segment *s = a->segs, *prev = NULL; s; prev = s, s = s->next) {
        if (s->prev != prev || ns == a->n_segs) return fail(f, "segment list is corrupt");
        segs[ns++] = s;
    }
    if (ns != a->n_segs) return fail(f, "segment list holds %zu segments, %zu expected", ns, a->n_segs);
    qsort(segs, ns, sizeof *segs, seg_by_addr);
    size_t at = 0;
    for (size_t i = 0; i < ns; i++) {
        if (segs[i]->addr + segs[i]->size < segs[i]->addr ||
            (i + 1 < ns && segs[i]->addr + segs[i]->size > segs[i + 1]->addr))
            return fail(f, "segment 0x%llx overlaps the next", (unsigned long long)segs[i]->addr);
        if (walk_segment(a, segs[i], blocks, k, &at, f)) return -1;
    }
    if (at != k) return fail(f, "block 0x%llx lies outside every segment", (unsigned long long)blocks[at]->addr);
    return check_stats(a, blocks, k, segs, f);
}

int ca_check_invariants(const ca_allocator *a, char *err, size_t len)
{
    fail_t f = {err, len};
    size_t n = a->map_n;
    for (uint32_t i = 0; i < 2 * a->n_streams; i++) {
        n += a->pools[i]->n;
        for (const ca_block *b = a->pools[i]->unmapped; b && n < SIZE_MAX / 16; b = b->wnext) n++;
    }
    const ca_block **blocks = malloc((n + 1) * sizeof *blocks);
    ca_segment **segs = malloc((a->n_segs + 1) * sizeof *segs);
    int rc = blocks && segs ? check_all(a, blocks, n + 1, segs, &f) : fail(&f, "out of host memory");
    free(blocks);
    free(segs);
    return rc;
}
