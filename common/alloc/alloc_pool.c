/* alloc_pool.c: the allocator model's data structures (alloc_internal.h):
 * block structs from slabs, the address map of live blocks, and the pools'
 * free sets with their whole-segment lists. The rules that use them are in
 * alloc_model.c. */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "check.h"

/* ------------------------------------------------------------ block structs */

ca_block *ca_block_new(ca_allocator *a)
{
    if (!a->spare) {
        enum { SLAB = 1024 };
        if (a->n_slabs == a->cap_slabs) {
            a->cap_slabs = a->cap_slabs ? 2 * a->cap_slabs : 16;
            a->slabs = realloc(a->slabs, a->cap_slabs * sizeof *a->slabs);
            CHECK(a->slabs != NULL, "out of host memory");
        }
        /* Cache-line aligned: a block (128 bytes) then spans two lines, not
         * three (malloc aligns to 16 only); the model ran 6% faster. */
        ca_block *slab = aligned_alloc(64, SLAB * sizeof *slab);
        CHECK(slab != NULL, "out of host memory");
        a->slabs[a->n_slabs++] = slab;
        for (size_t i = 0; i < SLAB; i++) {
            slab[i].next = a->spare;
            a->spare = &slab[i];
        }
    }
    static const ca_block zero; /* copied in wide stores; memset here became a slow rep stos */
    ca_block *b = a->spare;
    a->spare = b->next;
    *b = zero;
    return b;
}

void ca_block_delete(ca_allocator *a, ca_block *b)
{
    b->next = a->spare;
    a->spare = b;
}

/* ------------------------------------------------------------ live map */

static size_t map_slot(const ca_allocator *a, uint64_t addr)
{
    /* Fibonacci hashing: the top bits of the product, as many as the table needs. */
    return (size_t)(((addr >> 9) * 0x9E3779B97F4A7C15ULL) >> (64 - __builtin_ctzll(a->map_cap)));
}

/* The slot holding addr, or the empty slot where it would go. Live blocks
 * never start at 0, so key 0 marks an empty slot. */
static size_t map_probe(const ca_allocator *a, uint64_t addr)
{
    size_t i = map_slot(a, addr);
    while (a->map_key[i] && a->map_key[i] != addr) i = (i + 1) & (a->map_cap - 1);
    return i;
}

ca_block *ca_map_find(const ca_allocator *a, uint64_t addr)
{
    return addr ? a->map[map_probe(a, addr)] : NULL;
}

void ca_map_put(ca_allocator *a, ca_block *b)
{
    if (4 * (a->map_n + 1) > a->map_cap) { /* grow at a quarter full: short probes, few shifts */
        ca_block **old = a->map;
        uint64_t *old_key = a->map_key;
        size_t old_cap = a->map_cap;
        a->map_cap *= 2;
        a->map = calloc(a->map_cap, sizeof *a->map);
        a->map_key = calloc(a->map_cap, sizeof *a->map_key);
        CHECK(a->map != NULL && a->map_key != NULL, "out of host memory");
        a->map_n = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i]) ca_map_put(a, old[i]);
        free(old);
        free(old_key);
    }
    size_t i = map_probe(a, b->addr);
    a->map[i] = b;
    a->map_key[i] = b->addr;
    a->map_n++;
}

/* Removes and returns the live block at addr (or NULL); backward-shift
 * deletion keeps every probe chain unbroken without tombstones. */
