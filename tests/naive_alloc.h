/* naive_alloc.h: a deliberately simple second model of the caching
 * allocator, for differential tests of common/alloc_model.c. Same rules
 * (ALLOCATOR.md), none of the data structures: every block of every segment
 * in one array sorted by address, best fit by a linear scan, statistics
 * recounted from scratch after each operation, peaks taken at operation
 * boundaries. O(n) per operation; for tests only. Segments come from a host
 * backend device of its own, so given the same decisions it sees the same
 * addresses as the model under test. */
#ifndef MC_NAIVE_ALLOC_H
#define MC_NAIVE_ALLOC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_host.h"
#include "alloc/alloc_model.h"

typedef struct {
    uint64_t addr, size, req, seg; /* seg: the segment's base address */
    bool live, small;
} nv_block;

typedef struct {
    ca_config cfg;
    ca_backend be;
    nv_block b[4096];
    size_t n;
    int64_t reserved, peak_alloc, peak_res, retries, ooms;
    uint64_t last_seg; /* address of the newest segment */
} nv_alloc;

static bool nv_same_seg(const nv_alloc *m, size_t i, size_t j)
{
    return j < m->n && m->b[i].seg == m->b[j].seg;
}

static bool nv_whole(const nv_alloc *m, size_t i)
{
    return !(i > 0 && nv_same_seg(m, i, i - 1)) && !nv_same_seg(m, i, i + 1);
}

static void nv_insert(nv_alloc *m, size_t at, nv_block blk)
{
    memmove(&m->b[at + 1], &m->b[at], (m->n - at) * sizeof blk);
    m->b[at] = blk;
    m->n++;
}

static void nv_remove(nv_alloc *m, size_t at)
{
    memmove(&m->b[at], &m->b[at + 1], (m->n - at - 1) * sizeof m->b[0]);
    m->n--;
}

static size_t nv_index_of(const nv_alloc *m, uint64_t addr)
{
    size_t i = 0;
    while (i < m->n && m->b[i].addr != addr) i++;
    return i;
}

static void nv_release(nv_alloc *m, size_t i)
{
    m->be.dev_free(m->be.ctx, m->b[i].addr, m->b[i].size);
    m->reserved -= (int64_t)m->b[i].size;
    nv_remove(m, i);
}

/* Index of the free block of the pool with the smallest (size, address) at
 * or above (k1, k2), or the largest below it (below = true); m->n if none. */
static size_t nv_find(const nv_alloc *m, bool small, uint64_t k1, uint64_t k2, bool below)
{
    size_t best = m->n;
    for (size_t i = 0; i < m->n; i++) {
        const nv_block *x = &m->b[i];
        if (x->live || x->small != small) continue;
        bool ge = x->size > k1 || (x->size == k1 && x->addr >= k2);
        if (ge == below) continue;
        if (best == m->n) {
            best = i;
            continue;
        }
        const nv_block *y = &m->b[best];
        bool less = x->size < y->size || (x->size == y->size && x->addr < y->addr);
        if (less != below) best = i;
    }
    return best;
}

static bool nv_alloc_block(nv_alloc *m, bool small, uint64_t bytes, bool retry)
{
    if (retry) m->retries++;
    if (m->cfg.limit_bytes != CA_UNLIMITED && (uint64_t)m->reserved + bytes > m->cfg.limit_bytes)
        return false;
    uint64_t addr;
    if (m->be.dev_malloc(m->be.ctx, bytes, &addr) != 0) return false;
    m->reserved += (int64_t)bytes;
    m->last_seg = addr;
    size_t at = 0;
    while (at < m->n && m->b[at].addr < addr) at++;
    nv_insert(m, at, (nv_block){addr, bytes, 0, addr, false, small});
    return true;
}

static void nv_release_cached(nv_alloc *m)
{
    for (size_t i = m->n; i-- > 0;)
        if (!m->b[i].live && nv_whole(m, i)) nv_release(m, i);
}

static bool nv_release_available(nv_alloc *m, bool small, uint64_t size)
{
    uint64_t ms = m->cfg.max_split_size, key = size < ms ? ms : size;
    if (ms == CA_UNLIMITED) return false;
    size_t i = nv_find(m, small, key, 0, false);
    if (i < m->n) {
        nv_release(m, i);
        return true;
    }
    uint64_t released = 0;
    for (i = nv_find(m, small, key, 0, true); i < m->n && released < key && m->b[i].size >= ms;) {
        uint64_t k1 = m->b[i].size, k2 = m->b[i].addr;
        released += k1;
        nv_release(m, i);
        i = nv_find(m, small, k1, k2, true);
    }
    return released >= key;
}

