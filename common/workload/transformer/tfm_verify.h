/* tfm_verify.h: the Transformer kernels (tfm_kernels.h) checked on the GPU
 * against the float64 host reference (tfm_host_ref.h), on small random
 * shapes, for fp32, fp16 and bf16: LayerNorm forward and backward, attention
 * forward and backward (head dims 32, 64, 128; causal or not; dropout or
 * not; both packed layouts), activations, dropout (the kept elements must be
 * exactly the reference's), residual add, the fused chains against the eager
 * ones, AdamW. Relative error (max |gpu - ref| / max |ref|) within 1e-4 for
 * fp32, 1e-2 for fp16, 3e-2 for bf16 (inputs rounded to the dtype first, so
 * the rest is rounding of intermediates and outputs).
 * Needs a current CUDA device. Allocates its own small buffers with
 * cudaMalloc (a check, not the modelled workload). */
#ifndef MC_TFM_VERIFY_H
#define MC_TFM_VERIFY_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs every check, one line each on log ("verify: tfm ... ok" or "...
 * FAIL (err ...)"). Returns the number of failed checks (0: all passed). */
int mc_tfm_verify(FILE *log);
/* tfm_verify_step.c: whole training steps of the workload (mc_tfm on the
 * GPU) against the float64 model, then the loss falling over steps on
 * fixed data. One line per case; returns the failures. */
int mc_tfm_verify_steps(FILE *log);

#ifdef __cplusplus
}
#endif
#endif
