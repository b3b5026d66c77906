/* alloc_host.c: the host backend (alloc_host.h). Free address ranges live in
 * a treap keyed by start address whose subtree maxima of range lengths make
 * the first-fit searches a descent or two; a freed segment is merged with the
 * free ranges either side. The placement rule (alloc_host.h) keeps one more
 * figure, the frontier: the bottom of the lowest region made so far. */
#include "alloc_host.h"

#include <stdlib.h>
#include <string.h>

#include "alloc_tree.h"
#include "check.h"

typedef struct gap {
    ca_tnode node;    /* k1 = start, val = length */
    struct gap *next; /* spare list */
} gap;

struct ca_host_device {
    uint64_t capacity, used, segments, conflicts;
    uint64_t hint;     /* 0: none */
    uint64_t frontier; /* regions lie in [frontier, CA_HOST_TOP) */
    ca_tree gaps;
    gap *spare;
};

static gap *gap_new(ca_host_device *d, uint64_t start, uint64_t len)
{
    gap *g = d->spare;
    if (g)
        d->spare = g->next;
    else
        g = mc_xmalloc(sizeof *g);
    memset(g, 0, sizeof *g);
    g->node.k1 = start;
    g->node.val = len;
    ca_tree_insert(&d->gaps, &g->node);
    return g;
}

static void gap_delete(ca_host_device *d, gap *g)
{
    ca_tree_erase(&d->gaps, &g->node);
    g->next = d->spare;
    d->spare = g;
}

/* Changes a gap's extent (erase and insert keep the subtree maxima right). */
static void gap_set(ca_host_device *d, gap *g, uint64_t start, uint64_t len)
{
    ca_tree_erase(&d->gaps, &g->node);
    g->node.k1 = start;
    g->node.val = len;
    ca_tree_insert(&d->gaps, &g->node);
}

ca_host_device *ca_host_create(uint64_t capacity)
{
    CHECK(capacity > 0, "a host device needs a capacity");
    ca_host_device *d = mc_xmalloc(sizeof *d);
    memset(d, 0, sizeof *d);
    d->capacity = capacity;
    ca_tree_init(&d->gaps, true);
    gap_new(d, CA_HOST_SPACE_LO, CA_HOST_SPACE_HI - CA_HOST_SPACE_LO);
    d->frontier = CA_HOST_TOP;
    return d;
}

static void free_nodes(ca_tnode *n)
{
    if (!n) return;
    free_nodes(n->c[0]);
    free_nodes(n->c[1]);
    free(n);
}

void ca_host_destroy(ca_host_device *d)
{
    if (!d) return;
    free_nodes(d->gaps.root);
    while (d->spare) {
        gap *g = d->spare;
        d->spare = g->next;
        free(g);
    }
    free(d);
}

/* Takes [at, at + bytes) out of gap g, which contains it. */
static void carve(ca_host_device *d, gap *g, uint64_t at, uint64_t bytes)
{
    uint64_t start = g->node.k1, end = start + g->node.val;
    if (at > start)
        gap_set(d, g, start, at - start);
    else
        gap_delete(d, g);
    if (at + bytes < end) gap_new(d, at + bytes, end - (at + bytes));
}

/* The gap holding [at, at + bytes), or NULL. */
static gap *gap_holding(const ca_host_device *d, uint64_t at, uint64_t bytes)
{
    gap *c = (gap *)ca_tree_floor(&d->gaps, at, 0);
    return c && at <= UINT64_MAX - bytes && at + bytes <= c->node.k1 + c->node.val ? c : NULL;
}

/* The placement rule: the lowest hole in [frontier, CA_HOST_TOP) that fits,
 * else a new region below the frontier. Returns the gap and sets *at. */
