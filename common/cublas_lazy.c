/* cublas_lazy.c: the cuBLAS and cuBLASLt functions the suite calls, loaded
 * from the shared libraries at their first call (dlopen) instead of at every
 * process start.
 *
 * Why: libcublasLt is about 500 MiB of code. Linked normally, every start of
 * a program that can train (the workload, most experiments, their tests)
 * maps and relocates it: 0.6 s and 350 MiB resident per start under
 * AddressSanitizer, 0.1 s without, although --help, bad input and
 * --model-only never call it. make test starts such programs some hundred
 * times. Loaded here, only a process that creates a cuBLAS handle pays.
 *
 * Each wrapper below is defined against NVIDIA's own declaration in
 * cublas_v2.h / cublasLt.h, so the compiler checks every signature; the
 * pointer it calls through has the declared type (__typeof__). A library or
 * symbol that cannot be loaded is one line on stderr and MC_EXIT_CUDA, as
 * any other cuBLAS failure. A function the suite starts to call must be
 * added here (the link fails until it is). */
#define _GNU_SOURCE
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "cublas_lazy.h"

#define MC_STR_(x) #x
#define MC_STR(x) MC_STR_(x)

/* The sonames of the toolkit the suite was built with; the executable's
 * RUNPATH ($(CUDA_HOME)/lib64) is searched first, as for a linked library. */
static const char *const LIB_NAME[MC_CUBLAS_NLIBS] = {
    "libcublas.so." MC_STR(CUBLAS_VER_MAJOR),
    "libcublasLt.so." MC_STR(CUBLAS_VER_MAJOR),
};

static void *g_lib[MC_CUBLAS_NLIBS];
static char g_err[MC_CUBLAS_NLIBS][512];
static pthread_once_t g_once[MC_CUBLAS_NLIBS] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

static void open_lib(mc_cublas_lib lib)
{
    g_lib[lib] = dlopen(LIB_NAME[lib], RTLD_NOW | RTLD_GLOBAL);
    if (!g_lib[lib]) snprintf(g_err[lib], sizeof g_err[lib], "%s", dlerror());
}
static void open_cublas(void) { open_lib(MC_CUBLAS_LIB); }
static void open_cublaslt(void) { open_lib(MC_CUBLASLT_LIB); }

void *mc_cublas_try_symbol(mc_cublas_lib lib, const char *name, char *err, size_t errlen)
{
    pthread_once(&g_once[lib], lib == MC_CUBLAS_LIB ? open_cublas : open_cublaslt);
    if (!g_lib[lib]) {
        snprintf(err, errlen, "cannot load %s: %s", LIB_NAME[lib], g_err[lib]);
        return NULL;
    }
    void *p = dlsym(g_lib[lib], name);
    if (!p) snprintf(err, errlen, "%s has no %s", LIB_NAME[lib], name);
    return p;
}

static void *symbol(mc_cublas_lib lib, const char *name)
{
    char err[640];
    void *p = mc_cublas_try_symbol(lib, name, err, sizeof err);
    if (!p) {
        fprintf(stderr, "cuBLAS: %s\n", err);
        exit(MC_EXIT_CUDA);
    }
    return p;
}

/* One wrapper: resolved once, then a plain indirect call. The pointer is
 * read and written atomically (C24 trains one rank per thread). */
#define MC_LAZY(lib, ret, name, params, args)                                    \
    ret name params                                                              \
    {                                                                            \
        static __typeof__(&name) fn;                                             \
        __typeof__(&name) f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);            \
        if (!f) {                                                                \
            f = (__typeof__(&name))symbol(lib, #name);                           \
            __atomic_store_n(&fn, f, __ATOMIC_RELEASE);                          \
        }                                                                        \
        return f args;                                                           \
    }

#define B MC_CUBLAS_LIB
#define LT MC_CUBLASLT_LIB

/* ---- cuBLAS (cublas_api.h) */
MC_LAZY(B, cublasStatus_t, cublasCreate_v2, (cublasHandle_t *handle), (handle))
MC_LAZY(B, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle))
MC_LAZY(B, cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
        (handle, stream))
