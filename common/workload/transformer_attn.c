/* transformer_attn.c: MultiheadAttention in training mode, as
 * torch/nn/functional.py multi_head_attention_forward runs it with
 * need_weights=False (the Transformer layers' call) in PyTorch 2.11:
 *
 * - batch_first: MultiheadAttention.forward transposes query (and key) to
 *   (L, N, E): views, so the in-projection's input is not contiguous and
 *   F.linear takes matmul (transformer_ops.c).
 * - _in_projection_packed, self-attention: proj = linear(x, W, b) [L,N,3E];
 *   proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)
 *   .contiguous() copies it to [3,L,N,E] (then the linear's output goes);
 *   q, k, v = proj[0], proj[1], proj[2] (SelectBackward0 each; backward:
 *   zeros of the whole and a copy). The unflatten's ViewBackward0 reshapes
 *   a non-viewable gradient: a copy.
 *   Cross-attention (k is v, q is not): w.split([E, 2E]) and b.split (one
 *   SplitWithSizesBackward0 each, whose backward cats), q = linear(q, w_q,
 *   b_q), kv = linear(mem, w_kv, b_kv) made [2,S,N,E] contiguous as above.
 *   Under autocast the split views are cast afresh (not leaves: no cache).
 * - q.view(L, N*H, hd).transpose(0, 1) then .view(N, H, L, hd): views; their
 *   ViewBackward0 copies only when the gradient cannot be viewed, which is
 *   the memory-efficient kernel's case (its grad_q is [N,L,H,hd]
 *   contiguous), not flash's (empty_like(q) keeps q's strides).
 * - scaled_dot_product_attention(q, k, v, None, dropout_p, is_causal): the
 *   encoder's causal mask is dropped for is_causal (no key padding mask,
 *   need_weights False), so no configuration passes a mask. Backend on an
 *   H100 (sdp_utils.cpp): fp16/bf16 take flash attention, fp32 the
 *   memory-efficient kernel. ASSUMED: cuDNN attention is not chosen first
 *   (check_prefer_cudnn_attention needs a cuDNN newer than 9.15.0 in the
 *   wheel; tests/torch/transformer_reference.py records the backend
 *   PyTorch picks, so a fixture says whether this holds).
 *   Flash (flash_api.cpp mha_fwd): out = empty_like(q) [N,L,H,hd], softmax
 *   lse [N,H,L] fp32, and ASSUMED with dropout 0 only: seed and offset as
 *   two 8-byte device tensors (with dropout they live on the CPU). Its
 *   output's permute(2,0,1,3) is then contiguous: no copy before out_proj.
 *   Backward (_flash_attention_backward, mha_bwd): grad_out.contiguous()
 *   and out.contiguous() (both copies: they are transposed), dq, dk, dv,
 *   softmax_d [N,H,L128] fp32 and dq_accum [N,L128,H,hd32] fp32, the last
 *   four freed on return.
 *   Memory-efficient (attention.cpp _efficient_attention_forward): output
 *   [N,L,H,hd] then logsumexp [N,H,ceil(L/32)*32] fp32, seed and offset on
 *   the CPU; the output's permute is not contiguous: .contiguous() copies.
 *   Backward (attention_backward.cu): grad_out.contiguous(), grad_q, grad_k,
 *   grad_v, delta = (grad_out * out).sum(-1).transpose(-2,-1).contiguous()
 *   (fp32 kernels do not compute it), ASSUMED workspace of the split-keys
 *   grad_q accumulator N*H*ceil(L/64)*64*ceil(hd/64)*64 fp32.
 * - attn.permute(2,0,1,3).contiguous().view(L*N, E); out_proj = linear;
 *   .view(L, N, E); batch_first: .transpose(1, 0), whose gradient reaches
 *   the view as a non-contiguous tensor: the view's backward copies.
 */
#include "check.h"
#include "transformer_internal.h"

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static bool dense_copy(const mc_tfm *T) { return T->N > 1 && T->L > 1; }

