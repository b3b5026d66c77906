/* wl_ctx.c: the workloads' tensor context (wl_ctx.h): the allocator's
 * set-up over either backend, tensors, per-category accounting, the OOM
 * unwind and the request trace. */
#include "wl_ctx.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_cuda.h"
#include "check.h"
#include "wl_profile.h"

/* ------------------------------------------------------------ life cycle */

/* The CUDA backend with its segments recorded (wl_ctx_segments). */
static int logged_malloc(void *ctx, uint64_t bytes, uint64_t *addr)
{
    wl_ctx *x = ctx;
    const int rc = x->cuda.dev_malloc(x->cuda.ctx, bytes, addr);
    if (rc != 0) return rc;
    if (x->nseg == x->cap_seg) {
        x->cap_seg = x->cap_seg ? 2 * x->cap_seg : 64;
        x->seg_addr = realloc(x->seg_addr, (size_t)x->cap_seg * sizeof *x->seg_addr);
        x->seg_bytes = realloc(x->seg_bytes, (size_t)x->cap_seg * sizeof *x->seg_bytes);
        CHECK(x->seg_addr && x->seg_bytes, "out of host memory");
    }
    x->seg_addr[x->nseg] = *addr;
    x->seg_bytes[x->nseg++] = bytes;
    return 0;
}

static void logged_free(void *ctx, uint64_t addr, uint64_t bytes)
{
    wl_ctx *x = ctx;
    x->cuda.dev_free(x->cuda.ctx, addr, bytes);
}

static int logged_map(void *ctx, uint64_t bytes)
{
    wl_ctx *x = ctx;
    return x->cuda.dev_map(x->cuda.ctx, bytes);
}

static void logged_unmap(void *ctx, uint64_t bytes)
{
    wl_ctx *x = ctx;
    x->cuda.dev_unmap(x->cuda.ctx, bytes);
}

int wl_ctx_segments(const wl_ctx *x, const uint64_t **addr, const uint64_t **bytes)
{
    *addr = x->seg_addr;
    *bytes = x->seg_bytes;
    return x->nseg;
}

void wl_ctx_open(wl_ctx *x, const ca_config *alloc, bool on_gpu, uint64_t host_capacity,
                 int micro_steps, FILE *trace, int trace_steps)
{
    ca_backend be;
    x->trace = trace;
    x->trace_steps = trace_steps;
    x->seg_addr = x->seg_bytes = NULL;
    x->nseg = x->cap_seg = 0;
    if (on_gpu) {
        x->cuda = ca_cuda_backend();
        be = x->cuda;
        be.ctx = x;
        be.dev_malloc = logged_malloc;
        be.dev_free = logged_free;
        if (x->cuda.dev_map) be.dev_map = logged_map;
        if (x->cuda.dev_unmap) be.dev_unmap = logged_unmap;
        x->gpu = mc_gpu_create(micro_steps);
    } else {
        x->host = ca_host_create(host_capacity);
        CHECK(x->host != NULL, "ca_host_create");
        be = ca_host_backend(x->host);
    }
    x->a = ca_create(alloc, be);
    CHECK(x->a != NULL, "ca_create");
}

void wl_ctx_open_backend(wl_ctx *x, const ca_config *alloc, ca_backend be)
{
    x->seg_addr = x->seg_bytes = NULL;
    x->nseg = x->cap_seg = 0;
    x->a = ca_create(alloc, be);
    CHECK(x->a != NULL, "ca_create");
}

void wl_ctx_close(wl_ctx *x)
{
    x->trace = NULL; /* teardown is not part of the traced sequence */
    if (x->gpu) mc_gpu_sync(x->gpu);
    wl_free_all(x);
    ca_destroy(x->a);
    if (x->host) ca_host_destroy(x->host);
    if (x->gpu) mc_gpu_destroy(x->gpu);
    free(x->live);
    free(x->seg_addr);
    free(x->seg_bytes);
    memset(x, 0, sizeof *x);
}

void wl_ctx_profile_begin(wl_ctx *x)
{
    CHECK(x->gpu != NULL, "profile: on a GPU only");
    if (x->trace_steps > x->step) x->trace_steps = x->step;
    mc_gpu_profile_start(x->gpu);
}

void wl_ctx_profile_end(wl_ctx *x, mc_prof_table *t)
{
    CHECK(x->gpu != NULL, "profile: on a GPU only");
    mc_gpu_profile_stop(x->gpu, t);
}

/* ------------------------------------------------------------ trace */

bool wl_tracing(const wl_ctx *x)
{
    return x->trace && x->step <= x->trace_steps;
}

