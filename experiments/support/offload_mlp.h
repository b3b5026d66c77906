/* offload_mlp.h: a compact MLP training step whose saved activations are
 * kept on the device or offloaded to pinned host memory (C23's workload; the
 * workload library, mlp.h, has no offload mode). fp32, L bias-free
 * Linear+ReLU layers of width H, MSE loss, SGD; cuBLAS without TF32; every
 * device tensor taken from the allocator model (alloc_probe.h), a cuBLAS
 * workspace included. Variants:
 *   MC_OFFLOAD_KEEP    saved activations stay on the device
 *   MC_OFFLOAD_OFFLOAD each saved input is copied D2H on a side stream as
 *                      soon as it exists, its block freed once the copy is
 *                      done (the compute stream waits on the copy's event);
 *                      the backward brings each back H2D on the side stream,
 *                      one layer ahead
 *   MC_OFFLOAD_SERIAL  the same copies on the compute stream, none
 *                      overlapped, as torch.autograd.graph.save_on_cpu(
 *                      pin_memory=True) does
 * Without a GPU (run->on_gpu false: --model-only) the same request sequence
 * runs through the model over the host backend: no kernels, no copies, no
 * times. CUDA and cuBLAS errors exit MC_EXIT_CUDA. */
#ifndef MC_OFFLOAD_MLP_H
#define MC_OFFLOAD_MLP_H

#include <stdbool.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "alloc/alloc_probe.h"
#include "event_timer.h"
#include "experiment.h"
#include "workload/core/pytorch_consts.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MC_OFFLOAD_KEEP, MC_OFFLOAD_OFFLOAD, MC_OFFLOAD_SERIAL, MC_OFFLOAD_NVAR };
/* What a device block holds: weights, gradients, activations (saved inputs
 * and the step's other B x H tensors), the cuBLAS workspace, the rest (loss
 * partial sums and the loss). */
enum {
    MC_OFFLOAD_CAT_W,
    MC_OFFLOAD_CAT_G,
    MC_OFFLOAD_CAT_ACT,
    MC_OFFLOAD_CAT_WS,
    MC_OFFLOAD_CAT_OTHER,
    MC_OFFLOAD_NCAT
};
#define MC_OFFLOAD_MAX_LAYERS 64
#define MC_OFFLOAD_WS_BYTES MC_PT_CUBLAS_WS_BYTES /* PyTorch's cuBLAS workspace, bytes */

/* One model at one batch. Set up by mc_offload_create; the caller reads the
 * fields marked "out" and leaves the rest alone. Device tensors are the
 * allocator model's addresses (uint64_t, 0: none). */
typedef struct {
    mc_run *run;
    bool gpu;                         /* run->on_gpu */
    bool oom;                         /* out: a request failed (set-up or step) */
    int var, L;                       /* MC_OFFLOAD_*; layers */
    int64_t H, B;                     /* width (features), batch (rows) */
    uint64_t act;                     /* one activation, B x H x 4 bytes */
    mc_probe p;                       /* out: p.a is the allocator (stats, peaks) */
    uint64_t cat[MC_OFFLOAD_NCAT];    /* block bytes live now, per category */
    uint64_t peak_seen;               /* allocated bytes at the last step's peak */
    uint64_t peak_cat[MC_OFFLOAD_NCAT]; /* out: cat[] at the last step's peak, bytes */
    uint64_t W[MC_OFFLOAD_MAX_LAYERS], ws; /* kept across steps */
    uint64_t x[MC_OFFLOAD_MAX_LAYERS], gW[MC_OFFLOAD_MAX_LAYERS], h, o, y, go, g, gx, part,
        loss;                         /* the step's tensors */
    cublasHandle_t hb;
    cudaStream_t sc, ss;              /* compute; copies (== sc for keep and serial) */
    cudaEvent_t ready[MC_OFFLOAD_MAX_LAYERS], copied[MC_OFFLOAD_MAX_LAYERS],
        loaded[MC_OFFLOAD_MAX_LAYERS], alloc_ev;
    float *const *pinned;             /* host copies of the saved inputs, [L] */
    mc_event_timer tm;                /* around the step, on sc */
    double time_s;                    /* out: the last step's, seconds (events); NaN in model-only */
    uint64_t pcie_bytes;              /* out: bytes moved D2H + H2D in the last step */
} mc_offload_mlp;

/* "keep", "offload", "offload_serial" (the rows' variant names). */
const char *mc_offload_variant_name(int var);

/* Opens an allocator on run's backend (mc_probe_open) and allocates the L
 * H x H weights (nn.Linear-like init, bound sqrt(6 / H), the same seed in
 * every variant) and the workspace. On a GPU, also the streams, events and
 * the cuBLAS handle. pinned: L pinned host buffers of at least B x H x 4
 * bytes each (GPU only; may be NULL without a GPU), kept by the caller.
 * L in 1..MC_OFFLOAD_MAX_LAYERS. On OOM sets m->oom and returns. */
void mc_offload_create(mc_offload_mlp *m, mc_run *run, int var, int L, int64_t H, int64_t B,
                       float *const *pinned);

/* One step on data step_id (input and target drawn from it). grads_out
 * (GPU, may be NULL): the gradients are copied there ([L][H*H] floats)
 * instead of applied; *loss_out (GPU, may be NULL) gets the loss. Resets the
 * allocator's peak first, so its peak is the step's. Returns false on OOM
 * (everything the step held is freed). Waits for the device before it
 * returns. */
bool mc_offload_step(mc_offload_mlp *m, uint64_t step_id, float *grads_out, float *loss_out);

/* Frees everything, checks the allocator's invariants (a broken one is a
 * verification failure named by the variant) and closes it. */
void mc_offload_destroy(mc_offload_mlp *m);

#ifdef __cplusplus
}
#endif
#endif
