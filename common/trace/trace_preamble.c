/* trace_preamble.c: memclaims-trace v2's preamble (trace.h): the segment
 * and live lines, which describe the allocator's state before a recording
 * began, and the checks once every line is read. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "trace_internal.h"

/* "name=value" with a number value; 1 if v is such a token for name, 0 if
 * not, -1 (with the message) if the value is bad. */
int trace_named(parser *ps, tok v, const char *name, uint64_t *out)
{
    size_t n = strlen(name);
    char s1[48];
    if (v.n <= n || memcmp(v.p, name, n) != 0 || v.p[n] != '=') return 0;
    tok val = {v.p + n + 1, v.n - n - 1};
    if (trace_u64(val, true, out) != 0) return trace_bad(ps, "bad value '%s' for %.*s", trace_show(val, s1), (int)n, name);
    return 1;
}

/* segment ADDR BYTES [stream=S] [pool=small|large] */
int trace_segment_line(parser *ps, const tok *v, size_t n)
{
    char s1[48];
    ca_trace *t = ps->t;
    if (t->n_ops > 0) return trace_bad(ps, "segment after the first operation");
    if (n < 3) return trace_bad(ps, "segment needs an address and a byte count");
    uint64_t addr, bytes, stream = 0;
    if (trace_u64(v[1], true, &addr) != 0 || addr == 0 || addr % 512)
        return trace_bad(ps, "bad segment address '%s' (nonzero, a multiple of 512)", trace_show(v[1], s1));
    if (trace_u64(v[2], true, &bytes) != 0 || bytes == 0 || bytes % 512 || addr > UINT64_MAX - bytes)
        return trace_bad(ps, "bad segment size '%s' (nonzero, a multiple of 512)", trace_show(v[2], s1));
    bool small = bytes == CA_SMALL_BUFFER, seen_stream = false, seen_pool = false;
    for (size_t i = 3; i < n; i++) {
        int r = trace_named(ps, v[i], "stream", &stream);
        if (r < 0) return -1;
        if (r > 0 && !seen_stream) {
            seen_stream = true;
        } else if (!seen_pool && (tok_is(v[i], "pool=small") || tok_is(v[i], "pool=large"))) {
            seen_pool = true;
            small = tok_is(v[i], "pool=small");
        } else {
            return trace_bad(ps, "unexpected '%s' in a segment line", trace_show(v[i], s1));
        }
    }
    if (small && bytes != CA_SMALL_BUFFER && !seen_pool) small = false;
    if (t->n_segs == ps->cap_segs) {
        ps->cap_segs = ps->cap_segs ? 2 * ps->cap_segs : 64;
        t->segs = realloc(t->segs, ps->cap_segs * sizeof *t->segs);
        CHECK(t->segs != NULL, "out of host memory");
    }
    t->segs[t->n_segs++] = (ca_trace_seg){.addr = addr, .bytes = bytes, .stream = stream,
                                          .line = ps->line, .small = small};
    return 0;
}

