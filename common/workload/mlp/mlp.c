/* mlp.c: the training workload's life cycle (mlp.h): configuration,
 * creation over the host or CUDA backend, the step driver with its peak and
 * per-category accounting and the OOM unwind, tensors, the request trace,
 * and the CSV row. The requests of a step are in mlp_seq.c. */
#include "mlp.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_cuda.h"
#include "trace/trace.h"
#include "check.h"
#include "mlp_internal.h"

#define DEFAULT_HOST_CAPACITY (80ULL << 30) /* an H100 80GB-class card */
#define DEFAULT_SM_COUNT 132                /* H100 SXM5 */
#define MAX_FEATURES (1LL << 24)            /* keeps every tensor's bytes far from overflow */
#define MAX_LAYERS 4096
#define MAX_ACCUM 1024

/* ------------------------------------------------------------ names */

static const char *const CAT_NAME[MC_WL_NCAT] = {
    "weights", "casts", "grads", "optimizer", "activations", "workspace", "other"};

const char *mc_wl_category_name(mc_wl_category c)
{
    return (unsigned)c < MC_WL_NCAT ? CAT_NAME[c] : "?";
}

const char *mc_wl_optimizer_name(mc_wl_optimizer o)
{
    return o == MC_WL_SGD ? "sgd" : o == MC_WL_MOMENTUM ? "momentum" : "adam";
}

const char *mc_wl_precision_name(mc_wl_precision p)
{
    return p == MC_WL_FP32 ? "fp32" : p == MC_WL_FP16 ? "fp16" : "bf16";
}

/* ------------------------------------------------------------ configuration */

mc_workload_config mc_workload_config_default(void)
{
    mc_workload_config c;
    memset(&c, 0, sizeof c);
    c.accum = 1;
    c.optimizer = MC_WL_SGD;
    c.precision = MC_WL_FP32;
    c.alloc = ca_config_default();
    c.host_capacity = DEFAULT_HOST_CAPACITY;
    c.seed = 0;
    c.sm_count = DEFAULT_SM_COUNT;
    c.trace_steps = 2;
    return c;
}

int mc_workload_config_check(const mc_workload_config *c, char *err, size_t len)
{
    if (c->layers < 2 || c->layers > MAX_LAYERS) {
        snprintf(err, len, "layers must be from 2 to %d, not %d", MAX_LAYERS, c->layers);
        return -1;
    }
    const int64_t sz[4] = {c->in, c->width, c->out, c->batch};
    const char *nm[4] = {"in", "width", "out", "batch"};
    for (int i = 0; i < 4; i++)
        if (sz[i] < 1 || sz[i] > MAX_FEATURES) {
            snprintf(err, len, "%s must be from 1 to %lld, not %lld", nm[i],
                     (long long)MAX_FEATURES, (long long)sz[i]);
            return -1;
        }
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
    /* Rows x features below 2^48 elements: every tensor's bytes fit with room. */
    int64_t widest = c->in > c->width ? c->in : c->width;
    if (c->out > widest) widest = c->out;
    if ((double)widest * (double)widest > 0x1p48 || (double)c->batch * (double)widest > 0x1p48) {
        snprintf(err, len, "tensor sizes too large");
        return -1;
    }
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

/* ------------------------------------------------------------ tensors */

bool wl_tracing(const mc_workload *w)
{
    return w->trace && w->step <= w->c.trace_steps;
}

void wl_trace(mc_workload *w, const char *fmt, ...)
{
    if (!wl_tracing(w)) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(w->trace, fmt, ap);
    va_end(ap);
    fputc('\n', w->trace);
}

static void live_push(mc_workload *w, wl_t *t)
{
    if (w->n_live == w->cap_live) {
        w->cap_live = w->cap_live ? 2 * w->cap_live : 256;
        w->live = realloc(w->live, (size_t)w->cap_live * sizeof *w->live);
        CHECK(w->live != NULL, "out of host memory");
    }
    t->slot = w->n_live;
    w->live[w->n_live++] = t;
}

int wl_alloc(mc_workload *w, wl_t *t, uint64_t bytes, mc_wl_category cat, bool keep,
             const char *what)
{
    CHECK(t->addr == 0, "workload: %s requested while live", what);
    uint64_t addr = 0;
    if (ca_malloc(w->a, bytes, &addr) != CA_OK) {
        wl_trace(w, "# oom: %" PRIu64 " bytes for %s", bytes, what);
        return -1;
    }
    t->addr = addr;
    t->bytes = bytes;
    t->cat = (uint8_t)cat;
    t->keep = keep;
    t->id = ++w->next_id;
    live_push(w, t);
    w->cat_bytes[cat] += ca_block_size(w->a, addr);
    uint64_t cur = (uint64_t)ca_get_stats(w->a)->allocated_bytes.current;
    if (cur > w->peak_seen) {
        w->peak_seen = cur;
        memcpy(w->peak_cat, w->cat_bytes, sizeof w->peak_cat);
    }
    wl_trace(w, "alloc %" PRIu64 " %" PRIu64 " 0x%" PRIx64 "  # %s", t->id, bytes, addr, what);
    return 0;
}

/* MEMCLAIMS_POISON_FREED=1 (a debugging aid): on a GPU every freed block is
 * filled with 0xff bytes (NaN in fp32, fp16 and bf16), so a kernel that
 * reads a tensor after its last owner let go reads NaN. */
static int poison_freed(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("MEMCLAIMS_POISON_FREED");
        on = e && *e == '1';
    }
    return on;
}

