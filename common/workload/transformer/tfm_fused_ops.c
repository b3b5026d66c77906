/* tfm_fused_ops.c: the Transformer's elementwise chains fused into
 * single kernels (--fused, claim C25), what a compiler such as
 * torch.compile's Inductor does with them, in the suite's own form:
 *
 * - the FFN's activation and dropout: eager runs relu|gelu (its output, or
 *   for gelu its input, saved), then native_dropout (a bool mask saved and
 *   an output); fused, one kernel reads the Linear's output and writes the
 *   dropout's output and one byte per element (bit 0 kept, bit 1 u > 0),
 *   saved instead of the activation's output (gelu keeps its input too,
 *   from which its derivative is recomputed);
 * - each sublayer's dropout and residual add: eager makes the dropout's
 *   mask and output, then the sum; fused, one kernel makes the sum and the
 *   byte per element; with p == 0 there is no dropout and eager's add is
 *   all there is.
 * The softmax's scaling, masking and dropout are inside the attention
 * kernel in both (SDPA fuses them in eager PyTorch too). The same dropout
 * streams as eager (tfm_rng): fused and eager compute the same values. */
#include "check.h"
#include "tfm_internal.h"
#include "workload/transformer/kernels/tfm_kernels.h"

/* FusedActDropoutBackward (a: n, es, rows): du = dy * kept / (1 - p) * act'(u). */
static int act_dropout_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t n = nd->a[0], rows = nd->a[2];
    const int es = (int)nd->a[1];
    out[0] = tb_new(T, (uint64_t)(n * es), MC_WL_ACTIVATIONS, "fused activation+dropout backward");
    if (!out[0]) return -1;
    const bool gelu = T->c.activation == MC_TFM_GELU;
    if (TG(T))
        tfm_fused_bwd(TG(T), TBP(out[0]), TBP(nd->gin[0]), tfm_dt(T, es), SAP(T, nd, 0), gelu ? SAP(T, nd, 1) : NULL,
                      NULL, rows, n / rows, gelu ? TFM_ACT_GELU : TFM_ACT_RELU, (float)T->c.dropout,
                      tfm_dt(T, es));
    return 0;
}

tv op_fused_act_dropout(mc_tfm *T, tv h, int64_t rows)
{
    if (T->ctx.oom || T->stopped || !h.b) return TV_NONE;
    const bool gelu = T->c.activation == MC_TFM_GELU;
    tb *bits = tb_new(T, (uint64_t)h.n, MC_WL_ACTIVATIONS, "fused activation+dropout: kept and sign bits");
    tb *o = bits ? tb_new(T, (uint64_t)(h.n * h.es), MC_WL_ACTIVATIONS, "fused activation+dropout output") : NULL;
    if (!o) {
        tb_unref(T, bits);
        return TV_NONE;
    }
    if (TG(T))
        tfm_fused_fwd(TG(T), TBP(o), tfm_dt(T, h.es), TBP(bits), TVP(T, h), NULL, NULL, rows, h.n / rows,
                      gelu ? TFM_ACT_GELU : TFM_ACT_RELU, (float)T->c.dropout, T->c.seed,
                      T->drop_base + (uint64_t)T->site, tfm_dt(T, h.es));
    tv r = {o, h.n, h.es, -1, 0, true, 0};
    r.node = tape_node(T, act_dropout_bwd, "FusedActDropoutBackward", 1);
    T->tape[r.node].a[0] = h.n, T->tape[r.node].a[1] = h.es, T->tape[r.node].a[2] = rows;
    tape_edge(T, r.node, 0, h);
    tape_save(T, r.node, bits);
    if (gelu) tape_save_tv(T, r.node, h);
    tb_unref(T, bits);
    return r;
}

/* FusedDropoutAddBackward (a: n, es of the residual, es of the branch, es
 * of the sum, rows): the residual's gradient is the sum's (cast where the
 * dtypes differ); the branch's, dy * kept / (1 - p). */
static int dropout_add_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t n = nd->a[0], rows = nd->a[4];
    const int es_res = (int)nd->a[1], es_br = (int)nd->a[2], es_out = (int)nd->a[3];
    tb *g = nd->gin[0];
    if (nd->next[1].node != -1) {
        out[1] = tb_new(T, (uint64_t)(n * es_br), MC_WL_ACTIVATIONS, "fused dropout+add backward: the branch's");
        if (!out[1]) return -1;
        if (TG(T))
            tfm_fused_bwd(TG(T), TBP(out[1]), TBP(g), tfm_dt(T, es_out), SAP(T, nd, 0), NULL, NULL, rows, n / rows,
                          TFM_ACT_NONE, (float)T->c.dropout, tfm_dt(T, es_br));
    }
    tb_ref(g);
    tape_apply_return(T, nd);
    if (nd->next[0].node != -1) {
        if (es_res == es_out) {
            tb_ref(g);
            out[0] = g;
        } else if (!(out[0] = tb_new(T, (uint64_t)(n * es_res), MC_WL_ACTIVATIONS, "the residual's gradient in its dtype"))) {
            tb_unref(T, g);
            return -1;
        } else if (TG(T)) {
            mc_gpu_cast(TG(T), TBP(out[0]), tfm_dt(T, es_res), TBP(g), tfm_dt(T, es_out), n);
        }
    }
    tb_unref(T, g);
    return 0;
}

tv op_fused_dropout_add(mc_tfm *T, tv res, tv branch, int64_t rows)
{
    if (T->ctx.oom || T->stopped || !res.b || !branch.b) return TV_NONE;
    if (T->c.dropout == 0) return op_add(T, res, branch);
    const int es = res.es > branch.es ? res.es : branch.es;
    tb *bits = tb_new(T, (uint64_t)branch.n, MC_WL_ACTIVATIONS, "fused dropout+add: kept bits");
    tb *o = bits ? tb_new(T, (uint64_t)(branch.n * es), MC_WL_ACTIVATIONS, "fused dropout+add output") : NULL;
    if (!o) {
        tb_unref(T, bits);
        return TV_NONE;
    }
    if (TG(T)) {
        CHECK(res.es == es, "transformer: a fused residual narrower than its branch");
        tfm_fused_fwd(TG(T), TBP(o), tfm_dt(T, es), TBP(bits), TVP(T, branch), NULL, TVP(T, res), rows,
                      branch.n / rows, TFM_ACT_NONE, (float)T->c.dropout, T->c.seed,
                      T->drop_base + (uint64_t)T->site, tfm_dt(T, branch.es));
    }
    tv r = {o, branch.n, es, -1, 0, true, 0};
    r.node = tape_node(T, dropout_add_bwd, "FusedDropoutAddBackward", 2);
    tnode *nd = &T->tape[r.node];
    nd->a[0] = branch.n, nd->a[1] = res.es, nd->a[2] = branch.es, nd->a[3] = es, nd->a[4] = rows;
    tape_edge(T, r.node, 0, res);
    tape_edge(T, r.node, 1, branch);
    tape_save(T, r.node, bits);
    tb_unref(T, bits);
    return r;
}
