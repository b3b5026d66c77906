/* mc_die_cublas lives apart from the CUDA checks so that a program that
 * never calls cuBLAS does not pull in the cuBLAS wrappers; those load the
 * library only at a first call anyway (cublas_lazy.c). */
#include "check_cuda.h"

#include <stdio.h>
#include <stdlib.h>

void mc_die_cublas(const char *file, int line, const char *call, cublasStatus_t st)
{
    fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, call,
            cublasGetStatusName(st), cublasGetStatusString(st));
    exit(MC_EXIT_CUDA);
}
