/* tfm_attn.c: MultiheadAttention in training mode, as
 * torch/nn/functional.py multi_head_attention_forward runs it with
 * need_weights=False (the Transformer layers' call) in PyTorch 2.11:
 *
 * - batch_first: MultiheadAttention.forward transposes query (and key) to
 *   (L, N, E): views, so the in-projection's input is not contiguous and
 *   F.linear takes matmul (tfm_ops.c). Each transpose is a
 *   TransposeBackward0 node made before anything else of the attention.
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
 *   contiguous), not cuDNN's or flash's (empty_like(q) keeps q's strides).
 * - scaled_dot_product_attention(q, k, v, None, dropout_p, is_causal): the
 *   encoder's causal mask is dropped for is_causal (no key padding mask,
 *   need_weights False), so no configuration passes a mask. Backend on an
 *   H100: sdpa_backend() below. Observed: PyTorch 2.11 (cuDNN 9.19) picked
 *   cuDNN for every fp16/bf16 fixture (meta sdpa_backend=cudnn; the traces
 *   show its requests) and the memory-efficient kernel for fp32.
 *   cuDNN (attention.cu _cudnn_attention_forward, cudnn/MHA.cpp
 *   run_cudnn_SDP_fprop and _bprop): cudnn_fwd and cudnn_bwd below. Its
 *   output is laid out as q: the permute(2,0,1,3) is contiguous, no copy
 *   before out_proj, and the backward's grad_out needs none either.
 *   Flash (flash_api.cpp mha_fwd, read at a recent commit; taken for a
 *   key length of 1, not seen in a fixture): out =
 *   empty_like(q) [N,L,H,hd], softmax_lse [N,H,L] fp32; without dropout the
 *   split-KV accumulators when num_splits_heuristic asks for more than one
 *   split (freed on return); then rng_state [2] uint64 and _unused [] uint64
 *   on the device, and with dropout rng_state made again (the first freed);
 *   both saved as philox seed and offset. Its output's permute(2,0,1,3) is
 *   then contiguous: no copy before out_proj.
 *   Backward (_flash_attention_backward, mha_bwd): grad_out.contiguous()
 *   and out.contiguous() (both copies: they are transposed), dq, dk, dv
 *   (empty_like), softmax_d [N,H,L128] fp32 and dq_accum [N,L128,H,hd32]
 *   fp32 (hd rounded to 32, or 64 past 128), the last four freed on return.
 *   Memory-efficient (attention.cpp _efficient_attention_forward): output
 *   [N,L,H,hd] then logsumexp [N,H,ceil(L/32)*32] fp32, seed and offset on
 *   the CPU; the output's permute is not contiguous: .contiguous() copies
 *   (unless N or L is 1: then it is, and nothing is made; random draw r38).
 *   Backward (attention_backward.cu): grad_out.contiguous(), grad_q, grad_k,
 *   grad_v, delta = (grad_out * out).sum(-1).transpose(-2,-1).contiguous()
 *   (fp32 kernels do not compute it), then the kernel's workspace
 *   (kernel_backward.h workspace_size(): efficient_bwd_workspace below).
 * - Without autograd (no_grad, inference_mode) the memory-efficient kernel
 *   makes no logsumexp (should_compute_logsumexp: its [N, H, 0] takes no
 *   block); in eval() dropout_p is 0.
 * - attn.permute(2,0,1,3).contiguous().view(L*N, E); out_proj = linear;
 *   .view(L, N, E); batch_first: .transpose(1, 0), whose gradient reaches
 *   the view as a non-contiguous tensor: the view's backward copies.
 */
#include <math.h>

#include "check.h"
#include "tfm_internal.h"
#include "workload/transformer/kernels/tfm_kernels.h"
#include "workload/core/wl_profile.h"

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static bool dense_copy(const mc_tfm *T) { return T->N > 1 && T->L > 1; }

/* The suite's arithmetic (tfm_ops.c: every tensor in the model's
 * layout): head h of token (b, l) of a [tokens, E] block, as a tfm_view. */
