/* sharded_fsdp.c: FSDP2's requests around a model's fully_shard units
 * (sharded_fsdp.h states the rules and where each comes from). */
#include "sharded_fsdp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sharded_plan.h"
#include "workload/core/wl_gpu.h"

#define WL_CTX (f->ctx)
#define MAX_UNIT_PARAMS MC_SH_UNIT_MAX /* parameters a unit, for the chunk lists on the stack */
#define G (f->ctx->gpu)
#define P(t) ((void *)(uintptr_t)(t).addr)

static void comm(const mc_fsdp *f, const mc_sh_comm *c)
{
    if (f->hooks.comm) f->hooks.comm(f->hooks.ctx, c);
}

/* A call of the runner about unit u: its parameters' shapes, and src[k]
 * (and out[k]) the tensors of each (NULL: none). */
static void unit_comm(const mc_fsdp *f, int u, mc_sh_comm *c, const wl_t *src, bool src_grads, bool out_full)
{
    const mc_fsdp_unit *y = &f->u[u];
    c->layer = u;
    c->n = y->n;
    for (int k = 0; k < y->n; k++) {
        const int i = y->first + k;
        c->rows[k] = f->p[i].dim0;
        c->cols[k] = f->p[i].rest;
        const wl_t *t = src ? &src[i] : src_grads ? f->p[i].grad : NULL;
        if (t) {
            c->src[k] = t->addr;
            c->src_bytes[k] = t->bytes;
        }
        if (out_full) {
            c->out[k] = f->p[i].full->addr;
            c->out_bytes[k] = f->p[i].full->bytes;
        }
    }
}

int mc_fsdp_init(mc_fsdp *f, wl_ctx *ctx, int world, int rank, bool reshard_after_forward, int sm_count,
                 const int *unit_params, int nunits, mc_fsdp_param *params, char *err, size_t len)
{
    memset(f, 0, sizeof *f);
    if (world < 1 || rank < 0 || rank >= world || nunits < 1 || sm_count < 1) {
        snprintf(err, len, "FSDP: bad world %d, rank %d, %d units or %d SMs", world, rank, nunits, sm_count);
        return -1;
    }
    f->ctx = ctx;
    f->world = world;
    f->rank = rank;
    f->sm_count = sm_count;
    f->reshard_after_forward = reshard_after_forward;
    f->nunits = nunits;
    f->p = params;
    f->u = calloc((size_t)nunits, sizeof *f->u);
    CHECK(f->u != NULL, "out of host memory");
    for (int u = 0; u < nunits; u++) {
        if (unit_params[u] < 1 || unit_params[u] > MAX_UNIT_PARAMS) {
            snprintf(err, len, "FSDP: unit %d has %d parameters (1 to %d)", u, unit_params[u], MAX_UNIT_PARAMS);
            mc_fsdp_free(f);
            return -1;
        }
        f->u[u].first = f->np;
        f->u[u].n = unit_params[u];
        f->np += unit_params[u];
    }
    const size_t n = (size_t)f->np;
    f->shard = calloc(n, sizeof *f->shard);
    f->sgrad = calloc(n, sizeof *f->sgrad);
    f->m = calloc(n, sizeof *f->m);
    f->v = calloc(n, sizeof *f->v);
    f->s = calloc(n, sizeof *f->s);
    f->opt = calloc(n, sizeof *f->opt);
    CHECK(f->shard && f->sgrad && f->m && f->v && f->s && f->opt, "out of host memory");
    for (int i = 0; i < f->np; i++) {
        const uint64_t b = mc_fsdp_local_bytes(f, i);
        f->opt[i] = (wl_opt_param){&f->shard[i], &f->sgrad[i], &f->m[i], &f->v[i], &f->s[i], (int64_t)(b / 4), b,
                                   ""};
    }
    return 0;
}

void mc_fsdp_set_hooks(mc_fsdp *f, const mc_sh_hooks *h) { f->hooks = *h; }

void mc_fsdp_free(mc_fsdp *f)
{
    free(f->u);
    free(f->shard);
    free(f->sgrad);
    free(f->m);
    free(f->v);
    free(f->s);
    free(f->opt);
    memset(f, 0, sizeof *f);
}

uint64_t mc_fsdp_shard_bytes(const mc_fsdp *f, int i)
{
    return (uint64_t)(mc_fsdp_padded_rows(f->p[i].dim0, f->world) * f->p[i].rest) * 4;
}

uint64_t mc_fsdp_local_bytes(const mc_fsdp *f, int i)
{
    return (uint64_t)(mc_fsdp_local_rows(f->p[i].dim0, f->world, f->rank) * f->p[i].rest) * 4;
}

