/* replay.c: a parsed trace through the model over the host backend, one CSV
 * row per operation (replay.h). Rows are formatted by hand (decimal.h) into
 * a 64 KiB buffer: printf would cost more than the model itself at millions
 * of rows a second. */
#define _DEFAULT_SOURCE /* madvise (prefault.h) */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_host.h"
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
    if (oom && op->kind == CA_OP_FREE) {
        memcpy(p, ",skipped", 8);
        p += 8;
    } else {
        memcpy(p, oom ? ",oom" : ",ok\0", 4);
        p += oom ? 4 : 3;
    }
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
    ca_replay_opts o = {true, CA_REPLAY_DEFAULT_CAPACITY, false, NULL, NULL, false, false};
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
    uint64_t *slot_stream; /* the stream of each alloc (traces that name streams) */
    bool hints;          /* place new segments at the trace's addresses */
    bool quiet_mismatch; /* other settings than the trace's: mismatches are expected */
    bool what_if;        /* frees of refused ids are skipped */
    ca_replay_result res;
    writer *w;
    column cols[N_STAT_COLUMNS];
    counter step;
} run;

static void mismatch(run *r, const ca_trace_op *op, uint64_t got)
{
    if (++r->res.addr_mismatches > 10 || !r->o->warn || r->quiet_mismatch) return;
    fprintf(r->o->warn, "%s:%llu: warning: id %llu got address 0x%llx, the trace says 0x%llx%s\n",
            r->t->name, (unsigned long long)op->line, (unsigned long long)op->id,
            (unsigned long long)got, (unsigned long long)op->addr,
            r->res.addr_mismatches == 10 ? " (further mismatches are only counted)" : "");
}

static inline void track(run *r, const ca_stats *s);

/* A refused request: the first ones are listed. */
static void refused(run *r, const ca_trace_op *op)
{
    ca_replay_result *s = &r->res;
    if (s->refused++ == 0) {
        const ca_stats *st = ca_get_stats(r->a); /* this request's retries and OOM included */
        s->first_oom_step = s->steps + 1;
        s->first_oom_bytes = op->bytes;
        s->alloc_retries = st->num_alloc_retries;
        s->ooms = st->num_ooms;
    }
    if (!op->expect_oom) s->unexpected_ooms++;
    if (s->n_failed < CA_REPLAY_FAILED_MAX) {
        s->failed[s->n_failed].step = s->steps + 1;
        s->failed[s->n_failed].id = op->id;
        s->failed[s->n_failed++].bytes = op->bytes;
    }
}

/* One operation; returns 0, 1 for a free of an id that was never allocated,
 * 2 for a free on another stream than its alloc's, 3 for too many streams. */
static int step(run *r, const ca_trace_op *op, bool *oom)
{
    *oom = false;
    switch (op->kind) {
    case CA_OP_ALLOC: {
        bool hinted = r->hints && op->addr;
        if (hinted) ca_host_hint_next(r->dev, op->addr);
        uint64_t addr = 0;
        int rc = op->stream ? ca_malloc_stream(r->a, op->bytes, op->stream, &addr)
                            : ca_malloc(r->a, op->bytes, &addr);
        if (hinted) ca_host_hint_next(r->dev, 0);
        if (rc == CA_TOO_MANY_STREAMS) return 3;
        *oom = rc != CA_OK;
        if (op->expect_oom) {
            r->res.expected_ooms++;
            if (!*oom) { /* PyTorch refused it, the model did not: the program never had it */
                r->res.expected_ooms_granted++;
                track(r, ca_get_stats(r->a)); /* the peaks count it while it was there */
                CHECK(ca_free(r->a, addr) == 0, "replay: the model lost block 0x%llx", (unsigned long long)addr);
                addr = 0;
            }
        } else if (hinted && !*oom && addr != op->addr) {
            mismatch(r, op, addr);
        }
        if (*oom) refused(r, op);
        r->slot_addr[op->slot] = addr;
        if (r->slot_stream) r->slot_stream[op->slot] = op->stream;
        return 0;
    }
    case CA_OP_FREE:
        if (r->slot_addr[op->slot] == 0) {
            if (!r->what_if) return 1;
            r->res.skipped_frees++;
            *oom = true; /* the row says skipped */
            return 0;
        }
        if (op->has_stream && r->slot_stream && r->slot_stream[op->slot] != op->stream) return 2;
        CHECK(ca_free(r->a, r->slot_addr[op->slot]) == 0, "replay: the model lost block 0x%llx",
              (unsigned long long)r->slot_addr[op->slot]);
        r->slot_addr[op->slot] = 0;
        return 0;
    case CA_OP_EMPTY_CACHE:
        ca_empty_cache(r->a);
        return 0;
    case CA_OP_RESET_PEAK:
        ca_reset_peak(r->a);
        return 0;
    }
    return 0;
}

