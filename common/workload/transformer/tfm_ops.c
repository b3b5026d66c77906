/* tfm_ops.c: the Transformer's forward ops and their backward nodes,
 * each requesting what PyTorch 2.11's CUDA kernel requests, in its order:
 *
 * - linear (aten/src/ATen/native/Linear.cpp): a 2-D or contiguous 3-D input
 *   takes addmm (_flatten_nd_linear; cuBLASLt, so the Lt workspace too);
 *   a transposed 3-D input (MultiheadAttention with batch_first) takes
 *   matmul: the fold's reshape copies the input, mm (cuBLAS), add_(bias).
 *   AddmmBackward0/MmBackward0 give the input's gradient then the weight's
 *   (mm each), and the broadcast bias gradient is summed in validate_outputs
 *   (sum_to: a reduction with gpu_reduce_kernel's scratch). Autocast casts
 *   bias, weight, then input (the wrapper's arguments, right to left, as
 *   mlp_seq.c found for the MLP); a leaf's cast is cached until the
 *   region exits, a view's (the decoder's split in_proj) is not.
 * - layer_norm (layer_norm_cuda): Y, then mean and rstd [rows] fp32; saves
 *   input, weight, bias, mean, rstd. Backward: dX, dgamma, dbeta; a
 *   non-contiguous dY is made contiguous after those three and freed at
 *   once (observed: the batch_first decoder's memory in the traces); past
 *   65536 rows with d_model / 32 under half the SMs, partial dgamma/dbeta
 *   blocks summed into new tensors (layer_norm_kernel.cu).
 * - native_dropout (Dropout.cu dropout_cuda): the bool mask, then the
 *   output (empty_like each); saves the mask (without autograd the mask goes
 *   when at::dropout returns the output). p = 0 and eval() are no op at all
 *   (at::dropout returns the input: is_fused_kernel_acceptable needs p > 0
 *   and train, and _dropout_impl returns the input for either).
 * - relu saves its result, gelu its input; the residual add saves nothing
 *   and passes its gradient to both inputs, cast to an input's dtype where
 *   they differ (validate_outputs: autocast's half sublayer output).
 */
#include "check.h"
#include "tfm_internal.h"
#include "workload/transformer/kernels/tfm_kernels.h"

static bool needs_grad(tv x) { return x.node != -1; }

static int new_node(mc_tfm *T, bwd_fn f, const char *what, int nnext)
{
    return tape_node(T, f, what, nnext);
}

tv param_tv(mc_tfm *T, int i)
{
    return (tv){NULL, T->p[i].n, 4, -2 - i, 0, true, 0};
}

/* ------------------------------------------------------------ casts */

/* ToCopyBackward0 (a: n, the input's element size, the category): the
 * gradient cast back to the input's dtype. */
static int to_copy_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    out[0] = tb_new(T, (uint64_t)(nd->a[0] * nd->a[1]), (mc_wl_category)nd->a[2], "ToCopyBackward0");
    if (!out[0]) return -1;
    if (TG(T))
        mc_gpu_cast(TG(T), TBP(out[0]), tfm_dt(T, (int)nd->a[1]), TBP(nd->gin[0]),
                    tfm_dt(T, nd->gin_es[0]), nd->a[0]);
    return 0;
}

static tv cast(mc_tfm *T, tv x, int es, mc_wl_category cat, const char *what)
{
    tb *b = tb_new(T, (uint64_t)(x.n * es), cat, what);
    if (!b) return TV_NONE;
    if (TG(T)) mc_gpu_cast(TG(T), TBP(b), tfm_dt(T, es), TVP(T, x), tfm_dt(T, x.es), x.n);
    tv r = {b, x.n, es, -1, 0, true, 0};
    if (needs_grad(x)) {
        r.node = new_node(T, to_copy_bwd, "ToCopyBackward0", 1);
        tape_edge(T, r.node, 0, x);
        T->tape[r.node].a[0] = x.n;
        T->tape[r.node].a[1] = x.es;
        T->tape[r.node].a[2] = x.node <= -2 ? MC_WL_GRADS : cat == MC_WL_CASTS ? MC_WL_GRADS
                                                                              : MC_WL_ACTIVATIONS;
    }
    return r;
}

