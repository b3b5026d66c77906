/* replay.c: a parsed trace through the model over the host backend, one CSV
 * row per operation (replay.h). Rows are formatted by hand (decimal.h) into
 * a 64 KiB buffer: printf would cost more than the model itself at millions
 * of rows a second. */
#define _DEFAULT_SOURCE /* madvise (prefault.h) */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "alloc_host.h"
#include "check.h"
#include "decimal.h"
#include "prefault.h"

/* ------------------------------------------------------------ output */

typedef struct {
    FILE *fp;
    size_t n;
    bool failed;
    char buf[1 << 16];
} writer;

static void flush(writer *w)
{
    if (w->n && fwrite(w->buf, 1, w->n, w->fp) != w->n) w->failed = true;
    w->n = 0;
}

/* A statistic column remembers its last value and its text (with the comma
 * before it): most figures do not change from one row to the next, and
 * copying beats formatting. Columns start as 0, ",0". */
typedef struct {
    int64_t v;
    size_t len;
    char txt[24];
} column;

/* Sets c's text for v (which differs from the cached value). */
static void column_set(column *c, int64_t v)
{
    c->v = v;
    c->txt[0] = ',';
    if (v < 0) { /* never, unless the model is broken; print it as it is */
        c->txt[1] = '-';
        c->len = 2 + dec_put(c->txt + 2, (uint64_t)0 - (uint64_t)v);
    } else {
        c->len = 1 + dec_put(c->txt + 1, (uint64_t)v);
    }
}

/* ",<v>" at p; returns the new end. */
static inline char *put_stat(char *p, column *c, int64_t v)
{
    if (v != c->v) column_set(c, v);
    memcpy(p, c->txt, sizeof c->txt);
    return p + c->len;
}

/* The same for a column that often equals another one (active is allocated
 * with one stream; a peak is often the current value): a change takes the
 * twin's text when the values agree. */
static inline char *put_twin(char *p, column *c, int64_t v, const column *twin)
{
    if (v != c->v && twin->v == v) *c = *twin;
    return put_stat(p, c, v);
}

enum { N_STAT_COLUMNS = 11 };

/* The step counter as text, counted up in place (it only ever grows by 1). */
typedef struct {
    size_t len;
    char txt[24];
} counter;

static void count_up(counter *c)
{
    size_t i = c->len;
    while (i > 0 && c->txt[i - 1] == '9') c->txt[--i] = '0';
    if (i > 0) {
        c->txt[i - 1]++;
    } else { /* 99..9 + 1: one more digit */
        memmove(c->txt + 1, c->txt, c->len++);
        c->txt[0] = '1';
    }
}

/* One row: under 400 bytes (14 numbers of at most 21 bytes, the names),
 * and the wide stores of decimal.h write up to 24 bytes past a number, all
 * inside the 1024 bytes kept free. Writes through a local cursor (the
 * buffer is char, so stores through w->buf would make the compiler reload
 * w->n after each). */
static void put_row(writer *w, column *cols, counter *step, const ca_trace_op *op, bool oom,
                    const ca_stats *s)
{
    static const struct { char name[16]; size_t len; } ops[] = {
        {"alloc,", 6}, {"free,", 5}, {"empty_cache,", 12}, {"reset_peak,", 11}};
    if (w->n > sizeof w->buf - 1024) flush(w);
    char *p = w->buf + w->n;
    count_up(step);
    memcpy(p, step->txt, sizeof step->txt);
    p += step->len;
    *p++ = ',';
    memcpy(p, ops[op->kind].name, sizeof ops[0].name);
    p += ops[op->kind].len;
    if (op->kind == CA_OP_ALLOC || op->kind == CA_OP_FREE) p += dec_put(p, op->id);
    *p++ = ',';
    if (op->kind == CA_OP_ALLOC) p += dec_put(p, op->bytes);
    memcpy(p, oom ? ",oom" : ",ok\0", 4);
    p += oom ? 4 : 3;
    p = put_stat(p, &cols[0], s->allocated_bytes.current);
    p = put_stat(p, &cols[1], s->reserved_bytes.current);
    p = put_twin(p, &cols[2], s->allocated_bytes.peak, &cols[0]);
    p = put_twin(p, &cols[3], s->reserved_bytes.peak, &cols[1]);
    p = put_stat(p, &cols[4], s->segment.current);
    p = put_twin(p, &cols[5], s->active_bytes.current, &cols[0]);
    p = put_stat(p, &cols[6], s->inactive_split_bytes.current);
    p = put_stat(p, &cols[7], s->inactive_split.current);
    p = put_stat(p, &cols[8], s->requested_bytes.current);
    p = put_stat(p, &cols[9], s->num_alloc_retries);
    p = put_stat(p, &cols[10], s->num_ooms);
    *p++ = '\n';
    w->n = (size_t)(p - w->buf);
}

/* ------------------------------------------------------------ replay */

