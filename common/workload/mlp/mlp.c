/* mlp.c: the training workload's life cycle (mlp.h): configuration,
 * creation over the host or CUDA backend, and the step driver. Tensors,
 * accounting, the OOM unwind and the trace are core/wl_ctx.c's; the
 * requests of a step are in mlp_seq.c. */
#include "mlp.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mlp_internal.h"
#include "trace/trace.h"
#include "workload/core/linear_stack.h"

#define MAX_ACCUM 1024

/* ------------------------------------------------------------ names */

/* ------------------------------------------------------------ configuration */

mc_workload_config mc_workload_config_default(void)
{
    mc_workload_config c;
    memset(&c, 0, sizeof c);
    c.accum = 1;
    c.optimizer = MC_WL_SGD;
    c.precision = MC_WL_FP32;
    c.alloc = ca_config_default();
    c.host_capacity = MC_WL_DEFAULT_HOST_CAPACITY;
    c.seed = 0;
    c.sm_count = MC_WL_DEFAULT_SM_COUNT;
    c.trace_steps = 2;
    return c;
}

int mc_workload_config_check(const mc_workload_config *c, char *err, size_t len)
{
    if (wl_stack_check_shape(c->layers, c->in, c->width, c->out, c->batch, err, len) != 0)
        return -1;
    if (c->accum < 1 || c->accum > MAX_ACCUM) {
        snprintf(err, len, "accum must be from 1 to %d, not %d", MAX_ACCUM, c->accum);
        return -1;
    }
    if (c->batch % c->accum) {
        snprintf(err, len, "batch %lld is not divisible by accum %d", (long long)c->batch,
                 c->accum);
        return -1;
    }
    if ((unsigned)c->optimizer > MC_WL_ADAM || (unsigned)c->precision > MC_WL_BF16) {
        snprintf(err, len, "unknown optimizer or precision");
        return -1;
    }
    if (!(c->lr >= 0) || c->lr > 1e6 || c->host_capacity == 0 || c->sm_count < 1 ||
        c->inject_overflow_step < 0 || c->trace_steps < 0) {
        snprintf(err, len, "bad lr, host capacity, SM count, overflow step or trace steps");
        return -1;
    }
    if (c->inject_overflow_step && c->precision != MC_WL_FP16) {
        snprintf(err, len, "an injected overflow needs fp16 (GradScaler)");
        return -1;
    }
    if (c->checkpoint_segments < 0 || c->checkpoint_segments > 2 * c->layers - 1) {
        snprintf(err, len, "checkpoint segments must be from 1 to %d (the model's 2L-1 modules), not %d",
                 2 * c->layers - 1, c->checkpoint_segments);
        return -1;
    }
    if (c->checkpoint_segments && (c->checkpoint || c->precision != MC_WL_FP32)) {
        snprintf(err, len, "checkpoint segments need fp32 and no per-pair checkpoint (autocast under "
                           "checkpoint_sequential is not modelled)");
        return -1;
    }
    if (wl_stack_check_bytes(c->in, c->width, c->out, c->batch, err, len) != 0) return -1;
    char e2[200];
    if (ca_config_check(&c->alloc, e2, sizeof e2) != 0) {
        snprintf(err, len, "allocator: %s", e2);
        return -1;
    }
    return 0;
}

uint64_t mc_workload_param_count(const mc_workload_config *c)
{
    uint64_t n = 0;
    for (int l = 0; l < c->layers; l++) {
        uint64_t in = (uint64_t)(l == 0 ? c->in : c->width);
        uint64_t out = (uint64_t)(l == c->layers - 1 ? c->out : c->width);
        n += in * out + out;
    }
    return n;
}

void mc_workload_live_by_category(const mc_workload *w, uint64_t out[MC_WL_NCAT])
{
    wl_live_by_category(&w->ctx, out);
}

/* ------------------------------------------------------------ life cycle */