/* a: tokens, heads, L, hd, es, N, dropout_p == 0 */
static int flash_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t n = nd->a[0] * nd->a[1] * nd->a[3], N = nd->a[5], H = nd->a[1];
    const int64_t L128 = round_up(nd->a[2], 128), hd8 = round_up(nd->a[3], 8);
    const int64_t hdr = hd8 <= 192 ? round_up(hd8, 32) : 256;
    const int es = (int)nd->a[4];
    tb *go = NULL, *oc = NULL, *sd = NULL, *acc = NULL;
    int rc = -1;
    if (dense_copy(T) && !(go = tb_new(T, (uint64_t)(n * es), MC_WL_ACTIVATIONS, "flash backward: grad_out.contiguous()")))
        goto done;
    if (dense_copy(T) && !(oc = tb_new(T, (uint64_t)(n * es), MC_WL_ACTIVATIONS, "flash backward: out.contiguous()")))
        goto done;
    for (int k = 0; k < 3; k++)
        if (!(out[k] = tb_new(T, (uint64_t)(n * es), MC_WL_ACTIVATIONS, k == 0 ? "flash backward: dq" : k == 1 ? "flash backward: dk" : "flash backward: dv")))
            goto done;
    if (!(sd = tb_new(T, (uint64_t)(N * H * L128 * 4), MC_WL_ACTIVATIONS, "flash backward: softmax_d")) ||
        !(acc = tb_new(T, (uint64_t)(N * L128 * H * hdr * 4), MC_WL_ACTIVATIONS, "flash backward: dq_accum")))
        goto done;
    rc = 0;
done:
    tb_unref(T, acc);
    tb_unref(T, sd);
    tb_unref(T, oc);
    tb_unref(T, go);
    return rc;
}

static int efficient_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t tok = nd->a[0], H = nd->a[1], L = nd->a[2], hd = nd->a[3], N = nd->a[5];
    const int64_t n = tok * H * hd;
    tb *go = NULL, *prod = NULL, *sum = NULL, *delta = NULL, *ws = NULL;
    int rc = -1;
    if (dense_copy(T) && !(go = tb_new(T, (uint64_t)(n * 4), MC_WL_ACTIVATIONS, "efficient backward: grad_out.contiguous()")))
        goto done;
    for (int k = 0; k < 3; k++)
        if (!(out[k] = tb_new(T, (uint64_t)(n * 4), MC_WL_ACTIVATIONS, k == 0 ? "efficient backward: grad_q" : k == 1 ? "efficient backward: grad_k" : "efficient backward: grad_v")))
            goto done;
    if (!(prod = tb_new(T, (uint64_t)(n * 4), MC_WL_ACTIVATIONS, "efficient backward: grad_out * out")) ||
        !(sum = tb_new(T, (uint64_t)(tok * H * 4), MC_WL_ACTIVATIONS, "efficient backward: .sum(-1)")) ||
        reduce_scratch(T, tok * H, hd, false, 4) ||
        !(delta = tb_new(T, (uint64_t)(tok * H * 4), MC_WL_ACTIVATIONS, "efficient backward: delta")))
        goto done;
    tb_unref(T, sum);
    tb_unref(T, prod);
    sum = prod = NULL;
    if (!(ws = tb_new(T, (uint64_t)(N * H * round_up(L, 64) * round_up(hd, 64) * 4), MC_WL_ACTIVATIONS,
                      "efficient backward: workspace (grad_q accumulator, assumed)")))
        goto done;
    rc = 0;
done:
    tb_unref(T, prod);
    tb_unref(T, sum);
    tb_unref(T, delta);
    tb_unref(T, ws);
    tb_unref(T, go);
    return rc;
}

static tv sdpa(mc_tfm *T, tv q, tv k, tv v, bool causal)
{
    if (T->oom || T->stopped || !q.b || !k.b || !v.b) return TV_NONE;
    const bool flash = T->lowp;
    const int64_t n = T->T * T->E;
    tb *o = tb_new(T, (uint64_t)(n * T->es), MC_WL_ACTIVATIONS, flash ? "flash attention output" : "efficient attention output");
    tb *lse = o ? tb_new(T, (uint64_t)(T->N * T->H * (flash ? T->L : round_up(T->L, 32)) * 4),
                         MC_WL_ACTIVATIONS, "attention logsumexp") : NULL;
    tb *seed = NULL, *off = NULL;
    if (lse && flash && T->c.dropout == 0) {
        seed = tb_new(T, 8, MC_WL_OTHER, "flash philox seed (dropout 0, assumed)");
        off = seed ? tb_new(T, 8, MC_WL_OTHER, "flash philox offset (dropout 0, assumed)") : NULL;
    }
    if (!lse || (flash && T->c.dropout == 0 && !off)) {
        tb_unref(T, o);
        tb_unref(T, lse);
        tb_unref(T, seed);
        return TV_NONE;
    }
    int nd = tape_node(T, flash ? flash_bwd : efficient_bwd,
                       flash ? "ScaledDotProductFlashAttentionBackward0"
                             : "ScaledDotProductEfficientAttentionBackward0", 3);
    int64_t *a = T->tape[nd].a;
    a[0] = T->T, a[1] = T->H, a[2] = T->L, a[3] = T->hd, a[4] = T->es, a[5] = T->N, a[6] = causal;
    tape_edge(T, nd, 0, q);
    tape_edge(T, nd, 1, k);
    tape_edge(T, nd, 2, v);
    tape_save(T, nd, q.b);
    tape_save(T, nd, k.b);
    tape_save(T, nd, v.b);
    tape_save(T, nd, o);
    tape_save(T, nd, lse);
    tape_save(T, nd, seed);
    tape_save(T, nd, off);
    tb_unref(T, lse);
    tb_unref(T, seed);
    tb_unref(T, off);
    return (tv){o, n, T->es, nd, 0, true};
}

