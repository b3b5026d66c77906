/* sharded_seq.c: the requests of one rank's data-parallel training step, in
 * PyTorch 2.11's order (sharded_seq.h says where each wrapper's requests
 * come from). The single-GPU part follows mlp_seq.c's rules for fp32,
 * one micro-step, no checkpointing, request for request (the test checks
 * plain mode against build/workload's model); the wrappers' requests sit at
 * the points their hooks run:
 *
 * - FSDP2 pre-forward hook of Linear l: all-gather, copy-out; post-forward:
 *   reshard. Pre-backward (a tensor hook on the Linear's output, run before
 *   AddmmBackward0): copy-out, then prefetch of layer l-1. Post-backward
 *   (RegisterPostBackwardFunction on the Linear's input, whose node runs
 *   after the parameters' AccumulateGrad nodes): reshard, reduce-scatter.
 * - DDP: AccumulateGrad's post hook copies each gradient into its bucket and
 *   launches the bucket's all-reduce when the bucket is complete; the final
 *   callback copies the buckets back into .grad. No request is made.
 *
 * On a GPU (G set) each request is followed by the arithmetic that fills the
 * tensor, with the workload's kernels (core/wl_gpu.h) on the rank's stream,
 * as mlp_seq.c runs them for the same fp32 step; the collectives and their
 * copies are the runner's (the hooks, sharded_gpu.cu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sharded_fsdp.h"
#include "sharded_internal.h"
#include "workload/core/pytorch_consts.h"
#include "workload/core/reduce_scratch.h"

static void comm(mc_sh_run *r, const mc_sh_comm *c)
{
    if (r->hooks.comm) r->hooks.comm(r->hooks.ctx, c);
}

/* ------------------------------------------------------------ FSDP2 hooks */

/* FSDP2 makes two of its buffers on its own streams, so their blocks come
 * from, and go back to, those streams' pools (a PyTorch 2.11 snapshot on two
 * H100s: the all-gather output on the all-gather copy-in stream, the
 * reduce-scatter output on the reduce-scatter stream; everything else,
 * the reduce-scatter input included, on the default stream): sharded_fsdp.h's ids. */
#define SH_STREAM_ALL_GATHER MC_FSDP_STREAM_ALL_GATHER
#define SH_STREAM_REDUCE_SCATTER MC_FSDP_STREAM_REDUCE_SCATTER

static void fill_shapes(const mc_sh_run *r, int l, mc_sh_comm *c)
{
    c->layer = l;
    c->n = 2;
    c->rows[0] = c->rows[1] = r->ly[l].out;
    c->cols[0] = r->ly[l].in;
    c->cols[1] = 1;
}

/* FSDPParamGroup.unshard: the all-gather output (none when N = 1). */
static int fsdp_unshard(mc_sh_run *r, int l)
{
    sh_layer *y = &r->ly[l];
    if (r->c.world == 1 || y->ag.addr || y->uW.addr) return 0; /* N=1, prefetched, or unsharded */
    const uint64_t shard = sh_shard_bytes(r, l, false) + sh_shard_bytes(r, l, true);
    if (wl_alloc_on(WL_CTX, SH_STREAM_ALL_GATHER, &y->ag, (uint64_t)r->c.world * shard, MC_WL_WEIGHTS,
                    false, "all_gather_output"))
        return -1;
    mc_sh_comm c = {.kind = MC_SH_ALLGATHER, .dst = y->ag.addr, .dst_bytes = y->ag.bytes,
                    .src = {y->W.addr, y->b.addr}, .src_bytes = {y->W.bytes, y->b.bytes}};
    fill_shapes(r, l, &c);
    comm(r, &c);
    return 0;
}

/* wait_for_unshard: copy-out into each parameter's unsharded storage (W,
 * then b), then the all-gather output freed: in forward the previous layer's
 * (deferred to here), in backward this layer's. Under ZeRO-2 the last
 * layer's copy-out is the step's peak: every layer is unsharded by then. */
