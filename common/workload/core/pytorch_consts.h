/* pytorch_consts.h: PyTorch 2.11's figures that decide the size of a
 * request the workloads make, once, each with the source that sets it. The
 * models' request sequences (mlp/, transformer/, sharded/) and the tests
 * that check them take them from here. */
#ifndef MC_PYTORCH_CONSTS_H
#define MC_PYTORCH_CONSTS_H

/* The cuBLAS workspace of a handle, taken from the caching allocator at the
 * handle's first GEMM on a thread (aten/src/ATen/cuda/CublasHandlePool.cpp
 * getChosenWorkspaceSize: CUBLAS_WORKSPACE_CONFIG's default ":4096:8" on
 * sm_90, 8 chunks of 4096 KiB), bytes. */
#define MC_PT_CUBLAS_WS_BYTES (32ULL << 20)
/* The cuBLASLt workspace beside it (CublasHandlePool.cpp
 * getCUDABlasLtWorkspaceSize -> parseCUDABlasLtWorkspaceSize: 1024 KiB
 * unless CUBLASLT_WORKSPACE_SIZE is set; a block of its own unless
 * TORCH_CUBLASLT_UNIFIED_WORKSPACE=1), bytes. */
#define MC_PT_CUBLASLT_WS_BYTES (1ULL << 20)

/* Whether a Linear's addmm (bias given) runs on cuBLASLt, and so takes the
 * cuBLASLt workspace at its first call (aten/src/ATen/native/cuda/Blas.cpp
 * addmm_out_cuda_impl, useLtInterface: mat2 = W^T, of in x out, must have
 * more than one row and column; otherwise cuBLAS with the bias copied into
 * the output first, no request). Two H100s, PyTorch 2.11: a network of
 * width 1 never takes the cuBLASLt workspace; one of batch 1 does. */
#define MC_PT_ADDMM_USES_LT(in, out) ((in) > 1 && (out) > 1)

#endif