mc_workload *mc_workload_create(const mc_workload_config *c, bool on_gpu, FILE *trace,
                                char *err, size_t len)
{
    if (mc_workload_config_check(c, err, len) != 0) return NULL;
    mc_workload *w = calloc(1, sizeof *w);
    CHECK(w != NULL, "out of host memory");
    w->c = *c;
    if (w->c.lr == 0) w->c.lr = mc_wl_optimizer_default_lr(c->optimizer);
    wl_optim_init(&w->opt, c->optimizer, w->c.lr, c->precision == MC_WL_FP16);
    w->L = c->layers;
    w->mb = c->batch / c->accum;
    w->es = c->precision == MC_WL_FP32 ? 4 : 2;
    wl_ctx_open(&w->ctx, &c->alloc, on_gpu, c->host_capacity, c->accum, trace, c->trace_steps);
    w->ly = calloc((size_t)w->L, sizeof *w->ly);
    CHECK(w->ly != NULL, "out of host memory");
    w->params = calloc((size_t)(2 * w->L), sizeof *w->params);
    CHECK(w->params != NULL, "out of host memory");
    for (int l = 0; l < w->L; l++) {
        wl_layer *y = &w->ly[l];
        y->in = l == 0 ? c->in : c->width;
        y->out = l == w->L - 1 ? c->out : c->width;
        w->params[2 * l] = (wl_opt_param){&y->W, &y->gW, &y->mW, &y->vW, &y->sW, y->out * y->in,
                                          (uint64_t)(y->out * y->in) * 4, " (weight)"};
        w->params[2 * l + 1] = (wl_opt_param){&y->b, &y->gb, &y->mb, &y->vb, &y->sb, y->out,
                                              (uint64_t)y->out * 4, " (bias)"};
    }
    if (c->checkpoint_segments) {
        w->seg = calloc((size_t)(2 * w->L - 1), sizeof *w->seg);
        CHECK(w->seg != NULL, "out of host memory");
        CHECK(wl_seg_plan(w->L, c->checkpoint_segments, w->seg) == 0, "checkpoint plan");
    }
    wl_trace(&w->ctx, "# memclaims-trace v1");
    wl_trace(&w->ctx, "# build/workload's requests: L=%d in=%lld width=%lld out=%lld batch=%lld "
                "%s %s accum=%d%s", c->layers, (long long)c->in, (long long)c->width,
             (long long)c->out, (long long)c->batch, mc_wl_optimizer_name(c->optimizer),
             mc_wl_precision_name(c->precision), c->accum, c->checkpoint ? " checkpoint" : "");
    if (c->checkpoint_segments)
        wl_trace(&w->ctx, "# checkpoint_sequential: %d segments", c->checkpoint_segments);
    char settings[512]; /* the allocator settings' set lines (trace/trace.h) */
    if (ca_trace_format_settings(&c->alloc, settings, sizeof settings) > 0)
        wl_trace(&w->ctx, "%s", settings);
    wl_trace(&w->ctx, "# set-up: parameters, optimizer%s",
             c->precision == MC_WL_FP16 ? ", GradScaler" : "");
    if (wl_seq_params(w) != 0) {
        w->ctx.setup_status = MC_WL_OOM;
        wl_unwind(&w->ctx);
        for (int l = 0; l < w->L; l++) {
            F(w->ly[l].W);
            F(w->ly[l].b);
        }
    }
    return w;
}

mc_wl_status mc_workload_setup_status(const mc_workload *w) { return w->ctx.setup_status; }
const mc_workload_config *mc_workload_get_config(const mc_workload *w) { return &w->c; }
const ca_allocator *mc_workload_allocator(const mc_workload *w) { return w->ctx.a; }

void mc_workload_destroy(mc_workload *w)
{
    if (!w) return;
    wl_ctx_close(&w->ctx);
    free(w->ly);
    free(w->params);
    free(w->seg);
    free(w);
}

/* ------------------------------------------------------------ one step */

mc_wl_status mc_workload_profile_step(mc_workload *w, mc_workload_step_result *r, mc_prof_table *t)
{
    wl_ctx_profile_begin(&w->ctx);
    mc_wl_status s = mc_workload_step(w, r);
    wl_ctx_profile_end(&w->ctx, t);
    return s;
}

mc_wl_status mc_workload_step(mc_workload *w, mc_workload_step_result *r)
{
    memset(r, 0, sizeof *r);
    r->step = ++w->ctx.step;
    r->step_time_s = NAN;
    r->loss = NAN;
    r->status = MC_WL_OK;
    if (w->ctx.setup_status != MC_WL_OK) {
        r->status = w->ctx.setup_status;
        wl_fill_stats(&w->ctx, r);
        r->loss_scale = w->c.precision == MC_WL_FP16 ? w->opt.scale_host : 1.0;
        return r->status;
    }
    wl_trace(&w->ctx, "# step %d", w->ctx.step);
    wl_reset_peak(&w->ctx);
    if (G) mc_gpu_step_begin(G);

    int rc = 0;
    for (int k = 0; k < w->c.accum && rc == 0; k++) rc = wl_seq_micro_step(w, k);
    bool skipped = false;
    if (rc == 0) rc = wl_seq_optimizer(w, &skipped);
    if (rc == 0) wl_seq_zero_grad(w);
    if (rc != 0) {
        r->status = MC_WL_OOM;
        wl_unwind(&w->ctx);
    }
    if (G) {
        r->step_time_s = mc_gpu_step_end(G);
        if (rc == 0) r->loss = mc_gpu_loss_sum(G, w->c.accum);
    }
    r->skipped = skipped;
    r->loss_scale = w->c.precision == MC_WL_FP16 ? w->opt.scale_host : 1.0;
    wl_fill_stats(&w->ctx, r);
    wl_trace(&w->ctx, "# end of step %d (after zero_grad)", w->ctx.step);
    if (w->ctx.trace && w->ctx.step == w->c.trace_steps) fflush(w->ctx.trace);
    return r->status;
}
