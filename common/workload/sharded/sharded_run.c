/* sharded_run.c: a rank's data-parallel run over the allocator model: the
 * configuration, set-up as the wrapper leaves the model (DDP's bucket,
 * FSDP2's shards), steps, and the model-only prediction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sharded_internal.h"
#include "sharded_plan.h"

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

int mc_sh_config_check(const mc_sh_config *c, char *err, size_t len)
{
    if (mc_workload_config_check(&c->wl, err, len) != 0) return -1;
    if (c->wl.precision != MC_WL_FP32 || c->wl.accum != 1 || c->wl.checkpoint) {
        snprintf(err, len, "the sharded model covers fp32, accum 1, no checkpointing only");
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

/* ------------------------------------------------------------ tensors */

int sh_alloc(mc_sh_run *r, sh_t *t, uint64_t bytes)
{
    CHECK(t->addr == 0, "sharded model: a tensor requested twice without a free");
    uint64_t addr = 0;
    if (ca_malloc(r->a, bytes, &addr) != CA_OK) {
        r->status = MC_WL_OOM;
        return -1;
    }
    t->addr = addr;
    t->bytes = bytes;
    return 0;
}

void sh_free(mc_sh_run *r, sh_t *t)
{
    if (!t->addr) return;
    CHECK(ca_free(r->a, t->addr) == 0, "sharded model: free of a block the allocator does not hold");
    t->addr = t->bytes = 0;
}

bool sh_sharded(const mc_sh_run *r)
{
    return r->c.mode == MC_SH_ZERO2 || r->c.mode == MC_SH_FSDP;
}

static int64_t cols(const sh_layer *y, bool bias) { return bias ? 1 : y->in; }

uint64_t sh_shard_bytes(const mc_sh_run *r, int l, bool bias)
{
    const sh_layer *y = &r->ly[l];
    int world = sh_sharded(r) ? r->c.world : 1;
    return (uint64_t)(mc_fsdp_padded_rows(y->out, world) * cols(y, bias)) * 4;
}

uint64_t sh_local_bytes(const mc_sh_run *r, int l, bool bias)
{
    const sh_layer *y = &r->ly[l];
    int world = sh_sharded(r) ? r->c.world : 1, rank = sh_sharded(r) ? r->c.rank : 0;
    return (uint64_t)(mc_fsdp_local_rows(y->out, world, rank) * cols(y, bias)) * 4;
}

/* ------------------------------------------------------------ DDP buckets */

/* Parameters in the order their gradients become ready (b, W of the last
 * layer first): the rebuilt buckets' order, and the order of the one
 * bucket of step 1 (its layout inside does not change a figure). */
void sh_ddp_assign(mc_sh_run *r, bool rebuilt)
{
    const int n = 2 * r->L;
    uint64_t *by = calloc((size_t)n, sizeof *by), *bucket = calloc((size_t)n, sizeof *bucket);
    CHECK(by && bucket, "out of host memory");
    for (int i = 0; i < n; i++) {
        const sh_layer *y = &r->ly[r->L - 1 - i / 2];
        by[i] = (uint64_t)(y->out * cols(y, i % 2 == 0)) * 4;
    }
    const uint64_t first[1] = {0}, later[2] = {MC_DDP_FIRST_BUCKET_BYTES, MC_DDP_BUCKET_CAP_BYTES};
    r->nbucket = rebuilt ? mc_ddp_buckets(by, n, later, 2, bucket) : mc_ddp_buckets(by, n, first, 1, bucket);
    int b = 0;
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        sh_layer *y = &r->ly[r->L - 1 - i / 2];
        int bias = i % 2 == 0;
        if (off >= bucket[b]) {
            b++;
            off = 0;
        }
        y->bucket_of[bias] = b;
        y->bucket_off[bias] = off;
        off += by[i];
    }
    for (int k = 0; k < r->nbucket; k++) r->bucket[k].bytes = bucket[k]; /* sizes to allocate */
    free(by);
    free(bucket);
}