static tfm_view model_view(const mc_tfm *T)
{
    if (T->c.batch_first) return (tfm_view){T->L * T->E, T->hd, T->E};
    return (tfm_view){T->E, T->hd, T->N * T->E};
}

/* The node's attention (a: tokens, H, L, hd, es, N, causal, dropout offset). */
static tfm_attn attn_of(const mc_tfm *T, const int64_t *a)
{
    tfm_attn r;
    r.B = (int)a[5];
    r.H = (int)a[1];
    r.Lq = r.Lk = (int)a[2];
    r.Dh = (int)a[3];
    r.causal = a[6] != 0;
    r.dropout_p = T->eval ? 0.0f : (float)T->c.dropout; /* eval(): dropout_p = 0.0 */
    r.seed = T->c.seed;
    r.offset = (uint64_t)a[7];
    r.scale = (float)(1.0 / sqrt((double)r.Dh));
    return r;
}

/* dq, dk, dv of the node's saved q, k, v, o, lse from dO; delta: float
 * [N H L] scratch of the backend's own; dq_acc: its float [N H L hd] dQ
 * accumulator, or NULL (tfm_attn_bwd). */
static void attn_bwd_gpu(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT], void *dout, void *delta,
                         float *dq_acc)
{
    const tfm_attn a = attn_of(T, nd->a);
    const tfm_view v = model_view(T);
    mc_wl_prof *prof = mc_gpu_prof(TG(T)); /* --profile: the kernels' file has no hooks of its own */
    mc_prof_begin(prof, MC_PROF_ATTENTION);
    /* the accumulator is summed by atomics, in an order that changes from
     * run to run: a deterministic run leaves it unused (its memory stays) */
    if (T->c.deterministic) dq_acc = NULL;
    tfm_attn_bwd(TG(T), &a, TBP(out[0]), v, TBP(out[1]), v, TBP(out[2]), v, delta, dq_acc, dout, v, SAP(T, nd, 0), v,
                 SAP(T, nd, 1), v, SAP(T, nd, 2), v, SAP(T, nd, 3), v, SAP(T, nd, 4), tfm_dt(T, (int)nd->a[4]));
    mc_prof_end(prof);
}

/* a: tokens, heads, L, hd, es, N, dropout_p == 0 */
static int flash_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t n = nd->a[0] * nd->a[1] * nd->a[3], N = nd->a[5], H = nd->a[1];
    const int64_t L128 = round_up(nd->a[2], 128), hd = nd->a[3];
    const int64_t hdr = round_up(hd, hd <= 128 ? 32 : 64);
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

/* Params::workspace_size() of the fp32 kernel that cutlassB.h's
 * dispatch_cutlassB_f32_sm80 picks first (sm80 to sm9x): kBlockSizeJ 64 and
 * kBlockSizeI 64 up to a head size of 64 (the k32 and k64 kernels), 128 up
 * to 128 (128x64_k128), 128 past it (128x64_k65536). fp32 accumulates in
 * its output type, so only grad_q needs staging (kNeedsAccumGradQ, split
 * keys being enabled from sm70): per batch and head, one GradQTempStorage
 * (lock, counter, two pads: 4 words, then kBlockSizeI x kBlockSizeJ
 * floats) per block of queries and per block of 64 columns of hd, aligned
 * to 4 floats. Bytes. */
static uint64_t efficient_bwd_workspace(int64_t N, int64_t H, int64_t L, int64_t hd)
{
    const int64_t bi = hd <= 64 ? 64 : 128, bj = 64;
    const int64_t gq = ((L + bi - 1) / bi) * ((hd + bj - 1) / bj) * (4 + bi * bj);
    return (uint64_t)(N * H * round_up(gq, 4) * 4);
}

/* _cudnn_attention_backward: dq, dk, dv (empty_like: q's strides), then
 * run_cudnn_SDP_bprop's workspace (dO's innermost stride is 1: no copy).
 * The workspace is cuDNN's own; observed on the H100 with cuDNN 9.19 for
 * every fp16/bf16 fixture: N*H*L*(hd + 1) fp32 (a dQ accumulator and a
 * row sum of dO*O, as flash's dq_accum and softmax_d) plus 256 bytes. */
