/* sharded_run.c: a rank's data-parallel run over the allocator model: the
 * configuration, set-up as the wrapper leaves the model (DDP's bucket,
 * FSDP2's shards), steps, and the model-only prediction. The step's
 * requests are sharded_seq.c's; shard sizes and buckets sharded_layout.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sharded_internal.h"
#include "sharded_plan.h"
#include "workload/core/linear_stack.h"

static const char *const MODE_NAME[MC_SH_NMODE] = {"plain", "ddp", "zero2", "fsdp"};

const char *mc_sh_mode_name(mc_sh_mode m)
{
    return m >= 0 && m < MC_SH_NMODE ? MODE_NAME[m] : "?";
}

int mc_sh_mode_parse(const char *s, mc_sh_mode *m)
{
    for (int i = 0; i < MC_SH_NMODE; i++)
        if (strcmp(s, MODE_NAME[i]) == 0) {
            *m = (mc_sh_mode)i;
            return 0;
        }
    return -1;
}

mc_sh_net mc_sh_net_default(void)
{
    mc_sh_net n;
    memset(&n, 0, sizeof n);
    n.optimizer = MC_WL_SGD;
    n.alloc = ca_config_default();
    n.host_capacity = MC_WL_DEFAULT_HOST_CAPACITY;
    n.sm_count = MC_WL_DEFAULT_SM_COUNT;
    return n;
}

int mc_sh_config_check(const mc_sh_config *c, char *err, size_t len)
{
    const mc_sh_net *n = &c->wl;
    if (wl_stack_check_shape(n->layers, n->in, n->width, n->out, n->batch, err, len) != 0) return -1;
    if ((unsigned)n->optimizer > MC_WL_ADAM) {
        snprintf(err, len, "the sharded model's optimizers are sgd, momentum and adam");
        return -1;
    }
    if (!(n->lr >= 0) || n->lr > 1e6 || n->host_capacity == 0 || n->sm_count < 1) {
        snprintf(err, len, "bad lr, host capacity or SM count");
        return -1;
    }
    if (wl_stack_check_bytes(n->in, n->width, n->out, n->batch, err, len) != 0) return -1;
    char e2[200];
    if (ca_config_check(&n->alloc, e2, sizeof e2) != 0) {
        snprintf(err, len, "allocator: %s", e2);
        return -1;
    }
    if (c->mode < 0 || c->mode >= MC_SH_NMODE) {
        snprintf(err, len, "unknown data-parallel mode");
        return -1;
    }
    if (c->world < 1 || c->world > 65536) {
        snprintf(err, len, "ranks must be 1..65536, not %d", c->world);
        return -1;
    }
    if (c->rank < 0 || c->rank >= c->world) {
        snprintf(err, len, "rank %d outside 0..%d", c->rank, c->world - 1);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ life cycle */

/* dist.barrier() before the first step (tests/torch/fsdp_reference.py, as
 * most training scripts): ProcessGroupNCCL all-reduces a one-element tensor
 * and keeps it for the group's life, a 512 B block. Measured on two H100s:
 * memory_allocated() grows by 512 B across the barrier, in every mode and
 * shape, and the block is still there at every step's end. */
static int barrier(mc_sh_run *r)
{
    AK(r->barrier, 4, MC_WL_OTHER, "dist.barrier()'s tensor, kept by the process group");
    return 0;
}

