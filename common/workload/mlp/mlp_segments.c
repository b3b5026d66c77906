/* mlp_segments.c: the requests of a step under
 * torch.utils.checkpoint.checkpoint_sequential(model, S, x, use_reentrant=False)
 * (cfg.checkpoint_segments = S, fp32), read from PyTorch 2.11's
 * torch/utils/checkpoint.py:
 *
 * - The plan: the Sequential's children are its 2L-1 modules (Linear l is
 *   module 2l, ReLU l module 2l+1); segment_size = (2L-1) // S; the first
 *   S-1 segments of segment_size modules each run under checkpoint, the
 *   rest (the last segment, at least segment_size modules) runs plainly
 *   ("the last chunk has to be non-volatile"). A segment may begin or end
 *   between a Linear and its ReLU. S = 1 is the plain model; S > 2L-1 gives
 *   segment_size 0, which PyTorch refuses (range() with a zero step).
 * - Forward of a checkpointed segment: its modules run as usual but save
 *   only holders; its input is kept by the checkpoint frame until the
 *   backward of its first module. Within it run_function rebinds `input`,
 *   so an intermediate goes as soon as the next module's output exists
 *   (a ReLU output after the next Linear's output, a Linear output after
 *   its ReLU's). The plain tail's input is also held by
 *   checkpoint_sequential's local `input` until the model's output exists.
 * - Backward: the first unpack of a segment's holder (its last module's
 *   node) recomputes the segment from its saved input on the backward
 *   thread, and stops once the last holder is packed again (early stop:
 *   _recomputation_hook's pack_hook raises _StopRecomputationError when
 *   recomp_counter reaches len(weak_holders)). Where that last pack falls
 *   decides what the recomputation allocates: autograd packs an op's saved
 *   inputs before its kernel runs and its saved outputs after
 *   (tools/autograd/gen_variable_type.py: setup_derivative() before
 *   emit_call(), emit_save_outputs() after it). ReLU saves its result, so
 *   a segment ending in a ReLU stops once that output exists; addmm saves
 *   its inputs (mat1, mat2), so a segment ending in a Linear stops before
 *   that Linear's addmm: no output, and no addmm on the backward thread
 *   to make its cuBLASLt workspace (a segment of one Linear recomputes
 *   nothing). Every ReLU output inside the segment
 *   is then live at once (the recomputed tensors of the frame), the
 *   pre-ReLU outputs go as the forward's would. A recomputed ReLU output
 *   goes at its ReLU's backward (the last unpacker; apply()'s local, before
 *   the incoming gradient), the segment's input when its first module's
 *   node releases its saved tensors (the frame dies).
 * - Everything else (addmm and ReLU backward, AccumulateGrad, the node
 *   order) is mlp_seq.c's. With the plan of one segment per
 *   Linear+ReLU pair the sequence is exactly cfg.checkpoint's, which
 *   PyTorch's traces confirm (tests/test_workload_segments.c checks it). */
#include <stdio.h>

#include "check.h"
#include "mlp_internal.h"

int wl_seg_plan(int layers, int segments, int *seg)
{
    const int n = 2 * layers - 1;
    if (layers < 2 || segments < 1 || segments > n) return -1;
    const int size = n / segments;
    for (int m = 0; m < n; m++) seg[m] = m < size * (segments - 1) ? m / size : -1;
    return 0;
}

/* The first module of the segment holding module m. */
static int seg_first(const int *seg, int m)
{
    while (m > 0 && seg[m - 1] == seg[m]) m--;
    return m;
}

int wl_seg_forward(mc_workload *w)
{
    const int n = 2 * w->L - 1, *seg = w->seg;
    int tail = 0; /* the plain tail's first module */
    while (seg[tail] >= 0) tail++;
    for (int m = 0; m < n; m++) {
        const int l = m / 2;
        wl_layer *y = &w->ly[l];
        if (m % 2 == 0) {
            if (wl_linear_fwd(w, l, l ? &w->ly[l - 1].r : &w->x, &w->x16, &y->h, 0)) return -1;
            if (l > 0 && seg[m] >= 0 && seg[m - 1] == seg[m]) F(w->ly[l - 1].r); /* rebound */
        } else {
            A(y->r, w->mb * y->out * 4, MC_WL_ACTIVATIONS, "relu output");
            if (G) mc_gpu_relu(G, P(y->r), P(y->h), w->mb * y->out, MC_DT_F32);
            /* Kept only where it is a checkpointed segment's output (the next
             * frame's input, or the tail's, held by checkpoint_sequential). */
            if (!(seg[m - 1] >= 0 && seg[m - 1] != seg[m])) F(y->h);
        }
    }
    if (tail % 2 == 1) F(w->ly[tail / 2].h); /* checkpoint_sequential returns */
    return 0;
}

