/* alloc_host.h: the host backend, a simulated device of a given capacity for
 * tests, build/replay and --model-only. No GPU, no memory behind addresses. */
#ifndef MC_ALLOC_HOST_H
#define MC_ALLOC_HOST_H

#include <stdint.h>

#include "alloc_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ca_host_device ca_host_device;

/* A device of capacity bytes; a segment request beyond what is free fails
 * (the model's OOM path). */
ca_host_device *ca_host_create(uint64_t capacity);
void ca_host_destroy(ca_host_device *d);
ca_backend ca_host_backend(ca_host_device *d);

/* Place the next segment at addr (the data_ptr() PyTorch returned for the
 * request that made it). Used once; without a hint the backend's own
 * placement rule decides (documented in alloc_host.c). */
void ca_host_hint_next(ca_host_device *d, uint64_t addr);

uint64_t ca_host_used(const ca_host_device *d);   /* bytes in live segments */

#ifdef __cplusplus
}
#endif
#endif