tv op_to(mc_tfm *T, tv x, int es)
{
    if (T->ctx.oom || T->stopped || !x.b) return TV_NONE;
    return cast(T, x, es, MC_WL_ACTIVATIONS, "autocast input cast");
}

/* A parameter's autocast copy, cached (with its ToCopyBackward0) until the
 * autocast region exits; returned as a new reference. */
static tv cast_param(mc_tfm *T, int i)
{
    tparam *p = &T->p[i];
    if (!p->cast) {
        tv c = cast(T, param_tv(T, i), 2, MC_WL_CASTS, p->name);
        if (!c.b) return TV_NONE;
        p->cast = c.b;
        p->cast_node = c.node;
    }
    tb_ref(p->cast);
    return (tv){p->cast, p->n, 2, p->cast_node, 0, true, 0};
}

void cast_cache_clear(mc_tfm *T)
{
    for (int i = T->np - 1; i >= 0; i--) {
        tb_unref(T, T->p[i].cast);
        T->p[i].cast = NULL;
    }
}

/* Autocast's copy of a linear argument: a parameter's is cached, a view's
 * (b NULL, node not a parameter) and an fp32 activation's are fresh. */
static tv autocast_arg(mc_tfm *T, tv x, const char *what)
{
    if (x.node <= -2) return cast_param(T, -2 - x.node);
    if (x.es == 2) return tv_view(x);
    return cast(T, x, 2, x.b ? MC_WL_ACTIVATIONS : MC_WL_CASTS, what);
}

/* ------------------------------------------------------------ linear */

/* AddmmBackward0 (a: rows, in, out, es): mm for the input, mm for the
 * weight, then sum_to for the bias (the incoming gradient, until summed). */
static int addmm_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t rows = nd->a[0], in = nd->a[1], o = nd->a[2];
    const int es = (int)nd->a[3], dt = tfm_dt(T, es);
    if (nd->next[1].node != -1) {
        if (!(out[1] = tb_new(T, (uint64_t)(rows * in * es), MC_WL_ACTIVATIONS, "mm: grad of linear input")))
            return -1;
        if (workspaces(T, false)) return -1;
        if (TG(T)) mc_gpu_gemm_dx(TG(T), T->handle, TBP(out[1]), TBP(nd->gin[0]), SAP(T, nd, 1), rows, in, o, dt);
    }
    if (!(out[2] = tb_new(T, (uint64_t)(o * in * es), MC_WL_GRADS, "mm: grad of weight"))) return -1;
    if (workspaces(T, false)) return -1;
    if (TG(T)) mc_gpu_gemm_dw(TG(T), T->handle, TBP(out[2]), TBP(nd->gin[0]), SAP(T, nd, 0), rows, in, o, dt);
    tb *g = nd->gin[0];
    tb_ref(g);
    tape_apply_return(T, nd);
    if (nd->next[0].node != -1) {
        out[0] = tb_new(T, (uint64_t)(o * es), MC_WL_GRADS, "sum_to: grad of bias");
        if (!out[0] || bias_grad(T, out[0], g, rows, o, es)) {
            tb_unref(T, g);
            return -1;
        }
    }
    tb_unref(T, g);
    return 0;
}

/* MmBackward0 of matmul's folded input (a: rows, in, out, es): mat2's
 * gradient (the weight's) before self's (the input's), as the H100 traces
 * show; the generated apply() takes the inputs in name order, which is
 * AddmmBackward0's mat1 then mat2 too. */