ca_block *ca_map_take(ca_allocator *a, uint64_t addr)
{
    if (!addr) return NULL;
    size_t mask = a->map_cap - 1, i = map_probe(a, addr);
    ca_block *found = a->map[i];
    if (!found) return NULL;
    for (size_t j = (i + 1) & mask; a->map_key[j]; j = (j + 1) & mask) {
        size_t home = map_slot(a, a->map_key[j]);
        /* Move j into the hole at i unless its home lies in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            a->map[i] = a->map[j];
            a->map_key[i] = a->map_key[j];
            i = j;
        }
    }
    a->map[i] = NULL;
    a->map_key[i] = 0;
    a->map_n--;
    return found;
}

/* ------------------------------------------------------------ pools */

void ca_pool_init(ca_pool *p, bool small)
{
    memset(p, 0, sizeof *p);
    for (unsigned c = 0; c < CA_POOL_CLASSES; c++) ca_tree_init(&p->cls[c], false);
    p->small = small;
}

/* Sizes are multiples of 512: u = size / 512. Below 2^(B+1) each u is a
 * class; above, each power of two splits into 2^B classes by its next B
 * bits (B = CA_POOL_CLASS_BITS). */
unsigned ca_pool_class(uint64_t size)
{
    enum { B = CA_POOL_CLASS_BITS };
    uint64_t u = size >> 9;
    if (u < (2u << B)) return (unsigned)u;
    unsigned msb = 63u - (unsigned)__builtin_clzll(u);
    return (2u << B) + ((msb - B - 1) << B) + (unsigned)((u >> (msb - B)) & ((1u << B) - 1));
}

/* The nearest class above c / below c that holds blocks, or -1. */
static int class_above(const ca_pool *p, unsigned c)
{
    for (unsigned from = c + 1, w = from / 64; w < CA_POOL_CLASSES / 64; w++) {
        uint64_t bits = p->nonempty[w];
        if (w == from / 64) bits &= ~0ULL << (from % 64);
        if (bits) return (int)(w * 64 + (unsigned)__builtin_ctzll(bits));
    }
    return -1;
}

static int class_below(const ca_pool *p, unsigned c) /* c <= CA_POOL_CLASSES */
{
    if (c == 0) return -1;
    unsigned last = c - 1;
    for (int w = (int)(last / 64); w >= 0; w--) {
        uint64_t bits = p->nonempty[w];
        if (w == (int)(last / 64) && last % 64 < 63) bits &= (2ULL << (last % 64)) - 1;
        if (bits) return w * 64 + 63 - __builtin_clzll(bits);
    }
    return -1;
}

ca_block *ca_pool_lower_bound(const ca_pool *p, uint64_t k1, uint64_t k2)
{
    unsigned c = ca_pool_class(k1);
    ca_tnode *n = ca_tree_lower_bound(&p->cls[c], k1, k2);
    if (n) return (ca_block *)n;
    int above = class_above(p, c);
    return above < 0 ? NULL : (ca_block *)ca_tree_first(&p->cls[above]);
}

ca_block *ca_pool_before(const ca_pool *p, uint64_t k1, uint64_t k2)
{
    unsigned c = ca_pool_class(k1);
    ca_tnode *n = ca_tree_before(&p->cls[c], k1, k2);
    if (n) return (ca_block *)n;
    int below = class_below(p, c);
    return below < 0 ? NULL : (ca_block *)ca_tree_last(&p->cls[below]);
}

ca_block *ca_pool_last(const ca_pool *p)
{
    int top = class_below(p, CA_POOL_CLASSES);
    return top < 0 ? NULL : (ca_block *)ca_tree_last(&p->cls[top]);
}

/* The whole list holds the free blocks with no neighbours: what
 * release_cached_blocks frees, found without a scan. */
static void whole_add(ca_pool *p, ca_block *b)
{
    b->in_whole = true;
    b->wprev = NULL;
    b->wnext = p->whole;
    if (p->whole) p->whole->wprev = b;
    p->whole = b;
}

static void whole_remove(ca_pool *p, ca_block *b)
{
    if (!b->in_whole) return;
    if (b->wprev) b->wprev->wnext = b->wnext; else p->whole = b->wnext;
    if (b->wnext) b->wnext->wprev = b->wprev;
    b->in_whole = false;
}

/* Into / out of its class's treap, keeping the bitmap and the count. */
static void class_insert(ca_pool *p, ca_block *b)
{
    unsigned c = ca_pool_class(b->node.k1);
    ca_tree_insert(&p->cls[c], &b->node);
    p->nonempty[c / 64] |= 1ULL << (c % 64);
    p->n++;
}

static void class_erase(ca_pool *p, ca_block *b)
{
    unsigned c = ca_pool_class(b->node.k1);
    ca_tree_erase(&p->cls[c], &b->node);
    if (p->cls[c].n == 0) p->nonempty[c / 64] &= ~(1ULL << (c % 64));
    p->n--;
}

/* insert_into_blocks, keyed (size, address); it also sets gc_count_base. */
void ca_pool_insert(ca_allocator *a, ca_block *b)
{
    ca_pool *p = ca_pool_of_block(a, b);
    b->node.k1 = b->size;
    b->node.k2 = b->addr;
    b->node.val = a->gc_calls[b->small];
    class_insert(p, b);
    if (!b->prev && !b->next) whole_add(p, b);
}

void ca_pool_erase(ca_allocator *a, ca_block *b)
{
    ca_pool *p = ca_pool_of_block(a, b);
    class_erase(p, b);
    whole_remove(p, b);
}

static bool key_below(const ca_tnode *n, uint64_t k1, uint64_t k2)
{
    return n->k1 < k1 || (n->k1 == k1 && n->k2 < k2);
}

/* Gives b, a block in its pool whose neighbour links are already final, the
 * extent (addr, size). Where the new key stays in b's class and keeps b's
 * place in that class's order, the key changes in place; otherwise b is
 * taken out and put back. */
void ca_pool_rekey(ca_allocator *a, ca_block *b, uint64_t addr, uint64_t size)
{
    ca_pool *p = ca_pool_of_block(a, b);
    b->node.val = a->gc_calls[b->small]; /* every rekey stands for an insert_into_blocks */
    unsigned c = ca_pool_class(b->node.k1);
    bool in_place = ca_pool_class(size) == c;
    if (in_place && (size < b->size || (size == b->size && addr < b->addr))) { /* key falls */
        const ca_tnode *pred = ca_tree_before(&p->cls[c], b->node.k1, b->node.k2);
        in_place = !pred || key_below(pred, size, addr);
    } else if (in_place) { /* key rises */
        const ca_tnode *succ = ca_tree_lower_bound(&p->cls[c], b->node.k1, b->node.k2 + 1);
        in_place = !succ || !key_below(succ, size, addr);
    }
    if (!in_place) class_erase(p, b);
    b->addr = b->node.k2 = addr;
    b->size = b->node.k1 = size;
    if (!in_place) class_insert(p, b);
    if (b->prev || b->next)
        whole_remove(p, b);
    else if (!b->in_whole)
        whole_add(p, b);
}

ca_block *ca_pool_next(const ca_pool *p, const ca_block *b)
{
    return b->addr == UINT64_MAX ? NULL : ca_pool_lower_bound(p, b->size, b->addr + 1);
}

/* ------------------------------------------------------------ streams */

int ca_stream_index(ca_allocator *a, uint64_t stream)
{
    if (stream == 0) return 0;
    for (uint32_t i = 1; i < a->n_streams; i++)
        if (a->stream_id[i] == stream) return (int)i;
    if (a->n_streams == CA_MAX_STREAMS) return -1;
    uint32_t i = a->n_streams++;
    ca_pool *two = mc_xmalloc(2 * sizeof *two);
    ca_pool_init(&two[0], false);
    ca_pool_init(&two[1], true);
    a->pools[2 * i] = &two[0];
    a->pools[2 * i + 1] = &two[1];
    a->stream_id[i] = stream;
    return (int)i;
}

/* ------------------------------------------------------------ unmapped lists */

/* By address: the reference's BlockComparatorAddress within one stream. */
void ca_unmapped_insert(ca_allocator *a, ca_block *b)
{
    ca_pool *p = ca_pool_of_block(a, b);
    ca_block *prev = NULL, *cur = p->unmapped;
    while (cur && cur->addr < b->addr) {
        prev = cur;
        cur = cur->wnext;
    }
    b->wprev = prev;
    b->wnext = cur;
    if (prev) prev->wnext = b; else p->unmapped = b;
    if (cur) cur->wprev = b;
}

void ca_unmapped_erase(ca_allocator *a, ca_block *b)
{
    ca_pool *p = ca_pool_of_block(a, b);
    if (b->wprev) b->wprev->wnext = b->wnext; else p->unmapped = b->wnext;
    if (b->wnext) b->wnext->wprev = b->wprev;
    b->wprev = b->wnext = NULL;
}