static int cudnn_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t n = nd->a[0] * nd->a[1] * nd->a[3], H = nd->a[1], L = nd->a[2], hd = nd->a[3], N = nd->a[5];
    const int es = (int)nd->a[4];
    static const char *const what[3] = {"cuDNN attention backward: dq", "cuDNN attention backward: dk",
                                        "cuDNN attention backward: dv"};
    for (int k = 0; k < 3; k++)
        if (!(out[k] = tb_new(T, (uint64_t)(n * es), MC_WL_ACTIVATIONS, what[k]))) return -1;
    const uint64_t ws_bytes = tfm_cudnn_bwd_ws_bytes(N, H, L, hd);
    tb *ws = tb_new(T, ws_bytes, MC_WL_ACTIVATIONS, "cuDNN attention backward workspace");
    if (ws && TG(T)) {
        const tfm_attn a = attn_of(T, nd->a);
        const tfm_view v = model_view(T);
        const tfm_cudnn_io io = {SAP(T, nd, 5), SAP(T, nd, 6), TBP(ws), ws_bytes, NULL};
        /* the backward runs where the forward ran: other kernels draw another dropout mask */
        int rc = -1;
        if (nd->a[8]) {
            mc_wl_prof *prof = mc_gpu_prof(TG(T));
            mc_prof_begin(prof, MC_PROF_ATTENTION);
            rc = tfm_cudnn_attn_bwd(TG(T), &a, TBP(out[0]), v, TBP(out[1]), v, TBP(out[2]), v, TBP(nd->gin[0]), v,
                                    SAP(T, nd, 0), v, SAP(T, nd, 1), v, SAP(T, nd, 2), v, SAP(T, nd, 3), v, SAP(T, nd, 4),
                                    tfm_dt(T, es), &io);
            mc_prof_end(prof);
            CHECK(rc == 0 || a.dropout_p == 0.0f,
                  "transformer: cuDNN ran an attention forward with dropout but not its backward (%s)",
                  tfm_cudnn_state());
        }
        if (rc) { /* the suite's kernels: delta [N,H,L] and the dQ accumulator [N,H,L,hd] in the workspace */
            float *delta = (float *)TBP(ws);
            attn_bwd_gpu(T, nd, out, TBP(nd->gin[0]), delta, delta + N * H * L);
        }
    }
    tb_unref(T, ws);
    return ws ? 0 : -1;
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
        reduce_scratch(T, tok * H, hd, false, 4))
        goto done;
    if (L > 1 && H > 1) { /* .transpose(-2, -1) of [N, L, H] is contiguous when L or H is 1 */
        if (!(delta = tb_new(T, (uint64_t)(tok * H * 4), MC_WL_ACTIVATIONS, "efficient backward: delta")))
            goto done;
        tb_unref(T, sum);
    } else {
        delta = sum; /* delta is the sum itself, held until the backward returns */
    }
    tb_unref(T, prod);
    sum = prod = NULL;
    if (!(ws = tb_new(T, efficient_bwd_workspace(N, H, L, hd), MC_WL_ACTIVATIONS,
                      "efficient backward: workspace (grad_q accumulator)")))
        goto done;
    if (TG(T)) {
        void *dout = TBP(nd->gin[0]);
        if (go) { /* grad_out.contiguous(): the suite's layout needs no permute, a plain copy */
            mc_gpu_copy(TG(T), TBP(go), dout, (uint64_t)(n * 4));
            dout = TBP(go);
        }
        /* the kernel's grad_q workspace holds a float [N H L hd] dQ
         * accumulator (always: at least ceil(L / 64) 64 rows of hd floats a
         * head), the tensor-core backward's, as the kernel's own use of it */
        const bool fits = efficient_bwd_workspace(N, H, L, hd) >= (uint64_t)(N * H * L * hd * 4);
        attn_bwd_gpu(T, nd, out, dout, TBP(delta), fits ? (float *)TBP(ws) : NULL);
    }
    rc = 0;
