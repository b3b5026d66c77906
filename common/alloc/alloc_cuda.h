/* alloc_cuda.h: the CUDA backend, segments from cudaMalloc / cudaFree on the
 * current device (what alloc_block and release_block call in PyTorch).
 * cudaErrorMemoryAllocation is an OOM for the model, after the sticky error
 * is cleared with cudaGetLastError as the reference does; any other error
 * exits with MC_EXIT_CUDA. A pending error from earlier work is caught
 * before each cudaMalloc (alloc_block's defensive cudaGetLastError check). */
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