static int mm_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t rows = nd->a[0], in = nd->a[1], o = nd->a[2];
    const int es = (int)nd->a[3], dt = tfm_dt(T, es);
    if (!(out[1] = tb_new(T, (uint64_t)(o * in * es), MC_WL_GRADS, "mm: grad of weight"))) return -1;
    if (workspaces(T, false)) return -1;
    if (TG(T)) mc_gpu_gemm_dw(TG(T), T->handle, TBP(out[1]), TBP(nd->gin[0]), SAP(T, nd, 0), rows, in, o, dt);
    if (nd->next[0].node == -1) return 0;
    if (!(out[0] = tb_new(T, (uint64_t)(rows * in * es), MC_WL_ACTIVATIONS, "mm: grad of linear input")))
        return -1;
    if (workspaces(T, false)) return -1;
    if (TG(T)) mc_gpu_gemm_dx(TG(T), T->handle, TBP(out[0]), TBP(nd->gin[0]), SAP(T, nd, 1), rows, in, o, dt);
    return 0;
}

/* AddBackward0 of matmul's add_(bias): passes through, sums the bias's. */
static int add_bias_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    out[0] = nd->gin[0];
    tb_ref(out[0]);
    tape_apply_return(T, nd);
    if (nd->next[1].node == -1) return 0;
    out[1] = tb_new(T, (uint64_t)(nd->a[1] * nd->a[2]), MC_WL_GRADS, "sum_to: grad of bias");
    return out[1] ? bias_grad(T, out[1], out[0], nd->a[0], nd->a[1], (int)nd->a[2]) : -1;
}

tv op_linear(mc_tfm *T, tv x, tv W, tv b, int64_t rows, int64_t in, int64_t out, bool matmul)
{
    if (T->ctx.oom || T->stopped || !x.b) return TV_NONE;
    tv xc = tv_view(x), Wc = W, bc = b;
    bool own_wb = false;
    if (T->lowp) {
        bc = autocast_arg(T, b, "autocast cast of a split bias");
        Wc = autocast_arg(T, W, "autocast cast of a split weight");
        tv_drop(T, &xc);
        xc = autocast_arg(T, x, "autocast input cast");
        own_wb = true;
        if (T->ctx.oom) goto fail;
    }
    const int es = T->es;
    tv r = TV_NONE;
    /* The autograd node saves its inputs before the op runs (the generated
     * VariableType code): a checkpoint's recomputation that stops at this
     * save (early stop) never makes the output. */
    if (!matmul) {
        const int node = new_node(T, addmm_bwd, "AddmmBackward0", 3);
        tnode *nd = &T->tape[node];
        nd->a[0] = rows, nd->a[1] = in, nd->a[2] = out, nd->a[3] = es;
        tape_edge(T, node, 0, bc);
        tape_edge(T, node, 1, xc);
        tape_edge_view(T, node, 1); /* every input is a view: flattened, or out_proj's .view(L*N, E) */
        tape_edge(T, node, 2, Wc);
        tape_save_tv(T, node, xc);                    /* mat1, for the weight's gradient */
        if (needs_grad(xc)) tape_save_tv(T, node, Wc); /* mat2, for the input's */
        if (T->stopped) goto fail;
        tb *o = tb_new(T, (uint64_t)(rows * out * es), MC_WL_ACTIVATIONS, "addmm output of linear");
        if (!o || workspaces(T, true)) {
            tb_unref(T, o);
            goto fail;
        }
        if (TG(T))
            mc_gpu_linear(TG(T), T->handle, TBP(o), TVP(T, xc), TVP(T, Wc), TVP(T, bc), rows, in, out,
                          tfm_dt(T, es));
        r = (tv){o, rows * out, es, node, 0, true, 0};
    } else {
        tb *R = tb_new(T, (uint64_t)(rows * in * es), MC_WL_ACTIVATIONS, "matmul: reshape copy of the input");
        if (!R) goto fail;
        if (TG(T)) mc_gpu_copy(TG(T), TBP(R), TVP(T, xc), (uint64_t)(rows * in * es));
        int mm = new_node(T, mm_bwd, "MmBackward0", 2);
        tnode *nd = &T->tape[mm];
        nd->a[0] = rows, nd->a[1] = in, nd->a[2] = out, nd->a[3] = es;
        tape_edge(T, mm, 0, xc); /* through the reshape's CloneBackward0 */
        tape_edge_view(T, mm, 0);  /* and its _unsafe_view's, then the transpose */
        tape_edge(T, mm, 1, Wc);
        tape_save(T, mm, R);
        if (needs_grad(xc)) tape_save_tv(T, mm, Wc);
        if (T->stopped) {
            tb_unref(T, R);
            goto fail;
        }
        tb *o = tb_new(T, (uint64_t)(rows * out * es), MC_WL_ACTIVATIONS, "mm output of linear");
        if (!o || workspaces(T, false)) {
            tb_unref(T, R);
            tb_unref(T, o);
            goto fail;
        }
        if (TG(T)) { /* mm, add_(bias) */
            const int dt = tfm_dt(T, es);
            mc_gpu_mm_nt(TG(T), T->handle, TBP(o), TBP(R), TVP(T, Wc), rows, in, out, dt);
            tfm_bias_add(TG(T), TBP(o), TVP(T, bc), rows, out, dt);
        }
        tb_unref(T, R);
        int add = new_node(T, add_bias_bwd, "AddBackward0 (add_ of the bias)", 2);
        T->tape[add].a[0] = rows, T->tape[add].a[1] = out, T->tape[add].a[2] = es;
        tape_edge(T, add, 0, (tv){o, 0, es, mm, 0, true, 0});
        tape_edge(T, add, 1, bc);
        r = (tv){o, rows * out, es, add, 0, true, 0};
    }
    tv_drop(T, &xc); /* the wrapper's copies go when linear returns */
    if (own_wb) {
        tv_drop(T, &Wc);
        tv_drop(T, &bc);
    }
    return r;
fail:
    tv_drop(T, &xc);
    if (own_wb) {
        tv_drop(T, &Wc);
        tv_drop(T, &bc);
    }
    return TV_NONE;
}

