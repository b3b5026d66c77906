/* check_cuda.h: CHECK_CUDA and CHECK_CUBLAS. Each evaluates its call once and,
 * on failure, prints file:line, the call's text, the error's name and string,
 * and exits with MC_EXIT_CUDA (never with the raw error: 999 would become 231). */
#ifndef MC_CHECK_CUDA_H
#define MC_CHECK_CUDA_H

#include <cuda_runtime_api.h>
#include <cublas_v2.h>

#include "check.h"

#ifdef __cplusplus
extern "C" {
#endif

void mc_die_cuda(const char *file, int line, const char *call, cudaError_t err)
    __attribute__((noreturn));
void mc_die_cublas(const char *file, int line, const char *call, cublasStatus_t st)
    __attribute__((noreturn));

#define CHECK_CUDA(call)                                                     \
    do {                                                                     \
        cudaError_t mc_err_ = (call);                                        \
        if (mc_err_ != cudaSuccess)                                          \
            mc_die_cuda(__FILE__, __LINE__, #call, mc_err_);                 \
    } while (0)

#define CHECK_CUBLAS(call)                                                   \
    do {                                                                     \
        cublasStatus_t mc_st_ = (call);                                      \
        if (mc_st_ != CUBLAS_STATUS_SUCCESS)                                 \
            mc_die_cublas(__FILE__, __LINE__, #call, mc_st_);                \
    } while (0)

/* For allocations where out-of-memory is a result to record: returns 1 on
 * success, 0 on cudaErrorMemoryAllocation (the sticky error is cleared), and
 * exits like CHECK_CUDA on any other error. */
#define CUDA_OK_OR_OOM(call) mc_cuda_ok_or_oom(__FILE__, __LINE__, #call, (call))
int mc_cuda_ok_or_oom(const char *file, int line, const char *call, cudaError_t err);

/* After every kernel launch: catches launch-configuration errors. */
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

#ifdef __cplusplus
}
#endif
#endif