/* Reducer::initialize_buckets: at::empty of each bucket's numel. */
int sh_ddp_alloc_buckets(mc_sh_run *r)
{
    for (int k = 0; k < r->nbucket; k++) {
        uint64_t bytes = r->bucket[k].bytes;
        r->bucket[k].bytes = 0;
        if (sh_alloc(r, &r->bucket[k], bytes)) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ life cycle */

/* The model on the device (parameters in order), then the wrapper. */
static int setup(mc_sh_run *r)
{
    for (int l = 0; l < r->L; l++) {
        sh_layer *y = &r->ly[l];
        if (sh_alloc(r, &y->W, (uint64_t)(y->out * y->in) * 4) ||
            sh_alloc(r, &y->b, (uint64_t)y->out * 4))
            return -1;
    }
    if (r->c.mode == MC_SH_DDP) {
        sh_ddp_assign(r, false);
        return sh_ddp_alloc_buckets(r);
    }
    if (!sh_sharded(r)) return 0;
    /* fully_shard(layer) in order, then the root (no parameters of its
     * own): each parameter's padded shard made, then the full one dropped. */
    for (int l = 0; l < r->L; l++) {
        sh_layer *y = &r->ly[l];
        sh_t w = {0, 0}, b = {0, 0};
        if (sh_alloc(r, &w, sh_shard_bytes(r, l, false)) || sh_alloc(r, &b, sh_shard_bytes(r, l, true)))
            return -1;
        sh_free(r, &y->W);
        sh_free(r, &y->b);
        y->W = w;
        y->b = b;
    }
    return 0;
}

mc_sh_run *mc_sh_create(const mc_sh_config *c, const ca_backend *backend, const mc_sh_hooks *hooks,
                        char *err, size_t len)
{
    if (mc_sh_config_check(c, err, len) != 0) return NULL;
    mc_sh_run *r = calloc(1, sizeof *r);
    CHECK(r != NULL, "out of host memory");
    r->c = *c;
    if (hooks) r->hooks = *hooks;
    ca_backend be;
    if (backend) {
        be = *backend;
    } else {
        r->host = ca_host_create(c->wl.host_capacity);
        CHECK(r->host != NULL, "ca_host_create");
        be = ca_host_backend(r->host);
    }
    r->a = ca_create(&c->wl.alloc, be);
    CHECK(r->a != NULL, "ca_create");
    r->L = c->wl.layers;
    r->ly = calloc((size_t)r->L, sizeof *r->ly);
    r->bucket = calloc((size_t)(2 * r->L), sizeof *r->bucket);
    r->bucket_left = calloc((size_t)(2 * r->L), sizeof *r->bucket_left);
    CHECK(r->ly && r->bucket && r->bucket_left, "out of host memory");
    for (int l = 0; l < r->L; l++) {
        r->ly[l].in = l == 0 ? c->wl.in : c->wl.width;
        r->ly[l].out = l == r->L - 1 ? c->wl.out : c->wl.width;
    }
    r->status = MC_WL_OK;
    if (setup(r) != 0) r->status = MC_WL_OOM;
    return r;
}

mc_wl_status mc_sh_setup_status(const mc_sh_run *r) { return r->status; }
const ca_allocator *mc_sh_allocator(const mc_sh_run *r) { return r->a; }

mc_wl_status mc_sh_step(mc_sh_run *r, mc_sh_step_result *out)
{
    memset(out, 0, sizeof *out);
    out->step = ++r->step;
    if (r->status == MC_WL_OK) {
        ca_reset_peak(r->a);
        int rc = 0;
        /* DDP's next forward rebuilds the buckets from the order gradients
         * came in during step 1 (_pre_forward -> _rebuild_buckets): the old
         * ones go first (buckets_.clear()), then the new ones are made.
         * sync_bucket_indices' few-byte device tensors come and go before
         * any other request of the step and are left out. */
        if (r->c.mode == MC_SH_DDP && r->step == 2 && !r->rebuilt) {
            for (int k = 0; k < r->nbucket; k++) sh_free(r, &r->bucket[k]);
            sh_ddp_assign(r, true);
            rc = sh_ddp_alloc_buckets(r);
            r->rebuilt = true;
        }
        if (r->c.mode == MC_SH_DDP) {
            memset(r->bucket_left, 0, (size_t)(2 * r->L) * sizeof *r->bucket_left);
            for (int l = 0; l < r->L; l++) {
                r->bucket_left[r->ly[l].bucket_of[0]]++;
                r->bucket_left[r->ly[l].bucket_of[1]]++;
            }
        }
        if (rc == 0) rc = sh_seq_micro_step(r);
        if (rc == 0) rc = sh_seq_optimizer(r);
        if (rc == 0) sh_seq_zero_grad(r);
        /* An OOM ends the run: the figures so far stand, no further step runs. */
    }
    const ca_stats *s = ca_get_stats(r->a);
    out->status = r->status;
    out->peak_allocated = (uint64_t)s->allocated_bytes.peak;
    out->allocated_end = (uint64_t)s->allocated_bytes.current;
    out->peak_reserved = (uint64_t)s->reserved_bytes.peak;
    return out->status;
}

void mc_sh_destroy(mc_sh_run *r)
{
    if (!r) return;
    ca_destroy(r->a); /* returns every segment; the blocks need no free one by one */
    if (r->host) ca_host_destroy(r->host);
    free(r->ly);
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
