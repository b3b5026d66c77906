#include "check_cuda.h"

#include <stdio.h>
#include <stdlib.h>

void mc_die_cuda(const char *file, int line, const char *call, cudaError_t err)
{
    fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, call,
            cudaGetErrorName(err), cudaGetErrorString(err));
    exit(MC_EXIT_CUDA);
}

int mc_cuda_ok_or_oom(const char *file, int line, const char *call, cudaError_t err)
{
    if (err == cudaSuccess) return 1;
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return 0;
    }
    mc_die_cuda(file, line, call, err);
}
