/* alloc_cuda.c: the CUDA backend (alloc_cuda.h). */
#include "alloc_cuda.h"

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "check_cuda.h"

static int cuda_malloc(void *ctx, uint64_t bytes, uint64_t *addr)
{
    (void)ctx;
    CHECK_CUDA(cudaGetLastError());
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, (size_t)bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* forgive and clear, as alloc_block does */
        return 1;
    }
    if (err != cudaSuccess) mc_die_cuda(__FILE__, __LINE__, "cudaMalloc(&p, bytes)", err);
    *addr = (uint64_t)(uintptr_t)p;
    return 0;
}

static void cuda_free(void *ctx, uint64_t addr, uint64_t bytes)
{
    (void)ctx;
    (void)bytes;
    CHECK_CUDA(cudaFree((void *)(uintptr_t)addr));
}

ca_backend ca_cuda_backend(void)
{
    ca_backend b = {.dev_malloc = cuda_malloc, .dev_free = cuda_free}; /* no dev_map: no expandable segments */
    return b;
}
