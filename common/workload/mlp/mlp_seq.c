/* mlp_seq.c: the requests of the training workload, in the order
 * PyTorch 2.11's eager mode makes them, and on a GPU the arithmetic between
 * them (wl_gpu.h). The rules, from PyTorch's source and confirmed request
 * by request against PyTorch 2.11's own traces on an H100 for every
 * optimizer, precision, accumulation and checkpointing
 * (tests/fixtures/mlp/, tests/scripts/test_mlp_fixtures.sh):
 *
 * - Operators allocate their output before any scratch: addmm's output, then
 *   (first use on a thread) the cuBLAS workspace of that thread's handle
 *   (CublasHandlePool.cpp getCurrentCUDABlasHandle: 32 MiB on sm_90) and the
 *   cuBLASLt workspace (getCUDABlasLtWorkspace: 1 MiB, separate unless
 *   TORCH_CUBLASLT_UNIFIED_WORKSPACE=1). Linear's addmm with a 1-D bias takes
 *   the Lt path; backward's mm the cuBLAS path. The forward runs on the
 *   Python thread's handle, the backward (and a checkpoint's recomputation)
 *   on autograd's device thread, which has a handle of its own.
 * - Python drops a layer's input when Sequential rebinds `input`, so a
 *   Linear's output lives until ReLU's is made. Autograd keeps what the
 *   backward formulas need: addmm's mat1 (its input) where the weight needs
 *   a gradient, its mat2 (the weight or its autocast copy) only where the
 *   input needs one (not layer 0's), ReLU's result, mse_loss's input.
 * - mse_loss (mean) makes two [b,out] fp32 tensors and the mean's reduction
 *   scratch, frees the second, and no 0-dim output appears: the first
 *   block is held until `/ K` has run (the traces show it; the mechanism
 *   inside ATen was not traced further).
 * - Backward (engine.cpp): a node's outputs are made, then validate_outputs
 *   sums a broadcast bias gradient (sum_to), then the node's incoming
 *   gradient is dropped, then its saved tensors are released. Ready nodes
 *   run highest sequence number first; AccumulateGrad's is the largest, so a
 *   gradient reaches .grad as soon as it exists: stolen on the first
 *   micro-step, added in place (and dropped) on later ones.
 * - autocast (fp16/bf16): linear's arguments are cast in the order GCC
 *   evaluates the wrapper's argument pack (right to left: bias, weight, then
 *   an fp32 input); weight and bias casts are cached until the autocast
 *   region exits; mse_loss runs in fp32 on a cast of the output.
 * - checkpoint_sequential (cfg.checkpoint_segments, fp32): mlp_segments.c.
 * - Non-reentrant checkpoint of a Linear+ReLU pair: the forward saves only the
 *   pair's input; ReLU's backward recomputes the pair (on the backward
 *   thread) and stops once ReLU's result is saved again; the pair's input
 *   goes when the pair's last node releases its saved tensors.
 * - Optimizers (torch/optim, foreach): state at the first step (momentum:
 *   grad.clone(); Adam: exp_avg, exp_avg_sq per parameter, step on the CPU),
 *   Adam's _foreach_sqrt list freed when _multi_tensor_adam returns.
 *   GradScaler: lazy scale and growth tracker, unscale_'s scalars and
 *   per-device copies, .item() of found_inf (a sync), update() in place.
 * Within a run of frees with no request between them the order cannot
 * change a figure; there PyTorch's may follow a hash map (autocast's cache). */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "mlp_internal.h"

/* ------------------------------------------------------------ set-up */

