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

/* An operation's key for the alignment: its kind and its stream's place
 * in the order of first use (the sizes change with the batch; the ids a
 * free names are the trace's own). */
static uint32_t op_key(const ca_trace_op *op, stream_order *o)
{
    long s = op->kind == CA_OP_ALLOC || op->kind == CA_OP_FREE ? stream_index(o, op->stream) : 0;
    return (uint32_t)op->kind | (uint32_t)(s < 0 ? 0xfff : s) << 2 | (uint32_t)op->expect_oom << 14;
}

/* Myers' O((n + m) D) difference of a and b: map[i] = the index in b of
 * a's element i where the two sequences share it in a longest common
 * subsequence, else -1. NULL when more than dmax elements differ. */
static long *align(const uint32_t *a, size_t n, const uint32_t *b, size_t m, size_t dmax)
{
    const long off = (long)dmax + 1;
    size_t width = 2 * dmax + 3;
    long *v = mc_xmalloc(width * sizeof *v);
    long **trace = mc_xmalloc((dmax + 1) * sizeof *trace);
    v[off + 1] = 0;
    long d_end = -1;
    for (long d = 0; d <= (long)dmax && d_end < 0; d++) {
        for (long k = -d; k <= d; k += 2) {
            long x = k == -d || (k != d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
            long y = x - k;
            while (x < (long)n && y < (long)m && a[x] == b[y]) x++, y++;
            v[off + k] = x;
            if (x >= (long)n && y >= (long)m) d_end = d;
        }
        trace[d] = mc_xmalloc(width * sizeof *v);
        memcpy(trace[d], v, width * sizeof *v);
    }
    long *map = NULL;
    if (d_end >= 0) {
        map = mc_xmalloc((n + 1) * sizeof *map);
        for (size_t i = 0; i < n; i++) map[i] = -1;
        long x = (long)n, y = (long)m;
        for (long d = d_end; d >= 0; d--) {
            long k = x - y, px = 0, pk = 0, sx;
            if (d == 0) {
                sx = 0;
            } else {
                const long *pv = trace[d - 1];
                pk = k == -d || (k != d && pv[off + k - 1] < pv[off + k + 1]) ? k + 1 : k - 1;
                px = pv[off + pk];
                sx = pk == k + 1 ? px : px + 1; /* where this step's diagonal starts */
            }
            for (long i = sx; i < x; i++) map[i] = i - k; /* the diagonal: shared */
            if (d > 0) {
                x = px;
                y = px - pk;
            }
        }
    }
    for (long d = 0; d <= (long)dmax && d <= (d_end < 0 ? (long)dmax : d_end); d++) free(trace[d]);
    free(trace);
    free(v);
    return map;
}

#define ALIGN_MAX_DIFF 4096 /* operations that may differ between two snapshots */

/* Bytes at batch x on the line through (x0, y0) and (x1, y1), rounded up
 * where it falls between bytes, at least 1 (below the fitted range). */
static uint64_t on_line(int64_t x0, uint64_t y0, int64_t x1, uint64_t y1, int64_t x)
{
    __int128 dy = (__int128)y1 - (__int128)y0, dx = (__int128)x1 - x0, num = dy * ((__int128)x - x0);
    __int128 v = (__int128)y0 + num / dx + (num % dx > 0);
    return v < 1 ? 1 : (uint64_t)v;
}

/* A copy of t's operations, name and settings (no segments or live blocks). */
static void copy_ops(ca_trace *dst, const ca_trace *t)
{
    *dst = *t;
    dst->name = mc_xmalloc(strlen(t->name) + 1);
    strcpy(dst->name, t->name);
    dst->ops = mc_xmalloc((t->n_ops + 1) * sizeof *dst->ops);
    memcpy(dst->ops, t->ops, t->n_ops * sizeof *t->ops);
    dst->segs = NULL;
    dst->lives = NULL;
}

static bool same_keys(const uint32_t *a, size_t n, const uint32_t *b, size_t m)
{
    return n == m && memcmp(a, b, n * sizeof *a) == 0;
}

/* A key with the request's size: kind, stream and bytes hashed (frees: kind
 * and stream). */
static uint32_t sized_key(const ca_trace_op *op, stream_order *o, uint64_t bytes)
{
    uint64_t h = op_key(op, o);
    if (op->kind == CA_OP_ALLOC) h = (h ^ (bytes * 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL;
    return (uint32_t)(h ^ (h >> 32));
}

/* Aligns run a (at batch ba, its own sizes) with the group run g_hi (at
 * batch bh, position by position the same as g_lo at batch bl), whose sizes
 * are taken at batch ba on the line through g_lo's and g_hi's: map[k] =
 * the index in g_hi of a's operation k, or -1. NULL past most differences. */
static long *align_sized(const ca_trace *a, size_t na, int64_t ba, const ca_trace *g_lo, int64_t bl,
                         const ca_trace *g_hi, int64_t bh, size_t most)
{
    size_t ng = g_hi->n_ops;
    uint32_t *ka = mc_xmalloc((na + 1) * sizeof *ka), *kg = mc_xmalloc((ng + 1) * sizeof *kg);
    stream_order sa = {0}, sg = {0};
    for (size_t k = 0; k < na; k++) ka[k] = sized_key(&a->ops[k], &sa, a->ops[k].bytes);
    for (size_t k = 0; k < ng; k++)
        kg[k] = sized_key(&g_hi->ops[k], &sg, on_line(bl, g_lo->ops[k].bytes, bh, g_hi->ops[k].bytes, ba));
    long *map = align(ka, na, kg, ng, most);
    free(ka);
    free(kg);
    return map;
}

/* Pairs every run with the template, traces[hi] (the largest batch's):
 * map[i][k] = the index in run i of the template's operation k, or -1 (map[hi]
 * stays NULL); *dropped counts the other runs' operations the template does
 * not make. 0, or -1 with the reason in err (more differ than one program's
 * runs do). */
static int pair_runs(const ca_trace *const *traces, const int64_t *batches, const char *const *names, size_t n,
                     size_t hi, long **map, size_t *dropped, char *err, size_t errlen)
{
    const ca_trace *t0 = traces[hi];
    size_t nt = t0->n_ops;
    int rc0 = 0;
    /* Each run's operations as keys (kind, stream); the largest group of
     * runs whose keys are the same pairs position by position, and its fit
     * (through its smallest and largest batch) says what each of its
     * requests would be at another batch: the other runs are aligned with
     * sized keys against that, so that a request pairs with its own
     * counterpart, not with another of its kind beside an inserted one. */
    uint32_t *keys[CA_BATCH_MAX_POINTS];
    for (size_t i = 0; i < n; i++) {
        keys[i] = mc_xmalloc((traces[i]->n_ops + 1) * sizeof **keys);
        stream_order so = {0};
        for (size_t k = 0; k < traces[i]->n_ops; k++) keys[i][k] = op_key(&traces[i]->ops[k], &so);
    }
    size_t g_lo = hi, g_hi = hi, g_n = 0;
    for (size_t i = 0; i < n; i++) {
        size_t cnt = 0, lo_i = i, hi_i = i;
        for (size_t j = 0; j < n; j++)
            if (same_keys(keys[i], traces[i]->n_ops, keys[j], traces[j]->n_ops)) {
                cnt++;
                if (batches[j] < batches[lo_i]) lo_i = j;
                if (batches[j] > batches[hi_i]) hi_i = j;
            }
        if (cnt > g_n || (cnt == g_n && batches[hi_i] > batches[g_hi])) g_n = cnt, g_lo = lo_i, g_hi = hi_i;
    }
    long *t_to_g = NULL; /* the template's ops to the group's representative's, where the template is not in it */
    for (size_t i = 0; i < n && rc0 == 0; i++) {
        if (i == hi) continue;
        const ca_trace *t = traces[i];
        /* more than 15% (and 64) differing is another program: seed 000's nn.Transformer makes 9% more
         * operations at batch 17 than at 8 (reductions' buffers), other programs far more */
        size_t most = (nt > t->n_ops ? nt : t->n_ops) * 3 / 20 + 64;
        if (most > ALIGN_MAX_DIFF) most = ALIGN_MAX_DIFF;
        bool in_group = g_n >= 2 && same_keys(keys[i], t->n_ops, keys[g_hi], traces[g_hi]->n_ops);
        if (same_keys(keys[i], t->n_ops, keys[hi], nt)) {
            map[i] = mc_xmalloc((nt + 1) * sizeof **map);
            for (size_t k = 0; k < nt; k++) map[i][k] = (long)k;
        } else if (g_n >= 2 && in_group) { /* through the group's representative */
            if (!t_to_g) t_to_g = align_sized(t0, nt, batches[hi], traces[g_lo], batches[g_lo], traces[g_hi],
                                              batches[g_hi], most);
            if (t_to_g) {
                map[i] = mc_xmalloc((nt + 1) * sizeof **map);
                memcpy(map[i], t_to_g, nt * sizeof **map);
            }
        } else if (g_n >= 2 && same_keys(keys[hi], nt, keys[g_hi], traces[g_hi]->n_ops)) {
            /* the template is in the group: it, as the group's fit has it at this run's batch */
            map[i] = align_sized(t, t->n_ops, batches[i], traces[g_lo], batches[g_lo], t0, batches[hi], most);
            if (map[i]) { /* align_sized maps run i to the template: turn it round */
                long *inv = mc_xmalloc((nt + 1) * sizeof *inv);
                for (size_t k = 0; k < nt; k++) inv[k] = -1;
                for (size_t k = 0; k < t->n_ops; k++)
                    if (map[i][k] >= 0) inv[map[i][k]] = (long)k;
                free(map[i]);
                map[i] = inv;
            }
        }
        /* without a group, or where the sizes part too often (workspaces of
         * other algorithms): the kinds and streams alone */
        if (!map[i]) map[i] = align(keys[hi], nt, keys[i], t->n_ops, most);
        if (!map[i]) {
            rc0 = fail(err, errlen, "%s and %s: more than %zu of their operations differ (%zu and %zu in all): "
                                    "the snapshots do not pair (not one program, or one that runs differently at "
                                    "another batch)", names[i], names[hi], most, t->n_ops, nt);
            break;
        }
        size_t shared = 0;
        for (size_t k = 0; k < nt; k++) shared += map[i][k] >= 0;
        *dropped += t->n_ops - shared;
    }
    free(t_to_g);
    for (size_t i = 0; i < n; i++) free(keys[i]);
    if (rc0)
        for (size_t j = 0; j < n; j++) free(map[j]), map[j] = NULL;
    return rc0;
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
    }
    /* The template is the largest batch's run: the requests a larger batch
     * makes (a reduction's buffer once the rows are many) are likelier
     * there. Every other run is aligned to it operation by operation. */
    const ca_trace *t0 = traces[hi];
    size_t nt = t0->n_ops;
    long *map[CA_BATCH_MAX_POINTS] = {NULL};
    int rc0 = pair_runs(traces, batches, names, n, hi, map, &f->n_dropped, err, errlen);
    if (rc0) return rc0;
    f->n_points = n;
    memcpy(f->batches, batches, n * sizeof *batches);
    f->lo = batches[lo];
    f->hi = batches[hi];
    f->lo_batch = calloc(nt + 1, sizeof *f->lo_batch);
    f->lo_bytes = calloc(nt + 1, sizeof *f->lo_bytes);
    f->hi_bytes = calloc(nt + 1, sizeof *f->hi_bytes);
    CHECK(f->lo_batch && f->lo_bytes && f->hi_bytes, "out of host memory");
    f->max_batch = INT64_MAX / 2;
    int rc = 0;
    for (size_t k = 0; k < nt && rc == 0; k++) {
        if (t0->ops[k].kind != CA_OP_ALLOC) continue;
        /* the points: (batch, bytes) of each run that makes this request */
        int64_t pb[CA_BATCH_MAX_POINTS], py[CA_BATCH_MAX_POINTS];
        size_t np = 0, first = 0;
        for (size_t i = 0; i < n; i++) {
            const ca_trace_op *op = i == hi ? &t0->ops[k] : map[i][k] >= 0 ? &traces[i]->ops[map[i][k]] : NULL;
            if (!op) continue;
            if (op->bytes > INT64_MAX / 4) {
                rc = fail(err, errlen, "%s:%llu: a request of %llu bytes: past any card", names[i],
                          (unsigned long long)op->line, (unsigned long long)op->bytes);
                break;
            }
            pb[np] = batches[i];
            py[np] = (int64_t)op->bytes;
            if (pb[np] < pb[first]) first = np;
            np++;
        }
        if (rc) break;
        f->hi_bytes[k] = (int64_t)t0->ops[k].bytes;
        if (np == 1) { /* only the largest batch makes it: held at its size */
            f->n_only_top++;
            continue;
        }
        int64_t a = py[first], b = f->hi_bytes[k], x0 = pb[first];
        f->lo_batch[k] = x0;
        f->lo_bytes[k] = a;
        __int128 db = (__int128)f->hi - x0, dy = (__int128)b - a;
        bool affine = dy % db == 0;
        for (size_t i = 0; affine && i < np; i++) /* every point on the line through lo and hi */
            affine = ((__int128)py[i] - a) * db == dy * ((__int128)pb[i] - x0);
        if (dy != 0) f->n_grow++;
        if (!affine) {
            if (f->n_nonaffine < CA_BATCH_MAX_NAMED) {
                f->named[f->n_nonaffine].line = t0->ops[k].line;
                for (size_t i = 0; i < n; i++) {
                    long j = i == hi ? (long)k : map[i][k];
                    f->named[f->n_nonaffine].bytes[i] = j < 0 ? -1 : (int64_t)traces[i]->ops[j].bytes;
                }
            }
            f->n_nonaffine++;
        }
        if (dy > 0) { /* the batch at which this request reaches the allocator's 1 EiB */
            __int128 top = x0 + ((__int128)CA_MAX_REQUEST - 1 - a) * db / dy;
            if (top < f->max_batch) f->max_batch = (int64_t)top;
        }
    }
    for (size_t i = 0; i < n; i++) free(map[i]);
    if (rc) {
        ca_batch_fit_free(f);
        return rc;
    }
    if (f->n_grow == 0) {
        ca_batch_fit_free(f);
        return fail(err, errlen, "%s and %s request the same bytes at batch %lld and %lld: nothing grows with the "
                                 "batch (the batch never reached the GPU?)",
                    names[lo], names[hi], (long long)batches[lo], (long long)batches[hi]);
    }
    copy_ops(&f->tmpl, t0);
    for (size_t k = 0; k < nt; k++) f->tmpl.ops[k].addr = 0; /* the recorded batch's addresses */
    return 0;
}

void ca_batch_fit_free(ca_batch_fit *f)
{
    ca_trace_free(&f->tmpl);
    free(f->lo_batch);
    free(f->lo_bytes);
    free(f->hi_bytes);
    memset(f, 0, sizeof *f);
}

void ca_batch_work(const ca_batch_fit *f, ca_trace *work)
{
    copy_ops(work, &f->tmpl);
}

void ca_batch_at(const ca_batch_fit *f, ca_trace *work, int64_t b)
{
    for (size_t k = 0; k < work->n_ops; k++) {
        if (work->ops[k].kind != CA_OP_ALLOC) continue;
        if (f->lo_batch[k] == 0) { /* made only at the largest batch: held */
            work->ops[k].bytes = (uint64_t)f->hi_bytes[k];
            continue;
        }
        /* the line through its smallest and the largest batch */
        work->ops[k].bytes = on_line(f->lo_batch[k], (uint64_t)f->lo_bytes[k], f->hi, (uint64_t)f->hi_bytes[k], b);
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
    return ca_max_batch_from(f, work, cfg, capacity, 0, r, err, errlen);
}

int ca_max_batch_from(const ca_batch_fit *f, ca_trace *work, const ca_config *cfg, uint64_t capacity, int64_t known,
                      ca_max_batch_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    /* good fits, bad does not (0: none known); from known: known + 1, + 2, + 4, ... */
    int64_t good = known > 0 && known <= f->max_batch ? known : 0, bad = 0, step = 1, b = good + 1;
    int64_t pa[2] = {0}, pr[2] = {0}, p_a, p_r;
    bool fits;
    if (good == f->max_batch) { /* nothing above to try: its figures */
        if (ca_batch_replay(f, work, good, cfg, capacity, &fits, &pa[0], &pr[0], err, errlen) != 0) return -1;
        r->replays++;
    }
    while (bad == 0 && good < f->max_batch) {
        if (ca_batch_replay(f, work, b, cfg, capacity, &fits, &p_a, &p_r, err, errlen) != 0) return -1;
        r->replays++;
        if (fits) {
            good = b;
            pa[0] = p_a;
            pr[0] = p_r;
            /* from 0: 1, 2, 4, ...; from a known batch: steps of 1, 2, 4, ... above it */
            step = known > 0 ? 2 * step : b;
            b = good > f->max_batch - step ? f->max_batch : good + step;
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
