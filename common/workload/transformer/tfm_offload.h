/* tfm_offload.h: --offload (tfm_offload.c, C23), PyTorch's
 * torch.autograd.graph.save_on_cpu(pin_memory=True) for saved activations,
 * as the tape's saved-tensor hooks. */
#ifndef MC_TFM_OFFLOAD_H
#define MC_TFM_OFFLOAD_H

#include "tfm_internal.h"

/* Installs the pack, unpack, drop and freed hooks into h (mc_tfm_create). */
void tfm_offload_hooks(tfm_saved_hooks *h);
/* Frees the pinned pool (mc_tfm_destroy, once no copy is in flight). */
void tfm_offload_free(mc_tfm *T);

#endif
