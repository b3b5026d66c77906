/* alloc_cuda.h: the CUDA backend, segments from cudaMalloc / cudaFree on the
 * current device. cudaErrorMemoryAllocation is an OOM for the model (the
 * sticky error is cleared), any other error exits with MC_EXIT_CUDA. */
#ifndef MC_ALLOC_CUDA_H
#define MC_ALLOC_CUDA_H

#include "alloc_model.h"

#ifdef __cplusplus
extern "C" {
#endif

ca_backend ca_cuda_backend(void);

#ifdef __cplusplus
}
#endif
#endif
