/* mc_die_cublas lives apart from the CUDA checks so that a program that
 * never calls cuBLAS does not link it (with --as-needed): loading cuBLAS
 * costs about 0.1 s per process start. */
#include "check_cuda.h"

#include <stdio.h>
#include <stdlib.h>

void mc_die_cublas(const char *file, int line, const char *call, cublasStatus_t st)
{
    fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, call,
            cublasGetStatusName(st), cublasGetStatusString(st));
    exit(MC_EXIT_CUDA);
}