/* The backward's recomputation of modules a..b (one segment), from its
 * saved input, on the backward thread's handle, up to the early stop: after
 * a last ReLU's output, before a last Linear's addmm (its inputs are packed
 * first; see the top). */
static int recompute(mc_workload *w, int a, int b)
{
    const int last_run = b % 2 == 0 ? b - 1 : b; /* a..last_run run; may be a - 1 */
    for (int m = a; m <= last_run; m++) {
        const int l = m / 2;
        wl_layer *y = &w->ly[l];
        if (m % 2 == 0) {
            const wl_t *in = m == a ? (l ? &w->ly[l - 1].r : &w->x) : &w->ly[l - 1].rr;
            if (wl_linear_fwd(w, l, in, &w->x16r, &w->h2, 1)) return -1;
        } else {
            const wl_t *in = m == a ? &y->h : &w->h2;
            A(y->rr, w->mb * y->out * 4, MC_WL_ACTIVATIONS, "recomputed relu output");
            if (G) mc_gpu_relu(G, P(y->rr), P(*in), w->mb * y->out, MC_DT_F32);
            F(w->h2); /* rebound, or dropped by the early stop (none where m == a) */
        }
    }
    return 0;
}

/* AddmmBackward0 of Linear l (module m), then its parameters' AccumulateGrad. */
static int addmm_bwd(mc_workload *w, int m, int first)
{
    const int l = m / 2, *seg = w->seg;
    wl_layer *y = &w->ly[l];
    const bool ck = seg[m] >= 0, recomputed_in = ck && l > 0 && m != first;
    const wl_t *mat1 = l == 0 ? &w->x : recomputed_in ? &w->ly[l - 1].rr : &w->ly[l - 1].r;
    if (l > 0) {
        wl_layer *p = &w->ly[l - 1];
        A(p->gr, w->mb * y->in * 4, MC_WL_ACTIVATIONS, "mm: grad of Linear input");
        if (wl_workspaces(w, 1, false)) return -1;
        if (G) mc_gpu_gemm_dx(G, 1, P(p->gr), P(y->gh), P(y->W), w->mb, y->in, y->out, MC_DT_F32);
    }
    A(y->gWt, y->out * y->in * 4, MC_WL_GRADS, "mm: grad of weight");
    if (wl_workspaces(w, 1, false)) return -1;
    if (G) mc_gpu_gemm_dw(G, 1, P(y->gWt), P(y->gh), P(*mat1), w->mb, y->in, y->out, MC_DT_F32);
    A(y->gbt, y->out * 4, MC_WL_GRADS, "sum_to: grad of bias");
    if (wl_reduce_begin(w, y->out, w->mb, true, 4)) return -1;
    if (G)
        mc_gpu_bias_grad(G, P(y->gbt), P(y->gh), w->mb, y->out, MC_DT_F32, P(w->red_buf),
                         w->red_buf.bytes);
    wl_reduce_end(w);
    F(y->gh);
    /* Its input goes here where nothing else holds it: a segment's input when
     * the segment began at this Linear (the frame dies), or a plain Linear's
     * input made by a checkpointed ReLU (no ReluBackward0 saved it). */
    if (l > 0 && ((ck && m == first) || (!ck && seg[m - 1] >= 0))) F(w->ly[l - 1].r);
    return wl_param_grads(w, l);
}

/* ReluBackward0 of ReLU l (module m). */
static int relu_bwd(mc_workload *w, int m, int first)
{
    const int l = m / 2;
    const bool ck = w->seg[m] >= 0;
    wl_layer *y = &w->ly[l];
    A(y->gh, w->mb * y->out * 4, MC_WL_ACTIVATIONS, "ReluBackward0");
    if (G) mc_gpu_relu_bwd(G, P(y->gh), P(y->gr), P(ck ? y->rr : y->r), w->mb * y->out, MC_DT_F32);
    F(y->rr); /* a recomputed result: apply()'s local was its last owner */
    F(y->gr);
    if (!ck) F(y->r);
    else if (m == first) F(y->h); /* the segment began at this ReLU: its frame dies */
    return 0;
}

int wl_seg_backward(mc_workload *w)
{
    const int n = 2 * w->L - 1, *seg = w->seg;
    for (int m = n - 1; m >= 0; m--) {
        const int first = seg[m] >= 0 ? seg_first(seg, m) : -1;
        if (seg[m] >= 0 && (m == n - 1 || seg[m + 1] != seg[m]) && recompute(w, first, m))
            return -1;
        if (m % 2 == 0 ? addmm_bwd(w, m, first) : relu_bwd(w, m, first)) return -1;
    }
    return 0;
}
