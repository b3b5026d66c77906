/* tfm_config.c: the Transformer workload's configuration: PyTorch's
 * defaults, the checks (one line each), the exact parameter count. */
#include <stdio.h>
#include <string.h>

#include "tfm.h"
#include "workload/core/pytorch_consts.h"
#include "workload/transformer/kernels/tfm_kernels.h"

#define MAX_WIDTH (1LL << 16)
#define MAX_LAYERS 1024
#define MAX_ACCUM 1024
#define MAX_HEAD_DIM 256 /* flash attention's and cuDNN's (9.10 or newer, sm_90) limit; the model's range */

mc_tfm_config mc_tfm_config_default(void)
{
    mc_tfm_config c;
    memset(&c, 0, sizeof c);
    c.arch = MC_TFM_TRANSFORMER;
    c.d_model = 512;
    c.heads = 8;
    c.enc_layers = 6;
    c.dec_layers = 6;
    c.ff = 2048;
    c.dropout = 0.1;
    c.activation = MC_TFM_RELU;
    c.accum = 1;
    c.optimizer = MC_WL_SGD;
    c.precision = MC_WL_FP32;
    c.alloc = ca_config_default();
    c.host_capacity = MC_WL_DEFAULT_HOST_CAPACITY;
    c.sm_count = MC_WL_DEFAULT_SM_COUNT;
    c.trace_steps = 2;
    c.cublas_ws = MC_PT_CUBLAS_WS_BYTES;
    c.cublaslt_ws = MC_PT_CUBLASLT_WS_BYTES;
    return c;
}

mc_tfm_config mc_tfm_seed000_accum(int64_t seq, int64_t batch)
{
    mc_tfm_config c = mc_tfm_config_default();
    c.arch = MC_TFM_TRANSFORMER;
    c.d_model = 256;
    c.seq = seq;
    c.batch = batch;
    c.optimizer = MC_WL_ADAM;
    c.precision = MC_WL_FP32;
    c.build_host = true;
    return c;
}

mc_tfm_config mc_tfm_seed000_amp(int64_t batch, mc_wl_precision precision)
{
    mc_tfm_config c = mc_tfm_config_default();
    c.arch = MC_TFM_TRANSFORMER;
    c.d_model = 512;
    c.batch_first = true;
    c.seq = MC_TFM_SEED000_AMP_SEQ;
    c.batch = batch;
    c.optimizer = MC_WL_ADAM;
    c.precision = precision;
    c.build_host = true;
    return c;
}

static int fail(char *err, size_t len, const char *msg)
{
    snprintf(err, len, "%s", msg);
    return -1;
}

int mc_tfm_config_check(const mc_tfm_config *c, char *err, size_t len)
{
    if ((unsigned)c->arch > MC_TFM_ENCODER) return fail(err, len, "unknown architecture");
    if (c->cublas_ws == 0 || c->cublaslt_ws == 0) return fail(err, len, "cuBLAS workspaces of 0 bytes");
    if (c->d_model < 1 || c->d_model > MAX_WIDTH || c->ff < 1 || c->ff > MAX_WIDTH) {
        snprintf(err, len, "d-model and ff must be from 1 to %lld", (long long)MAX_WIDTH);
        return -1;
    }
    if (c->heads < 1 || c->d_model % c->heads) {
        snprintf(err, len, "%lld heads do not divide d-model %lld (embed_dim must be divisible by num_heads)",
                 (long long)c->heads, (long long)c->d_model);
        return -1;
    }
    const int64_t hd = c->d_model / c->heads;
    const bool half = c->precision != MC_WL_FP32;
    if (hd > MAX_HEAD_DIM || hd % (half ? 8 : 4)) {
        snprintf(err, len, "head size %lld (d-model / heads) is not modelled: it must be a multiple of %d "
                 "(%s attention) and at most %d", (long long)hd, half ? 8 : 4,
                 half ? "cuDNN or flash" : "memory-efficient", MAX_HEAD_DIM);
        return -1;
    }
    if (c->enc_layers < 1 || c->enc_layers > MAX_LAYERS ||
        (c->arch == MC_TFM_TRANSFORMER && (c->dec_layers < 1 || c->dec_layers > MAX_LAYERS))) {
        snprintf(err, len, "encoder and decoder layers must be from 1 to %d", MAX_LAYERS);
        return -1;
    }
    if (c->causal && c->arch != MC_TFM_ENCODER)
        return fail(err, len, "--causal needs --arch encoder (nn.Transformer is run without masks)");
    if (c->seq < 1 || c->seq > (1LL << 20)) return fail(err, len, "the sequence length must be from 1 to 1048576");
    if (c->batch < 1 || c->batch > (1LL << 24)) return fail(err, len, "the batch must be from 1 to 16777216");
    if (c->accum < 1 || c->accum > MAX_ACCUM) {
        snprintf(err, len, "accum must be from 1 to %d, not %d", MAX_ACCUM, c->accum);
        return -1;
    }
    if (c->batch % c->accum) {
        snprintf(err, len, "batch %lld is not divisible by accum %d", (long long)c->batch, c->accum);
        return -1;
    }
    if (!(c->dropout >= 0 && c->dropout < 1)) return fail(err, len, "dropout must be in [0, 1)");
    if ((unsigned)c->activation > MC_TFM_GELU) return fail(err, len, "unknown activation");
    if ((unsigned)c->optimizer > MC_WL_ADAMW || (unsigned)c->precision > MC_WL_BF16)
        return fail(err, len, "unknown optimizer or precision");
    if (c->host_capacity == 0 || c->sm_count < 1 || c->trace_steps < 0)
        return fail(err, len, "bad host capacity, SM count or trace steps");
    /* every tensor's bytes far from overflow: tokens x width below 2^44 */
    const int64_t wide = c->d_model > c->ff ? c->d_model : c->ff;
    if ((double)c->seq * (double)c->batch * (double)wide > 0x1p44 ||
        (double)c->seq * (double)c->seq > 0x1p44)
        return fail(err, len, "tensor sizes too large");
    char e2[200];
    if (ca_config_check(&c->alloc, e2, sizeof e2) != 0) {
        snprintf(err, len, "allocator: %s", e2);
        return -1;
    }
    return 0;
}

/* nn.TransformerEncoderLayer: in_proj 3E*E + 3E, out_proj E*E + E, linear1
 * F*E + F, linear2 E*F + E, two LayerNorms 2E each. The decoder layer has a
 * second attention and a third LayerNorm; nn.Transformer adds the final
 * encoder and decoder LayerNorms. */
uint64_t mc_tfm_param_count(const mc_tfm_config *c)
{
    const uint64_t E = (uint64_t)c->d_model, F = (uint64_t)c->ff;
    const uint64_t attn = 4 * E * E + 4 * E, ffn = 2 * E * F + F + E;
    const uint64_t enc = attn + ffn + 4 * E, dec = 2 * attn + ffn + 6 * E;
    uint64_t n = (uint64_t)c->enc_layers * enc;
    if (c->arch == MC_TFM_TRANSFORMER) n += 2 * E + (uint64_t)c->dec_layers * dec + 2 * E;
    return n;
}

int mc_tfm_gpu_check(const mc_tfm_config *c, char *err, size_t len)
{
    const int64_t hd = c->d_model / c->heads;
    if (!tfm_attn_supported((int)hd)) {
        snprintf(err, len, "head size %lld (d-model / heads): the GPU's attention kernels take 16, 32, 64 "
                 "or 128 (--model-only models any)", (long long)hd);
        return -1;
    }
    return 0;
}