done:
    tb_unref(T, prod);
    tb_unref(T, sum);
    tb_unref(T, delta);
    tb_unref(T, ws);
    tb_unref(T, go);
    return rc;
}

/* flash_api.cpp num_splits_heuristic: split-KV blocks for a forward without
 * dropout that would not fill the SMs (num_SMs: 2 per SM, 128 threads). */
static int num_splits(int64_t bhm, int64_t sms2, int64_t nblocks)
{
    if ((double)bhm >= 0.8 * (double)sms2) return 1;
    int64_t maxs = 128;
    if (sms2 < maxs) maxs = sms2;
    if (nblocks < maxs) maxs = nblocks;
    double eff[129], best = 0;
    for (int64_t s = 1; s <= maxs; s++) {
        bool ok = s == 1 || (nblocks + s - 1) / s != (nblocks + s - 2) / (s - 1);
        double waves = (double)(bhm * s) / (double)sms2;
        eff[s] = ok ? waves / ceil(waves) : 0;
        if (eff[s] > best) best = eff[s];
    }
    for (int64_t s = 1; s <= maxs; s++) {
        bool ok = s == 1 || (nblocks + s - 1) / s != (nblocks + s - 2) / (s - 1);
        if (ok && eff[s] >= 0.85 * best) return (int)s;
    }
    return 1;
}

/* The backend SDPA takes on the H100 and H200 (sdp_utils.cpp
 * select_sdp_backend): cuDNN first for fp16/bf16 (check_prefer_cudnn_attention:
 * cuDNN newer than 9.15 on sm90; PyTorch 2.11's CUDA wheel has 9.19, and the
 * fixtures' meta recorded sdpa_backend=cudnn for every fp16/bf16
 * configuration, with dropout 0.1 too) where check_cudnn_tensor_shapes
 * accepts the shape: a head size of at most 256 on sm90 with cuDNN 9.10 or
 * newer (128 elsewhere; random_tfm_real's x08 and x62, head sizes 256 and
 * 192, recorded cuDNN's requests on an H200) and a key length other than 1;
 * flash attention otherwise; fp32 the memory-efficient kernel (flash and
 * cuDNN take half types only). sdp_utils.cpp at a later commit also refuses
 * cuDNN for a dropout that is not a multiple of 1/16 (check_cudnn_dropout);
 * 2.11 took it for 0.1. */
static mc_tfm_sdpa sdpa_backend(const mc_tfm *T)
{
    if (!T->lowp) return MC_TFM_SDPA_EFFICIENT;
    return T->hd <= 256 && T->L > 1 ? MC_TFM_SDPA_CUDNN : MC_TFM_SDPA_FLASH;
}

/* _cudnn_attention_forward: philox seed and offset, [] int64 each on the
 * device, then run_cudnn_SDP_fprop's output (alloc_with_matching_layout(q):
 * its permute(2,0,1,3) is contiguous, no copy before out_proj), its
 * softmax stats [N,H,L] fp32, and the graph's workspace for the execute
 * call (256 bytes observed with dropout; ASSUMED the same without). */
#define CUDNN_FWD_WORKSPACE_BYTES 256

static int cudnn_fwd(mc_tfm *T, tb **o, tb **lse, tb **seed, tb **offset, tb **ws)
{
    const int64_t n = T->T * T->E;
    *seed = tb_new(T, 8, MC_WL_OTHER, "cuDNN attention philox seed (int64)");
    *offset = *seed ? tb_new(T, 8, MC_WL_OTHER, "cuDNN attention philox offset (int64)") : NULL;
    *o = *offset ? tb_new(T, (uint64_t)(n * T->es), MC_WL_ACTIVATIONS, "cuDNN attention output") : NULL;
    *lse = *o ? tb_new(T, (uint64_t)(T->N * T->H * T->L * 4), MC_WL_ACTIVATIONS, "cuDNN attention softmax stats") : NULL;
    *ws = *lse ? tb_new(T, CUDNN_FWD_WORKSPACE_BYTES, MC_WL_OTHER, "cuDNN attention forward workspace") : NULL;
    return *ws ? 0 : -1; /* the workspace goes after the kernel (sdpa) */
}