/* The unit's padded shards (bytes; room for MAX_UNIT_PARAMS); their sum. */
static uint64_t unit_chunks(const mc_fsdp *f, int u, uint64_t *chunk)
{
    uint64_t sum = 0;
    for (int k = 0; k < f->u[u].n; k++) {
        chunk[k] = mc_fsdp_shard_bytes(f, f->u[u].first + k);
        sum += chunk[k];
    }
    return sum;
}

/* ------------------------------------------------------------ set-up */

/* fully_shard(unit): _init_sharded_param's new_zeros of the padded shard for
 * each parameter in order; the whole parameters go when fully_shard
 * returns. Then the root (no parameters) and dist.barrier(). */
int mc_fsdp_setup(mc_fsdp *f)
{
    char what[160];
    for (int u = 0; u < f->nunits; u++) {
        const mc_fsdp_unit *y = &f->u[u];
        for (int k = 0; k < y->n; k++) {
            const int i = y->first + k;
            snprintf(what, sizeof what, "padded shard of %s", f->p[i].name);
            AK(f->shard[i], mc_fsdp_shard_bytes(f, i), MC_WL_WEIGHTS, what);
            if (G) { /* this rank's rows, zeros past the parameter's end (every rank holds the same whole) */
                const uint64_t first = (uint64_t)(mc_fsdp_padded_rows(f->p[i].dim0, f->world) * f->rank);
                mc_gpu_zero(G, P(f->shard[i]), f->shard[i].bytes);
                mc_gpu_copy(G, P(f->shard[i]), (const float *)P(*f->p[i].full) + first * (uint64_t)f->p[i].rest,
                            mc_fsdp_local_bytes(f, i));
            }
        }
        for (int k = 0; k < y->n; k++) F(*f->p[y->first + k].full);
    }
    AK(f->barrier, 4, MC_WL_OTHER, "dist.barrier()'s tensor, kept by the process group");
    return 0;
}

/* ------------------------------------------------------------ gathering */

/* FSDPParamGroup.unshard: the all-gather output (none when N = 1). */
static int unshard(mc_fsdp *f, int u)
{
    mc_fsdp_unit *y = &f->u[u];
    if (f->world == 1 || y->ag.addr || y->gathered) return 0;
    uint64_t chunk[MAX_UNIT_PARAMS];
    const uint64_t shard = unit_chunks(f, u, chunk);
    if (wl_alloc_on(f->ctx, MC_FSDP_STREAM_ALL_GATHER, &y->ag, (uint64_t)f->world * shard, MC_WL_WEIGHTS, false,
                    "all_gather_output"))
        return -1;
    mc_sh_comm c = {.kind = MC_SH_ALLGATHER, .dst = y->ag.addr, .dst_bytes = y->ag.bytes};
    unit_comm(f, u, &c, f->shard, false, false);
    comm(f, &c);
    return 0;
}

/* wait_for_unshard: each parameter's padded unsharded storage, the
 * copy-out's metadata, then the all-gather output freed: in forward the
 * previous unit's (deferred to here), in backward this unit's. */
static int wait_unshard(mc_fsdp *f, int u, bool forward)
{
    mc_fsdp_unit *y = &f->u[u];
    if (y->gathered) return 0; /* zero2 in backward: still unsharded */
    char what[160];
    for (int k = 0; k < y->n; k++) {
        const int i = y->first + k;
        snprintf(what, sizeof what, "unsharded %s", f->p[i].name);
        A(*f->p[i].full, (uint64_t)f->world * mc_fsdp_shard_bytes(f, i), MC_WL_WEIGHTS, what);
    }
    y->gathered = true;
    uint64_t chunk[MAX_UNIT_PARAMS];
    unit_chunks(f, u, chunk);
    A(f->copy_meta, mc_fsdp_split_copy_meta_bytes(chunk, y->n, f->world, f->sm_count), MC_WL_OTHER,
      "split_with_sizes_copy metadata");
    F(f->copy_meta);
    mc_sh_comm c = {.kind = MC_SH_COPY_OUT, .dst = y->ag.addr, .dst_bytes = y->ag.bytes};
    unit_comm(f, u, &c, f->shard, false, true);
    comm(f, &c);
    if (forward && f->ag_state) { /* the previous unit's, after this copy-out */
        F(*f->ag_state);
        f->ag_state = NULL;
    }
    if (forward && f->world > 1) f->ag_state = &y->ag;
    else F(y->ag);
    return 0;
}

static void reshard(mc_fsdp *f, int u)
{
    mc_fsdp_unit *y = &f->u[u];
    for (int k = 0; k < y->n; k++) F(*f->p[y->first + k].full);
    y->gathered = false;
}