/* ------------------------------------------------------------ layer_norm */

#define LN_EPS 1e-5f /* nn.Transformer's layer_norm_eps */

static void *param_ptr(const mc_tfm *T, int i) { return WL_PTR(T->p[i].p); }

/* NativeLayerNormBackward0 (a: rows, E, the weight's parameter index). */
static int layer_norm_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t rows = nd->a[0], E = nd->a[1];
    float *part_g = NULL, *part_b = NULL;
    int64_t part_rows = 0;
    if (nd->next[0].node != -1 &&
        !(out[0] = tb_new(T, (uint64_t)(rows * E * 4), MC_WL_ACTIVATIONS, "layer_norm backward: dX")))
        return -1;
    if (!(out[1] = tb_new(T, (uint64_t)(E * 4), MC_WL_GRADS, "layer_norm backward: dgamma")) ||
        !(out[2] = tb_new(T, (uint64_t)(E * 4), MC_WL_GRADS, "layer_norm backward: dbeta")))
        return -1;
    tb *c = NULL;
    void *dy = TBP(nd->gin[0]);
    if (nd->gin_nc[0] && /* dY made contiguous for the kernels, after the outputs */
        !(c = tb_new(T, (uint64_t)(rows * E * 4), MC_WL_ACTIVATIONS, "layer_norm backward: dY.contiguous()")))
        return -1;
    if (c && TG(T)) { /* the suite keeps every gradient in the model's layout: a plain copy */
        mc_gpu_copy(TG(T), TBP(c), dy, (uint64_t)(rows * E * 4));
        dy = TBP(c);
    }
    /* LaunchGammaBetaBackwardCUDAKernel: many rows, few columns: partial
     * sums per block of 32 rows, then dgamma = blocks.sum(0) (a new tensor) */
    if (rows > 64 * 1024 && E / 32 < T->c.sm_count / 2) {
        const int64_t bx = (E + 31) / 32, by0 = (rows + 31) / 32;
        const int64_t by = 32768 / bx < by0 ? 32768 / bx : by0;
        tb *gb = tb_new(T, (uint64_t)(by * E * 4), MC_WL_ACTIVATIONS, "layer_norm backward: dgamma_blocks");
        tb *bb = gb ? tb_new(T, (uint64_t)(by * E * 4), MC_WL_ACTIVATIONS, "layer_norm backward: dbeta_blocks") : NULL;
        if (bb) part_g = TBP(gb), part_b = TBP(bb), part_rows = by;
        for (int k = 1; k <= 2 && bb; k++) {
            tb *s = tb_new(T, (uint64_t)(E * 4), MC_WL_GRADS, "layer_norm backward: blocks.sum(0)");
            if (!s || reduce_scratch(T, E, by, true, 4)) {
                tb_unref(T, s);
                break;
            }
            tb_unref(T, out[k]);
            out[k] = s;
        }
        if (TG(T) && !T->ctx.oom) /* the partial sums and their final pass, while the blocks live */
            tfm_ln_bwd(TG(T), out[0] ? TBP(out[0]) : NULL, TBP(out[1]), TBP(out[2]), dy, SAP(T, nd, 0),
                       param_ptr(T, (int)nd->a[2]), SAP(T, nd, 3), SAP(T, nd, 4), rows, E, part_g, part_b,
                       part_rows, MC_DT_F32);
        tb_unref(T, bb);
        tb_unref(T, gb);
    } else if (TG(T)) {
        tfm_ln_bwd(TG(T), out[0] ? TBP(out[0]) : NULL, TBP(out[1]), TBP(out[2]), dy, SAP(T, nd, 0),
                   param_ptr(T, (int)nd->a[2]), SAP(T, nd, 3), SAP(T, nd, 4), rows, E, NULL, NULL, 0, MC_DT_F32);
    }
    tb_unref(T, c);
    return T->ctx.oom ? -1 : 0;
}