/* Flash (flash_api.cpp mha_fwd): see the file's comment. */
static int flash_fwd(mc_tfm *T, tb **o, tb **lse, tb **rng, tb **unused)
{
    const int64_t n = T->T * T->E, N = T->N, H = T->H, L = T->L, hd = T->hd;
    *o = tb_new(T, (uint64_t)(n * T->es), MC_WL_ACTIVATIONS, "flash attention output");
    *lse = *o ? tb_new(T, (uint64_t)(N * H * L * 4), MC_WL_ACTIVATIONS, "attention logsumexp") : NULL;
    if (!*lse) return -1;
    tb *la = NULL, *oa = NULL;
    if (T->c.dropout == 0) { /* set_params_splitkv: split-KV accumulators */
        const int64_t block_n = hd <= 64 ? 256 : hd <= 128 ? 128 : 64;
        const int64_t hdr = round_up(hd, hd <= 128 ? 32 : 64);
        int s = num_splits(N * H * ((L + 63) / 64), 2 * (int64_t)T->c.sm_count, (L + block_n - 1) / block_n);
        if (s > 1) {
            la = tb_new(T, (uint64_t)(s * N * H * L * 4), MC_WL_ACTIVATIONS, "flash softmax_lse_accum (split-KV)");
            oa = la ? tb_new(T, (uint64_t)(s * N * H * L * hdr * 4), MC_WL_ACTIVATIONS, "flash out_accum (split-KV)") : NULL;
        }
    }
    *rng = tb_new(T, 16, MC_WL_OTHER, "flash rng_state (2 x uint64)");
    *unused = *rng ? tb_new(T, 8, MC_WL_OTHER, "flash _unused (uint64)") : NULL;
    if (*unused && T->c.dropout > 0) { /* rng_state is made again for dropout */
        tb *r2 = tb_new(T, 16, MC_WL_OTHER, "flash rng_state with dropout");
        tb_unref(T, *rng);
        *rng = r2;
    }
    tb_unref(T, oa); /* mha_fwd's locals go when it returns */
    tb_unref(T, la);
    return *rng && *unused ? 0 : -1;
}

bool attn_fwd_gpu(mc_tfm *T, void *o, float *lse, const void *q, const void *k, const void *v,
                  tfm_view vin, bool causal, const tfm_cudnn_io *io)
{
    const int64_t a[8] = {T->T, T->H, T->L, T->hd, T->es, T->N, causal,
                          (int64_t)(T->drop_base + (uint64_t)T->site)};
    const tfm_attn at = attn_of(T, a);
    mc_wl_prof *prof = mc_gpu_prof(TG(T));
    mc_prof_begin(prof, MC_PROF_ATTENTION);
    const int dt = tfm_dt(T, T->es);
    const bool by_cudnn = !tfm_cudnn_attn_fwd(TG(T), &at, o, model_view(T), lse, q, vin, k, vin, v, vin, dt, io);
    if (!by_cudnn) tfm_attn_fwd(TG(T), &at, o, model_view(T), lse, q, vin, k, vin, v, vin, dt);
    mc_prof_end(prof);
    return by_cudnn;
}