static void nv_peaks(nv_alloc *m)
{
    int64_t alloc = 0;
    for (size_t i = 0; i < m->n; i++) alloc += m->b[i].live ? (int64_t)m->b[i].size : 0;
    if (alloc > m->peak_alloc) m->peak_alloc = alloc;
    if (m->reserved > m->peak_res) m->peak_res = m->reserved;
}

static void nv_take(nv_alloc *m, size_t i, uint64_t size, uint64_t bytes)
{
    nv_block *x = &m->b[i];
    uint64_t rest = x->size - size;
    bool split = x->small ? rest >= CA_MIN_BLOCK_SIZE
                          : size < m->cfg.max_split_size && rest > CA_SMALL_SIZE;
    x->live = true;
    x->req = bytes;
    if (split) {
        nv_block r = {x->addr + size, rest, 0, x->seg, false, x->small};
        x->size = size;
        nv_insert(m, i + 1, r);
    }
}

/* ca_malloc's contract: CA_OK and *addr, or CA_OOM. */
static int nv_malloc(nv_alloc *m, uint64_t bytes, uint64_t *addr)
{
    *addr = 0;
    if (bytes == 0) return CA_OK;
    if (bytes >= CA_MAX_REQUEST) return CA_OOM;
    uint64_t size = ca_round_size(bytes), ms = m->cfg.max_split_size;
    bool small = size <= CA_SMALL_SIZE;
    uint64_t seg = ca_allocation_size(size);
    size_t i = nv_find(m, small, size, 0, false);
    if (i < m->n && ((size < ms && m->b[i].size >= ms) ||
                     (size >= ms && m->b[i].size >= size + m->cfg.max_non_split_rounding_size)))
        i = m->n;
    if (i == m->n) {
        bool ok = nv_alloc_block(m, small, seg, false) ||
                  (nv_release_available(m, small, size) && nv_alloc_block(m, small, seg, false));
        if (!ok) {
            nv_release_cached(m);
            ok = nv_alloc_block(m, small, seg, true);
        }
        if (!ok) {
            m->ooms++;
            nv_peaks(m);
            return CA_OOM;
        }
        i = nv_index_of(m, m->last_seg);
    }
    nv_take(m, i, size, bytes);
    *addr = m->b[i].addr;
    nv_peaks(m);
    return CA_OK;
}

static int nv_free(nv_alloc *m, uint64_t addr)
{
    size_t i = nv_index_of(m, addr);
    if (i == m->n || !m->b[i].live) return -1;
    m->b[i].live = false;
    m->b[i].req = 0;
    if (nv_same_seg(m, i, i + 1) && !m->b[i + 1].live) {
        m->b[i].size += m->b[i + 1].size;
        nv_remove(m, i + 1);
    }
    if (i > 0 && nv_same_seg(m, i, i - 1) && !m->b[i - 1].live) {
        m->b[i - 1].size += m->b[i].size;
        nv_remove(m, i);
    }
    return 0;
}

static void nv_empty_cache(nv_alloc *m) { nv_release_cached(m); }

static void nv_reset_peak(nv_alloc *m)
{
    m->peak_alloc = 0;
    m->peak_res = m->reserved;
    nv_peaks(m);
}

/* The replay's figures, recounted. */
typedef struct {
    int64_t allocated, reserved, peak_allocated, peak_reserved, segments, active;
    int64_t inactive_split_bytes, inactive_split, requested, retries, ooms;
} nv_figures;

static nv_figures nv_get(const nv_alloc *m)
{
    nv_figures f = {0, m->reserved, m->peak_alloc, m->peak_res, 0, 0, 0, 0, 0, m->retries, m->ooms};
    for (size_t i = 0; i < m->n; i++) {
        const nv_block *x = &m->b[i];
        f.segments += x->addr == x->seg;
        if (x->live) {
            f.allocated += (int64_t)x->size;
            f.requested += (int64_t)x->req;
        } else if (!nv_whole(m, i)) {
            f.inactive_split_bytes += (int64_t)x->size;
            f.inactive_split++;
        }
    }
    f.active = f.allocated;
    return f;
}

#endif