int mc_fsdp_pre_forward(mc_fsdp *f, int u)
{
    f->u[u].reduced = false;
    return unshard(f, u) || wait_unshard(f, u, true) ? -1 : 0;
}

void mc_fsdp_post_forward(mc_fsdp *f, int u)
{
    if (f->reshard_after_forward) reshard(f, u);
}

void mc_fsdp_forward_end(mc_fsdp *f)
{
    if (f->ag_state) {
        F(*f->ag_state);
        f->ag_state = NULL;
    }
}

/* Pre-backward: gather (unless prefetched or still gathered), then
 * prefetch the unit before it (ZeRO-3 only: ZeRO-2 never let it go). */
int mc_fsdp_pre_backward(mc_fsdp *f, int u)
{
    if (unshard(f, u) || wait_unshard(f, u, false)) return -1;
    if (u > 0 && f->reshard_after_forward && unshard(f, u - 1)) return -1;
    return 0;
}

/* ------------------------------------------------------------ reducing */

/* The previous reduce-scatter's input goes (post_backward waits for it). */
static void free_rs_input(mc_fsdp *f)
{
    if (!f->rs_state) return;
    mc_sh_comm c = {.kind = MC_SH_INPUT_FREED, .dst = f->rs_state->addr, .dst_bytes = f->rs_state->bytes};
    comm(f, &c);
    F(*f->rs_state);
    f->rs_state = NULL;
}

/* post_backward: reshard, the previous reduce-scatter input freed, this
 * unit's made, chunk_cat, the unsharded grads freed (the last after
 * reduce_output is made), reduce_output whose views are the sharded grads. */
int mc_fsdp_post_backward(mc_fsdp *f, int u)
{
    mc_fsdp_unit *y = &f->u[u];
    y->reduced = true;
    reshard(f, u);
    free_rs_input(f);
    uint64_t chunk[MAX_UNIT_PARAMS];
    const uint64_t shard = unit_chunks(f, u, chunk);
    A(y->rs_in, (uint64_t)f->world * shard, MC_WL_GRADS, "reduce_scatter_input");
    A(f->copy_meta, mc_fsdp_chunk_cat_meta_bytes(chunk, y->n), MC_WL_OTHER, "chunk_cat metadata");
    F(f->copy_meta);
    mc_sh_comm c = {.kind = MC_SH_CHUNK_CAT, .dst = y->rs_in.addr, .dst_bytes = y->rs_in.bytes};
    unit_comm(f, u, &c, NULL, true, false);
    comm(f, &c); /* the copy-in only reads the grads */
    for (int k = 0; k < y->n - 1; k++) F(*f->p[y->first + k].grad); /* unsharded_grads.clear() */
    if (wl_alloc_on(f->ctx, MC_FSDP_STREAM_REDUCE_SCATTER, &y->rs_out, shard, MC_WL_GRADS, false,
                    "reduce_output (sharded grads)"))
        return -1;
    F(*f->p[y->first + y->n - 1].grad); /* the loop variable's, at foreach_reduce's return */
    c.kind = MC_SH_REDUCE_SCATTER;
    c.out[0] = y->rs_out.addr;
    c.out_bytes[0] = y->rs_out.bytes;
    comm(f, &c);
    uint64_t off = 0;
    for (int k = 0; k < y->n; k++) { /* the sharded .grad: views of reduce_output */
        const int i = y->first + k;
        f->sgrad[i].addr = y->rs_out.addr + off;
        f->sgrad[i].bytes = mc_fsdp_local_bytes(f, i);
        off += chunk[k];
    }
    f->rs_state = &y->rs_in;
    return 0;
}

/* The root's final callback: post-backward of every unit whose inputs
 * needed no gradient (it did not run), in order; then the last input. */
int mc_fsdp_backward_end(mc_fsdp *f)
{
    for (int u = 0; u < f->nunits; u++)
        if (!f->u[u].reduced && mc_fsdp_post_backward(f, u)) return -1;
    free_rs_input(f);
    mc_sh_comm end = {.kind = MC_SH_BACKWARD_END};
    comm(f, &end);
    return 0;
}

/* zero_grad(set_to_none=True), parameters in order: a unit's reduce_output
 * goes with its last view. */
void mc_fsdp_zero_grad(mc_fsdp *f)
{
    for (int u = 0; u < f->nunits; u++) {
        F(f->u[u].rs_out);
        for (int k = 0; k < f->u[u].n; k++) f->sgrad[f->u[u].first + k].addr = 0;
    }
}