static tv sdpa(mc_tfm *T, tv q, tv k, tv v, bool causal)
{
    if (T->ctx.oom || T->stopped || !q.b || !k.b || !v.b) return TV_NONE;
    const mc_tfm_sdpa be = sdpa_backend(T);
    const int64_t n = T->T * T->E, N = T->N, H = T->H, L = T->L, hd = T->hd;
    tb *o = NULL, *lse = NULL, *seed = NULL, *offset = NULL, *ws = NULL;
    int rc;
    if (be == MC_TFM_SDPA_CUDNN) {
        rc = cudnn_fwd(T, &o, &lse, &seed, &offset, &ws);
    } else if (be == MC_TFM_SDPA_FLASH) {
        rc = flash_fwd(T, &o, &lse, &seed, &offset);
    } else { /* seed and offset on the CPU; without autograd no logsumexp
              * (should_compute_logsumexp: [N, H, 0], no block) */
        o = tb_new(T, (uint64_t)(n * T->es), MC_WL_ACTIVATIONS, "efficient attention output");
        if (o && !T->no_grad)
            lse = tb_new(T, (uint64_t)(N * H * round_up(L, 32) * 4), MC_WL_ACTIVATIONS, "attention logsumexp");
        rc = o && (lse || T->no_grad) ? 0 : -1;
    }
    if (rc) {
        tb_unref(T, o);
        tb_unref(T, lse);
        tb_unref(T, seed);
        tb_unref(T, offset);
        tb_unref(T, ws);
        return TV_NONE;
    }
    static const bwd_fn fn[3] = {efficient_bwd, flash_bwd, cudnn_bwd};
    static const char *const name[3] = {"ScaledDotProductEfficientAttentionBackward0",
                                        "ScaledDotProductFlashAttentionBackward0",
                                        "ScaledDotProductCudnnAttentionBackward0"};
    int nd = tape_node(T, fn[be], name[be], 3);
    int64_t *a = T->tape[nd].a;
    a[0] = T->T, a[1] = H, a[2] = L, a[3] = hd, a[4] = T->es, a[5] = N, a[6] = causal;
    a[7] = (int64_t)(T->drop_base + (uint64_t)T->site);
    if (TG(T)) {
        CHECK(be != MC_TFM_SDPA_FLASH, "transformer: head size %lld: no attention kernel on the GPU", (long long)hd);
        const tfm_cudnn_io io = {seed ? TBP(seed) : NULL, offset ? TBP(offset) : NULL, ws ? TBP(ws) : NULL,
                                 CUDNN_FWD_WORKSPACE_BYTES, NULL};
        a[8] = attn_fwd_gpu(T, TBP(o), lse ? (float *)TBP(lse) : NULL, TVP(T, q), TVP(T, k), TVP(T, v),
                            model_view(T), causal, be == MC_TFM_SDPA_CUDNN ? &io : NULL);
    }
    tb_unref(T, ws); /* run_cudnn_SDP_fprop's workspace: freed on return */
    tape_edge(T, nd, 0, q);
    tape_edge(T, nd, 1, k);
    tape_edge(T, nd, 2, v);
    tape_save_tv(T, nd, q);
    tape_save_tv(T, nd, k);
    tape_save_tv(T, nd, v);
    tape_save(T, nd, o);
    tape_save(T, nd, lse);
    tape_save(T, nd, seed);   /* philox_seed (flash: rng_state) */
    tape_save(T, nd, offset); /* philox_offset (flash: _unused) */
    tb_unref(T, lse);
    tb_unref(T, seed);
    tb_unref(T, offset);
    return (tv){o, n, T->es, nd, 0, true, 0};
}

