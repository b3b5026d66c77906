/* sharded_gpu_hooks.cu: the calls a rank's step makes of the runner
 * (sharded_seq.h mc_sh_comm), carried out on the rank's streams: the copies
 * PyTorch makes on the default stream (DDP's bucket copies, FSDP2's
 * chunk_cat and copy-out), the collectives each on a stream of its own, and
 * the events that order them as sharded_gpu.h says. Built only with NCCL. */
#ifdef MC_HAVE_NCCL

#include <string.h>

#include "check_cuda.h"
#include "sharded_copies.h"
#include "sharded_gpu_rank.h"

static float *fp(uint64_t a) { return (float *)(uintptr_t)a; }
static void *vp(uint64_t a) { return (void *)(uintptr_t)a; }

static void d2d(uint64_t dst, uint64_t src, uint64_t bytes, cudaStream_t s)
{
    if (bytes) CHECK_CUDA(cudaMemcpyAsync(vp(dst), vp(src), bytes, cudaMemcpyDeviceToDevice, s));
}

/* Stream `s` waits for what the default stream has queued so far. */
static void after_default(rank_ctx *k, cudaStream_t s)
{
    CHECK_CUDA(cudaEventRecord(k->ev_dep, k->def));
    CHECK_CUDA(cudaStreamWaitEvent(s, k->ev_dep, 0));
}

/* ------------------------------------------------------------ FSDP2 copies */

/* A plan of sharded_copies.h, queued on the default stream. */
static void queue_plan(rank_ctx *k, const mc_sh_copy_plan *p, const uint64_t *dst, uint64_t dst0_bytes,
                       const uint64_t *src)
{
    if (p->zero_dst) CHECK_CUDA(cudaMemsetAsync(vp(dst[0]), 0, dst0_bytes, k->def));
    for (int i = 0; i < p->n; i++) {
        const mc_sh_copy *c = &p->c[i];
        CHECK_CUDA(cudaMemcpy2DAsync(vp(dst[c->dst] + c->dst_off), c->dpitch, vp(src[c->src] + c->src_off),
                                     c->spitch, c->width, c->rows, cudaMemcpyDeviceToDevice, k->def));
    }
}

/* split_with_sizes_copy: the all-gather output into each unsharded
 * parameter (N = 1: the shards are the whole). */
static void copy_out(rank_ctx *k, const mc_sh_comm *c)
{
    if (!c->dst) {
        for (int i = 0; i < c->n; i++) d2d(c->out[i], c->src[i], c->src_bytes[i], k->def);
        return;
    }
    CHECK_CUDA(cudaStreamWaitEvent(k->def, k->ev_ag[c->layer], 0));
    mc_sh_copy_plan p;
    mc_sh_copy_out_plan_n(c->n, c->rows, c->cols, k->world, &p);
    const uint64_t src[1] = {c->dst};
    queue_plan(k, &p, c->out, c->out_bytes[0], src);
}

/* chunk_cat: the gradients into the reduce-scatter input, rank by rank. */
static void chunk_cat(rank_ctx *k, const mc_sh_comm *c)
{
    mc_sh_copy_plan p;
    mc_sh_chunk_cat_plan_n(c->n, c->rows, c->cols, k->world, &p);
    const uint64_t dst[1] = {c->dst};
    queue_plan(k, &p, dst, c->dst_bytes, c->src);
}

/* ------------------------------------------------------------ the hooks */