static int fsdp_wait_unshard(mc_sh_run *r, int l, bool forward)
{
    sh_layer *y = &r->ly[l];
    if (y->uW.addr) return 0; /* zero2 in backward: still unsharded */
    A(y->uW, (uint64_t)r->c.world * sh_shard_bytes(r, l, false), MC_WL_WEIGHTS, "unsharded weight");
    A(y->ub, (uint64_t)r->c.world * sh_shard_bytes(r, l, true), MC_WL_WEIGHTS, "unsharded bias");
    A(r->copy_meta, sh_split_copy_scratch_bytes(r, l), MC_WL_OTHER, "split_with_sizes_copy metadata");
    F(r->copy_meta);
    mc_sh_comm c = {.kind = MC_SH_COPY_OUT, .dst = y->ag.addr, .dst_bytes = y->ag.bytes,
                    .src = {y->W.addr, y->b.addr}, .src_bytes = {y->W.bytes, y->b.bytes},
                    .out = {y->uW.addr, y->ub.addr}, .out_bytes = {y->uW.bytes, y->ub.bytes}};
    fill_shapes(r, l, &c);
    comm(r, &c);
    if (forward && r->ag_state) { /* the previous layer's, after this copy-out */
        F(*r->ag_state);
        r->ag_state = NULL;
    }
    if (forward && r->c.world > 1) r->ag_state = &y->ag;
    else F(y->ag);
    return 0;
}

static void fsdp_reshard(mc_sh_run *r, int l)
{
    F(r->ly[l].uW);
    F(r->ly[l].ub);
}

/* The previous reduce-scatter's input goes once that reduce-scatter is done
 * (the default stream waits for it, as FSDP2's post_backward does). */
static void free_rs_input(mc_sh_run *r)
{
    if (!r->rs_state) return;
    mc_sh_comm c = {.kind = MC_SH_INPUT_FREED, .dst = r->rs_state->addr, .dst_bytes = r->rs_state->bytes};
    comm(r, &c);
    F(*r->rs_state);
    r->rs_state = NULL;
}

/* post_backward: reshard, the previous reduce-scatter input freed, this
 * layer's made, the unsharded grads freed after chunk_cat, reduce_output
 * made (it holds the sharded grads). */
static int fsdp_post_backward(mc_sh_run *r, int l)
{
    sh_layer *y = &r->ly[l];
    fsdp_reshard(r, l);
    free_rs_input(r);
    const uint64_t shard = sh_shard_bytes(r, l, false) + sh_shard_bytes(r, l, true);
    A(y->rs_in, (uint64_t)r->c.world * shard, MC_WL_GRADS, "reduce_scatter_input");
    mc_sh_comm c = {.kind = MC_SH_CHUNK_CAT, .dst = y->rs_in.addr, .dst_bytes = y->rs_in.bytes,
                    .src = {y->gW.addr, y->gb.addr}, .src_bytes = {y->gW.bytes, y->gb.bytes}};
    fill_shapes(r, l, &c);
    A(r->copy_meta, sh_chunk_cat_scratch_bytes(r, l), MC_WL_OTHER, "chunk_cat metadata");
    F(r->copy_meta);
    comm(r, &c); /* the copy-in only reads the grads */
    F(y->gW); /* foreach_reduce drops the weight's; the bias's goes after reduce_output */
    if (wl_alloc_on(WL_CTX, SH_STREAM_REDUCE_SCATTER, &y->rs_out, shard, MC_WL_GRADS, false,
                    "reduce_output (sharded grads)"))
        return -1;
    F(y->gb);
    c.kind = MC_SH_REDUCE_SCATTER;
    c.out[0] = y->rs_out.addr;
    c.out_bytes[0] = y->rs_out.bytes;
    c.src[0] = c.src[1] = 0;
    comm(r, &c);
    y->gWs.addr = y->rs_out.addr; /* the sharded .grad: views of reduce_output */
    y->gbs.addr = y->rs_out.addr + sh_shard_bytes(r, l, false);
    r->rs_state = &y->rs_in;
    return 0;
}