tv mha_forward(mc_tfm *T, tv q_in, tv kv_in, int p0, bool self_attn, bool causal, int64_t S)
{
    (void)S;
    if (T->ctx.oom || T->stopped || !q_in.b) return TV_NONE;
    const bool bf = T->c.batch_first, half = sdpa_backend(T) != MC_TFM_SDPA_EFFICIENT;
    /* linear folds a 3-d input into addmm when it is contiguous: the
     * batch-first transpose (L, N, E) is not, unless N or L is 1 (a size-1
     * dimension's stride does not count); otherwise matmul copies it */
    const bool fold_copy = bf && T->N > 1 && T->L > 1;
    const int64_t E = T->E, tok = T->T;
    tv q = TV_NONE, k = TV_NONE, v = TV_NONE;
    /* MultiheadAttention.forward's transposes (torch/nn/modules/activation.py)
     * come first, each a node of its own (query's, then key's): key's, of
     * the decoder's memory, holds its gradient until every later node has run */
    tv qt = bf ? op_transpose(T, q_in) : tv_view(q_in);
    tv kt = self_attn ? TV_NONE : bf ? op_transpose(T, kv_in) : tv_view(kv_in);
    if (self_attn) {
        tv P = op_linear(T, qt, param_tv(T, p0), param_tv(T, p0 + 1), tok, E, 3 * E, fold_copy);
        tv Pv = op_view_copy_bwd(T, P, 3, "ViewBackward0: unflatten of the in-projection");
        tv C = op_contiguous(T, Pv, 3, "in-projection .contiguous() [3,L,N,E]");
        tv_drop(T, &Pv);
        tv_drop(T, &P);
        q = op_select(T, C, 0, tok * E, "SelectBackward0 q");
        k = op_select(T, C, 1, tok * E, "SelectBackward0 k");
        v = op_select(T, C, 2, tok * E, "SelectBackward0 v");
        tv_drop(T, &C);
    } else {
        int sw = op_split(T, p0, E * E), sb = op_split(T, p0 + 1, E);
        tv wq = {NULL, E * E, 4, sw, 0, true, 0}, wkv = {NULL, 2 * E * E, 4, sw, 1, true, E * E * 4};
        tv bq = {NULL, E, 4, sb, 0, true, 0}, bkv = {NULL, 2 * E, 4, sb, 1, true, E * 4};
        q = op_linear(T, qt, wq, bq, tok, E, E, fold_copy);
        tv KV = op_linear(T, kt, wkv, bkv, tok, E, 2 * E, fold_copy);
        tv KVv = op_view_copy_bwd(T, KV, 2, "ViewBackward0: unflatten of the kv projection");
        tv C = op_contiguous(T, KVv, 2, "kv projection .contiguous() [2,S,N,E]");
        tv_drop(T, &KVv);
        tv_drop(T, &KV);
        k = op_select(T, C, 0, tok * E, "SelectBackward0 k");
        v = op_select(T, C, 1, tok * E, "SelectBackward0 v");
        tv_drop(T, &C);
        tv_drop(T, &kt);
    }
    tv_drop(T, &qt);
    if (!half && dense_copy(T)) { /* the views' backward reshapes copy the efficient kernel's
                                    * gradients ([N,L,H,hd]; viewable when N or L is 1) */
        tv *qkv[3] = {&q, &k, &v};
        static const char *const w1[3] = {"ViewBackward0 q (L, N*H, hd)", "ViewBackward0 k (S, N*H, hd)",
                                          "ViewBackward0 v (S, N*H, hd)"};
        static const char *const w2[3] = {"ViewBackward0 q (N, H, L, hd)", "ViewBackward0 k (N, H, S, hd)",
                                          "ViewBackward0 v (N, H, S, hd)"};
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < 3; i++) {
                tv n = op_view_copy_bwd(T, *qkv[i], 1, pass ? w2[i] : w1[i]);
                tv_drop(T, qkv[i]);
                *qkv[i] = n;
            }
    }
    tv a = sdpa(T, q, k, v, causal);
    if (!half && dense_copy(T)) { /* [N,L,H,hd] permuted is already contiguous when N or L is 1 */
        tv c = op_contiguous(T, a, 1, "attention output .permute(2,0,1,3).contiguous()");
        tv_drop(T, &a);
        a = c;
    }
    tv o = op_linear(T, a, param_tv(T, p0 + 2), param_tv(T, p0 + 3), tok, E, E, false);
    tv_drop(T, &a);
    /* q, k and v are F.multi_head_attention_forward's locals: without
     * autograd holding them (a checkpointed layer's first forward) the
     * in-projection's buffer goes when that function returns, after the
     * out-projection (tfm_tiny_adamw_fp16_ckpt_bf's trace) */
    tv_drop(T, &q);
    tv_drop(T, &k);
    tv_drop(T, &v);
    if (bf) {
        tv r = op_view_copy_bwd(T, o, 1, "ViewBackward0: out_proj output (L, N, E), transposed after");
        tv_drop(T, &o);
        o = r;
    }
    return o;
}
