/* alloc_probe.h: the allocator model over the backend a run asks for, with
 * the driver's view of device memory beside it. The allocator-accounting
 * experiments (C01, C02, C15, C16, C18) run a request sequence through the
 * model and compare its figures with cudaMemGetInfo:
 *
 *   on a GPU       the model over the CUDA backend (real cudaMalloc segments);
 *                  driver_used = cudaMemGetInfo free bytes at open - now
 *   --model-only   the model over the host backend (no GPU); no driver figure
 *
 * The driver counts whole device pages (2 MiB on Hopper) and every process's
 * allocations, so driver_used is what the device lost, not what the model
 * reserved: the experiments report the difference, never assume it is 0. */
#ifndef MC_ALLOC_PROBE_H
#define MC_ALLOC_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc_host.h"
#include "alloc_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Capacity of the simulated device in --model-only, bytes: an 80 GB-class
 * card (H100 80GB). The experiments here stay far below it. */
#define MC_PROBE_HOST_CAPACITY (80ULL << 30)

/* Bytes to MiB, for findings (PyTorch's "MB" in memory_summary is MiB). */
#define MC_MIB(bytes) ((double)(bytes) / 1048576.0)

typedef struct {
    bool on_gpu;
    ca_host_device *host;  /* the host backend's device; NULL on a GPU */
    ca_allocator *a;
    uint64_t free0;        /* cudaMemGetInfo free bytes at open (GPU only) */
    char err[320];         /* mc_probe_check's text */
} mc_probe;

/* The figures the experiments report, read after an operation. */
typedef struct {
    uint64_t allocated, peak_allocated;   /* allocated_bytes.all current/peak */
    uint64_t reserved, peak_reserved;     /* reserved_bytes.all current/peak */
    uint64_t requested, peak_requested;   /* requested_bytes.all current/peak */
    int64_t segments, peak_segments;      /* segment.all current/peak */
    int64_t segments_made;                /* segment.all.allocated: cudaMalloc calls made */
    int64_t driver_used;                  /* free at open - free now, bytes; 0 in model-only */
} mc_probe_snap;

/* A fresh allocator with cfg (NULL: ca_config_default()) on the run's
 * backend: CUDA when on_gpu, else a host device of MC_PROBE_HOST_CAPACITY. On a
 * GPU, the first open in a process does one untimed cudaMalloc/cudaFree so
 * lazy driver set-up is not charged to the first sequence. */
void mc_probe_open(mc_probe *p, bool on_gpu, const ca_config *cfg);
/* Returns every segment (ca_destroy) and frees the host device. */
void mc_probe_close(mc_probe *p);

mc_probe_snap mc_probe_snapshot(const mc_probe *p);

/* Device bytes in use now beyond those in use at open (may be negative when
 * another process freed memory meanwhile); 0 in model-only. */
int64_t mc_probe_driver_used(const mc_probe *p);

/* cudaMemGetInfo's free bytes (GPU only; exits MC_EXIT_CUDA on error). */
uint64_t mc_driver_free_bytes(void);

/* ca_check_invariants: NULL when they hold, else one line saying which is
 * broken (in p, valid until the next call), for the caller to record as a
 * failed verification. */
const char *mc_probe_check(mc_probe *p);

#ifdef __cplusplus
}
#endif
#endif
