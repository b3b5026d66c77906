/* trace_ids.h: the trace parser's table of live ids (trace.c only): the
 * id of every allocation not yet freed -> its slot (trace.h), which is all a
 * free needs: no read of the alloc's operation, a random access into an
 * array of tens of MB (the error paths search the operations instead).
 * Open addressing with linear probing; freed ids leave the table, so it
 * stays as small as the live set and in cache. Static functions, so that the parser's hot path
 * inlines them. */
#ifndef MC_TRACE_IDS_H
#define MC_TRACE_IDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

/* An entry: slot1 is the slot of the id's alloc + 1 (0: empty entry). */
typedef struct {
    uint64_t id, slot1;
} id_entry;

typedef struct {
    id_entry *e;
    size_t cap, n; /* cap is a power of two */
} id_table;

static inline size_t id_home(const id_table *t, uint64_t id)
{
    /* Fibonacci hashing: the top bits of the product, as many as the table
     * needs; consecutive ids land far apart. */
    return (size_t)((id * 0x9E3779B97F4A7C15ULL) >> (64 - __builtin_ctzll(t->cap)));
}

/* The entry of id, or the empty slot where it would go. */
static inline id_entry *id_find(const id_table *t, uint64_t id)
{
    size_t i = id_home(t, id);
    while (t->e[i].slot1 && t->e[i].id != id) i = (i + 1) & (t->cap - 1);
    return &t->e[i];
}

/* Makes room for one more entry (grows at half full), so that the empty
 * slot id_find returns can be filled directly. */
static inline void id_reserve(id_table *t)
{
    if (2 * (t->n + 1) <= t->cap) return;
    id_table old = *t;
    t->cap = old.cap ? 2 * old.cap : 1024;
    t->e = calloc(t->cap, sizeof *t->e);
    CHECK(t->e != NULL, "out of host memory");
    for (size_t i = 0; i < old.cap; i++)
        if (old.e[i].slot1) *id_find(t, old.e[i].id) = old.e[i];
    free(old.e);
}

/* Removes the entry e (backward-shift deletion: no tombstones). */
static inline void id_remove(id_table *t, id_entry *e)
{
    size_t mask = t->cap - 1, i = (size_t)(e - t->e);
    for (size_t j = (i + 1) & mask; t->e[j].slot1; j = (j + 1) & mask) {
        size_t home = id_home(t, t->e[j].id);
        if (((j - home) & mask) >= ((j - i) & mask)) { /* home not in (i, j] */
            t->e[i] = t->e[j];
            i = j;
        }
    }
    t->e[i].slot1 = 0;
    t->n--;
}

#endif
