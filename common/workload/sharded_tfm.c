/* sharded_tfm.c: the Transformer under FSDP2 (sharded_tfm.h): the
 * encoder's layers as FSDP2 units (sharded/sharded_fsdp.h) driven from the
 * Transformer's hook points (transformer/tfm_wrap.h). */
#include "sharded_tfm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "workload/core/wl_gpu.h"
#include "workload/core/wl_placed.h"
#include "workload/sharded/sharded_fsdp.h"
#include "workload/sharded/sharded_plan.h"
#include "workload/transformer/tfm_wrap.h"

struct mc_sh_tfm {
    mc_sh_tfm_config c;
    mc_tfm *T;
    mc_fsdp f;
    mc_fsdp_param *p;
    mc_wl_status status;
    wl_placed h;                 /* seg_addr: new segments where PyTorch's went */
    mc_sh_hooks hooks;           /* the GPU runner's (comm NULL: none) */
    mc_tfm_data data;            /* fixed_data: the host's batch */
    float *src, *tgt;            /* fixed_data: accum micro-batches, one after the other */
    const float **srcp, **tgtp;  /* [accum]: each micro-batch's */
};

int mc_sh_tfm_check(const mc_sh_tfm_config *c, char *err, size_t len)
{
    /* accumulation only on one plain GPU: the check's reference, which
     * takes the ranks' batches as its micro-batches (sharded_tfm.h) */
    mc_tfm_config net = c->tfm;
    net.accum = 1;
    if (mc_tfm_config_check(&c->tfm, err, len) != 0 || mc_tfm_wrap_check(&net, err, len) != 0) return -1;
    if (c->mode != MC_SH_PLAIN && c->mode != MC_SH_ZERO2 && c->mode != MC_SH_FSDP) {
        snprintf(err, len, "the Transformer's data-parallel modes are plain, zero2 and fsdp, not %s",
                 mc_sh_mode_name(c->mode));
        return -1;
    }
    if ((unsigned)c->tfm.optimizer > MC_WL_ADAM) {
        snprintf(err, len, "the sharded model's optimizers are sgd, momentum and adam");
        return -1;
    }
    if (c->world < 1 || c->world > 65536 || c->rank < 0 || c->rank >= c->world) {
        snprintf(err, len, "rank %d of %d ranks (1..65536)", c->rank, c->world);
        return -1;
    }
    if (c->tfm.accum != 1 && !(c->mode == MC_SH_PLAIN && c->world == 1)) {
        snprintf(err, len, "the Transformer under FSDP2 does not model gradient accumulation");
        return -1;
    }
    if (c->gpu && mc_tfm_gpu_check(&c->tfm, err, len) != 0) return -1;
    if (c->gpu && c->tfm.dropout != 0) {
        snprintf(err, len, "the Transformer's data-parallel GPU run takes dropout 0 (every rank would draw the same masks)");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ the GPU's data */

/* A standard normal from a counter (splitmix64, Box-Muller): element i of
 * stream `which` of the seed's global batch, the same on every host. */
static float host_normal(uint64_t seed, uint64_t which, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (which << 56) ^ i * 0xD1B54A32D192ED03ull;
    double u[2];
    for (int k = 0; k < 2; k++) {
        z += 0x9E3779B97F4A7C15ull;
        uint64_t x = z;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        x ^= x >> 31;
        u[k] = ((double)(x >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
    }
    return (float)(sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]));
}

/* fixed_data: src and tgt, this rank's B sequences of the global batch
 * (sequence g = rank B + b), in the model's layout (batch-major with
 * batch_first, else sequence-major), as accum micro-batches of B / accum
 * sequences, in order (the check's one GPU: the ranks' batches, one a
 * micro-step). */
static void draw_host_batch(mc_sh_tfm *s)
{
    const mc_tfm_config *t = &s->c.tfm;
    const int K = t->accum;
    const int64_t B = t->batch, mb = B / K, L = t->seq, E = t->d_model, n = mb * L * E;
    s->src = malloc((size_t)(n * K) * sizeof(float));
    s->tgt = malloc((size_t)(n * K) * sizeof(float));
    s->srcp = malloc((size_t)K * sizeof *s->srcp);
    s->tgtp = malloc((size_t)K * sizeof *s->tgtp);
    CHECK(s->src && s->tgt && s->srcp && s->tgtp, "out of host memory");
    for (int k = 0; k < K; k++) {
        float *src = s->src + k * n, *tgt = s->tgt + k * n;
        for (int64_t b = 0; b < mb; b++)
            for (int64_t l = 0; l < L; l++) {
                const uint64_t g = (uint64_t)(s->c.rank * B + k * mb + b),
                               base = (g * (uint64_t)L + (uint64_t)l) * (uint64_t)E;
                const int64_t at = (t->batch_first ? b * L + l : l * mb + b) * E;
                for (int64_t e = 0; e < E; e++) {
                    src[at + e] = host_normal(t->seed, 0, base + (uint64_t)e);
                    tgt[at + e] = host_normal(t->seed, 1, base + (uint64_t)e);
                }
            }
        s->srcp[k] = src;
        s->tgtp[k] = tgt;
    }
    s->data = (mc_tfm_data){.params = NULL, .src = s->srcp, .tgt = s->tgtp, .grads = NULL, .losses = NULL};
}

/* ------------------------------------------------------------ the hooks */

#define FS(ctx) (&((mc_sh_tfm *)(ctx))->f)
static int pre_forward(void *ctx, int l) { return mc_fsdp_pre_forward(FS(ctx), l); }
static void post_forward(void *ctx, int l) { mc_fsdp_post_forward(FS(ctx), l); }
static void forward_end(void *ctx) { mc_fsdp_forward_end(FS(ctx)); }
static int pre_backward(void *ctx, int l) { return mc_fsdp_pre_backward(FS(ctx), l); }
static int post_backward(void *ctx, int l) { return mc_fsdp_post_backward(FS(ctx), l); }
static int backward_end(void *ctx) { return mc_fsdp_backward_end(FS(ctx)); }
static void zero_grad(void *ctx) { mc_fsdp_zero_grad(FS(ctx)); }

/* The runner times the step from its start and waits for it at its end. */
static void runner_comm(mc_sh_tfm *s, mc_sh_comm_kind kind)
{
    mc_sh_comm c = {.kind = kind};
    if (s->hooks.comm) s->hooks.comm(s->hooks.ctx, &c);
}
static void step_begin(void *ctx) { runner_comm(ctx, MC_SH_STEP_BEGIN); }
static void step_end(void *ctx) { runner_comm(ctx, MC_SH_STEP_END); }

/* fully_shard on each layer, then the root, and the barrier: FSDP2's units
 * over the model's parameters, 12 a layer. */
static int wrap(mc_sh_tfm *s, char *err, size_t len)
{
    mc_tfm *T = s->T;
    const int np = mc_tfm_nparams(T), per = mc_tfm_layer_params(), layers = np / per;
    s->p = calloc((size_t)np, sizeof *s->p);
    int *units = calloc((size_t)layers, sizeof *units);
    CHECK(s->p && units, "out of host memory");
    for (int i = 0; i < np; i++) {
        s->p[i].full = mc_tfm_param(T, i);
        s->p[i].grad = mc_tfm_grad(T, i);
        s->p[i].name = mc_tfm_param_name(T, i);
        mc_tfm_param_dims(T, i, &s->p[i].dim0, &s->p[i].rest);
    }
    for (int l = 0; l < layers; l++) units[l] = per;
    int rc = mc_fsdp_init(&s->f, mc_tfm_ctx(T), s->c.world, s->c.rank, s->c.mode == MC_SH_FSDP, s->c.tfm.sm_count,
                          units, layers, s->p, err, len);
    free(units);
    if (rc != 0) return -1;
    wl_trace(mc_tfm_ctx(T), "# fully_shard(each layer, reshard_after_forward=%s), fully_shard(model); "
             "world %d, rank %d; dist.barrier()", s->c.mode == MC_SH_FSDP ? "True" : "False", s->c.world, s->c.rank);
    mc_fsdp_set_hooks(&s->f, &s->hooks);
    if (mc_fsdp_setup(&s->f) != 0) s->status = MC_WL_OOM;
    const mc_tfm_wrap_hooks h = {s, pre_forward, post_forward, forward_end, pre_backward, post_backward,
                                 backward_end, zero_grad, step_begin, step_end};
    return mc_tfm_wrap(T, &h, s->f.opt, s->f.np, err, len);
}

mc_sh_tfm *mc_sh_tfm_create(const mc_sh_tfm_config *c, char *err, size_t len)
{
    if (mc_sh_tfm_check(c, err, len) != 0) return NULL;
    if (c->gpu && (c->seg_addr || c->trace)) {
        snprintf(err, len, "the Transformer's GPU run takes no --segments or --trace");
        return NULL;
    }
    mc_sh_tfm *s = calloc(1, sizeof *s);
    CHECK(s != NULL, "out of host memory");
    s->c = *c;
    if (c->hooks) s->hooks = *c->hooks;
    mc_tfm_config tc = c->tfm;
    tc.trace_steps = c->trace ? c->trace_steps : 0;
    if (c->gpu) { /* the same weights on every rank (tc.seed); a batch of its own (data_seed) */
        tc.data_seed = tc.seed * 1000003u + (uint64_t)c->rank + 1;
        if (c->fixed_data) draw_host_batch(s);
        s->T = mc_tfm_create_with(&tc, true, NULL, c->fixed_data ? &s->data : NULL, err, len);
    } else if (c->seg_addr) {
        ca_backend be = wl_placed_open(&s->h, tc.host_capacity, c->seg_addr, c->seg_bytes, c->nseg);
        s->T = mc_tfm_create_on(&tc, be, c->trace, err, len);
    } else {
        s->T = mc_tfm_create(&tc, false, c->trace, err, len);
    }
    if (!s->T) {
        wl_placed_close(&s->h);
        free(s->src);
        free(s->tgt);
        free(s->srcp);
        free(s->tgtp);
        free(s);
        return NULL;
    }
    s->status = mc_tfm_setup_status(s->T);
    if (c->mode != MC_SH_PLAIN && s->status == MC_WL_OK && wrap(s, err, len) != 0) {
        mc_sh_tfm_destroy(s);
        return NULL;
    }
    if (c->mode == MC_SH_PLAIN) mc_tfm_step_hooks(s->T, s, step_begin, step_end);
    return s;
}

mc_wl_status mc_sh_tfm_step(mc_sh_tfm *s, mc_sh_step_result *out)
{
    mc_workload_step_result r;
    memset(out, 0, sizeof *out);
    out->loss = NAN;
    if (s->status != MC_WL_OK) { /* set-up did not fit: every step says so */
        const ca_stats *st = ca_get_stats(mc_tfm_allocator(s->T));
        out->step = 0;
        out->status = s->status;
        out->peak_allocated = (uint64_t)st->allocated_bytes.peak;
        out->allocated_end = (uint64_t)st->allocated_bytes.current;
        out->peak_reserved = (uint64_t)st->reserved_bytes.peak;
        return s->status;
    }
    mc_tfm_step(s->T, &r);
    out->step = r.step;
    out->status = r.status;
    out->peak_allocated = r.peak_allocated;
    out->allocated_end = r.allocated_end;
    out->peak_reserved = r.peak_reserved;
    out->loss = r.loss;
    if (r.status != MC_WL_OK) s->status = r.status; /* an OOM ends the run, as the MLP's */
    return r.status;
}

void mc_sh_tfm_segments(const mc_sh_tfm *s, int *differ, uint64_t *conflicts)
{
    *differ = s->h.differ;
    *conflicts = wl_placed_conflicts(&s->h);
}

uint64_t mc_sh_tfm_allocated(const mc_sh_tfm *s)
{
    return (uint64_t)ca_get_stats(mc_tfm_allocator(s->T))->allocated_bytes.current;
}

void mc_sh_tfm_destroy(mc_sh_tfm *s)
{
    if (!s) return;
    mc_tfm_destroy(s->T); /* its segments go back to the host device first */
    wl_placed_close(&s->h);
    mc_fsdp_free(&s->f);
    free(s->p);
    free(s->src);
    free(s->tgt);
    free(s->srcp);
    free(s->tgtp);
    free(s);
}

/* ------------------------------------------------------------ the runner's network */

static bool sharded(const mc_sh_tfm *s) { return s->c.mode != MC_SH_PLAIN; }

static int64_t param_row(const void *m, int i)
{
    const mc_sh_tfm *s = m;
    int64_t dim0, rest;
    mc_tfm_param_dims(s->T, i, &dim0, &rest);
    return rest;
}

static int64_t param_numel(const void *m, int i)
{
    const mc_sh_tfm *s = m;
    int64_t dim0, rest;
    mc_tfm_param_dims(s->T, i, &dim0, &rest);
    return dim0 * rest;
}

static int param_count(const void *m) { return mc_tfm_nparams(((const mc_sh_tfm *)m)->T); }

/* Parameter i (the whole, or this rank's rows of it, from row *first_row) to the host. */
static int64_t read_param(void *m, int i, float *host, int64_t *first_row)
{
    mc_sh_tfm *s = m;
    mc_wl_gpu *G = mc_tfm_ctx(s->T)->gpu;
    CHECK(G != NULL && i >= 0 && i < param_count(s), "sharded transformer: read parameter %d on a GPU", i);
    int64_t dim0, rest;
    mc_tfm_param_dims(s->T, i, &dim0, &rest);
    *first_row = sharded(s) ? mc_fsdp_padded_rows(dim0, s->c.world) * s->c.rank : 0;
    const wl_t *t = sharded(s) ? &s->f.shard[i] : mc_tfm_param(s->T, i);
    const int64_t n = sharded(s) ? (int64_t)(mc_fsdp_local_bytes(&s->f, i) / 4) : dim0 * rest;
    if (n > 0) mc_gpu_to_host(G, host, (const void *)(uintptr_t)t->addr, n, MC_DT_F32);
    return n;
}

/* The runner's configuration as this network's: its mode, world, rank,
 * and the knobs it turns (the batch of the check's one GPU, its optimizer). */
static mc_sh_tfm_config from_runner(const mc_sh_config *c, bool gpu, const mc_sh_hooks *h)
{
    mc_sh_tfm_config t = {.tfm = *(const mc_tfm_config *)c->model->net, .mode = c->mode, .world = c->world,
                          .rank = c->rank, .gpu = gpu, .hooks = h, .fixed_data = c->wl.fixed_data};
    t.tfm.batch = c->wl.batch;
    t.tfm.accum = c->data_chunks > 1 ? c->data_chunks : 1; /* the check's one GPU: a rank's batch a micro-step */
    t.tfm.deterministic = c->wl.fixed_data; /* the check's runs (sharded_gpu.h): no atomics' order in them */
    t.tfm.optimizer = c->wl.optimizer;
    t.tfm.lr = c->wl.lr;
    t.tfm.seed = c->wl.seed;
    t.tfm.sm_count = c->wl.sm_count;
    return t;
}

static int m_check(const mc_sh_config *c, char *err, size_t len)
{
    const mc_sh_tfm_config t = from_runner(c, true, NULL);
    return mc_sh_tfm_check(&t, err, len);
}

static void *m_create(const mc_sh_config *c, bool gpu, const mc_sh_hooks *h, char *err, size_t len)
{
    const mc_sh_tfm_config t = from_runner(c, gpu, h);
    return mc_sh_tfm_create(&t, err, len);
}

static mc_wl_status m_setup_status(const void *m)
{
    const mc_sh_tfm *s = m;
    return s->status;
}

static mc_wl_status m_step(void *m, mc_sh_step_result *out) { return mc_sh_tfm_step(m, out); }
static struct mc_wl_gpu *m_gpu(void *m) { return mc_tfm_ctx(((mc_sh_tfm *)m)->T)->gpu; }
static void m_destroy(void *m) { mc_sh_tfm_destroy(m); }

static int m_segments(void *m, const uint64_t **addr, const uint64_t **bytes)
{
    return wl_ctx_segments(mc_tfm_ctx(((mc_sh_tfm *)m)->T), addr, bytes);
}

static void *m_create_placed(const mc_sh_config *c, const uint64_t *addr, const uint64_t *bytes, int n, char *err,
                             size_t len)
{
    mc_sh_tfm_config t = from_runner(c, false, NULL);
    t.seg_addr = addr;
    t.seg_bytes = bytes;
    t.nseg = n;
    return mc_sh_tfm_create(&t, err, len);
}

mc_sh_model mc_sh_tfm_model(const mc_tfm_config *net)
{
    return (mc_sh_model){net,        m_check,   m_create, m_setup_status, m_step,         param_count, param_numel,
                         param_row,  read_param, m_gpu,   m_destroy,      m_segments,     m_create_placed};
}