/* The model on the device (parameters in order), then the wrapper. */
static int setup(mc_sh_run *r)
{
    for (int l = 0; l < r->L; l++) {
        sh_layer *y = &r->ly[l];
        AK(y->W, (uint64_t)(y->out * y->in) * 4, MC_WL_WEIGHTS, "weight");
        AK(y->b, (uint64_t)y->out * 4, MC_WL_WEIGHTS, "bias");
        if (G) { /* build/workload's init (mlp_seq.c): the same on every rank */
            float bound = (float)(1.0 / sqrt((double)y->in));
            mc_gpu_uniform(G, FP(y->W), y->out * y->in, bound, r->c.wl.seed, 2 * (uint64_t)l);
            mc_gpu_uniform(G, FP(y->b), y->out, bound, r->c.wl.seed, 2 * (uint64_t)l + 1);
        }
    }
    if (r->c.mode == MC_SH_PLAIN) return 0;
    if (r->c.mode == MC_SH_DDP) {
        sh_ddp_assign(r, false);
        if (sh_ddp_alloc_buckets(r) != 0) return -1;
        return barrier(r);
    }
    /* fully_shard(layer) in order, then the root (no parameters of its
     * own): each parameter's padded shard made, then the full one dropped. */
    for (int l = 0; l < r->L; l++) {
        sh_layer *y = &r->ly[l];
        wl_t w = {0}, b = {0};
        AK(w, sh_shard_bytes(r, l, false), MC_WL_WEIGHTS, "padded shard (weight)");
        AK(b, sh_shard_bytes(r, l, true), MC_WL_WEIGHTS, "padded shard (bias)");
        if (G) { /* this rank's rows, zeros past the parameter's end */
            const uint64_t first = (uint64_t)(mc_fsdp_padded_rows(y->out, r->c.world) * r->c.rank);
            mc_gpu_zero(G, P(w), w.bytes);
            mc_gpu_zero(G, P(b), b.bytes);
            mc_gpu_copy(G, P(w), FP(y->W) + first * (uint64_t)y->in, sh_local_bytes(r, l, false));
            mc_gpu_copy(G, P(b), FP(y->b) + first, sh_local_bytes(r, l, true));
        }
        F(y->W);
        F(y->b);
        wl_move(&r->ctx, &y->W, &w);
        wl_move(&r->ctx, &y->b, &b);
    }
    return barrier(r);
}

static mc_sh_run *create(const mc_sh_config *c, const ca_backend *backend, bool on_gpu,
                         const mc_sh_hooks *hooks, char *err, size_t len)
{
    if (mc_sh_config_check(c, err, len) != 0) return NULL;
    mc_sh_run *r = calloc(1, sizeof *r);
    CHECK(r != NULL, "out of host memory");
    r->c = *c;
    if (hooks) r->hooks = *hooks;
    if (backend) wl_ctx_open_backend(&r->ctx, &c->wl.alloc, *backend);
    else wl_ctx_open(&r->ctx, &c->wl.alloc, on_gpu, c->wl.host_capacity, 1, c->trace, c->trace_steps);
    r->L = c->wl.layers;
    r->ly = calloc((size_t)r->L, sizeof *r->ly);
    r->bucket = calloc((size_t)(2 * r->L), sizeof *r->bucket);
    r->bucket_left = calloc((size_t)(2 * r->L), sizeof *r->bucket_left);
    CHECK(r->ly && r->bucket && r->bucket_left, "out of host memory");
    for (int l = 0; l < r->L; l++) {
        r->ly[l].in = l == 0 ? c->wl.in : c->wl.width;
        r->ly[l].out = l == r->L - 1 ? c->wl.out : c->wl.width;
    }
    wl_optim_init(&r->opt, c->wl.optimizer, c->wl.lr, false);
    r->params = calloc((size_t)(2 * r->L), sizeof *r->params);
    CHECK(r->params != NULL, "out of host memory");
    const bool sh = sh_sharded(r);
    for (int l = 0; l < r->L; l++) { /* the optimizer's tensors: local shards and sharded grads */
        sh_layer *y = &r->ly[l];
        const uint64_t wb = sh_local_bytes(r, l, false), bb = sh_local_bytes(r, l, true);
        r->params[2 * l] = (wl_opt_param){&y->W, sh ? &y->gWs : &y->gW, &y->mW, &y->vW, &y->sW,
                                          (int64_t)(wb / 4), wb, " (weight)"};
        r->params[2 * l + 1] = (wl_opt_param){&y->b, sh ? &y->gbs : &y->gb, &y->mb, &y->vb, &y->sb,
                                              (int64_t)(bb / 4), bb, " (bias)"};
    }
    r->status = MC_WL_OK;
    if (setup(r) != 0) r->status = MC_WL_OOM;
    return r;
}