/* live ID BYTES ADDR [stream=S] [block=BYTES] */
int trace_live_line(parser *ps, const tok *v, size_t n)
{
    char s1[48];
    ca_trace *t = ps->t;
    if (t->n_ops > 0) return trace_bad(ps, "live after the first operation");
    if (n < 4) return trace_bad(ps, "live needs an id, a byte count and an address");
    uint64_t id, bytes, addr, stream = 0, block = 0;
    if (trace_u64(v[1], false, &id) != 0) return trace_bad(ps, "bad id '%s'", trace_show(v[1], s1));
    if (trace_u64(v[2], true, &bytes) != 0 || bytes == 0) return trace_bad(ps, "bad byte count '%s'", trace_show(v[2], s1));
    if (trace_u64(v[3], true, &addr) != 0 || addr == 0) return trace_bad(ps, "bad address '%s'", trace_show(v[3], s1));
    bool seen_stream = false, seen_block = false;
    for (size_t i = 4; i < n; i++) {
        int r;
        if (!seen_stream && (r = trace_named(ps, v[i], "stream", &stream)) != 0) {
            if (r < 0) return -1;
            seen_stream = true;
        } else if (!seen_block && (r = trace_named(ps, v[i], "block", &block)) != 0) {
            if (r < 0) return -1;
            if (block == 0) return trace_bad(ps, "block size must be >= 1");
            seen_block = true;
        } else {
            return trace_bad(ps, "unexpected '%s' in a live line", trace_show(v[i], s1));
        }
    }
    if (bytes >= CA_MAX_REQUEST) return trace_bad(ps, "byte count must be below 2^60");
    id_reserve(&ps->ids);
    id_entry *e = id_find(&ps->ids, id);
    if (e->slot1) return trace_already_live(ps, id);
    uint64_t slot = t->n_slots++;
    *e = (id_entry){id, slot + 1};
    ps->ids.n++;
    if (t->n_lives == ps->cap_lives) {
        ps->cap_lives = ps->cap_lives ? 2 * ps->cap_lives : 64;
        t->lives = realloc(t->lives, ps->cap_lives * sizeof *t->lives);
        CHECK(t->lives != NULL, "out of host memory");
    }
    t->uses_streams |= stream != 0;
    t->lives[t->n_lives++] = (ca_trace_live){.id = id, .bytes = bytes, .addr = addr, .stream = stream,
                                             .line = ps->line, .slot = slot, .block = block};
    return 0;
}

static int seg_cmp(const void *x, const void *y)
{
    uint64_t a = ((const ca_trace_seg *)x)->addr, b = ((const ca_trace_seg *)y)->addr;
    return a < b ? -1 : a > b;
}

/* A live block with the index of the segment it lies in, for sorting
 * by segment, then address. */
typedef struct {
    size_t seg;
    ca_trace_live l;
} placed;

static int placed_cmp(const void *x, const void *y)
{
    const placed *a = x, *b = y;
    if (a->seg != b->seg) return a->seg < b->seg ? -1 : 1;
    return a->l.addr < b->l.addr ? -1 : a->l.addr > b->l.addr;
}

/* After the last line: segments by address, not overlapping; every live
 * block inside one segment of its own stream; lives grouped by segment. */
int trace_finish_preamble(parser *ps)
{
    ca_trace *t = ps->t;
    if (t->n_segs == 0 && t->n_lives == 0) return 0;
    if (t->n_segs) qsort(t->segs, t->n_segs, sizeof *t->segs, seg_cmp);
    for (size_t i = 0; i + 1 < t->n_segs; i++) {
        const ca_trace_seg *a = &t->segs[i], *b = &t->segs[i + 1];
        if (a->addr + a->bytes > b->addr) {
            ps->line = a->line > b->line ? a->line : b->line;
            return trace_bad(ps, "segment overlaps the segment at line %llu",
                       (unsigned long long)(a->line > b->line ? b->line : a->line));
        }
    }
    placed *pl = mc_xmalloc((t->n_lives + 1) * sizeof *pl);
    for (size_t i = 0; i < t->n_lives; i++) {
        const ca_trace_live *l = &t->lives[i];
        size_t lo = 0, hi = t->n_segs; /* the last segment starting at or below l->addr */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (t->segs[mid].addr <= l->addr) lo = mid + 1; else hi = mid;
        }
        ps->line = l->line;
        if (lo == 0 || l->addr >= t->segs[lo - 1].addr + t->segs[lo - 1].bytes) {
            free(pl);
            return trace_bad(ps, "live block 0x%llx lies in no segment", (unsigned long long)l->addr);
        }
        const ca_trace_seg *s = &t->segs[lo - 1];
        if (s->stream != l->stream) {
            free(pl);
            return trace_bad(ps, "live block on stream %llu lies in the segment of stream %llu (line %llu)",
                       (unsigned long long)l->stream, (unsigned long long)s->stream,
                       (unsigned long long)s->line);
        }
        pl[i] = (placed){lo - 1, *l};
    }
    qsort(pl, t->n_lives, sizeof *pl, placed_cmp);
    for (size_t i = 0; i < t->n_lives; i++) {
        t->lives[i] = pl[i].l;
        ca_trace_seg *s = &t->segs[pl[i].seg];
        if (s->n_live == 0) s->first_live = i;
        s->n_live++;
    }
    free(pl);
    return 0;
}