tv op_layer_norm(mc_tfm *T, tv x, int pw, int pb)
{
    if (T->ctx.oom || T->stopped || !x.b) return TV_NONE;
    const int64_t E = T->E, rows = x.n / E;
    tb *y = tb_new(T, (uint64_t)(x.n * 4), MC_WL_ACTIVATIONS, "layer_norm output");
    tb *mean = y ? tb_new(T, (uint64_t)(rows * 4), MC_WL_ACTIVATIONS, "layer_norm mean") : NULL;
    tb *rstd = mean ? tb_new(T, (uint64_t)(rows * 4), MC_WL_ACTIVATIONS, "layer_norm rstd") : NULL;
    if (!rstd) {
        tb_unref(T, y);
        tb_unref(T, mean);
        return TV_NONE;
    }
    CHECK(x.es == 4, "transformer: layer_norm of a half tensor (autocast runs it in fp32)");
    if (TG(T))
        tfm_ln_fwd(TG(T), TBP(y), TBP(mean), TBP(rstd), TVP(T, x), param_ptr(T, pw), param_ptr(T, pb), rows,
                   E, LN_EPS, MC_DT_F32);
    int n = new_node(T, layer_norm_bwd, "NativeLayerNormBackward0", 3);
    T->tape[n].a[0] = rows, T->tape[n].a[1] = E, T->tape[n].a[2] = pw;
    tape_edge(T, n, 0, x);
    tape_edge(T, n, 1, param_tv(T, pw));
    tape_edge(T, n, 2, param_tv(T, pb));
    tape_save_tv(T, n, x);
    tape_save(T, n, NULL); /* weight */
    tape_save(T, n, NULL); /* bias */
    tape_save(T, n, mean);
    tape_save(T, n, rstd);
    tb_unref(T, mean);
    tb_unref(T, rstd);
    return (tv){y, x.n, 4, n, 0, true, 0};
}

/* ------------------------------------------------------------ elementwise */

enum { EW_DROPOUT, EW_RELU, EW_GELU };

/* NativeDropoutBackward0, ReluBackward0, GeluBackward0 (a: n, es, EW_*). */
static int elementwise_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    out[0] = tb_new(T, (uint64_t)(nd->a[0] * nd->a[1]), MC_WL_ACTIVATIONS, nd->what);
    if (!out[0]) return -1;
    if (!TG(T)) return 0;
    const int dt = tfm_dt(T, (int)nd->a[1]);
    if (nd->a[2] == EW_DROPOUT)
        tfm_dropout_bwd(TG(T), TBP(out[0]), TBP(nd->gin[0]), SAP(T, nd, 0), nd->a[0], (float)T->c.dropout, dt);
    else
        tfm_act_bwd(TG(T), TBP(out[0]), TBP(nd->gin[0]), SAP(T, nd, 0), nd->a[0],
                    nd->a[2] == EW_RELU ? TFM_ACT_RELU : TFM_ACT_GELU, dt);
    return 0;
}