mc_sh_run *mc_sh_create(const mc_sh_config *c, const ca_backend *backend, const mc_sh_hooks *hooks,
                        char *err, size_t len)
{
    return create(c, backend, false, hooks, err, len);
}

mc_sh_run *mc_sh_create_gpu(const mc_sh_config *c, const mc_sh_hooks *hooks, char *err, size_t len)
{
    if (c->data_chunks > 1 && c->wl.batch % c->data_chunks != 0) {
        snprintf(err, len, "the batch (%lld rows) is not %d chunks", (long long)c->wl.batch, c->data_chunks);
        return NULL;
    }
    return create(c, NULL, true, hooks, err, len);
}

int mc_sh_param_count(const mc_sh_run *r) { return 2 * r->L; }

int64_t mc_sh_param_numel(const mc_sh_run *r, int i)
{
    const sh_layer *y = &r->ly[i / 2];
    return i % 2 ? y->out : y->out * y->in;
}

int64_t mc_sh_read_param(mc_sh_run *r, int i, float *host, int64_t *first_row)
{
    CHECK(G != NULL && i >= 0 && i < 2 * r->L, "mc_sh_read_param: on a GPU, 0 <= i < 2L");
    const sh_layer *y = &r->ly[i / 2];
    const int64_t n = r->params[i].n;
    *first_row = sh_sharded(r) ? mc_fsdp_padded_rows(y->out, r->c.world) * r->c.rank : 0;
    if (n > 0) mc_gpu_to_host(G, host, P(*r->params[i].p), n, MC_DT_F32);
    return n;
}

mc_wl_status mc_sh_setup_status(const mc_sh_run *r) { return r->status; }
const ca_allocator *mc_sh_allocator(const mc_sh_run *r) { return r->ctx.a; }

mc_wl_status mc_sh_step(mc_sh_run *r, mc_sh_step_result *out)
{
    memset(out, 0, sizeof *out);
    out->step = ++r->step;
    out->loss = NAN;
    r->ctx.step = r->step;
    if (r->status == MC_WL_OK) {
        wl_reset_peak(&r->ctx);
        wl_trace(&r->ctx, "# step %d", r->step);
        int rc = sh_seq_micro_step(r);
        if (rc == 0) rc = sh_seq_optimizer(r);
        if (rc == 0) sh_seq_zero_grad(r);
        if (G && rc == 0) { /* the runner times the step and waits for it */
            mc_sh_comm end = {.kind = MC_SH_STEP_END};
            if (r->hooks.comm) r->hooks.comm(r->hooks.ctx, &end);
            mc_gpu_sync(G);
            out->loss = mc_gpu_slot_loss(G, 0);
        }
        /* An OOM ends the run: the figures so far stand, no further step runs. */
        if (rc != 0 || r->ctx.oom) r->status = MC_WL_OOM;
    }
    const ca_stats *s = ca_get_stats(r->ctx.a);
    out->status = r->status;
    out->peak_allocated = (uint64_t)s->allocated_bytes.peak;
    out->allocated_end = (uint64_t)s->allocated_bytes.current;
    out->peak_reserved = (uint64_t)s->reserved_bytes.peak;
    return out->status;
}

void mc_sh_destroy(mc_sh_run *r)
{
    if (!r) return;
    wl_ctx_close(&r->ctx);
    free(r->ly);
    free(r->params);
    free(r->bucket);
    free(r->bucket_left);
    free(r);
}

int mc_sh_predict_peak(const mc_sh_config *c, int steps, uint64_t *peak, char *err, size_t len)
{
    mc_sh_run *r = mc_sh_create(c, NULL, NULL, err, len);
    if (!r) return -1;
    *peak = 0;
    int rc = 0;
    for (int s = 0; s < steps && rc == 0; s++) {
        mc_sh_step_result res;
        if (mc_sh_step(r, &res) != MC_WL_OK) {
            snprintf(err, len, "out of memory in the model (capacity %llu bytes)",
                     (unsigned long long)c->wl.host_capacity);
            rc = -1;
        }
        if (res.peak_allocated > *peak) *peak = res.peak_allocated;
    }
    mc_sh_destroy(r);
    return rc;
}