void wl_trace(wl_ctx *x, const char *fmt, ...)
{
    if (!wl_tracing(x)) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(x->trace, fmt, ap);
    va_end(ap);
    fputc('\n', x->trace);
}

/* ------------------------------------------------------------ tensors */

static void live_push(wl_ctx *x, wl_t *t)
{
    if (x->n_live == x->cap_live) {
        x->cap_live = x->cap_live ? 2 * x->cap_live : 256;
        x->live = realloc(x->live, (size_t)x->cap_live * sizeof *x->live);
        CHECK(x->live != NULL, "out of host memory");
    }
    t->slot = x->n_live;
    x->live[x->n_live++] = t;
}

int wl_alloc(wl_ctx *x, wl_t *t, uint64_t bytes, mc_wl_category cat, bool keep, const char *what)
{
    return wl_alloc_on(x, 0, t, bytes, cat, keep, what);
}

int wl_alloc_on(wl_ctx *x, uint64_t stream, wl_t *t, uint64_t bytes, mc_wl_category cat, bool keep,
                const char *what)
{
    CHECK(t->addr == 0, "workload: %s requested while live", what);
    uint64_t addr = 0;
    if (ca_malloc_stream(x->a, bytes, stream, &addr) != CA_OK) {
        wl_trace(x, "# oom: %" PRIu64 " bytes for %s", bytes, what);
        x->oom = true;
        return -1;
    }
    if (!addr) return 0; /* allocate(0): no block (an empty local shard's state), nothing live */
    t->addr = addr;
    t->bytes = bytes;
    t->cat = (uint8_t)cat;
    t->keep = keep;
    t->id = ++x->next_id;
    live_push(x, t);
    x->cat_bytes[cat] += ca_block_size(x->a, addr);
    uint64_t cur = (uint64_t)ca_get_stats(x->a)->allocated_bytes.current;
    if (cur > x->peak_seen) {
        x->peak_seen = cur;
        memcpy(x->peak_cat, x->cat_bytes, sizeof x->peak_cat);
    }
    char on[32] = ""; /* the trace's stream=S, given for any but the default stream */
    if (stream) snprintf(on, sizeof on, " stream=%" PRIu64, stream);
    wl_trace(x, "alloc %" PRIu64 " %" PRIu64 " 0x%" PRIx64 "%s  # %s", t->id, bytes, addr, on, what);
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

void wl_free(wl_ctx *x, wl_t *t)
{
    if (!t->addr) return;
    if (x->gpu && poison_freed()) mc_gpu_fill_bytes(x->gpu, WL_PTR(*t), 0xff, t->bytes);
    x->cat_bytes[t->cat] -= ca_block_size(x->a, t->addr);
    CHECK(ca_free(x->a, t->addr) == 0, "workload: free of a block the allocator does not know");
    wl_trace(x, "free %" PRIu64, t->id);
    int32_t s = t->slot;
    x->live[s] = x->live[--x->n_live];
    x->live[s]->slot = s;
    memset(t, 0, sizeof *t);
}

void wl_move(wl_ctx *x, wl_t *dst, wl_t *src)
{
    CHECK(dst->addr == 0 && src->addr != 0, "workload: bad tensor move");
    *dst = *src;
    x->live[dst->slot] = dst;
    memset(src, 0, sizeof *src);
}

void wl_unwind(wl_ctx *x)
{
    for (int32_t i = x->n_live - 1; i >= 0; i--)
        if (i < x->n_live && !x->live[i]->keep) wl_free(x, x->live[i]);
}

void wl_free_all(wl_ctx *x)
{
    while (x->n_live) wl_free(x, x->live[x->n_live - 1]);
}

/* ------------------------------------------------------------ figures */

void wl_reset_peak(wl_ctx *x)
{
    wl_trace(x, "reset_peak");
    ca_reset_peak(x->a);
    x->peak_seen = (uint64_t)ca_get_stats(x->a)->allocated_bytes.current;
    memcpy(x->peak_cat, x->cat_bytes, sizeof x->peak_cat);
}

void wl_fill_stats(const wl_ctx *x, mc_workload_step_result *r)
{
    const ca_stats *s = ca_get_stats(x->a);
    r->peak_allocated = (uint64_t)s->allocated_bytes.peak;
    r->allocated_end = (uint64_t)s->allocated_bytes.current;
    r->peak_reserved = (uint64_t)s->reserved_bytes.peak;
    r->reserved_end = (uint64_t)s->reserved_bytes.current;
    memcpy(r->peak_by_category, x->peak_cat, sizeof x->peak_cat);
}

void wl_live_by_category(const wl_ctx *x, uint64_t out[MC_WL_NCAT])
{
    memcpy(out, x->cat_bytes, sizeof x->cat_bytes);
}