void wl_free(mc_workload *w, wl_t *t)
{
    if (!t->addr) return;
    if (w->gpu && poison_freed()) mc_gpu_fill_bytes(w->gpu, WL_PTR(*t), 0xff, t->bytes);
    w->cat_bytes[t->cat] -= ca_block_size(w->a, t->addr);
    CHECK(ca_free(w->a, t->addr) == 0, "workload: free of a block the allocator does not know");
    wl_trace(w, "free %" PRIu64, t->id);
    int32_t s = t->slot;
    w->live[s] = w->live[--w->n_live];
    w->live[s]->slot = s;
    memset(t, 0, sizeof *t);
}

void wl_move(mc_workload *w, wl_t *dst, wl_t *src)
{
    CHECK(dst->addr == 0 && src->addr != 0, "workload: bad tensor move");
    *dst = *src;
    w->live[dst->slot] = dst;
    memset(src, 0, sizeof *src);
}

/* After an OOM: what the step held goes, as when a caught OutOfMemoryError
 * drops its frames and the caller runs zero_grad. Parameters, optimizer
 * state, workspaces and the GradScaler's state stay. */
static void unwind(mc_workload *w)
{
    for (int32_t i = w->n_live - 1; i >= 0; i--)
        if (i < w->n_live && !w->live[i]->keep) wl_free(w, w->live[i]);
}

void mc_workload_live_by_category(const mc_workload *w, uint64_t out[MC_WL_NCAT])
{
    memcpy(out, w->cat_bytes, sizeof w->cat_bytes);
}

/* ------------------------------------------------------------ life cycle */

void wl_open_allocator(mc_workload *w, const ca_config *alloc, bool on_gpu, uint64_t host_capacity,
                       int micro_steps)
{
    ca_backend be;
    w->on_gpu = on_gpu;
    if (on_gpu) {
        be = ca_cuda_backend();
        w->gpu = mc_gpu_create(micro_steps);
    } else {
        w->host = ca_host_create(host_capacity);
        CHECK(w->host != NULL, "ca_host_create");
        be = ca_host_backend(w->host);
    }
    w->a = ca_create(alloc, be);
    CHECK(w->a != NULL, "ca_create");
}

mc_workload *mc_workload_create(const mc_workload_config *c, bool on_gpu, FILE *trace,
                                char *err, size_t len)
{
    if (mc_workload_config_check(c, err, len) != 0) return NULL;
    mc_workload *w = calloc(1, sizeof *w);
    CHECK(w != NULL, "out of host memory");
    w->c = *c;
    if (w->c.lr == 0) w->c.lr = c->optimizer == MC_WL_ADAM ? 1e-3 : 0.01;
    w->on_gpu = on_gpu;
    w->trace = trace;
    w->L = c->layers;
    w->mb = c->batch / c->accum;
    w->es = c->precision == MC_WL_FP32 ? 4 : 2;
    w->scale_host = 65536.0; /* GradScaler init_scale */
    wl_open_allocator(w, &c->alloc, on_gpu, c->host_capacity, c->accum);
    w->ly = calloc((size_t)w->L, sizeof *w->ly);
    CHECK(w->ly != NULL, "out of host memory");
    for (int l = 0; l < w->L; l++) {
        w->ly[l].in = l == 0 ? c->in : c->width;
        w->ly[l].out = l == w->L - 1 ? c->out : c->width;
    }
    if (c->checkpoint_segments) {
        w->seg = calloc((size_t)(2 * w->L - 1), sizeof *w->seg);
        CHECK(w->seg != NULL, "out of host memory");
        CHECK(wl_seg_plan(w->L, c->checkpoint_segments, w->seg) == 0, "checkpoint plan");
    }
    wl_trace(w, "# memclaims-trace v1");
    wl_trace(w, "# build/workload's requests: L=%d in=%lld width=%lld out=%lld batch=%lld "
                "%s %s accum=%d%s", c->layers, (long long)c->in, (long long)c->width,
             (long long)c->out, (long long)c->batch, mc_wl_optimizer_name(c->optimizer),
             mc_wl_precision_name(c->precision), c->accum, c->checkpoint ? " checkpoint" : "");
    if (c->checkpoint_segments)
        wl_trace(w, "# checkpoint_sequential: %d segments", c->checkpoint_segments);
    char settings[512]; /* the allocator settings' set lines (trace/trace.h) */
    if (ca_trace_format_settings(&c->alloc, settings, sizeof settings) > 0) wl_trace(w, "%s", settings);
    wl_trace(w, "# set-up: parameters, optimizer%s",
             c->precision == MC_WL_FP16 ? ", GradScaler" : "");
    if (wl_seq_params(w) != 0) {
        w->setup_status = MC_WL_OOM;
        unwind(w);
        for (int l = 0; l < w->L; l++) {
            wl_free(w, &w->ly[l].W);
            wl_free(w, &w->ly[l].b);
        }
    }
    return w;
}