tv op_dropout(mc_tfm *T, tv x)
{
    if (T->ctx.oom || T->stopped || !x.b) return TV_NONE;
    if (T->c.dropout == 0 || T->eval) return tv_view(x); /* _dropout_impl returns the input */
    tb *mask = tb_new(T, (uint64_t)x.n, MC_WL_ACTIVATIONS, "dropout mask (bool)");
    tb *o = mask ? tb_new(T, (uint64_t)(x.n * x.es), MC_WL_ACTIVATIONS, "dropout output") : NULL;
    if (!o) {
        tb_unref(T, mask);
        return TV_NONE;
    }
    if (TG(T))
        tfm_dropout_fwd(TG(T), TBP(o), TBP(mask), TVP(T, x), x.n, (float)T->c.dropout, T->c.seed,
                        T->drop_base + (uint64_t)T->site, tfm_dt(T, x.es));
    tv r = {o, x.n, x.es, -1, 0, x.contig, 0};
    if (needs_grad(x)) {
        r.node = new_node(T, elementwise_bwd, "NativeDropoutBackward0", 1);
        T->tape[r.node].a[0] = x.n, T->tape[r.node].a[1] = x.es, T->tape[r.node].a[2] = EW_DROPOUT;
        tape_edge(T, r.node, 0, x);
        tape_save(T, r.node, mask);
        r.contig = true;
    }
    tb_unref(T, mask);
    return r;
}

tv op_activation(mc_tfm *T, tv x)
{
    if (T->ctx.oom || T->stopped || !x.b) return TV_NONE;
    bool gelu = T->c.activation == MC_TFM_GELU;
    tb *o = tb_new(T, (uint64_t)(x.n * x.es), MC_WL_ACTIVATIONS, gelu ? "gelu output" : "relu output");
    if (!o) return TV_NONE;
    if (TG(T)) tfm_act_fwd(TG(T), TBP(o), TVP(T, x), x.n, gelu ? TFM_ACT_GELU : TFM_ACT_RELU, tfm_dt(T, x.es));
    tv r = {o, x.n, x.es, -1, 0, true, 0};
    r.node = new_node(T, elementwise_bwd, gelu ? "GeluBackward0" : "ReluBackward0", 1);
    T->tape[r.node].a[0] = x.n, T->tape[r.node].a[1] = x.es, T->tape[r.node].a[2] = gelu ? EW_GELU : EW_RELU;
    tape_edge(T, r.node, 0, x);
    if (gelu) tape_save_tv(T, r.node, x);
    else tape_save(T, r.node, o);
    return r;
}

/* AddBackward0 (a: n, es of a, es of b, es of the sum). */
static int add_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t n = nd->a[0];
    tb *g = nd->gin[0];
    tb_ref(g);
    tape_apply_return(T, nd);
    for (int k = 0; k < 2; k++) {
        if (nd->next[k].node == -1) continue;
        if (nd->a[1 + k] == nd->a[3]) {
            tb_ref(g);
            out[k] = g;
        } else if (!(out[k] = tb_new(T, (uint64_t)(n * nd->a[1 + k]), MC_WL_ACTIVATIONS,
                                     "validate_outputs: the gradient in the input's dtype"))) {
            tb_unref(T, g);
            return -1;
        } else if (TG(T)) {
            mc_gpu_cast(TG(T), TBP(out[k]), tfm_dt(T, (int)nd->a[1 + k]), TBP(g), tfm_dt(T, (int)nd->a[3]), n);
        }
    }
    tb_unref(T, g);
    return 0;
}

