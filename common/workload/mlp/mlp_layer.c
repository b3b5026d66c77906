/* mlp_layer.c: the pieces of a step that the plain sequence (mlp_seq.c) and
 * checkpoint_sequential's (mlp_segments.c) both use: a Linear's forward with
 * autocast's casts and the workspaces of its GEMM, reduction scratch, and a
 * layer's parameter gradients reaching .grad. Both call down into this file
 * and it calls neither, so the two sequences make no circle. The rules they
 * follow are in mlp_seq.c's notes. */
#include <stdio.h>

#include "check.h"
#include "mlp_internal.h"
#include "workload/core/pytorch_consts.h"
#include "workload/core/reduce_scratch.h"

const char *mlp_name(const char *what, int l)
{
    static char buf[96];
    snprintf(buf, sizeof buf, "%s %d", what, l);
    return buf;
}

/* ------------------------------------------------------------ scratch */

/* gpu_reduce_kernel's scratch: buffer, semaphores (none where it needs no
 * global reduce), both freed when the kernel is queued: reduce_end. */
int wl_reduce_begin(mc_workload *w, int64_t outputs, int64_t inputs, bool along_rows,
                        int scalar_size)
{
    uint64_t buf = 0, sem = 0;
    wl_reduce_scratch(outputs, inputs, along_rows, 4, scalar_size, w->c.sm_count, &buf, &sem);
    if (!buf) return 0;
    A(w->red_buf, buf, MC_WL_OTHER, "reduction buffer");
    A(w->red_sem, sem, MC_WL_OTHER, "reduction semaphores");
    return 0;
}

void wl_reduce_end(mc_workload *w)
{
    F(w->red_sem);
    F(w->red_buf);
}

/* First GEMM on a thread's handle: its cuBLAS workspace, and for Lt calls
 * its cuBLASLt workspace after it. handle 0 forward, 1 backward. */
int wl_workspaces(mc_workload *w, int handle, bool lt)
{
    wl_t *ws = handle ? &w->ws_bwd : &w->ws_fwd, *lw = handle ? &w->lt_bwd : &w->lt_fwd;
    if (!ws->addr) {
        AK(*ws, MC_PT_CUBLAS_WS_BYTES, MC_WL_WORKSPACE, handle ? "cuBLAS workspace, backward thread"
                                                         : "cuBLAS workspace, forward thread");
        if (G) mc_gpu_set_workspace(G, handle, P(*ws), ws->bytes);
    }
    if (lt && !lw->addr) {
        AK(*lw, MC_PT_CUBLASLT_WS_BYTES, MC_WL_WORKSPACE, handle ? "cuBLASLt workspace, backward thread"
                                                           : "cuBLASLt workspace, forward thread");
        if (G) mc_gpu_set_lt_workspace(G, handle, P(*lw), lw->bytes);
    }
    return 0;
}

/* ------------------------------------------------------------ a Linear's forward */

/* Linear l on `in`: autocast's casts (weight and bias cached in ly[l]; an
 * fp32 input's cast in *x16), the addmm output *h, workspaces at first use. */
int wl_linear_fwd(mc_workload *w, int l, const wl_t *in, wl_t *x16, wl_t *h, int handle)
{
    wl_layer *y = &w->ly[l];
    const int dt = mlp_dtype(w);
    const void *xin = P(*in), *Wc = P(y->W), *bc = P(y->b);
    if (mlp_lowp(w)) {
        static const int order[2][3] = {{2, 1, 0}, {0, 1, 2}}; /* 0 bias, 1 weight, 2 input */
        for (int j = 0; j < 3; j++) {
            int what = order[CAST_BIAS_FIRST][j];
            if (what == 0) {
                A(y->b16, y->out * 2, MC_WL_CASTS, mlp_name("autocast bias cast", l));
                if (G) mc_gpu_cast(G, P(y->b16), dt, P(y->b), MC_DT_F32, y->out);
            } else if (what == 1) {
                A(y->W16, y->out * y->in * 2, MC_WL_CASTS, mlp_name("autocast weight cast", l));
                if (G) mc_gpu_cast(G, P(y->W16), dt, P(y->W), MC_DT_F32, y->out * y->in);
            } else if (l == 0) {
                A(*x16, w->mb * y->in * 2, MC_WL_ACTIVATIONS, "autocast input cast");
                if (G) mc_gpu_cast(G, P(*x16), dt, P(*in), MC_DT_F32, w->mb * y->in);
            }
        }
        xin = l == 0 ? P(*x16) : xin;
        Wc = P(y->W16);
        bc = P(y->b16);
    }
    A(*h, w->mb * y->out * w->es, MC_WL_ACTIVATIONS, mlp_name("addmm output of Linear", l));
    if (wl_workspaces(w, handle, MC_PT_ADDMM_USES_LT(y->in, y->out))) return -1;
    if (G) mc_gpu_linear(G, handle, P(*h), xin, Wc, bc, w->mb, y->in, y->out, dt);
    return 0;
}

/* ------------------------------------------------------------ gradients */

/* .grad: stolen on the first micro-step, added in place afterwards. */
static void accumulate(mc_workload *w, wl_t *grad, wl_t *g, int64_t n)
{
    if (!grad->addr) {
        wl_move(&w->ctx, grad, g);
        return;
    }
    if (G) mc_gpu_add(G, FP(*grad), FP(*g), n);
    F(*g);
}

/* ToCopyBackward0 of an autocast cast: the fp32 gradient, then AccumulateGrad. */
static int to_fp32(mc_workload *w, wl_t *g32, wl_t *glow, wl_t *grad, int64_t n, const char *what)
{
    A(*g32, n * 4, MC_WL_GRADS, what);
    if (G) mc_gpu_cast(G, P(*g32), MC_DT_F32, P(*glow), mlp_dtype(w), n);
    F(*glow);
    accumulate(w, grad, g32, n);
    return 0;
}

/* After AddmmBackward0 of layer l: TBackward0, then the parameters' gradients
 * reach .grad in the order of their nodes' sequence numbers. */
int wl_param_grads(mc_workload *w, int l)
{
    wl_layer *y = &w->ly[l];
    const int64_t nW = y->out * y->in;
    if (!mlp_lowp(w)) {
        accumulate(w, &y->gb, &y->gbt, y->out);
        accumulate(w, &y->gW, &y->gWt, nW);
        return 0;
    }
    if (CAST_BIAS_FIRST) { /* the weight's cast is the younger node */
        if (to_fp32(w, &y->gW32, &y->gWt, &y->gW, nW, mlp_name("ToCopyBackward0 weight grad", l))) return -1;
        return to_fp32(w, &y->gb32, &y->gbt, &y->gb, y->out, mlp_name("ToCopyBackward0 bias grad", l));
    }
    if (to_fp32(w, &y->gb32, &y->gbt, &y->gb, y->out, mlp_name("ToCopyBackward0 bias grad", l))) return -1;
    return to_fp32(w, &y->gW32, &y->gWt, &y->gW, nW, mlp_name("ToCopyBackward0 weight grad", l));
}

