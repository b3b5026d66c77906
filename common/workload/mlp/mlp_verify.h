/* mlp_verify.h: the training workload's arithmetic checked on the GPU
 * (build/workload --verify, called by make test-gpu). On small shapes, for
 * every precision and optimizer, with and without accumulation and
 * checkpointing, three steps each:
 *   - the loss and every parameter gradient against the float64 host
 *     reference (mlp_host_ref.h): relative error within 1e-4 for fp32,
 *     1e-2 for fp16/bf16 operands (the reference rounds where the GPU does);
 *   - the parameters after each optimizer step against the reference update
 *     applied to the GPU's own gradients (1e-5);
 * and then: the loss falls over 100 steps on fixed data (to below half its
 * first value) in each precision; an overflow injected in fp16 makes
 * GradScaler skip that step (parameters unchanged) and halve the scale;
 * the allocator's figures on the GPU equal the model-only run's.
 * Needs a current CUDA device (mc_gpu_open). */
#ifndef MC_MLP_VERIFY_H
#define MC_MLP_VERIFY_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs every check, one line each on log ("verify: ... ok" or "... FAIL").
 * Returns the number of failed checks (0: all passed). */
int mc_workload_verify(FILE *log);

#ifdef __cplusplus
}
#endif
#endif