tv op_add(mc_tfm *T, tv a, tv b)
{
    if (T->ctx.oom || T->stopped || !a.b || !b.b) return TV_NONE;
    int es = a.es > b.es ? a.es : b.es; /* type promotion: fp32 + half is fp32 */
    tb *o = tb_new(T, (uint64_t)(a.n * es), MC_WL_ACTIVATIONS, "residual add");
    if (!o) return TV_NONE;
    if (TG(T))
        tfm_add(TG(T), TBP(o), tfm_dt(T, es), TVP(T, a), tfm_dt(T, a.es), TVP(T, b), tfm_dt(T, b.es), a.n);
    tv r = {o, a.n, es, -1, 0, true, 0};
    if (needs_grad(a) || needs_grad(b)) {
        r.node = new_node(T, add_bwd, "AddBackward0", 2);
        tnode *nd = &T->tape[r.node];
        nd->a[0] = a.n, nd->a[1] = a.es, nd->a[2] = b.es, nd->a[3] = es;
        tape_edge(T, r.node, 0, a);
        tape_edge(T, r.node, 1, b);
    }
    return r;
}

/* ------------------------------------------------------------ views, copies */

/* The suite keeps every activation and gradient in the model's layout
 * ([tokens, E] rows, tokens batch-major with batch_first, else
 * sequence-major), so PyTorch's permuting copies are plain copies here but
 * for the packed projections: [tokens, parts E] to parts blocks of
 * [tokens, E] (q, k, v one after the other, as the [3,L,N,E] copy) and back. */
static void unpack_parts(mc_tfm *T, void *dst, const void *src, int64_t tok, int parts, int es)
{
    const uint64_t row = (uint64_t)(T->E * es);
    for (int j = 0; j < parts; j++)
        mc_gpu_copy2d(TG(T), (char *)dst + (uint64_t)j * (uint64_t)tok * row, row,
                      (const char *)src + (uint64_t)j * row, (uint64_t)parts * row, row, (uint64_t)tok);
}

static void pack_parts(mc_tfm *T, void *dst, const void *src, int64_t tok, int parts, int es)
{
    const uint64_t row = (uint64_t)(T->E * es);
    for (int j = 0; j < parts; j++)
        mc_gpu_copy2d(TG(T), (char *)dst + (uint64_t)j * row, (uint64_t)parts * row,
                      (const char *)src + (uint64_t)j * (uint64_t)tok * row, row, row, (uint64_t)tok);
}

tv op_contiguous(mc_tfm *T, tv x, int parts, const char *what)
{
    if (T->ctx.oom || T->stopped || !x.b) return TV_NONE;
    tb *o = tb_new(T, (uint64_t)(x.n * x.es), MC_WL_ACTIVATIONS, what);
    if (!o) return TV_NONE;
    if (TG(T) && parts > 1) unpack_parts(T, TBP(o), TVP(T, x), x.n / (parts * T->E), parts, x.es);
    else if (TG(T)) mc_gpu_copy(TG(T), TBP(o), TVP(T, x), (uint64_t)(x.n * x.es));
    return (tv){o, x.n, x.es, x.node, x.slot, x.contig, 0}; /* CloneBackward0 passes through */
}

/* ViewBackward0 whose reshape copies (a: n, es, parts). */
static int view_copy_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    const int64_t n = nd->a[0];
    const int es = (int)nd->a[1], parts = (int)nd->a[2];
    out[0] = tb_new(T, (uint64_t)(n * es), MC_WL_ACTIVATIONS, nd->what);
    if (!out[0]) return -1;
    if (TG(T) && parts > 1) pack_parts(T, TBP(out[0]), TBP(nd->gin[0]), n / (parts * T->E), parts, es);
    else if (TG(T)) mc_gpu_copy(TG(T), TBP(out[0]), TBP(nd->gin[0]), (uint64_t)(n * es));
    return 0;
}

tv op_view_copy_bwd(mc_tfm *T, tv x, int parts, const char *what)
{
    if (T->ctx.oom || T->stopped || !x.b) return TV_NONE;
    tv r = tv_view(x);
    if (!needs_grad(x)) return r;
    r.node = new_node(T, view_copy_bwd, what, 1);
    T->tape[r.node].a[0] = x.n, T->tape[r.node].a[1] = x.es, T->tape[r.node].a[2] = parts;
    tape_edge(T, r.node, 0, x);
    r.slot = 0;
    r.contig = true;
    return r;
}