ca_replay_opts ca_replay_defaults(void)
{
    ca_replay_opts o = {true, CA_REPLAY_DEFAULT_CAPACITY, false, NULL};
    return o;
}

static uint64_t alloc_line_of(const ca_trace *t, size_t upto, uint64_t slot)
{
    for (size_t i = upto; i-- > 0;)
        if (t->ops[i].kind == CA_OP_ALLOC && t->ops[i].slot == slot) return t->ops[i].line;
    return 0;
}

typedef struct {
    const ca_trace *t;
    const ca_replay_opts *o;
    ca_host_device *dev;
    ca_allocator *a;
    uint64_t *slot_addr; /* the block of each alloc; 0: not allocated (oom) */
    ca_replay_result res;
    writer *w;
    column cols[N_STAT_COLUMNS];
    counter step;
} run;

static void mismatch(run *r, const ca_trace_op *op, uint64_t got)
{
    if (++r->res.addr_mismatches > 10 || !r->o->warn) return;
    fprintf(r->o->warn, "%s:%llu: warning: id %llu got address 0x%llx, the trace says 0x%llx%s\n",
            r->t->name, (unsigned long long)op->line, (unsigned long long)op->id,
            (unsigned long long)got, (unsigned long long)op->addr,
            r->res.addr_mismatches == 10 ? " (further mismatches are only counted)" : "");
}

/* One operation; returns false for a free of an id that was never allocated. */
static bool step(run *r, const ca_trace_op *op, bool *oom)
{
    *oom = false;
    switch (op->kind) {
    case CA_OP_ALLOC: {
        bool hinted = r->o->use_addresses && op->addr;
        if (hinted) ca_host_hint_next(r->dev, op->addr);
        uint64_t addr = 0;
        *oom = ca_malloc(r->a, op->bytes, &addr) != CA_OK;
        if (hinted) ca_host_hint_next(r->dev, 0);
        r->slot_addr[op->slot] = addr;
        if (hinted && !*oom && addr != op->addr) mismatch(r, op, addr);
        return true;
    }
    case CA_OP_FREE:
        if (r->slot_addr[op->slot] == 0) return false;
        CHECK(ca_free(r->a, r->slot_addr[op->slot]) == 0, "replay: the model lost block 0x%llx",
              (unsigned long long)r->slot_addr[op->slot]);
        r->slot_addr[op->slot] = 0;
        return true;
    case CA_OP_EMPTY_CACHE:
        ca_empty_cache(r->a);
        return true;
    case CA_OP_RESET_PEAK:
        ca_reset_peak(r->a);
        return true;
    }
    return true;
}

int ca_replay(const ca_trace *t, const ca_replay_opts *o, FILE *out, ca_replay_result *res,
              char *err, size_t errlen)
{
    run r = {.t = t, .o = o};
    for (int i = 0; i < N_STAT_COLUMNS; i++) r.cols[i] = (column){0, 2, ",0"};
    r.dev = ca_host_create(o->capacity);
    r.a = ca_create(&t->cfg, ca_host_backend(r.dev));
    if (!r.a) {
        ca_host_destroy(r.dev);
        snprintf(err, errlen, "%s: the allocator settings are invalid", t->name);
        return -1;
    }
    ca_set_debug(r.a, o->debug);
    r.slot_addr = calloc(t->n_slots + 1, sizeof *r.slot_addr);
    CHECK(r.slot_addr != NULL, "out of host memory");
    mc_want_huge_pages(r.slot_addr, (t->n_slots + 1) * sizeof *r.slot_addr);
    mc_prefault(r.slot_addr, (t->n_slots + 1) * sizeof *r.slot_addr);
    r.w = mc_xmalloc(sizeof *r.w);
    r.w->fp = out;
    r.w->failed = false;
    memcpy(r.w->buf, CA_REPLAY_HEADER "\n", strlen(CA_REPLAY_HEADER "\n"));
    r.w->n = strlen(CA_REPLAY_HEADER "\n");
    int rc = 0;
    for (size_t i = 0; i < t->n_ops; i++) {
        const ca_trace_op *op = &t->ops[i];
        bool oom;
        if (!step(&r, op, &oom)) {
            snprintf(err, errlen, "%s:%llu: id %llu was never allocated: its request at line %llu ran out of memory",
                     t->name, (unsigned long long)op->line, (unsigned long long)op->id,
                     (unsigned long long)alloc_line_of(t, i, op->slot));
            rc = -1;
            break;
        }
        put_row(r.w, r.cols, &r.step, op, oom, ca_get_stats(r.a));
        r.res.steps++;
    }
    flush(r.w);
    if (fflush(out) != 0) r.w->failed = true;
    if (rc == 0 && r.w->failed) {
        snprintf(err, errlen, "%s: could not write the output", t->name);
        rc = -1;
    }
    r.res.hint_conflicts = ca_host_hint_conflicts(r.dev);
    if (res) *res = r.res;
    free(r.w);
    free(r.slot_addr);
    ca_destroy(r.a);
    ca_host_destroy(r.dev);
    return rc;
}