/* The whole-run figures after an operation. */
static inline void track(run *r, const ca_stats *s)
{
    ca_replay_result *x = &r->res;
    if (s->allocated_bytes.current > x->peak_allocated) x->peak_allocated = s->allocated_bytes.current;
    if (s->requested_bytes.current > x->peak_requested) x->peak_requested = s->requested_bytes.current;
    if (s->segment.current > x->segments_peak) x->segments_peak = s->segment.current;
    if (s->reserved_bytes.current > x->peak_reserved) {
        x->peak_reserved = s->reserved_bytes.current;
        x->largest_free_at_peak_reserved = ca_largest_free_block(r->a);
        x->free_at_peak_reserved = (uint64_t)(s->reserved_bytes.current - s->allocated_bytes.current);
    }
}

/* The segments and live blocks from before the recording. */
static int preload(run *r, char *err, size_t errlen)
{
    const ca_trace *t = r->t;
    ca_preload_block *v = mc_xmalloc((t->n_lives + 1) * sizeof *v);
    for (size_t i = 0; i < t->n_segs; i++) {
        const ca_trace_seg *s = &t->segs[i];
        for (size_t k = 0; k < s->n_live; k++) {
            const ca_trace_live *l = &t->lives[s->first_live + k];
            v[k] = (ca_preload_block){l->addr, l->block, l->bytes};
            r->slot_addr[l->slot] = l->addr;
            if (r->slot_stream) r->slot_stream[l->slot] = l->stream;
        }
        char why[256];
        ca_host_hint_next(r->dev, s->addr);
        int rc = ca_preload_segment(r->a, s->addr, s->bytes, s->stream, s->small, v, s->n_live, why, sizeof why);
        ca_host_hint_next(r->dev, 0);
        if (rc == CA_PRELOAD_NO_ROOM && r->what_if) { /* a smaller device than the run had: it cannot start */
            r->res.preload_refused = true;
            r->res.refused = r->res.ooms = r->res.unexpected_ooms = 1;
            free(v);
            return 1;
        }
        if (rc != 0) {
            snprintf(err, errlen, "%s:%llu: %s", t->name, (unsigned long long)s->line, why);
            free(v);
            return -1;
        }
    }
    free(v);
    return 0;
}

static void json_u64_or_null(FILE *out, const char *key, uint64_t v, bool null)
{
    if (null)
        fprintf(out, ",\"%s\":null", key);
    else
        fprintf(out, ",\"%s\":%llu", key, (unsigned long long)v);
}

int ca_replay_config(const ca_trace *t, const char *conf, const uint64_t *limit, uint64_t capacity,
                     ca_config *cfg, char *err, size_t errlen)
{
    *cfg = t->cfg;
    if (conf) {
        *cfg = ca_config_default();
        cfg->limit_bytes = t->cfg.limit_bytes; /* --conf replaces the trace's settings, not its limit */
        char why[512];
        if (ca_conf_parse(conf, cfg, why, sizeof why) != 0) {
            snprintf(err, errlen, "--%s", why); /* as build/replay says it: "--conf ..." */
            return -1;
        }
    }
    if (limit) cfg->limit_bytes = *limit;
    if (cfg->expandable_segments && capacity > (1ULL << 61)) {
        snprintf(err, errlen, "--capacity above 2^61 leaves no address space for expandable segments");
        return -1;
    }
    return 0;
}