int wl_seq_params(mc_workload *w)
{
    for (int l = 0; l < w->L; l++) {
        wl_layer *y = &w->ly[l];
        AK(y->W, (uint64_t)(y->out * y->in) * 4, MC_WL_WEIGHTS, mlp_name("weight of Linear", l));
        AK(y->b, (uint64_t)y->out * 4, MC_WL_WEIGHTS, mlp_name("bias of Linear", l));
        if (G) { /* nn.Linear's init: kaiming_uniform_(a=sqrt(5)) and its bias: U(+-1/sqrt(in)) */
            float bound = (float)(1.0 / sqrt((double)y->in));
            mc_gpu_uniform(G, FP(y->W), y->out * y->in, bound, w->c.seed, 2 * (uint64_t)l);
            mc_gpu_uniform(G, FP(y->b), y->out, bound, w->c.seed, 2 * (uint64_t)l + 1);
        }
    }
    return 0;
}

/* ------------------------------------------------------------ forward */

static int forward(mc_workload *w)
{
    if (w->seg) return wl_seg_forward(w); /* checkpoint_sequential: mlp_segments.c */
    const bool ckpt = w->c.checkpoint;
    for (int l = 0; l < w->L; l++) {
        wl_layer *y = &w->ly[l];
        if (wl_linear_fwd(w, l, l ? &w->ly[l - 1].r : &w->x, &w->x16, &y->h, 0)) return -1;
        if (ckpt && l == 0 && mlp_lowp(w)) F(w->x16); /* saved as a checkpoint holder only */
        if (l < w->L - 1) {
            A(y->r, w->mb * y->out * w->es, MC_WL_ACTIVATIONS, mlp_name("relu output", l));
            if (G) mc_gpu_relu(G, P(y->r), P(y->h), w->mb * y->out, mlp_dtype(w));
            F(y->h); /* Sequential rebinds `input` */
        }
    }
    return 0;
}

/* loss = mse_loss(out, y) / K, then the autocast region's exit. */
static int loss_fwd(mc_workload *w)
{
    const int64_t n = w->mb * w->c.out;
    wl_t *o = &w->ly[w->L - 1].h;
    const float *of = FP(*o);
    if (mlp_lowp(w)) {
        A(w->out32, n * 4, MC_WL_ACTIVATIONS, "autocast fp32 cast of mse_loss input");
        if (G) mc_gpu_cast(G, P(w->out32), MC_DT_F32, P(*o), mlp_dtype(w), n);
        of = FP(w->out32);
    }
    /* PyTorch 2.11's traces: mse_loss makes two [b,out] fp32 tensors, the
     * mean's reduction scratch, frees the second, and makes no 0-dim output:
     * the first one's block holds the result until `/ K` has used it. Here
     * the mean goes to its first element. */
    A(w->mse, n * 4, MC_WL_ACTIVATIONS, "mse_loss elementwise (holds the mean)");
    A(w->mse_tmp, n * 4, MC_WL_ACTIVATIONS, "mse_loss second [b,out]");
    if (wl_reduce_begin(w, 1, n, false, 4)) return -1;
    wl_reduce_end(w);
    if (G) mc_gpu_mse(G, FP(w->mse), FP(w->mse_tmp), of, FP(w->y), n, 1.0f);
    F(w->mse_tmp);
    A(w->loss, 4, MC_WL_OTHER, "loss / K");
    if (G) mc_gpu_scalar(G, FP(w->loss), FP(w->mse), NULL, 1.0f / (float)w->c.accum);
    F(w->mse);
    /* autocast's exit clears the cast cache, newest first: what nothing saved
     * goes. addmm saves its weight only where its input needs a gradient (not
     * layer 0's), and a checkpointed pair saves nothing. */
    for (int l = w->L - 1; l >= 0 && mlp_lowp(w); l--) {
        if (l == 0 || (w->c.checkpoint && l < w->L - 1)) F(w->ly[l].W16);
        F(w->ly[l].b16);
    }
    return 0;
}

/* ------------------------------------------------------------ backward */