MC_LAZY(B, cublasStatus_t, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode),
        (handle, mode))
MC_LAZY(B, cublasStatus_t, cublasSetWorkspace_v2,
        (cublasHandle_t handle, void *workspace, size_t bytes), (handle, workspace, bytes))
MC_LAZY(B, const char *, cublasGetStatusString, (cublasStatus_t status), (status))
MC_LAZY(B, const char *, cublasGetStatusName, (cublasStatus_t status), (status))
MC_LAZY(B, cublasStatus_t, cublasSgemm_v2,
        (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
         int k, const float *alpha, const float *A, int lda, const float *B_, int ldb,
         const float *beta, float *C, int ldc),
        (handle, transa, transb, m, n, k, alpha, A, lda, B_, ldb, beta, C, ldc))
MC_LAZY(B, cublasStatus_t, cublasGemmEx,
        (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
         int k, const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B_,
         cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
         cublasComputeType_t computeType, cublasGemmAlgo_t algo),
        (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B_, Btype, ldb, beta, C, Ctype,
         ldc, computeType, algo))

/* ---- cuBLASLt (cublasLt.h) */
MC_LAZY(LT, cublasStatus_t, cublasLtMatrixLayoutCreate,
        (cublasLtMatrixLayout_t *layout, cudaDataType type, uint64_t rows, uint64_t cols,
         int64_t ld),
        (layout, type, rows, cols, ld))
MC_LAZY(LT, cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
MC_LAZY(LT, cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t *pref),
        (pref))
MC_LAZY(LT, cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref),
        (pref))
MC_LAZY(LT, cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,
        (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
         const void *buf, size_t bytes),
        (pref, attr, buf, bytes))
MC_LAZY(LT, cublasStatus_t, cublasLtMatmulDescCreate,
        (cublasLtMatmulDesc_t *desc, cublasComputeType_t computeType, cudaDataType_t scaleType),
        (desc, computeType, scaleType))
MC_LAZY(LT, cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
MC_LAZY(LT, cublasStatus_t, cublasLtMatmulDescSetAttribute,
        (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void *buf,
         size_t bytes),
        (desc, attr, buf, bytes))
MC_LAZY(LT, cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,
        (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
         cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
         cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t pref, int requested,
         cublasLtMatmulHeuristicResult_t results[], int *returned),
        (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results, returned))
MC_LAZY(LT, cublasStatus_t, cublasLtMatmul,
        (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
         cublasLtMatrixLayout_t Adesc, const void *B_, cublasLtMatrixLayout_t Bdesc,
         const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
         cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
         size_t workspaceBytes, cudaStream_t stream),
        (handle, desc, alpha, A, Adesc, B_, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
         workspaceBytes, stream))

/* The names above, for the test that resolves each one (tests/test_cublas_lazy.c). */
const mc_cublas_symbol mc_cublas_symbols[] = {
    {B, "cublasCreate_v2"}, {B, "cublasDestroy_v2"}, {B, "cublasSetStream_v2"},
    {B, "cublasSetMathMode"}, {B, "cublasSetWorkspace_v2"}, {B, "cublasGetStatusString"},
    {B, "cublasGetStatusName"}, {B, "cublasSgemm_v2"}, {B, "cublasGemmEx"},
    {LT, "cublasLtMatrixLayoutCreate"}, {LT, "cublasLtMatrixLayoutDestroy"},
    {LT, "cublasLtMatmulPreferenceCreate"}, {LT, "cublasLtMatmulPreferenceDestroy"},
    {LT, "cublasLtMatmulPreferenceSetAttribute"}, {LT, "cublasLtMatmulDescCreate"},
    {LT, "cublasLtMatmulDescDestroy"}, {LT, "cublasLtMatmulDescSetAttribute"},
    {LT, "cublasLtMatmulAlgoGetHeuristic"}, {LT, "cublasLtMatmul"},
    {B, NULL},
};