void ca_replay_notes(const ca_trace *t, const ca_config *cfg, const ca_replay_result *res, FILE *log)
{
    if (res->addr_mismatches > 0 && ca_config_equal(cfg, &t->cfg))
        fprintf(log, "replay: %llu of the trace's addresses differ from the model's\n",
                (unsigned long long)res->addr_mismatches);
    if (res->hint_conflicts > 0)
        fprintf(log, "replay: %llu addresses overlapped live segments and were not used\n",
                (unsigned long long)res->hint_conflicts);
}

int ca_replay_summary(FILE *out, const ca_replay_result *x, const ca_config *cfg)
{
    char conf[1024];
    ca_conf_format(cfg, conf, sizeof conf); /* only [0-9a-z_:,.[]>] : no JSON escaping needed */
    fprintf(out, "{\"steps\":%llu,\"peak_allocated\":%lld,\"peak_reserved\":%lld,\"peak_requested\":%lld",
            (unsigned long long)x->steps, (long long)x->peak_allocated, (long long)x->peak_reserved,
            (long long)x->peak_requested);
    fprintf(out, ",\"alloc_retries\":%lld,\"ooms\":%lld", (long long)x->alloc_retries, (long long)x->ooms);
    if (x->refused == 0)
        fprintf(out, ",\"after_first_oom\":null");
    else
        fprintf(out, ",\"after_first_oom\":{\"alloc_retries\":%lld,\"ooms\":%lld}",
                (long long)x->after_oom_retries, (long long)x->after_oom_ooms);
    fprintf(out, ",\"refused\":%llu,\"preload_refused\":%s", (unsigned long long)x->refused,
            x->preload_refused ? "true" : "false");
    json_u64_or_null(out, "first_oom_step", x->first_oom_step, x->refused == 0);
    json_u64_or_null(out, "first_oom_bytes", x->first_oom_bytes, x->refused == 0);
    fprintf(out, ",\"segments_peak\":%lld,\"largest_free_at_peak_reserved\":%llu,\"free_at_peak_reserved\":%llu",
            (long long)x->segments_peak, (unsigned long long)x->largest_free_at_peak_reserved,
            (unsigned long long)x->free_at_peak_reserved);
    fprintf(out, ",\"expected_ooms\":%llu,\"expected_ooms_granted\":%llu,\"unexpected_ooms\":%llu",
            (unsigned long long)x->expected_ooms, (unsigned long long)x->expected_ooms_granted,
            (unsigned long long)x->unexpected_ooms);
    fprintf(out, ",\"device_allocs\":%llu,\"device_frees\":%llu,\"addr_mismatches\":%llu,\"skipped_frees\":%llu",
            (unsigned long long)x->device_allocs, (unsigned long long)x->device_frees,
            (unsigned long long)x->addr_mismatches, (unsigned long long)x->skipped_frees);
    fprintf(out, ",\"conf\":\"%s\"", conf);
    json_u64_or_null(out, "limit", cfg->limit_bytes, cfg->limit_bytes == CA_UNLIMITED);
    fprintf(out, ",\"failed\":[");
    for (size_t i = 0; i < x->n_failed; i++)
        fprintf(out, "%s{\"step\":%llu,\"id\":%llu,\"bytes\":%llu}", i ? "," : "",
                (unsigned long long)x->failed[i].step, (unsigned long long)x->failed[i].id,
                (unsigned long long)x->failed[i].bytes);
    fprintf(out, "]}\n");
    return fflush(out) != 0 || ferror(out) ? -1 : 0;
}

