/* prefault.h: fresh heap memory mapped in ahead of use, for the large arrays
 * of the trace parser and the replay (trace.c, replay.c).
 *
 * Why: the first touch of each 4 KiB page of a fresh allocation is a page
 * fault. On a virtual machine that costs about 2 us a page, and at a
 * million operations the parsed trace alone is 48 MB: page faults took a
 * tenth of build/replay's time (make bench). Two hints cut that to a few
 * milliseconds: transparent huge pages for an array (madvise MADV_HUGEPAGE:
 * one fault per 2 MiB where the kernel has them, as it does when
 * /sys/kernel/mm/transparent_hugepage/enabled is "madvise"), and mapping a
 * range in at once (MADV_POPULATE_WRITE, Linux 5.14: no trap per page).
 * Both are hints: where the kernel lacks one, the call fails and pages
 * fault in on first touch as before. Callers define _DEFAULT_SOURCE before
 * any include (for madvise). */
#ifndef MC_PREFAULT_H
#define MC_PREFAULT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* Page-aligned bounds of the pages that hold [p, p + len). Every such page
 * holds some of the caller's bytes, so it lies in a mapping the caller owns
 * part of. Where pages are larger than 4 KiB, madvise refuses: no harm. */
static inline void mc_page_bounds(const void *p, size_t len, uintptr_t *lo, uintptr_t *hi)
{
    const uintptr_t page = 4096;
    *lo = (uintptr_t)p & ~(page - 1);
    *hi = ((uintptr_t)p + len + page - 1) & ~(page - 1);
}

/* Asks for huge pages under an array of len bytes at p (those 2 MiB
 * extents of it that are aligned; the rest keeps small pages). Worth it
 * for arrays of several MiB that are all written. */
static inline void mc_want_huge_pages(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
    uintptr_t lo, hi;
    mc_page_bounds(p, len, &lo, &hi);
    if (len >= (4u << 20)) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)len;
#endif
}

/* Maps in the pages that hold [p, p + len), writable (zero-filled where
 * new), before they are written. */
static inline void mc_prefault(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t lo, hi;
    mc_page_bounds(p, len, &lo, &hi);
    if (len) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)len;
#endif
}

#endif
