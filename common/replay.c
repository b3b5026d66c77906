/* replay.c: a parsed trace through the model over the host backend, one CSV
 * row per operation (replay.h). Rows are formatted by hand into a 64 KiB
 * buffer: printf would cost more than the model itself at millions of rows
 * a second. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "alloc_host.h"
#include "check.h"

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

static const char pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static void put2(char *p, unsigned v)
{
    p[0] = pairs[2 * v];
    p[1] = pairs[2 * v + 1];
}

/* Exactly 8 digits of v < 10^8; the four pairs do not wait on each other. */
static void put8(char *p, uint32_t v)
{
    uint32_t a = v / 10000, b = v % 10000;
    put2(p, a / 100);
    put2(p + 2, a % 100);
    put2(p + 4, b / 100);
    put2(p + 6, b % 100);
}

/* v < 10^8 without leading zeros; returns the length. */
static size_t put_small(char *p, uint32_t v)
{
    size_t n = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5
             : v < 1000000 ? 6 : v < 10000000 ? 7 : 8;
    char *q = p + n;
    while (v >= 100) {
        q -= 2;
        put2(q, v % 100);
        v /= 100;
    }
    if (v >= 10)
        put2(q - 2, v);
    else
        q[-1] = (char)('0' + v);
    return n;
}

/* Decimal v at p; returns the length (at most 20). */
static size_t fmt_u64(char *p, uint64_t v)
{
    if (v < 100000000) return put_small(p, (uint32_t)v);
    if (v < 10000000000000000ULL) {
        size_t n = put_small(p, (uint32_t)(v / 100000000));
        put8(p + n, (uint32_t)(v % 100000000));
        return n + 8;
    }
    uint64_t rest = v % 10000000000000000ULL;
    size_t n = put_small(p, (uint32_t)(v / 10000000000000000ULL));
    put8(p + n, (uint32_t)(rest / 100000000));
    put8(p + n + 8, (uint32_t)(rest % 100000000));
    return n + 16;
}

/* A statistic column remembers its last value and text: most figures do
 * not change from one row to the next, and copying beats formatting. */
typedef struct {
    int64_t v;
    size_t len; /* 0: nothing cached yet */
    char txt[24];
} column;

/* ",<v>" at p; returns the new end. A changed value is copied from its twin
 * column when they agree (active is allocated with one stream; a peak is
 * often the current value). */
static char *put_stat(char *p, column *c, int64_t v, const column *twin)
{
    if (v != c->v || c->len == 0) {
        c->v = v;
        if (twin && twin->v == v && twin->len) {
            memcpy(c->txt, twin->txt, sizeof c->txt);
            c->len = twin->len;
        } else if (v < 0) { /* never, unless the model is broken; print it as it is */
            c->txt[0] = '-';
            c->len = 1 + fmt_u64(c->txt + 1, (uint64_t)0 - (uint64_t)v);
        } else {
            c->len = fmt_u64(c->txt, (uint64_t)v);
        }
    }
    *p = ',';
    memcpy(p + 1, c->txt, sizeof c->txt);
    return p + 1 + c->len;
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

/* One row. Writes through a local cursor (the buffer is char, so stores
 * through w->buf would make the compiler reload w->n after each). */
static void put_row(writer *w, column *cols, counter *step, const ca_trace_op *op, bool oom,
                    const ca_stats *s)
{
    static const struct { char name[12]; size_t len; } ops[] = {
        {"alloc,", 6}, {"free,", 5}, {"empty_cache,", 12}, {"reset_peak,", 11}};
    static const int twin[N_STAT_COLUMNS] = {-1, -1, 0, 1, -1, 0, -1, -1, -1, -1, -1};
    if (w->n > sizeof w->buf - 1024) flush(w);
    char *p = w->buf + w->n;
    count_up(step);
    memcpy(p, step->txt, sizeof step->txt);
    p += step->len;
    *p++ = ',';
    memcpy(p, ops[op->kind].name, sizeof ops[0].name);
    p += ops[op->kind].len;
    if (op->kind == CA_OP_ALLOC || op->kind == CA_OP_FREE) p += fmt_u64(p, op->id);
    *p++ = ',';
    if (op->kind == CA_OP_ALLOC) p += fmt_u64(p, op->bytes);
    memcpy(p, oom ? ",oom" : ",ok\0", 4);
    p += oom ? 4 : 3;
    const int64_t v[N_STAT_COLUMNS] = {
        s->allocated_bytes.current, s->reserved_bytes.current, s->allocated_bytes.peak,
        s->reserved_bytes.peak, s->segment.current, s->active_bytes.current,
        s->inactive_split_bytes.current, s->inactive_split.current, s->requested_bytes.current,
        s->num_alloc_retries, s->num_ooms};
    for (int i = 0; i < N_STAT_COLUMNS; i++)
        p = put_stat(p, &cols[i], v[i], twin[i] >= 0 ? &cols[twin[i]] : NULL);
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
