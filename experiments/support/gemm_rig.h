/* gemm_rig.h: one MLP layer's forward GEMM alone, [B,H] x [H,H]^T through
 * cublasGemmEx (default math: fp32 without TF32, fp16/bf16 with fp32
 * accumulation), as C05 sets the GPU's rate beside the training step's:
 * the GEMMs repeated as one CUDA graph timed with events (the GPU's rate,
 * not the host's launch rate), the result checked on sampled entries
 * against a host double reference. Needs a GPU; CUDA errors exit
 * MC_EXIT_CUDA. */
#ifndef MC_GEMM_RIG_H
#define MC_GEMM_RIG_H

#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "event_timer.h"
#include "experiment.h"
#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    cublasHandle_t h;
    cudaStream_t stream;
    mc_event_timer et;
    void *W, *X, *C;   /* H x H, H x Bmax, H x Bmax elements, 4 bytes each at most */
} mc_gemm_rig;

/* A stream, a cuBLAS handle on it and buffers for width H up to batch bmax. */
void mc_gemm_rig_create(mc_gemm_rig *g, int H, int64_t bmax);
void mc_gemm_rig_destroy(mc_gemm_rig *g);

/* FLOP/s of the layer GEMM at precision prec (mc_wl_precision), --repeats
 * samples; 0 samples and a verify failure on a wrong result. */
mc_stats mc_gemm_rig_rate(mc_run *run, mc_gemm_rig *g, int prec, int H, int64_t B);

#ifdef __cplusplus
}
#endif
#endif
