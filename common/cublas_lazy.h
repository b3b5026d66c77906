/* cublas_lazy.h: cuBLAS and cuBLASLt are loaded at their first call
 * (cublas_lazy.c defines the functions the suite uses, over dlopen), so
 * that programs are not linked with them and a process that never creates
 * a cuBLAS handle never loads them. Callers include cublas_v2.h or
 * cublasLt.h as usual; this header is for the test and diagnostics. */
#ifndef MC_CUBLAS_LAZY_H
#define MC_CUBLAS_LAZY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MC_CUBLAS_LIB, MC_CUBLASLT_LIB, MC_CUBLAS_NLIBS } mc_cublas_lib;

/* Loads lib once (thread-safe) and looks name up: the address, or NULL with
 * the reason (library not found, or no such symbol) in err. */
void *mc_cublas_try_symbol(mc_cublas_lib lib, const char *name, char *err, size_t errlen);

typedef struct {
    mc_cublas_lib lib;
    const char *name;  /* NULL ends the table */
} mc_cublas_symbol;

/* Every function cublas_lazy.c defines. */
extern const mc_cublas_symbol mc_cublas_symbols[];

#ifdef __cplusplus
}
#endif
#endif
