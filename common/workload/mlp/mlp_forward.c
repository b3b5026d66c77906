/* mlp_forward.c: the forward pass alone (mlp_forward.h), with and
 * without autograd, in PyTorch 2.11's request order for
 *
 *   model = Sequential(Linear(in,H), ReLU(), [Linear(H,H), ReLU()] * (L-2), Linear(H,out))
 *
 * What each op keeps, from autograd's derivative formulas
 * (tools/autograd/derivatives.yaml: addmm saves mat1 where mat2 -- the
 * weight, a parameter -- needs a gradient, and mat2 where mat1 needs one;
 * relu saves its result), the same rules mlp_seq.c's training forward
 * follows:
 *
 *   grad      Linear l's output h_l lives until ReLU's output r_l is made
 *             (Sequential rebinds `input`; ReluBackward0 saves the result,
 *             not h_l). r_l stays: ReluBackward0 and the next AddmmBackward0
 *             hold it until the graph goes (del out). Layer 0's input x is
 *             saved too, but the caller holds it anyway.
 *   no_grad   nothing is saved: when Linear l+1 has made its output, the
 *             rebinding drops r_l, its last owner; h_l goes when r_l is made.
 *
 * So with grad the forward ends holding x, r_0..r_{L-2} and out; under
 * no_grad x and out. The first addmm makes the forward thread's cuBLAS
 * workspace and cuBLASLt workspace after its output (as the training path
 * counts them, mlp_seq.c workspaces()); they are kept (keep = true) and
 * stay in memory_allocated. */
#include "mlp_forward.h"

#include <math.h>
#include <string.h>

#include "check.h"
#include "mlp_internal.h"
#include "workload/core/pytorch_consts.h"

#define FWD_RANDN_STREAM (1ULL << 41) /* x's random stream, apart from the training steps' */

/* x = randn; out = model(x). Returns 0, or -1 on OOM (the caller unwinds). */
static int forward_seq(mc_workload *w, bool grad)
{
    const int64_t mb = w->mb;
    A(w->x, mb * w->c.in * 4, MC_WL_ACTIVATIONS, "x = randn");
    if (G) mc_gpu_randn(G, (float *)WL_PTR(w->x), mb * w->c.in, w->c.seed, FWD_RANDN_STREAM);
    for (int l = 0; l < w->L; l++) {
        wl_layer *y = &w->ly[l];
        const wl_t *in = l ? &w->ly[l - 1].r : &w->x;
        A(y->h, mb * y->out * 4, MC_WL_ACTIVATIONS, "addmm output of Linear");
        if (wl_workspaces(w, 0, MC_PT_ADDMM_USES_LT(y->in, y->out))) return -1; /* the forward thread's */
        if (G) mc_gpu_linear(G, 0, WL_PTR(y->h), WL_PTR(*in), WL_PTR(y->W), WL_PTR(y->b), mb,
                             y->in, y->out, MC_DT_F32);
        if (!grad && l > 0) F(w->ly[l - 1].r); /* rebinding `input` drops its last owner */
        if (l < w->L - 1) {
            A(y->r, mb * y->out * 4, MC_WL_ACTIVATIONS, "relu output");
            if (G) mc_gpu_relu(G, WL_PTR(y->r), WL_PTR(y->h), mb * y->out, MC_DT_F32);
            F(y->h);
        }
    }
    return 0;
}

/* What the forward held, after an OOM or at `del out, x`: every tensor not
 * kept across steps (weights, workspaces and optimizer state stay). */
static void drop_step_tensors(mc_workload *w)
{
    wl_unwind(&w->ctx);
}

static void fill(const mc_workload *w, mc_workload_forward_result *r)
{
    const ca_stats *s = ca_get_stats(w->ctx.a);
    r->peak_allocated = (uint64_t)s->allocated_bytes.peak;
    r->peak_reserved = (uint64_t)s->reserved_bytes.peak;
    memcpy(r->peak_by_category, w->ctx.peak_cat, sizeof w->ctx.peak_cat);
}

mc_wl_status mc_workload_forward(mc_workload *w, bool grad, float *out_host,
                                 mc_workload_forward_result *r)
{
    CHECK(w->c.precision == MC_WL_FP32 && !w->c.checkpoint,
          "mc_workload_forward models fp32 without checkpointing only");
    memset(r, 0, sizeof *r);
    r->time_s = NAN;
    r->status = w->ctx.setup_status;
    if (r->status != MC_WL_OK) {
        fill(w, r);
        return r->status;
    }
    wl_trace(&w->ctx, "# forward (%s)", grad ? "grad" : "no_grad");
    r->allocated_before = (uint64_t)ca_get_stats(w->ctx.a)->allocated_bytes.current;
    wl_reset_peak(&w->ctx);
    if (G) mc_gpu_step_begin(G);
    int rc = forward_seq(w, grad);
    if (G) r->time_s = mc_gpu_step_end(G);
    fill(w, r);
    if (rc != 0) {
        r->status = MC_WL_OOM;
        drop_step_tensors(w);
        r->allocated_out = r->allocated_end = (uint64_t)ca_get_stats(w->ctx.a)->allocated_bytes.current;
        return r->status;
    }
    wl_t *out = &w->ly[w->L - 1].h;
    r->output_bytes = out->bytes;
    r->allocated_out = (uint64_t)ca_get_stats(w->ctx.a)->allocated_bytes.current;
    for (int l = 0; l < w->L - 1; l++)
        if (w->ly[l].r.addr) r->saved_bytes += ca_block_size(w->ctx.a, w->ly[l].r.addr);
    if (G && out_host) mc_gpu_to_host(G, out_host, WL_PTR(*out), w->mb * w->c.out, MC_DT_F32);
    F(*out); /* del out: with grad the graph goes, and the ReLU outputs with it */
    for (int l = 0; l < w->L - 1; l++) F(w->ly[l].r);
    F(w->x);
    r->allocated_end = (uint64_t)ca_get_stats(w->ctx.a)->allocated_bytes.current;
    return r->status;
}