void sh_gpu_on_comm(void *ctx, const mc_sh_comm *c)
{
    rank_ctx *k = (rank_ctx *)ctx;
    if (sh_gpu_failed(k) && c->kind != MC_SH_STEP_END) { /* the run is over: queue nothing more */
        k->skipped = true;
        return;
    }
    static const char *const AT[] = {"the start", "a copy into a bucket", "an all-reduce", "a copy out of a bucket",
                                     "an all-gather", "a copy-out", "a chunk_cat", "a reduce-scatter",
                                     "a wait for a reduce-scatter", "the backward's end", "the step's end"};
    k->at = AT[c->kind];
    const size_t nf = c->dst_bytes / 4;
    switch (c->kind) {
    case MC_SH_STEP_BEGIN:
        k->skipped = false;
        CHECK_CUDA(cudaEventRecord(k->ev_start, k->def));
        CHECK_CUDA(cudaEventRecord(k->ev_ag_dep, k->def)); /* after the optimizer */
        break;
    case MC_SH_COPY_TO_BUCKET:
    case MC_SH_COPY_FROM_BUCKET:
        d2d(c->dst, c->src[0], c->src_bytes[0], k->def);
        break;
    case MC_SH_ALLREDUCE:
        after_default(k, k->s_ar);
        CHECK_NCCL(ncclAllReduce(fp(c->dst), fp(c->dst), nf, ncclFloat, ncclAvg, k->comm, k->s_ar));
        k->ncoll++;
        break;
    case MC_SH_ALLGATHER: { /* copy-in and all-gather on the all-gather stream */
        uint64_t chunk = 0;
        for (int i = 0; i < c->n; i++) chunk += c->src_bytes[i];
        const uint64_t mine = c->dst + (uint64_t)k->rank * chunk;
        CHECK_CUDA(cudaStreamWaitEvent(k->s_ag, k->ev_ag_dep, 0));
        for (uint64_t i = 0, off = 0; i < (uint64_t)c->n; off += c->src_bytes[i++])
            d2d(mine + off, c->src[i], c->src_bytes[i], k->s_ag);
        CHECK_NCCL(ncclAllGather(fp(mine), fp(c->dst), chunk / 4, ncclFloat, k->comm, k->s_ag));
        CHECK_CUDA(cudaEventRecord(k->ev_ag[c->layer], k->s_ag));
        k->ncoll++;
        break;
    }
    case MC_SH_COPY_OUT:
        copy_out(k, c);
        CHECK_CUDA(cudaEventRecord(k->ev_ag_dep, k->def)); /* its output may be reused from here */
        break;
    case MC_SH_CHUNK_CAT:
        chunk_cat(k, c);
        break;
    case MC_SH_REDUCE_SCATTER:
        after_default(k, k->s_rs);
        if (k->world == 1) d2d(c->out[0], c->dst, c->out_bytes[0], k->s_rs);
        else CHECK_NCCL(ncclReduceScatter(fp(c->dst), fp(c->out[0]), c->out_bytes[0] / 4, ncclFloat, ncclAvg,
                                          k->comm, k->s_rs));
        CHECK_CUDA(cudaEventRecord(k->ev_rs, k->s_rs));
        k->ncoll += k->world > 1;
        break;
    case MC_SH_INPUT_FREED:
        CHECK_CUDA(cudaStreamWaitEvent(k->def, k->ev_rs, 0));
        break;
    case MC_SH_BACKWARD_END: {
        cudaStream_t side[3] = {k->s_ag, k->s_rs, k->s_ar};
        for (int i = 0; i < 3; i++) {
            CHECK_CUDA(cudaEventRecord(k->ev_side[i], side[i]));
            CHECK_CUDA(cudaStreamWaitEvent(k->def, k->ev_side[i], 0));
        }
        break;
    }
    case MC_SH_STEP_END: {
        k->step_ok = false;
        if (k->skipped) { /* part of the step was never queued: it stands for nothing */
            sh_gpu_abort(k);
            break;
        }
        CHECK_CUDA(cudaEventRecord(k->ev_stop, k->def)); /* a failure elsewhere: this step may still finish */
        char what[32];
        snprintf(what, sizeof what, "step %d", k->step);
        if (!sh_gpu_wait(k, k->ev_stop, what)) break;
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, k->ev_start, k->ev_stop));
        k->time_s = (double)ms * 1e-3;
        k->step_ok = true;
        break;
    }
    }
}

#endif /* MC_HAVE_NCCL */