/* AddmmBackward0 of layer l (ck: inside a checkpointed pair). */
static int addmm_bwd(mc_workload *w, int l, bool ck)
{
    wl_layer *y = &w->ly[l];
    const int dt = mlp_dtype(w);
    const bool lp = mlp_lowp(w);
    const wl_t *mat1 = l ? &w->ly[l - 1].r : lp ? (ck ? &w->x16r : &w->x16) : &w->x;
    const void *Wc = lp ? P(y->W16) : P(y->W);
    if (l > 0) {
        wl_layer *p = &w->ly[l - 1];
        A(p->gr, w->mb * y->in * w->es, MC_WL_ACTIVATIONS, mlp_name("mm: grad of Linear input", l));
        if (wl_workspaces(w, 1, false)) return -1;
        if (G) mc_gpu_gemm_dx(G, 1, P(p->gr), P(y->gh), Wc, w->mb, y->in, y->out, dt);
    }
    A(y->gWt, y->out * y->in * w->es, MC_WL_GRADS, mlp_name("mm: grad of weight", l));
    if (wl_workspaces(w, 1, false)) return -1;
    if (G) mc_gpu_gemm_dw(G, 1, P(y->gWt), P(y->gh), P(*mat1), w->mb, y->in, y->out, dt);
    if (ck && lp) { /* unpacked recomputed tensors: apply()'s locals were the last owners */
        if (l == 0) F(w->x16r);
        else F(y->W16);
    }
    A(y->gbt, y->out * w->es, MC_WL_GRADS, mlp_name("sum_to: grad of bias", l));
    if (wl_reduce_begin(w, y->out, w->mb, true, w->es)) return -1;
    if (G) /* the partial sums go to the buffer, as in Reduce.cuh */
        mc_gpu_bias_grad(G, P(y->gbt), P(y->gh), w->mb, y->out, dt, P(w->red_buf), w->red_buf.bytes);
    wl_reduce_end(w);
    F(y->gh);
    if (ck) { /* the pair's checkpoint frame dies, and with it the saved input */
        if (l > 0) F(w->ly[l - 1].r);
    } else {
        if (lp) {
            if (l == 0) F(w->x16);
            else F(y->W16);
        }
        if (w->c.checkpoint && l > 0) F(w->ly[l - 1].r); /* the un-checkpointed last Linear's input */
    }
    return 0;
}

/* ReluBackward0 of layer l, gh = gr * (r > 0). The incoming gradient goes
 * when call_function returns, then the saved result is released; a result
 * unpacked from a checkpoint's recomputation was apply()'s own local and
 * goes first. */
static int relu_bwd(mc_workload *w, int l, wl_t *r, bool recomputed)
{
    wl_layer *y = &w->ly[l];
    A(y->gh, w->mb * y->out * w->es, MC_WL_ACTIVATIONS, mlp_name("ReluBackward0", l));
    if (G) mc_gpu_relu_bwd(G, P(y->gh), P(y->gr), P(*r), w->mb * y->out, mlp_dtype(w));
    if (recomputed) F(*r);
    F(y->gr);
    F(*r);
    return 0;
}

/* ReluBackward0 of a checkpointed pair: unpacking its result recomputes the pair. */
static int relu_bwd_recompute(mc_workload *w, int l)
{
    wl_layer *y = &w->ly[l];
    if (wl_linear_fwd(w, l, l ? &w->ly[l - 1].r : &w->x, &w->x16r, &w->h2, 1)) return -1;
    A(w->r2, w->mb * y->out * w->es, MC_WL_ACTIVATIONS, mlp_name("recomputed relu output", l));
    if (G) mc_gpu_relu(G, P(w->r2), P(w->h2), w->mb * y->out, mlp_dtype(w));
    if (mlp_lowp(w)) { /* the recomputation's autocast exit */
        if (l == 0) F(y->W16);
        F(y->b16);
    }
    F(w->h2);               /* its frames, once the early stop is caught */
    return relu_bwd(w, l, &w->r2, true);
}

