/* tfm_wrap.c: a data-parallel wrapper's hold on the Transformer
 * (tfm_wrap.h): what it covers, its hooks installed, the parameters'
 * storage, gradients and shapes. */
#include <stdio.h>

#include "check.h"
#include "tfm_internal.h"

int mc_tfm_wrap_check(const mc_tfm_config *c, char *err, size_t len)
{
    if (mc_tfm_config_check(c, err, len) != 0) return -1;
    const char *no = c->arch != MC_TFM_ENCODER ? "nn.Transformer (the encoder alone is)"
                     : c->precision != MC_WL_FP32 ? "fp16 or bf16 (fp32 is)"
                     : c->accum != 1 ? "gradient accumulation"
                     : c->checkpoint ? "checkpointing"
                     : c->offload ? "--offload"
                     : c->fused ? "--fused"
                     : c->causal ? "--causal"
                     : NULL;
    if (no) {
        snprintf(err, len, "the Transformer under FSDP2 does not model %s", no);
        return -1;
    }
    return 0;
}

int mc_tfm_wrap(mc_tfm *T, const mc_tfm_wrap_hooks *h, const wl_opt_param *ps, int np, char *err, size_t len)
{
    if (mc_tfm_wrap_check(&T->c, err, len) != 0) return -1;
    if (T->wrapped || (ps && np != T->np) || T->step > 0) {
        snprintf(err, len, "a wrapper goes on a Transformer before its first step, once, "
                 "with its %d parameters", T->np);
        return -1;
    }
    T->wrap = *h;
    T->wrap_params = ps;
    T->wrapped = true;
    return 0;
}

void mc_tfm_step_hooks(mc_tfm *T, void *ctx, void (*begin)(void *ctx), void (*end)(void *ctx))
{
    CHECK(!T->wrapped && T->step == 0, "transformer: step hooks go on an unwrapped model before its first step");
    T->wrap.ctx = ctx;
    T->wrap.step_begin = begin;
    T->wrap.step_end = end;
}

wl_ctx *mc_tfm_ctx(mc_tfm *T) { return &T->ctx; }
int mc_tfm_nparams(const mc_tfm *T) { return T->np; }
int mc_tfm_layer_params(void) { return TFM_ENC_PER; }

wl_t *mc_tfm_param(mc_tfm *T, int i)
{
    CHECK(i >= 0 && i < T->np, "transformer: parameter %d of %d", i, T->np);
    return &T->p[i].p;
}

wl_t *mc_tfm_grad(mc_tfm *T, int i)
{
    CHECK(i >= 0 && i < T->np, "transformer: parameter %d of %d", i, T->np);
    return &T->p[i].g;
}

const char *mc_tfm_param_name(const mc_tfm *T, int i)
{
    CHECK(i >= 0 && i < T->np, "transformer: parameter %d of %d", i, T->np);
    return T->p[i].name;
}

/* An encoder layer's parameters in order (tfm_setup.c's names):
 * in_proj_weight [3E, E], in_proj_bias [3E], out_proj.weight [E, E], .bias
 * [E], linear1.weight [F, E], .bias [F], linear2.weight [E, F], .bias [E],
 * norm1 and norm2 weight and bias [E]. */
void mc_tfm_param_dims(const mc_tfm *T, int i, int64_t *dim0, int64_t *rest)
{
    CHECK(i >= 0 && i < T->np && T->c.arch == MC_TFM_ENCODER, "transformer: dims of parameter %d", i);
    const int64_t E = T->E, F = T->c.ff;
    static const int kind[TFM_ENC_PER] = {0, 1, 2, 3, 4, 5, 6, 3, 3, 3, 3, 3};
    const int64_t d0[7] = {3 * E, 3 * E, E, E, F, F, E}, r[7] = {E, 1, E, 1, E, 1, F};
    const int k = kind[i % TFM_ENC_PER];
    *dim0 = d0[k];
    *rest = r[k];
}
