/* reduce_scratch.h: the scratch PyTorch's CUDA reductions take from the
 * caching allocator (reduce_scratch.c says where the rule comes from). */
#ifndef MC_WL_REDUCE_SCRATCH_H
#define MC_WL_REDUCE_SCRATCH_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's gpu_reduce_kernel scratch (Reduce.cuh setReduceConfig) for a
 * reduction of `inputs` values into each of `outputs` outputs; along_rows:
 * the reduced dimension is not the fastest-moving one (a bias gradient's
 * sum over rows); arg and scalar sizes in bytes. Sets the bytes of the global
 * buffer and of the semaphores, both 0 when no global reduction is needed. */
void wl_reduce_scratch(int64_t outputs, int64_t inputs, bool along_rows, int arg_size,
                       int scalar_size, int sm_count, uint64_t *buf, uint64_t *sem);

#ifdef __cplusplus
}
#endif
#endif
