/* tfm_fastpath.c: PyTorch 2.11's inference fast paths of the Transformer
 * layers, which eval() takes without autograd (no_grad or inference_mode)
 * where their conditions hold (torch/nn/modules/transformer.py
 * TransformerEncoderLayer.forward's why_not_sparsity_fast_path and
 * activation.py MultiheadAttention.forward's why_not_fast_path): not
 * training, batch_first, an even head count, no autocast (fp32 here), no
 * tensor that requires grad while grad is enabled, self-attention for the
 * MultiheadAttention one. The others hold for every module of this
 * workload (in_proj bias, relu or gelu, equal LayerNorm eps, no hooks, no
 * nested tensor, torch.backends.mha's fast path left on); a mask (--causal)
 * would take native MHA's non-SDPA branch, which is not modelled: the
 * caller is refused (tfm_layer_fast).
 *
 * - torch._transformer_encoder_layer_fwd (aten/src/ATen/native/transformers/
 *   transformer.cpp transformer_encoder_layer_forward), each encoder layer:
 *     x = src; [norm_first: x = layer_norm(x, norm1)]
 *     x = _native_multi_head_attention(x, x, x)[0]     (below)
 *     x.add_(src)                                      in place
 *     [post-norm: x = layer_norm(x, norm1)]
 *     pre_ffn_res = x
 *     [norm_first: x = layer_norm(x, norm2)]
 *     x = ffn(x): res = _addmm_activation(b1, x, w1^T, gelu?)   [T, F], the
 *                       activation in the GEMM's epilogue or in place
 *                 res = addmm(b2, res, w2^T)                  [T, E]; the [T, F]
 *                       goes at the rebinding
 *     x.add_(pre_ffn_res)
 *     [post-norm: x = layer_norm(x, norm2)]
 *     return x                                         pre_ffn_res goes with the frame
 *   A rebound x frees what it held unless pre_ffn_res (or the caller's src)
 *   holds it too. layer_norm makes Y, mean, rstd; mean and rstd go as it
 *   returns (at::layer_norm keeps std::get<0> of native_layer_norm).
 * - torch._native_multi_head_attention (transformers/cuda/attention.cu
 *   native_multi_head_attention_cuda) with query, key and value the same
 *   tensor, need_weights False and no mask, where select_sdp_backend on
 *   views of the input picks a fused kernel (fp32: the memory-efficient
 *   one), takes its SDPA branch:
 *     x = linear(query, in_proj)  [N L, 3E] (addmm); q, k, v: views of its chunks
 *     y = scaled_dot_product_attention(q, k, v, None, 0.0): the kernel's
 *         output [N, L, H, hd]; no logsumexp (no grad: [N, H, 0], no block)
 *     return linear(y.transpose(1, 2).reshape(N, L, E), out_proj)   the
 *         reshape is a view of y (no copy); addmm
 *   then its locals go in reverse order of declaration: y's block, then x's.
 *   The encoder layer calls it from C++; the decoder's self-attention
 *   reaches it from MultiheadAttention.forward.
 *
 * No tape node saves anything here (T->no_grad): the ops' nodes go with
 * tape_clear. On the GPU the same arithmetic runs in the suite's kernels:
 * the activation in place after the GEMM (cuBLASLt's GELU epilogue is the
 * tanh form, the kernel's erf; C27 compares this path's outputs only with
 * inference_mode's, which takes it too).
 */
#include "check.h"
#include "tfm_internal.h"

bool tfm_mha_fast(const mc_tfm *T)
{
    return T->eval && T->no_grad && T->c.batch_first && T->H % 2 == 0 && !T->lowp;
}

bool tfm_layer_fast(const mc_tfm *T, int layer)
{
    const bool fast = layer < T->c.enc_layers && tfm_mha_fast(T);
    CHECK(!fast || !T->c.causal, "transformer: eval() of a batch_first causal encoder takes native "
          "MHA's masked branch, which is not modelled");
    return fast;
}

/* x.add_(y): no block. */
static void add_in_place(mc_tfm *T, tv x, tv y)
{
    if (TG(T) && x.b && y.b)
        tfm_add(TG(T), TVP(T, x), MC_DT_F32, TVP(T, x), MC_DT_F32, TVP(T, y), MC_DT_F32, x.n);
}

tv tfm_native_mha(mc_tfm *T, tv x, int p0)
{
    if (T->ctx.oom || !x.b) return TV_NONE;
    const int64_t E = T->E, tok = T->T;
    tv qkv = op_linear(T, x, param_tv(T, p0), param_tv(T, p0 + 1), tok, E, 3 * E, false);
    tb *y = qkv.b ? tb_new(T, (uint64_t)(tok * E * 4), MC_WL_ACTIVATIONS,
                           "native MHA: efficient attention output") : NULL;
    if (!y) {
        tv_drop(T, &qkv);
        return TV_NONE;
    }
    if (TG(T)) { /* q, k, v: the [N, L, 3E] chunks, token rows of 3E */
        const float *base = TVP(T, qkv);
        const tfm_view vin = {T->L * 3 * E, T->hd, 3 * E};
        attn_fwd_gpu(T, TBP(y), NULL, base, base + E, base + 2 * E, vin, false, NULL);
    }
    tv a = {y, tok * E, 4, -1, 0, true, 0};
    tv o = op_linear(T, a, param_tv(T, p0 + 2), param_tv(T, p0 + 3), tok, E, E, false);
    tv_drop(T, &a);   /* y */
    tv_drop(T, &qkv); /* x */
    return o;
}

/* x = layer_norm(x): the old x goes (unless another holder keeps it). */
static void norm(mc_tfm *T, tv *x, int pw)
{
    tv y = op_layer_norm(T, *x, pw, pw + 1);
    tv_drop(T, x);
    *x = y;
}

tv tfm_fast_encoder_layer(mc_tfm *T, int layer, tv src)
{
    if (T->ctx.oom || !src.b) return TV_NONE;
    T->fast_layers++;
    const int base = T->enc_first + layer * TFM_ENC_PER;
    const int n1 = base + 8, n2 = base + 10, ff = base + 4;
    const bool pre = T->c.norm_first;
    const int64_t tok = T->T, E = T->E, F = T->c.ff;
    tv x = tv_view(src);
    if (pre) norm(T, &x, n1);
    tv a = tfm_native_mha(T, x, base);
    tv_drop(T, &x);
    x = a;
    add_in_place(T, x, src);
    if (!pre) norm(T, &x, n1);
    tv res = tv_view(x); /* pre_ffn_res */
    if (pre) norm(T, &x, n2);
    tv h = op_linear(T, x, param_tv(T, ff), param_tv(T, ff + 1), tok, E, F, false);
    if (TG(T) && h.b) /* _addmm_activation's relu or gelu */
        tfm_act_fwd(TG(T), TVP(T, h), TVP(T, h), h.n,
                    T->c.activation == MC_TFM_GELU ? TFM_ACT_GELU : TFM_ACT_RELU, MC_DT_F32);
    tv o = op_linear(T, h, param_tv(T, ff + 2), param_tv(T, ff + 3), tok, F, E, false);
    tv_drop(T, &h);
    tv_drop(T, &x);
    x = o;
    add_in_place(T, x, res);
    if (!pre) norm(T, &x, n2);
    tv_drop(T, &res);
    if (T->ctx.oom) tv_drop(T, &x);
    return x;
}
