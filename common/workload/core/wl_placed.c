/* wl_placed.c: wl_placed.h's host device. */
#include "wl_placed.h"

#include <string.h>

#include "check.h"

static int placed_malloc(void *ctx, uint64_t bytes, uint64_t *addr)
{
    wl_placed *p = ctx;
    const bool same = p->next < p->n && p->bytes[p->next] == bytes;
    if (same) ca_host_hint_next(p->d, p->addr[p->next]);
    int rc = p->host.dev_malloc(p->host.ctx, bytes, addr);
    if (rc == 0) { /* a refused request uses up no place of the list */
        p->differ += !same;
        p->next++;
    }
    return rc;
}

static void placed_free(void *ctx, uint64_t addr, uint64_t bytes)
{
    wl_placed *p = ctx;
    p->host.dev_free(p->host.ctx, addr, bytes);
}

ca_backend wl_placed_open(wl_placed *p, uint64_t capacity, const uint64_t *addr, const uint64_t *bytes, int n)
{
    memset(p, 0, sizeof *p);
    p->d = ca_host_create(capacity);
    CHECK(p->d != NULL, "ca_host_create");
    p->host = ca_host_backend(p->d);
    p->addr = addr;
    p->bytes = bytes;
    p->n = n;
    ca_backend be = p->host;
    be.dev_malloc = placed_malloc;
    be.dev_free = placed_free;
    be.ctx = p;
    return be;
}

uint64_t wl_placed_conflicts(const wl_placed *p)
{
    return p->d ? ca_host_hint_conflicts(p->d) : 0;
}

void wl_placed_close(wl_placed *p)
{
    if (p->d) ca_host_destroy(p->d);
    p->d = NULL;
}