/* ------------------------------------------------------------ DDP hooks */

/* AccumulateGrad's post hook: into the bucket; all-reduce a full bucket. */
static void ddp_ready(mc_sh_run *r, int l, bool bias)
{
    if (r->c.mode != MC_SH_DDP) return;
    sh_layer *y = &r->ly[l];
    int b = y->bucket_of[bias];
    const wl_t *g = bias ? &y->gb : &y->gW;
    mc_sh_comm c = {.kind = MC_SH_COPY_TO_BUCKET, .layer = l, .dst = r->bucket[b].addr + y->bucket_off[bias],
                    .dst_bytes = g->bytes, .src = {g->addr, 0}, .src_bytes = {g->bytes, 0}};
    comm(r, &c);
    if (--r->bucket_left[b] == 0) {
        mc_sh_comm ar = {.kind = MC_SH_ALLREDUCE, .layer = b, .dst = r->bucket[b].addr,
                         .dst_bytes = r->bucket[b].bytes};
        comm(r, &ar);
    }
}

/* finalize_backward: copy_bucket_to_grad for every parameter. */
static void ddp_finalize(mc_sh_run *r)
{
    if (r->c.mode != MC_SH_DDP) return;
    for (int l = 0; l < r->L; l++)
        for (int bias = 0; bias < 2; bias++) {
            sh_layer *y = &r->ly[l];
            const wl_t *g = bias ? &y->gb : &y->gW;
            mc_sh_comm c = {.kind = MC_SH_COPY_FROM_BUCKET, .layer = l, .dst = g->addr,
                            .dst_bytes = g->bytes,
                            .src = {r->bucket[y->bucket_of[bias]].addr + y->bucket_off[bias], 0},
                            .src_bytes = {g->bytes, 0}};
            comm(r, &c);
        }
}

/* Reducer::_rebuild_buckets, in DDP's _pre_forward of step 2 (after x and
 * y exist): the buckets remade in the order the gradients came in during
 * step 1. sync_bucket_indices first sends the new bucket indices (2L + 1
 * int32) and sizes (one int32 a bucket) through device tensors, made and
 * freed at once; then the old buckets go (buckets_.clear()) and the new
 * ones are made. As a PyTorch 2.11 snapshot on two H100s has it. */
static int ddp_rebuild(mc_sh_run *r)
{
    const int old_n = r->nbucket;
    wl_t *old = calloc((size_t)(2 * r->L), sizeof *old);
    CHECK(old != NULL, "out of host memory");
    for (int k = 0; k < old_n; k++) wl_move(WL_CTX, &old[k], &r->bucket[k]);
    sh_ddp_assign(r, true);
    wl_t idx = {0}, sizes = {0};
    bool ok = wl_alloc(WL_CTX, &idx, (uint64_t)(2 * r->L + 1) * 4, MC_WL_OTHER, false,
                       "sync_bucket_indices: indices") == 0 &&
              wl_alloc(WL_CTX, &sizes, (uint64_t)r->nbucket * 4, MC_WL_OTHER, false,
                       "sync_bucket_indices: sizes") == 0;
    /* Out of memory or not, these go now (old[] is about to be freed). */
    F(sizes);
    F(idx);
    for (int k = 0; k < old_n; k++) F(old[k]);
    free(old);
    if (!ok || sh_ddp_alloc_buckets(r) != 0) return -1;
    r->rebuilt = true;
    return 0;
}

/* DDP at a step's start: the rebuild (step 2), and every bucket's count of
 * gradients still to come. */