int ca_replay(const ca_trace *t, const ca_replay_opts *o, FILE *out, ca_replay_result *res,
              char *err, size_t errlen)
{
    run r = {.t = t, .o = o};
    const ca_config *cfg = o->cfg ? o->cfg : &t->cfg;
    for (int i = 0; i < N_STAT_COLUMNS; i++) r.cols[i] = (column){0, 2, ",0"};
    r.dev = ca_host_create(o->capacity);
    r.a = ca_create(cfg, ca_host_backend(r.dev));
    if (!r.a) {
        ca_host_destroy(r.dev);
        snprintf(err, errlen, "%s: the allocator settings are invalid", t->name);
        return -1;
    }
    /* Expandable segments' addresses are the model's own: the trace's mean nothing there. */
    r.hints = o->use_addresses && !cfg->expandable_segments;
    r.quiet_mismatch = o->cfg != NULL && !ca_config_equal(o->cfg, &t->cfg);
    r.what_if = o->what_if || r.quiet_mismatch;
    ca_set_debug(r.a, o->debug);
    r.slot_addr = calloc(t->n_slots + 1, sizeof *r.slot_addr);
    CHECK(r.slot_addr != NULL, "out of host memory");
    mc_want_huge_pages(r.slot_addr, (t->n_slots + 1) * sizeof *r.slot_addr);
    mc_prefault(r.slot_addr, (t->n_slots + 1) * sizeof *r.slot_addr);
    if (t->uses_streams) {
        r.slot_stream = calloc(t->n_slots + 1, sizeof *r.slot_stream);
        CHECK(r.slot_stream != NULL, "out of host memory");
    }
    r.w = mc_xmalloc(sizeof *r.w);
    r.w->fp = out;
    r.w->failed = false;
    r.w->n = 0;
    if (!o->summary) {
        memcpy(r.w->buf, CA_REPLAY_HEADER "\n", strlen(CA_REPLAY_HEADER "\n"));
        r.w->n = strlen(CA_REPLAY_HEADER "\n");
    }
    int rc = preload(&r, err, errlen);
    bool no_room = rc == 1;
    if (no_room) rc = 0;
    if (rc == 0) track(&r, ca_get_stats(r.a));
    for (size_t i = 0; rc == 0 && !no_room && i < t->n_ops; i++) {
        const ca_trace_op *op = &t->ops[i];
        bool oom;
        int bad = step(&r, op, &oom);
        if (bad == 1) {
            snprintf(err, errlen, "%s:%llu: id %llu was never allocated: its request at line %llu ran out of memory",
                     t->name, (unsigned long long)op->line, (unsigned long long)op->id,
                     (unsigned long long)alloc_line_of(t, i, op->slot));
        } else if (bad == 2) {
            snprintf(err, errlen, "%s:%llu: id %llu is freed on stream %llu but was allocated on stream %llu",
                     t->name, (unsigned long long)op->line, (unsigned long long)op->id,
                     (unsigned long long)op->stream, (unsigned long long)r.slot_stream[op->slot]);
        } else if (bad == 3) {
            snprintf(err, errlen, "%s:%llu: more than %d streams", t->name, (unsigned long long)op->line,
                     CA_MAX_STREAMS);
        }
        if (bad) {
            rc = -1;
            break;
        }
        const ca_stats *st = ca_get_stats(r.a);
        if (!o->summary) put_row(r.w, r.cols, &r.step, op, oom, st);
        track(&r, st);
        r.res.steps++;
    }
    const ca_stats *st = ca_get_stats(r.a);
    if (no_room) {
        /* refused, ooms, unexpected_ooms: set by preload */
    } else if (r.res.refused == 0) {
        r.res.alloc_retries = st->num_alloc_retries;
        r.res.ooms = st->num_ooms;
    } else { /* alloc_retries, ooms: as at the first refused request (refused) */
        r.res.after_oom_retries = st->num_alloc_retries - r.res.alloc_retries;
        r.res.after_oom_ooms = st->num_ooms - r.res.ooms;
    }
    r.res.device_allocs = (uint64_t)st->num_device_alloc;
    r.res.device_frees = (uint64_t)st->num_device_free;
    r.res.hint_conflicts = ca_host_hint_conflicts(r.dev);
    flush(r.w);
    if (rc == 0 && o->summary && ca_replay_summary(out, &r.res, cfg) != 0) r.w->failed = true;
    if (fflush(out) != 0) r.w->failed = true;
    if (rc == 0 && r.w->failed) {
        snprintf(err, errlen, "%s: could not write the output", t->name);
        rc = -1;
    }
    if (res) *res = r.res;
    free(r.w);
    free(r.slot_addr);
    free(r.slot_stream);
    ca_destroy(r.a);
    ca_host_destroy(r.dev);
    return rc;
}