static int backward(mc_workload *w)
{
    const int L = w->L, dt = mlp_dtype(w);
    const bool lp = mlp_lowp(w), fp16 = w->c.precision == MC_WL_FP16;
    const int64_t n = w->mb * w->c.out;
    if (fp16) {
        if (wl_scaler_lazy_init(&w->ctx, &w->opt)) return -1;
        A(w->scaled, 4, MC_WL_OTHER, "scaler.scale(loss)");
        if (G) mc_gpu_scalar(G, FP(w->scaled), FP(w->loss), FP(w->opt.scale), 1.0f);
    }
    A(w->ones, 4, MC_WL_OTHER, "backward's ones_like");
    if (G) mc_gpu_fill(G, FP(w->ones), 1.0f, 1);
    const wl_t *g = &w->ones;
    if (fp16) {
        A(w->gmul, 4, MC_WL_OTHER, "MulBackward0");
        if (G) mc_gpu_scalar(G, FP(w->gmul), FP(w->ones), FP(w->opt.scale), 1.0f);
        g = &w->gmul;
    }
    A(w->gdiv, 4, MC_WL_OTHER, "DivBackward0");
    if (G) mc_gpu_scalar(G, FP(w->gdiv), FP(*g), NULL, 1.0f / (float)w->c.accum);
    if (fp16) F(w->gmul);
    A(w->gout32, n * 4, MC_WL_ACTIVATIONS, "MseLossBackward0");
    if (G) mc_gpu_mse_bwd(G, FP(w->gout32), lp ? FP(w->out32) : FP(w->ly[L - 1].h), FP(w->y),
                          FP(w->gdiv), n);
    F(w->gdiv);
    if (lp) {
        F(w->out32);
        A(w->gout, n * w->es, MC_WL_ACTIVATIONS, "ToCopyBackward0 of the mse_loss input");
        if (G) mc_gpu_cast(G, P(w->gout), dt, P(w->gout32), MC_DT_F32, n);
        F(w->gout32);
        wl_move(&w->ctx, &w->ly[L - 1].gh, &w->gout);
    } else {
        wl_move(&w->ctx, &w->ly[L - 1].gh, &w->gout32);
    }
    if (w->seg && wl_seg_backward(w)) return -1;
    for (int l = L - 1; l >= 0 && !w->seg; l--) {
        bool ck = w->c.checkpoint && l < L - 1;
        if (ck && relu_bwd_recompute(w, l)) return -1;
        if (addmm_bwd(w, l, ck)) return -1;
        if (wl_param_grads(w, l)) return -1;
        if (!w->c.checkpoint && l > 0 && relu_bwd(w, l - 1, &w->ly[l - 1].r, false)) return -1;
    }
    F(w->ones); /* torch.autograd.backward's grad_tensors_ */
    if (fp16) F(w->scaled);
    return 0;
}

int wl_seq_micro_step(mc_workload *w, int k)
{
    const int64_t mb = w->mb;
    A(w->x, mb * w->c.in * 4, MC_WL_ACTIVATIONS, "x = randn");
    A(w->y, mb * w->c.out * 4, MC_WL_ACTIVATIONS, "y = randn");
    if (G) {
        uint64_t id = w->c.fixed_data ? 0 : (uint64_t)(w->ctx.step - 1) * (uint64_t)w->c.accum + (uint64_t)k;
        mc_gpu_randn(G, FP(w->x), mb * w->c.in, w->c.seed, (1ULL << 40) + 2 * id);
        mc_gpu_randn(G, FP(w->y), mb * w->c.out, w->c.seed, (1ULL << 40) + 2 * id + 1);
        if (w->cap.on) {
            mc_gpu_to_host(G, w->cap.x[k], P(w->x), mb * w->c.in, MC_DT_F32);
            mc_gpu_to_host(G, w->cap.y[k], P(w->y), mb * w->c.out, MC_DT_F32);
        }
    }
    if (forward(w) || loss_fwd(w) || backward(w)) return -1;
    if (G) mc_gpu_read_loss(G, k, FP(w->loss));
    F(w->x); /* del x, y, out, loss */
    F(w->y);
    F(w->ly[w->L - 1].h);
    F(w->loss);
    return 0;
}