static int ddp_step_begin(mc_sh_run *r)
{
    if (r->c.mode != MC_SH_DDP) return 0;
    if (r->step == 2 && !r->rebuilt && ddp_rebuild(r) != 0) return -1;
    memset(r->bucket_left, 0, (size_t)(2 * r->L) * sizeof *r->bucket_left);
    for (int l = 0; l < r->L; l++) {
        r->bucket_left[r->ly[l].bucket_of[0]]++;
        r->bucket_left[r->ly[l].bucket_of[1]]++;
    }
    return 0;
}

/* ------------------------------------------------------------ the step */

/* gpu_reduce_kernel's scratch (none where it needs no global reduce),
 * allocated around the reduction; on the GPU the bias gradient gb of
 * layer l (NULL: the loss's mean, whose kernel takes none) uses it. */
static int reduce_scratch(mc_sh_run *r, int64_t outputs, int64_t inputs, bool along_rows, int l)
{
    uint64_t buf = 0, sem = 0;
    wl_reduce_scratch(outputs, inputs, along_rows, 4, 4, r->c.wl.sm_count, &buf, &sem);
    if (buf) {
        A(r->red_buf, buf, MC_WL_OTHER, "reduction buffer");
        A(r->red_sem, sem, MC_WL_OTHER, "reduction semaphores");
    }
    if (G && l >= 0)
        mc_gpu_bias_grad(G, P(r->ly[l].gbt), P(r->ly[l].gh), r->c.wl.batch, r->ly[l].out, MC_DT_F32,
                         P(r->red_buf), r->red_buf.bytes);
    F(r->red_sem);
    F(r->red_buf);
    return 0;
}

/* A thread's first GEMM takes its cuBLAS workspace; the forward's first
 * cuBLASLt addmm (lt) the cuBLASLt workspace after it. */
static int workspaces(mc_sh_run *r, bool backward, bool lt)
{
    if (!backward) {
        if (!r->ws_fwd.addr) {
            AK(r->ws_fwd, MC_PT_CUBLAS_WS_BYTES, MC_WL_WORKSPACE, "cuBLAS workspace, forward thread");
            if (G) mc_gpu_set_workspace(G, 0, P(r->ws_fwd), r->ws_fwd.bytes);
        }
        if (lt && !r->lt_fwd.addr) {
            AK(r->lt_fwd, MC_PT_CUBLASLT_WS_BYTES, MC_WL_WORKSPACE, "cuBLASLt workspace, forward thread");
            if (G) mc_gpu_set_lt_workspace(G, 0, P(r->lt_fwd), r->lt_fwd.bytes);
        }
    } else if (!r->ws_bwd.addr) {
        AK(r->ws_bwd, MC_PT_CUBLAS_WS_BYTES, MC_WL_WORKSPACE, "cuBLAS workspace, backward thread");
        if (G) mc_gpu_set_workspace(G, 1, P(r->ws_bwd), r->ws_bwd.bytes);
    }
    return 0;
}

static int forward(mc_sh_run *r)
{
    const int64_t mb = r->c.wl.batch;
    const bool sh = sh_sharded(r);
    for (int l = 0; l < r->L; l++) {
        sh_layer *y = &r->ly[l];
        if (sh && (fsdp_unshard(r, l) || fsdp_wait_unshard(r, l, true))) return -1;
        A(y->h, mb * y->out * 4, MC_WL_ACTIVATIONS, "addmm output of Linear");
        if (workspaces(r, false, MC_PT_ADDMM_USES_LT(y->in, y->out))) return -1;
        if (G) mc_gpu_linear(G, 0, P(y->h), l ? P(r->ly[l - 1].r) : P(r->x), sh ? P(y->uW) : P(y->W),
                             sh ? P(y->ub) : P(y->b), mb, y->in, y->out, MC_DT_F32);
        if (sh && r->c.mode == MC_SH_FSDP) fsdp_reshard(r, l);
        if (l < r->L - 1) {
            A(y->r, mb * y->out * 4, MC_WL_ACTIVATIONS, "relu output");
            if (G) mc_gpu_relu(G, P(y->r), P(y->h), mb * y->out, MC_DT_F32);
            F(y->h);
        }
    }
    if (r->ag_state) { /* the root's post-forward frees the last all-gather output */
        F(*r->ag_state);
        r->ag_state = NULL;
    }
    return 0;
}