static tv transposed(tv x)
{
    tv r = tv_view(x);
    r.contig = false;
    return r;
}

tv mha_forward(mc_tfm *T, tv q_in, tv kv_in, int p0, bool self_attn, bool causal, int64_t S)
{
    (void)S;
    if (T->oom || T->stopped || !q_in.b) return TV_NONE;
    const bool bf = T->c.batch_first, flash = T->lowp;
    const int64_t E = T->E, tok = T->T;
    tv q = TV_NONE, k = TV_NONE, v = TV_NONE;
    tv qt = bf ? transposed(q_in) : tv_view(q_in);
    if (self_attn) {
        tv P = op_linear(T, qt, param_tv(T, p0), param_tv(T, p0 + 1), tok, E, 3 * E, bf);
        tv Pv = op_view_copy_bwd(T, P, "ViewBackward0: unflatten of the in-projection");
        tv C = op_contiguous(T, Pv, "in-projection .contiguous() [3,L,N,E]");
        tv_drop(T, &Pv);
        tv_drop(T, &P);
        q = op_select(T, C, tok * E, "SelectBackward0 q");
        k = op_select(T, C, tok * E, "SelectBackward0 k");
        v = op_select(T, C, tok * E, "SelectBackward0 v");
        tv_drop(T, &C);
    } else {
        int sw = op_split(T, p0, E * E), sb = op_split(T, p0 + 1, E);
        tv kt = bf ? transposed(kv_in) : tv_view(kv_in);
        tv wq = {NULL, E * E, 4, sw, 0, true}, wkv = {NULL, 2 * E * E, 4, sw, 1, true};
        tv bq = {NULL, E, 4, sb, 0, true}, bkv = {NULL, 2 * E, 4, sb, 1, true};
        q = op_linear(T, qt, wq, bq, tok, E, E, bf);
        tv KV = op_linear(T, kt, wkv, bkv, tok, E, 2 * E, bf);
        tv KVv = op_view_copy_bwd(T, KV, "ViewBackward0: unflatten of the kv projection");
        tv C = op_contiguous(T, KVv, "kv projection .contiguous() [2,S,N,E]");
        tv_drop(T, &KVv);
        tv_drop(T, &KV);
        k = op_select(T, C, tok * E, "SelectBackward0 k");
        v = op_select(T, C, tok * E, "SelectBackward0 v");
        tv_drop(T, &C);
        tv_drop(T, &kt);
    }
    tv_drop(T, &qt);
    if (!flash) { /* the views' backward reshapes copy the efficient kernel's gradients */
        tv *qkv[3] = {&q, &k, &v};
        static const char *const w1[3] = {"ViewBackward0 q (L, N*H, hd)", "ViewBackward0 k (S, N*H, hd)",
                                          "ViewBackward0 v (S, N*H, hd)"};
        static const char *const w2[3] = {"ViewBackward0 q (N, H, L, hd)", "ViewBackward0 k (N, H, S, hd)",
                                          "ViewBackward0 v (N, H, S, hd)"};
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < 3; i++) {
                tv n = op_view_copy_bwd(T, *qkv[i], pass ? w2[i] : w1[i]);
                tv_drop(T, qkv[i]);
                *qkv[i] = n;
            }
    }
    tv a = sdpa(T, q, k, v, causal);
    tv_drop(T, &q);
    tv_drop(T, &k);
    tv_drop(T, &v);
    if (!flash) {
        tv c = op_contiguous(T, a, "attention output .permute(2,0,1,3).contiguous()");
        tv_drop(T, &a);
        a = c;
    }
    tv o = op_linear(T, a, param_tv(T, p0 + 2), param_tv(T, p0 + 3), tok, E, E, false);
    tv_drop(T, &a);
    if (bf) {
        tv r = op_view_copy_bwd(T, o, "ViewBackward0: out_proj output (L, N, E), transposed after");
        tv_drop(T, &o);
        o = r;
    }
    return o;
}
