/* wl_placed.h: a host device whose new segments go where another run's
 * went. Given a GPU run's segments in the order the driver made them, a
 * host model of the same requests gets the same addresses, so the caching
 * allocator's address-ordered choices are the GPU's: its figures must then
 * equal the GPU's to the byte. A request whose size is not the list's next
 * takes the host device's own placement rule (alloc_host.h) and counts in
 * differ. */
#ifndef MC_WL_PLACED_H
#define MC_WL_PLACED_H

#include <stdint.h>

#include "alloc/alloc_host.h"
#include "alloc/alloc_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    ca_host_device *d;
    ca_backend host;            /* d's own backend, which placed() wraps */
    const uint64_t *addr, *bytes; /* the segments to follow (the caller keeps them) */
    int n, next;                /* list length; the next segment to follow */
    int differ;                 /* segments made that did not follow the list */
} wl_placed;

/* A host device of capacity bytes whose segments follow addr/bytes[n]; the
 * backend to build a model over (p must outlive the model). */
ca_backend wl_placed_open(wl_placed *p, uint64_t capacity, const uint64_t *addr, const uint64_t *bytes, int n);
/* Hints the device could not use (an address taken): 0 when every segment followed. */
uint64_t wl_placed_conflicts(const wl_placed *p);
/* Destroys the host device, after the model over it is gone. */
void wl_placed_close(wl_placed *p);

#ifdef __cplusplus
}
#endif
#endif