static int loss_fwd(mc_sh_run *r)
{
    const int64_t n = r->c.wl.batch * r->c.wl.out;
    A(r->mse, n * 4, MC_WL_ACTIVATIONS, "mse_loss elementwise");
    A(r->mse_tmp, n * 4, MC_WL_ACTIVATIONS, "mse_loss second [n]");
    if (reduce_scratch(r, 1, n, false, -1)) return -1;
    if (G) mc_gpu_mse(G, FP(r->mse), FP(r->mse_tmp), FP(r->ly[r->L - 1].h), FP(r->y), n, 1.0f);
    F(r->mse_tmp);
    A(r->loss, 4, MC_WL_OTHER, "loss");
    if (G) mc_gpu_scalar(G, FP(r->loss), FP(r->mse), NULL, 1.0f);
    F(r->mse);
    return 0;
}

static int addmm_bwd(mc_sh_run *r, int l)
{
    sh_layer *y = &r->ly[l];
    const int64_t mb = r->c.wl.batch;
    const void *W = sh_sharded(r) ? P(y->uW) : P(y->W);
    if (l > 0) {
        A(r->ly[l - 1].gr, mb * y->in * 4, MC_WL_ACTIVATIONS, "mm grad of the input");
        if (workspaces(r, true, false)) return -1;
        if (G) mc_gpu_gemm_dx(G, 1, P(r->ly[l - 1].gr), P(y->gh), W, mb, y->in, y->out, MC_DT_F32);
    }
    A(y->gWt, y->out * y->in * 4, MC_WL_GRADS, "mm grad of the weight");
    if (workspaces(r, true, false)) return -1;
    if (G) mc_gpu_gemm_dw(G, 1, P(y->gWt), P(y->gh), l ? P(r->ly[l - 1].r) : P(r->x), mb, y->in, y->out,
                          MC_DT_F32);
    A(y->gbt, y->out * 4, MC_WL_GRADS, "sum grad of the bias");
    if (reduce_scratch(r, y->out, mb, true, l)) return -1;
    F(y->gh);
    /* AccumulateGrad, bias first (the younger node): .grad steals the block. */
    wl_move(WL_CTX, &y->gb, &y->gbt);
    ddp_ready(r, l, true);
    wl_move(WL_CTX, &y->gW, &y->gWt);
    ddp_ready(r, l, false);
    return 0;
}

static int backward(mc_sh_run *r)
{
    const int L = r->L;
    const bool sh = sh_sharded(r);
    const int64_t n = r->c.wl.batch * r->c.wl.out;
    A(r->ones, 4, MC_WL_OTHER, "backward's ones_like");
    if (G) mc_gpu_fill(G, FP(r->ones), 1.0f, 1);
    A(r->gdiv, 4, MC_WL_OTHER, "DivBackward0");
    if (G) mc_gpu_scalar(G, FP(r->gdiv), FP(r->ones), NULL, 1.0f);
    A(r->ly[L - 1].gh, n * 4, MC_WL_ACTIVATIONS, "MseLossBackward0");
    if (G) mc_gpu_mse_bwd(G, FP(r->ly[L - 1].gh), FP(r->ly[L - 1].h), FP(r->y), FP(r->gdiv), n);
    F(r->gdiv);
    for (int l = L - 1; l >= 0; l--) {
        if (sh) { /* pre-backward: gather (unless prefetched), then prefetch layer l-1 */
            if (fsdp_unshard(r, l) || fsdp_wait_unshard(r, l, false)) return -1;
            if (l > 0 && r->c.mode == MC_SH_FSDP && fsdp_unshard(r, l - 1)) return -1;
        }
        if (addmm_bwd(r, l)) return -1;
        if (sh && l > 0 && fsdp_post_backward(r, l)) return -1;
        if (l > 0) { /* ReluBackward0 of layer l-1 */
            sh_layer *p = &r->ly[l - 1];
            A(p->gh, r->c.wl.batch * p->out * 4, MC_WL_ACTIVATIONS, "grad of the Linear output");
            if (G) mc_gpu_relu_bwd(G, P(p->gh), P(p->gr), P(p->r), r->c.wl.batch * p->out, MC_DT_F32);
            F(p->gr);
            F(p->r);
        }
    }
    if (sh) { /* the root's final callback: layer 0's post-backward, the last input */
        if (fsdp_post_backward(r, 0)) return -1;
        free_rs_input(r);
    }
    mc_sh_comm end = {.kind = MC_SH_BACKWARD_END};
    comm(r, &end);
    ddp_finalize(r);
    F(r->ones);
    return 0;
}

