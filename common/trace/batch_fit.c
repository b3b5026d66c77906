/* batch_fit.c: batch_fit.h's fit of request sizes over the batch and the
 * search for the largest batch that fits. Sizes are whole bytes; the fit is
 * exact integer arithmetic (128-bit products), so a request the program
 * sizes as numel * element size comes out the same at every batch. */
#include "batch_fit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "replay.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The index of stream s in t's order of first use (0: the default stream). */
typedef struct {
    uint64_t id[CA_MAX_STREAMS + 1];
    size_t n;
} stream_order;

static long stream_index(stream_order *o, uint64_t s)
{
    if (s == 0) return 0;
    for (size_t i = 0; i < o->n; i++)
        if (o->id[i] == s) return (long)i + 1;
    if (o->n == CA_MAX_STREAMS) return -1;
    o->id[o->n++] = s;
    return (long)o->n;
}

/* Whether op b of another trace pairs with op a of the first. */
static const char *unpaired(const ca_trace_op *a, const ca_trace_op *b, stream_order *sa, stream_order *sb)
{
    if (a->kind != b->kind) return "another operation";
    if (a->kind != CA_OP_ALLOC && a->kind != CA_OP_FREE) return NULL;
    if (a->id != b->id || a->slot != b->slot) return "another request id";
    if (stream_index(sa, a->stream) != stream_index(sb, b->stream)) return "another stream";
    if (a->kind == CA_OP_ALLOC && a->expect_oom != b->expect_oom) return "an out-of-memory mark the other lacks";
    return NULL;
}

int ca_batch_fit_build(ca_batch_fit *f, const ca_trace *const *traces, const int64_t *batches,
                       const char *const *names, size_t n, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    if (n < 2 || n > CA_BATCH_MAX_POINTS)
        return fail(err, errlen, "the largest batch needs 2 to %d snapshots of one program at different "
                                 "batches, not %zu", CA_BATCH_MAX_POINTS, n);
    size_t lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (batches[i] < 1) return fail(err, errlen, "%s: batch %lld: a batch is a whole number >= 1",
                                        names[i], (long long)batches[i]);
        for (size_t j = 0; j < i; j++)
            if (batches[j] == batches[i])
                return fail(err, errlen, "%s and %s: both at batch %lld: the fit needs different batches",
                            names[j], names[i], (long long)batches[i]);
        if (batches[i] < batches[lo]) lo = i;
        if (batches[i] > batches[hi]) hi = i;
        const ca_trace *t = traces[i];
        if (t->n_segs)
            return fail(err, errlen, "%s:%llu: segments from before the recording: record the snapshot from "
                                     "the program's start (_record_memory_history before the model is built)",
                        names[i], (unsigned long long)t->segs[0].line);
        if (i && !ca_config_equal(&t->cfg, &traces[0]->cfg))
            return fail(err, errlen, "%s: other allocator settings than %s: not one program", names[i], names[0]);
        if (i && t->n_ops != traces[0]->n_ops)
            return fail(err, errlen, "%s: %zu operations, %s %zu: not one program at two batches (or a run cut "
                                     "short, or one whose requests change with the batch)",
                        names[i], t->n_ops, names[0], traces[0]->n_ops);
    }
    const ca_trace *t0 = traces[0];
    for (size_t i = 1; i < n; i++) {
        stream_order sa = {0}, sb = {0};
        for (size_t k = 0; k < t0->n_ops; k++) {
            const char *why = unpaired(&t0->ops[k], &traces[i]->ops[k], &sa, &sb);
            if (why)
                return fail(err, errlen, "%s:%llu: %s than %s:%llu: the snapshots do not pair (not one program, "
                                         "or one that runs differently at another batch)",
                            names[i], (unsigned long long)traces[i]->ops[k].line, why, names[0],
                            (unsigned long long)t0->ops[k].line);
        }
    }
    f->n_points = n;
    memcpy(f->batches, batches, n * sizeof *batches);
    f->lo = batches[lo];
    f->hi = batches[hi];
    f->lo_bytes = calloc(t0->n_ops + 1, sizeof *f->lo_bytes);
    f->hi_bytes = calloc(t0->n_ops + 1, sizeof *f->hi_bytes);
    CHECK(f->lo_bytes && f->hi_bytes, "out of host memory");
    f->max_batch = INT64_MAX / 2;
    const __int128 db = (__int128)f->hi - f->lo;
    for (size_t k = 0; k < t0->n_ops; k++) {
        if (t0->ops[k].kind != CA_OP_ALLOC) continue;
        int64_t a = (int64_t)traces[lo]->ops[k].bytes, b = (int64_t)traces[hi]->ops[k].bytes;
        if (traces[lo]->ops[k].bytes > INT64_MAX / 4 || traces[hi]->ops[k].bytes > INT64_MAX / 4) {
            ca_batch_fit_free(f);
            return fail(err, errlen, "%s:%llu: a request of %llu bytes: past any card", names[hi],
                        (unsigned long long)traces[hi]->ops[k].line, (unsigned long long)traces[hi]->ops[k].bytes);
        }
        f->lo_bytes[k] = a;
        f->hi_bytes[k] = b;
        __int128 dy = (__int128)b - a;
        bool affine = dy % db == 0;
        for (size_t i = 0; affine && i < n; i++) /* every point on the line through lo and hi */
            affine = ((__int128)traces[i]->ops[k].bytes - a) * db == dy * ((__int128)batches[i] - f->lo);
        if (dy != 0) f->n_grow++;
        if (!affine) {
            if (f->n_nonaffine < CA_BATCH_MAX_NAMED) {
                f->named[f->n_nonaffine].line = t0->ops[k].line;
                for (size_t i = 0; i < n; i++) f->named[f->n_nonaffine].bytes[i] = (int64_t)traces[i]->ops[k].bytes;
            }
            f->n_nonaffine++;
        }
        if (dy > 0) { /* the batch at which this request reaches the allocator's 1 EiB */
            __int128 top = f->lo + ((__int128)CA_MAX_REQUEST - 1 - a) * db / dy;
            if (top < f->max_batch) f->max_batch = (int64_t)top;
        }
    }
    if (f->n_grow == 0) {
        ca_batch_fit_free(f);
        return fail(err, errlen, "%s and %s request the same bytes at batch %lld and %lld: nothing grows with the "
                                 "batch (the batch never reached the GPU?)",
                    names[lo], names[hi], (long long)batches[lo], (long long)batches[hi]);
    }
    f->tmpl = *t0;
    f->tmpl.name = mc_xmalloc(strlen(t0->name) + 1);
    strcpy(f->tmpl.name, t0->name);
    f->tmpl.ops = mc_xmalloc((t0->n_ops + 1) * sizeof *f->tmpl.ops);
    memcpy(f->tmpl.ops, t0->ops, t0->n_ops * sizeof *t0->ops);
    for (size_t k = 0; k < t0->n_ops; k++) f->tmpl.ops[k].addr = 0; /* the recorded batch's addresses */
    f->tmpl.segs = NULL;
    f->tmpl.lives = NULL;
    return 0;
}

