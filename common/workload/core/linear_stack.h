/* linear_stack.h: what the MLP workload (mlp/) and its data-parallel form
 * (sharded/) share about the network they train, a stack of Linear layers
 * (with bias) and ReLU: the bounds of its shape and their checks. */
#ifndef MC_WL_LINEAR_STACK_H
#define MC_WL_LINEAR_STACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_WL_MAX_LAYERS 4096
#define MC_WL_MAX_FEATURES (1LL << 24) /* keeps every tensor's bytes far from overflow */

/* layers from 2 to MC_WL_MAX_LAYERS; in, width, out, batch from 1 to
 * MC_WL_MAX_FEATURES. 0, or -1 with one line in err. */
int wl_stack_check_shape(int layers, int64_t in, int64_t width, int64_t out, int64_t batch,
                         char *err, size_t len);
/* Rows x features below 2^48 elements, so that every tensor's bytes fit
 * with room. 0, or -1 with one line in err. */
int wl_stack_check_bytes(int64_t in, int64_t width, int64_t out, int64_t batch, char *err,
                         size_t len);

#ifdef __cplusplus
}
#endif
#endif