static gap *place(ca_host_device *d, uint64_t bytes, uint64_t *at)
{
    uint64_t lo = d->frontier;
    gap *g = (gap *)ca_tree_floor(&d->gaps, lo, 0); /* a hole reaching down past lo */
    if (g && g->node.k1 + g->node.val > lo) {
        uint64_t end = g->node.k1 + g->node.val;
        if ((end < CA_HOST_TOP ? end : CA_HOST_TOP) - lo >= bytes) {
            *at = lo;
            return g;
        }
    }
    g = (gap *)ca_tree_first_fit_after(&d->gaps, bytes, lo);
    if (g && g->node.k1 < CA_HOST_TOP && CA_HOST_TOP - g->node.k1 >= bytes) {
        *at = g->node.k1;
        return g;
    }
    uint64_t region = (bytes + CA_HOST_REGION - 1) / CA_HOST_REGION * CA_HOST_REGION;
    if (region <= lo - CA_HOST_SPACE_LO && (g = gap_holding(d, lo - region, bytes))) {
        d->frontier = *at = lo - region;
        return g;
    }
    g = (gap *)ca_tree_first_fit(&d->gaps, bytes); /* the space below is taken: anywhere */
    if (g) *at = g->node.k1;
    return g;
}

static int host_malloc(void *ctx, uint64_t bytes, uint64_t *addr)
{
    ca_host_device *d = ctx;
    if (bytes == 0 || bytes > d->capacity - d->used) return 1;
    uint64_t at = d->hint;
    gap *g = at ? gap_holding(d, at, bytes) : NULL;
    if (at && !g) d->conflicts++;
    if (!g && !(g = place(d, bytes, &at))) return 1; /* no address space: out of memory; the hint stays */
    d->hint = 0; /* used up by this successful request, whether it fitted or not */
    carve(d, g, at, bytes);
    d->used += bytes;
    d->segments++;
    *addr = at;
    return 0;
}

static void host_free(void *ctx, uint64_t addr, uint64_t bytes)
{
    ca_host_device *d = ctx;
    gap *before = (gap *)ca_tree_before(&d->gaps, addr, 0);
    gap *after = (gap *)ca_tree_lower_bound(&d->gaps, addr, 0);
    CHECK(bytes > 0 && bytes <= d->used && addr >= CA_HOST_SPACE_LO && addr <= CA_HOST_SPACE_HI - bytes,
          "host backend: bad free of %llu bytes at 0x%llx", (unsigned long long)bytes,
          (unsigned long long)addr);
    CHECK((!before || before->node.k1 + before->node.val <= addr) &&
              (!after || addr + bytes <= after->node.k1),
          "host backend: free of 0x%llx overlaps free space", (unsigned long long)addr);
    uint64_t start = addr, end = addr + bytes;
    if (before && before->node.k1 + before->node.val == addr) {
        start = before->node.k1;
        gap_delete(d, before);
    }
    if (after && after->node.k1 == end) {
        end = after->node.k1 + after->node.val;
        gap_delete(d, after);
    }
    gap_new(d, start, end - start);
    d->used -= bytes;
    d->segments--;
}

/* Pages for expandable segments: capacity only, no addresses. */
static int host_map(void *ctx, uint64_t bytes)
{
    ca_host_device *d = ctx;
    if (bytes > d->capacity - d->used) return 1;
    d->used += bytes;
    return 0;
}

static void host_unmap(void *ctx, uint64_t bytes)
{
    ca_host_device *d = ctx;
    CHECK(bytes <= d->used, "host backend: unmap of %llu bytes, %llu in use", (unsigned long long)bytes,
          (unsigned long long)d->used);
    d->used -= bytes;
}

ca_backend ca_host_backend(ca_host_device *d)
{
    ca_backend b = {host_malloc, host_free, d, host_map, host_unmap, d->capacity};
    return b;
}

void ca_host_hint_next(ca_host_device *d, uint64_t addr) { d->hint = addr; }
uint64_t ca_host_used(const ca_host_device *d) { return d->used; }
uint64_t ca_host_segments(const ca_host_device *d) { return d->segments; }
uint64_t ca_host_hint_conflicts(const ca_host_device *d) { return d->conflicts; }