mc_wl_status mc_workload_setup_status(const mc_workload *w) { return w->setup_status; }
const mc_workload_config *mc_workload_get_config(const mc_workload *w) { return &w->c; }
const ca_allocator *mc_workload_allocator(const mc_workload *w) { return w->a; }

void mc_workload_destroy(mc_workload *w)
{
    if (!w) return;
    w->trace = NULL; /* teardown is not part of the traced sequence */
    if (w->gpu) mc_gpu_sync(w->gpu);
    while (w->n_live) wl_free(w, w->live[w->n_live - 1]);
    ca_destroy(w->a);
    if (w->host) ca_host_destroy(w->host);
    if (w->gpu) mc_gpu_destroy(w->gpu);
    free(w->live);
    free(w->ly);
    free(w->seg);
    free(w);
}

/* ------------------------------------------------------------ one step */

void wl_fill_stats(const mc_workload *w, mc_workload_step_result *r)
{
    const ca_stats *s = ca_get_stats(w->a);
    r->peak_allocated = (uint64_t)s->allocated_bytes.peak;
    r->allocated_end = (uint64_t)s->allocated_bytes.current;
    r->peak_reserved = (uint64_t)s->reserved_bytes.peak;
    r->reserved_end = (uint64_t)s->reserved_bytes.current;
    memcpy(r->peak_by_category, w->peak_cat, sizeof w->peak_cat);
}

mc_wl_status mc_workload_step(mc_workload *w, mc_workload_step_result *r)
{
    memset(r, 0, sizeof *r);
    r->step = ++w->step;
    r->step_time_s = NAN;
    r->loss = NAN;
    r->status = MC_WL_OK;
    if (w->setup_status != MC_WL_OK) {
        r->status = w->setup_status;
        wl_fill_stats(w, r);
        r->loss_scale = w->c.precision == MC_WL_FP16 ? w->scale_host : 1.0;
        return r->status;
    }
    wl_trace(w, "# step %d", w->step);
    wl_trace(w, "reset_peak");
    ca_reset_peak(w->a);
    w->peak_seen = (uint64_t)ca_get_stats(w->a)->allocated_bytes.current;
    memcpy(w->peak_cat, w->cat_bytes, sizeof w->peak_cat);
    if (w->gpu) mc_gpu_step_begin(w->gpu);

    int rc = 0;
    for (int k = 0; k < w->c.accum && rc == 0; k++) rc = wl_seq_micro_step(w, k);
    bool skipped = false;
    if (rc == 0) rc = wl_seq_optimizer(w, &skipped);
    if (rc == 0) wl_seq_zero_grad(w);
    if (rc != 0) {
        r->status = MC_WL_OOM;
        unwind(w);
    }
    if (w->gpu) {
        r->step_time_s = mc_gpu_step_end(w->gpu);
        if (rc == 0) r->loss = mc_gpu_loss_sum(w->gpu, w->c.accum);
    }
    r->skipped = skipped;
    r->loss_scale = w->c.precision == MC_WL_FP16 ? w->scale_host : 1.0;
    wl_fill_stats(w, r);
    wl_trace(w, "# end of step %d (after zero_grad)", w->step);
    if (w->trace && w->step == w->c.trace_steps) fflush(w->trace);
    return r->status;
}

/* ------------------------------------------------------------ CSV */

static void num(FILE *fp, double v, bool comma)
{
    if (isfinite(v)) {
        if (v == floor(v) && fabs(v) < 0x1p53) fprintf(fp, "%.0f", v);
        else fprintf(fp, "%.10g", v);
    }
    if (comma) fputc(',', fp);
}

void mc_workload_csv_row(FILE *fp, const mc_workload_step_result *r)
{
    fprintf(fp, "%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", r->step,
            r->peak_allocated, r->allocated_end, r->peak_reserved, r->reserved_end);
    num(fp, r->step_time_s, true);
    num(fp, r->loss, true);
    num(fp, r->loss_scale, true);
    fprintf(fp, "%d,%s", r->skipped ? 1 : 0, r->status == MC_WL_OK ? "ok" : "oom");
    for (int c = 0; c < MC_WL_NCAT; c++) fprintf(fp, ",%" PRIu64, r->peak_by_category[c]);
    fputc('\n', fp);
}