void ca_batch_fit_free(ca_batch_fit *f)
{
    ca_trace_free(&f->tmpl);
    free(f->lo_bytes);
    free(f->hi_bytes);
    memset(f, 0, sizeof *f);
}

void ca_batch_work(const ca_batch_fit *f, ca_trace *work)
{
    *work = f->tmpl;
    work->name = mc_xmalloc(strlen(f->tmpl.name) + 1);
    strcpy(work->name, f->tmpl.name);
    work->ops = mc_xmalloc((f->tmpl.n_ops + 1) * sizeof *work->ops);
    memcpy(work->ops, f->tmpl.ops, f->tmpl.n_ops * sizeof *work->ops);
}

void ca_batch_at(const ca_batch_fit *f, ca_trace *work, int64_t b)
{
    const __int128 db = (__int128)f->hi - f->lo;
    for (size_t k = 0; k < work->n_ops; k++) {
        if (work->ops[k].kind != CA_OP_ALLOC) continue;
        __int128 a = f->lo_bytes[k], dy = (__int128)f->hi_bytes[k] - a, num = dy * ((__int128)b - f->lo);
        /* the line through lo and hi; rounded up where it falls between bytes */
        __int128 q = num / db, r = num % db;
        __int128 v = a + q + (r > 0);
        work->ops[k].bytes = v < 1 ? 1 : (uint64_t)v; /* below the fitted range: at least a byte */
    }
}

int ca_batch_replay(const ca_batch_fit *f, ca_trace *work, int64_t b, const ca_config *cfg, uint64_t capacity,
                    bool *fits, int64_t *peak_allocated, int64_t *peak_reserved, char *err, size_t errlen)
{
    FILE *sink = fopen("/dev/null", "w"); /* the summary line is not wanted */
    CHECK(sink != NULL, "cannot open /dev/null");
    ca_replay_opts o = ca_replay_defaults();
    o.use_addresses = false;
    o.capacity = capacity;
    o.cfg = cfg;
    o.summary = true;
    o.what_if = true; /* a free of a refused request is skipped */
    ca_replay_result res;
    ca_batch_at(f, work, b);
    int rc = ca_replay(work, &o, sink, &res, err, errlen);
    fclose(sink);
    if (rc != 0) return -1;
    *fits = res.unexpected_ooms == 0;
    *peak_allocated = res.peak_allocated;
    *peak_reserved = res.peak_reserved;
    return 0;
}

int ca_max_batch(const ca_batch_fit *f, ca_trace *work, const ca_config *cfg, uint64_t capacity,
                 ca_max_batch_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    int64_t good = 0, bad = 0, b = 1; /* good fits, bad does not (0: none known) */
    int64_t pa[2] = {0}, pr[2] = {0}, p_a, p_r;
    bool fits;
    while (bad == 0) { /* 1, 2, 4, ... */
        if (ca_batch_replay(f, work, b, cfg, capacity, &fits, &p_a, &p_r, err, errlen) != 0) return -1;
        r->replays++;
        if (fits) {
            good = b;
            pa[0] = p_a;
            pr[0] = p_r;
            if (b == f->max_batch) break;
            b = b > f->max_batch / 2 ? f->max_batch : 2 * b;
        } else {
            bad = b;
            pa[1] = p_a;
            pr[1] = p_r;
        }
    }
    while (bad && bad - good > 1) {
        int64_t mid = good + (bad - good) / 2;
        if (ca_batch_replay(f, work, mid, cfg, capacity, &fits, &p_a, &p_r, err, errlen) != 0) return -1;
        r->replays++;
        if (fits) {
            good = mid;
            pa[0] = p_a;
            pr[0] = p_r;
        } else {
            bad = mid;
            pa[1] = p_a;
            pr[1] = p_r;
        }
    }
    r->max_batch = good;
    r->unbounded = bad == 0;
    if (r->unbounded) { /* the batch past the fit's range is not asked */
        r->fits_next = true;
        pa[1] = pa[0];
        pr[1] = pr[0];
    }
    memcpy(r->peak_allocated, pa, sizeof pa);
    memcpy(r->peak_reserved, pr, sizeof pr);
    return 0;
}
