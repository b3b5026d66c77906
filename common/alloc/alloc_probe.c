#include "alloc_probe.h"

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "alloc_cuda.h"
#include "check.h"
#include "check_cuda.h"

uint64_t mc_driver_free_bytes(void)
{
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    return (uint64_t)free_b;
}

/* The first cudaMalloc of a process may set up driver state of its own;
 * do it once before any baseline is read. */
static void warm_driver_once(void)
{
    static bool done = false;
    if (done) return;
    void *p = NULL;
    CHECK_CUDA(cudaMalloc(&p, CA_SMALL_BUFFER));
    CHECK_CUDA(cudaFree(p));
    CHECK_CUDA(cudaDeviceSynchronize());
    done = true;
}

void mc_probe_open(mc_probe *p, bool on_gpu, const ca_config *cfg)
{
    memset(p, 0, sizeof *p);
    ca_config def = ca_config_default();
    if (!cfg) cfg = &def;
    p->on_gpu = on_gpu;
    ca_backend be;
    if (p->on_gpu) {
        warm_driver_once();
        be = ca_cuda_backend();
        p->free0 = mc_driver_free_bytes();
    } else {
        p->host = ca_host_create(MC_PROBE_HOST_CAPACITY);
        CHECK(p->host != NULL, "ca_host_create(%llu)", (unsigned long long)MC_PROBE_HOST_CAPACITY);
        be = ca_host_backend(p->host);
    }
    p->a = ca_create(cfg, be);
    CHECK(p->a != NULL, "ca_create");
}

void mc_probe_close(mc_probe *p)
{
    if (p->a) ca_destroy(p->a);
    if (p->host) ca_host_destroy(p->host);
    memset(p, 0, sizeof *p);
}

int64_t mc_probe_driver_used(const mc_probe *p)
{
    if (!p->on_gpu) return 0;
    return (int64_t)p->free0 - (int64_t)mc_driver_free_bytes();
}

mc_probe_snap mc_probe_snapshot(const mc_probe *p)
{
    const ca_stats *s = ca_get_stats(p->a);
    mc_probe_snap r = {
        .allocated = (uint64_t)s->allocated_bytes.current,
        .peak_allocated = (uint64_t)s->allocated_bytes.peak,
        .reserved = (uint64_t)s->reserved_bytes.current,
        .peak_reserved = (uint64_t)s->reserved_bytes.peak,
        .requested = (uint64_t)s->requested_bytes.current,
        .peak_requested = (uint64_t)s->requested_bytes.peak,
        .segments = s->segment.current,
        .peak_segments = s->segment.peak,
        .segments_made = s->segment.allocated,
        .driver_used = mc_probe_driver_used(p),
    };
    return r;
}

const char *mc_probe_check(mc_probe *p)
{
    char err[256];
    if (ca_check_invariants(p->a, err, sizeof err) == 0) return NULL;
    snprintf(p->err, sizeof p->err, "allocator model invariant broken: %s", err);
    return p->err;
}
