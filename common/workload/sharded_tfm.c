/* sharded_tfm.c: the Transformer under FSDP2 (sharded_tfm.h): the
 * encoder's layers as FSDP2 units (sharded/sharded_fsdp.h) driven from the
 * Transformer's hook points (transformer/tfm_wrap.h). */
#include "sharded_tfm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_host.h"
#include "check.h"
#include "workload/sharded/sharded_fsdp.h"
#include "workload/transformer/tfm_wrap.h"

/* A host device whose new segments go where PyTorch's went (seg_addr). */
typedef struct {
    ca_host_device *d;
    ca_backend host;
    const uint64_t *addr, *bytes;
    int n, next;
    int differ;
} hinted;

struct mc_sh_tfm {
    mc_sh_tfm_config c;
    mc_tfm *T;
    mc_fsdp f;
    mc_fsdp_param *p;
    mc_wl_status status;
    hinted h;
};

static int hinted_malloc(void *ctx, uint64_t bytes, uint64_t *addr)
{
    hinted *h = ctx;
    const bool same = h->next < h->n && h->bytes[h->next] == bytes;
    if (same) ca_host_hint_next(h->d, h->addr[h->next]);
    int rc = h->host.dev_malloc(h->host.ctx, bytes, addr);
    if (rc == 0) { /* a refused request uses up no place of the list */
        h->differ += !same;
        h->next++;
    }
    return rc;
}

static void hinted_free(void *ctx, uint64_t addr, uint64_t bytes)
{
    hinted *h = ctx;
    h->host.dev_free(h->host.ctx, addr, bytes);
}

int mc_sh_tfm_check(const mc_sh_tfm_config *c, char *err, size_t len)
{
    if (mc_tfm_wrap_check(&c->tfm, err, len) != 0) return -1;
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
    return 0;
}

/* ------------------------------------------------------------ the hooks */

static int pre_forward(void *ctx, int l) { return mc_fsdp_pre_forward(ctx, l); }
static void post_forward(void *ctx, int l) { mc_fsdp_post_forward(ctx, l); }
static void forward_end(void *ctx) { mc_fsdp_forward_end(ctx); }
static int pre_backward(void *ctx, int l) { return mc_fsdp_pre_backward(ctx, l); }
static int post_backward(void *ctx, int l) { return mc_fsdp_post_backward(ctx, l); }
static int backward_end(void *ctx) { return mc_fsdp_backward_end(ctx); }
static void zero_grad(void *ctx) { mc_fsdp_zero_grad(ctx); }

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
    if (mc_fsdp_setup(&s->f) != 0) s->status = MC_WL_OOM;
    const mc_tfm_wrap_hooks h = {&s->f, pre_forward, post_forward, forward_end, pre_backward, post_backward,
                                 backward_end, zero_grad};
    return mc_tfm_wrap(T, &h, s->f.opt, s->f.np, err, len);
}

mc_sh_tfm *mc_sh_tfm_create(const mc_sh_tfm_config *c, char *err, size_t len)
{
    if (mc_sh_tfm_check(c, err, len) != 0) return NULL;
    mc_sh_tfm *s = calloc(1, sizeof *s);
    CHECK(s != NULL, "out of host memory");
    s->c = *c;
    mc_tfm_config tc = c->tfm;
    tc.trace_steps = c->trace ? c->trace_steps : 0;
    if (c->seg_addr) {
        hinted *h = &s->h;
        h->d = ca_host_create(tc.host_capacity);
        CHECK(h->d != NULL, "ca_host_create");
        h->host = ca_host_backend(h->d);
        h->addr = c->seg_addr;
        h->bytes = c->seg_bytes;
        h->n = c->nseg;
        ca_backend be = h->host;
        be.dev_malloc = hinted_malloc;
        be.dev_free = hinted_free;
        be.ctx = h;
        s->T = mc_tfm_create_on(&tc, be, c->trace, err, len);
    } else {
        s->T = mc_tfm_create(&tc, false, c->trace, err, len);
    }
    if (!s->T) {
        if (s->h.d) ca_host_destroy(s->h.d);
        free(s);
        return NULL;
    }
    s->status = mc_tfm_setup_status(s->T);
    if (c->mode != MC_SH_PLAIN && s->status == MC_WL_OK && wrap(s, err, len) != 0) {
        mc_sh_tfm_destroy(s);
        return NULL;
    }
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
    if (r.status != MC_WL_OK) s->status = r.status; /* an OOM ends the run, as the MLP's */
    return r.status;
}

void mc_sh_tfm_segments(const mc_sh_tfm *s, int *differ, uint64_t *conflicts)
{
    *differ = s->h.differ;
    *conflicts = s->h.d ? ca_host_hint_conflicts(s->h.d) : 0;
}

uint64_t mc_sh_tfm_allocated(const mc_sh_tfm *s)
{
    return (uint64_t)ca_get_stats(mc_tfm_allocator(s->T))->allocated_bytes.current;
}

void mc_sh_tfm_destroy(mc_sh_tfm *s)
{
    if (!s) return;
    mc_tfm_destroy(s->T); /* its segments go back to the host device first */
    if (s->h.d) ca_host_destroy(s->h.d);
    mc_fsdp_free(&s->f);
    free(s->p);
    free(s);
}