/* x and y: data_chunks chunks of rows, chunk q drawn as rank
 * rank * data_chunks + q draws its one, from the step's numbers (the same
 * every step with fixed_data), so that one GPU can draw N ranks' batches. */
static void draw_batch(mc_sh_run *r)
{
    const int chunks = r->c.data_chunks > 1 ? r->c.data_chunks : 1;
    const int64_t rows = r->c.wl.batch / chunks, in = r->c.wl.in, out = r->c.wl.out;
    const uint64_t step = r->c.wl.fixed_data ? 0 : (uint64_t)(r->step - 1);
    for (int q = 0; q < chunks; q++) {
        const uint64_t id = step * 65536 * 65536 + (uint64_t)r->c.rank * (uint64_t)chunks + (uint64_t)q;
        mc_gpu_randn(G, FP(r->x) + q * rows * in, rows * in, r->c.wl.seed, (1ULL << 40) + 2 * id);
        mc_gpu_randn(G, FP(r->y) + q * rows * out, rows * out, r->c.wl.seed, (1ULL << 40) + 2 * id + 1);
    }
}

int sh_seq_micro_step(mc_sh_run *r)
{
    const int64_t mb = r->c.wl.batch;
    mc_sh_comm begin = {.kind = MC_SH_STEP_BEGIN};
    comm(r, &begin);
    A(r->x, mb * r->c.wl.in * 4, MC_WL_ACTIVATIONS, "x = randn");
    A(r->y, mb * r->c.wl.out * 4, MC_WL_ACTIVATIONS, "y = randn");
    if (G) draw_batch(r);
    if (ddp_step_begin(r) || forward(r) || loss_fwd(r) || backward(r)) return -1;
    if (G) mc_gpu_read_loss(G, 0, FP(r->loss));
    F(r->x);
    F(r->y);
    F(r->ly[r->L - 1].h);
    F(r->loss);
    return 0;
}

/* ------------------------------------------------------------ optimizer */

/* torch/optim foreach on the local tensors (DTensor's local shards when
 * sharded), core/optimizer_step.c's requests: momentum_buffer =
 * grad.clone() at the first step; Adam's exp_avg, exp_avg_sq at the first
 * step and _foreach_sqrt's list, freed last first when _multi_tensor_adam
 * returns. SGD makes no request. */
int sh_seq_optimizer(mc_sh_run *r)
{
    bool skipped;
    return wl_optim_step(&r->ctx, &r->opt, r->params, 2 * r->L, false, NULL, NULL, &skipped);
}

/* zero_grad(set_to_none=True), parameters in order; sharded grads are views
 * of their layer's reduce_output, which goes with the layer's last view. */
void sh_seq_zero_grad(mc_sh_run *r)
{
    for (int l = 0; l < r->L; l++) {
        if (sh_sharded(r)) {
            F(r->ly[l].rs_out);
            r->ly[l].gWs.addr = r->ly[l].gbs.addr = 0;
        } else {
            F(r->ly[l].gW);
            F(r->ly[l].gb);
        }
    }
}