/* TransposeBackward0: the gradient transposed back, a non-contiguous view
 * of the one it got (a: none). */
static int transpose_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    (void)T;
    out[0] = nd->gin[0];
    tb_ref(out[0]);
    return 0;
}

tv op_transpose(mc_tfm *T, tv x)
{
    if (T->ctx.oom || T->stopped || !x.b) return TV_NONE;
    tv r = tv_view(x);
    if (!needs_grad(x)) {
        r.contig = false;
        return r;
    }
    r.node = new_node(T, transpose_bwd, "TransposeBackward0", 1);
    tv xt = x;
    xt.contig = false; /* what it hands on is transposed */
    tape_edge(T, r.node, 0, xt);
    r.slot = 0;
    r.contig = true; /* what it gets is laid out as its output */
    return r;
}

/* SelectBackward0: zeros of the whole, the part copied in (a: whole n, es,
 * the part's index, its n). */
static int select_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    out[0] = tb_new(T, (uint64_t)(nd->a[0] * nd->a[1]), MC_WL_ACTIVATIONS, "SelectBackward0: zeros of the whole");
    if (!out[0]) return -1;
    if (TG(T)) {
        const uint64_t part = (uint64_t)(nd->a[3] * nd->a[1]);
        mc_gpu_zero(TG(T), TBP(out[0]), (uint64_t)(nd->a[0] * nd->a[1]));
        mc_gpu_copy(TG(T), (char *)TBP(out[0]) + (uint64_t)nd->a[2] * part, TBP(nd->gin[0]), part);
    }
    return 0;
}

tv op_select(mc_tfm *T, tv whole, int idx, int64_t n_part, const char *what)
{
    if (T->ctx.oom || T->stopped || !whole.b) return TV_NONE;
    tv r = tv_view(whole);
    r.n = n_part;
    r.off = whole.off + (int64_t)idx * n_part * whole.es;
    if (!needs_grad(whole)) return r;
    r.node = new_node(T, select_bwd, what, 1);
    T->tape[r.node].a[0] = whole.n, T->tape[r.node].a[1] = whole.es;
    T->tape[r.node].a[2] = idx, T->tape[r.node].a[3] = n_part;
    tape_edge(T, r.node, 0, whole);
    r.slot = 0;
    r.contig = true;
    return r;
}

/* SplitWithSizesBackward0: the parts' gradients concatenated (at::cat)
 * (a: the parameter's n, the first part's n, the parameter's index). */
static int split_bwd(mc_tfm *T, tnode *nd, tb *out[MAX_NEXT])
{
    out[0] = tb_new(T, (uint64_t)(nd->a[0] * 4), MC_WL_GRADS, "SplitWithSizesBackward0: cat");
    if (!out[0]) return -1;
    if (TG(T)) {
        const uint64_t first = (uint64_t)nd->a[1] * 4, rest = (uint64_t)(nd->a[0] - nd->a[1]) * 4;
        if (nd->gin[0]) mc_gpu_copy(TG(T), TBP(out[0]), TBP(nd->gin[0]), first);
        else mc_gpu_zero(TG(T), TBP(out[0]), first);
        if (nd->gin[1]) mc_gpu_copy(TG(T), (char *)TBP(out[0]) + first, TBP(nd->gin[1]), rest);
        else mc_gpu_zero(TG(T), (char *)TBP(out[0]) + first, rest);
    }
    return 0;
}

int op_split(mc_tfm *T, int param, int64_t n_first)
{
    if (T->ctx.oom || T->stopped) return -1;
    int n = new_node(T, split_bwd, "SplitWithSizesBackward0", 1);
    T->tape[n].a[0] = T->p[param].n;
    T->tape[n].a[1] = n_first;
    T->tape[n].a[2] = param;
    tape_edge(T, n, 0, param_tv(T, param));
    return n;
}
