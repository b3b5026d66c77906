/* trace.c: the memclaims-trace v1/v2 parser (trace.h); the v2 preamble's
 * lines (segment, live) are in trace_preamble.c. One pass over the bytes,
 * line by line; ids are resolved to dense slots here, through a hash table
 * of the live ids (trace_ids.h). The common lines (plain alloc and free)
 * take a fast path with no tokens; every other line, and every error, the
 * general one. */
#define _DEFAULT_SOURCE /* fileno, fstat, mmap, madvise */
#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "check.h"
#include "decimal.h"
#include "prefault.h"
#include "trace_ids.h"
#include "trace_internal.h"

/* ------------------------------------------------------------ tokens */

/* A token for a message: at most 40 bytes, non-printable bytes as '?'. */
const char *trace_show(tok t, char *buf)
{
    size_t n = t.n > 40 ? 40 : t.n, k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t.p[i];
        buf[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (t.n > n) {
        memcpy(buf + k, "...", 3);
        k += 3;
    }
    buf[k] = '\0';
    return buf;
}

/* Decimal, or 0x hexadecimal when hex is allowed; no sign, no overflow. */
int trace_u64(tok t, bool hex, uint64_t *out)
{
    uint64_t v = 0;
    if (hex && t.n > 2 && t.p[0] == '0' && (t.p[1] == 'x' || t.p[1] == 'X')) {
        if (t.n > 18) return -1;
        for (size_t i = 2; i < t.n; i++) {
            char c = t.p[i];
            unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                       : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                       : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
            if (d == 16) return -1;
            v = v << 4 | d;
        }
        *out = v;
        return 0;
    }
    if (t.n == 0) return -1;
    for (size_t i = 0; i < t.n; i++) {
        if (t.p[i] < '0' || t.p[i] > '9') return -1;
        uint64_t d = (uint64_t)(t.p[i] - '0');
        if (v >= UINT64_MAX / 10 && (v > UINT64_MAX / 10 || d > UINT64_MAX % 10)) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ lines */


int trace_bad(parser *ps, const char *fmt, ...)
{
    int k = snprintf(ps->err, ps->errlen, "%s:%llu: ", ps->t->name, (unsigned long long)ps->line);
    if (k >= 0 && (size_t)k < ps->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err + k, ps->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ------------------------------------------------------------ settings */

/* set NAME BYTES, one line per row of CA_SETTINGS with a trace name, or set
 * conf STRING (PYTORCH_CUDA_ALLOC_CONF, on top of the others); each at most
 * once. ps->set_seen has a flag per row, the last one for conf. */
static int parse_set(parser *ps, const tok *v, size_t n)
{
    char s1[48], s2[48];
    if (ps->t->n_ops > 0) return trace_bad(ps, "set after the first operation");
    if (n < 3) return trace_bad(ps, "set needs a name and a value");
    if (n > 3) return trace_bad(ps, "unexpected '%s' after the value", trace_show(v[3], s1));
    size_t k = 0;
    while (k < CA_N_SETTINGS && !(ca_settings[k].trace && tok_is(v[1], ca_settings[k].trace))) k++;
    if (k == CA_N_SETTINGS && !tok_is(v[1], "conf"))
        return trace_bad(ps, "unknown setting '%s'", trace_show(v[1], s1));
    const char *name = k < CA_N_SETTINGS ? ca_settings[k].trace : "conf";
    if (ps->set_seen[k]) return trace_bad(ps, "%s set twice", name);
    ps->set_seen[k] = true;
    ca_config *c = &ps->t->cfg;
    if (k == CA_N_SETTINGS) { /* PYTORCH_CUDA_ALLOC_CONF, on top of the other set lines */
        char conf[1024], why[256];
        if (v[2].n >= sizeof conf) return trace_bad(ps, "conf value is too long");
        memcpy(conf, v[2].p, v[2].n);
        conf[v[2].n] = '\0';
        if (memchr(conf, '\0', v[2].n)) return trace_bad(ps, "conf value holds a NUL byte");
        if (ca_conf_parse(conf, c, why, sizeof why) != 0) return trace_bad(ps, "%s", why);
        return 0;
    }
    uint64_t x;
    if (trace_u64(v[2], true, &x) != 0) return trace_bad(ps, "bad value '%s' for %s", trace_show(v[2], s2), name);
    *(uint64_t *)ca_setting_field(c, &ca_settings[k]) = x; /* a byte kind (alloc_settings.c checks) */
    char why[160];
    if (ca_config_check(c, why, sizeof why) != 0) return trace_bad(ps, "%s", why);
    return 0;
}

int ca_trace_format_settings(const ca_config *cfg, char *out, size_t len)
{
    char buf[1024] = "";
    size_t n = 0;
    const ca_config def = ca_config_default();
    for (size_t k = 0; k < CA_N_SETTINGS; k++) {
        const ca_setting *s = &ca_settings[k];
        if (!s->trace || ca_setting_equal(s, cfg, &def) || n >= sizeof buf) continue;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%sset %s %llu", n ? "\n" : "", s->trace,
                              (unsigned long long)*(const uint64_t *)ca_setting_cfield(cfg, s));
    }
    return snprintf(out, len, "%s", buf);
}

/* ------------------------------------------------------------ operations */

/* Makes room for the next operations: the array doubles when full (realloc
 * moves a large block's pages rather than copying them, so no pass over the
 * text counts the lines first, and pages past the last operation are never
 * touched), and the next MiB of it is mapped in at once (prefault.h). */
static void __attribute__((noinline)) more_ops(parser *ps)
{
    ca_trace *t = ps->t;
    if (t->n_ops == ps->cap_ops) {
        ps->cap_ops *= 2;
        t->ops = realloc(t->ops, ps->cap_ops * sizeof *t->ops);
        CHECK(t->ops != NULL, "out of host memory");
        mc_want_huge_pages(t->ops, ps->cap_ops * sizeof *t->ops);
    }
    size_t n = (1u << 20) / sizeof *t->ops;
    ps->ready_ops = ps->cap_ops - t->n_ops < n ? ps->cap_ops : t->n_ops + n;
    mc_prefault(t->ops + t->n_ops, (ps->ready_ops - t->n_ops) * sizeof *t->ops);
}

/* Appends an operation. */
static inline void new_op(parser *ps, ca_op_kind kind, uint64_t id, uint64_t bytes, uint64_t addr,
                          uint64_t slot, uint64_t stream, bool has_stream, bool expect_oom)
{
    ca_trace *t = ps->t;
    if (t->n_ops == ps->ready_ops) more_ops(ps);
    t->ops[t->n_ops++] = (ca_trace_op){.id = id, .stream = stream, .bytes = bytes, .addr = addr,
                                       .line = ps->line, .slot = slot, .kind = kind,
                                       .expect_oom = expect_oom, .has_stream = has_stream};
}

/* A free of an id that is not live: freed before, or never allocated. */
static int not_live(parser *ps, uint64_t id)
{
    for (size_t i = ps->t->n_ops; i-- > 0;) {
        const ca_trace_op *op = &ps->t->ops[i];
        if (op->kind == CA_OP_FREE && op->id == id)
            return trace_bad(ps, "id %llu was already freed at line %llu", (unsigned long long)id,
                       (unsigned long long)op->line);
    }
    return trace_bad(ps, "free of unknown id %llu", (unsigned long long)id);
}

/* An alloc of an id that is live: its latest alloc is the live one (an
 * earlier one must have been freed before the id was allocated again). */
int trace_already_live(parser *ps, uint64_t id)
{
    uint64_t line = 0;
    for (size_t i = ps->t->n_ops; i-- > 0;) {
        const ca_trace_op *op = &ps->t->ops[i];
        if (op->kind == CA_OP_ALLOC && op->id == id) {
            line = op->line;
            break;
        }
    }
    for (size_t i = 0; line == 0 && i < ps->t->n_lives; i++)
        if (ps->t->lives[i].id == id) line = ps->t->lives[i].line;
    return trace_bad(ps, "id %llu is already live (allocated at line %llu)", (unsigned long long)id,
               (unsigned long long)line);
}

/* An alloc or a free whose fields parsed: checks the id (quiet: no message,
 * for the fast path, which leaves errors to the general one) and records it.
 * One probe of the id table each: the slot it finds is the one filled or
 * emptied. */
static int add_alloc(parser *ps, uint64_t id, uint64_t bytes, uint64_t addr, bool quiet)
{
    id_reserve(&ps->ids);
    id_entry *e = id_find(&ps->ids, id);
    if (e->slot1) return quiet ? -1 : trace_already_live(ps, id);
    uint64_t slot = ps->t->n_slots++;
    new_op(ps, CA_OP_ALLOC, id, bytes, addr, slot, 0, false, false);
    *e = (id_entry){id, slot + 1};
    ps->ids.n++;
    return 0;
}

static int add_free(parser *ps, uint64_t id, bool quiet)
{
    id_entry *e = ps->ids.cap ? id_find(&ps->ids, id) : NULL;
    if (!e || !e->slot1) return quiet ? -1 : not_live(ps, id);
    uint64_t slot = e->slot1 - 1;
    id_remove(&ps->ids, e);
    new_op(ps, CA_OP_FREE, id, 0, 0, slot, 0, false, false);
    return 0;
}

/* The v2 forms of alloc and free (general path only): a stream, an oom mark. */
static int add_alloc_v2(parser *ps, uint64_t id, uint64_t bytes, uint64_t addr, uint64_t stream,
                        bool oom)
{
    if (oom) { /* PyTorch refused it: the id never becomes live */
        id_entry *e = ps->ids.cap ? id_find(&ps->ids, id) : NULL;
        if (e && e->slot1) return trace_already_live(ps, id);
        new_op(ps, CA_OP_ALLOC, id, bytes, addr, ps->t->n_slots++, stream, stream != 0, true);
        ps->t->n_expect_oom++;
        return 0;
    }
    if (add_alloc(ps, id, bytes, addr, false) != 0) return -1;
    ps->t->ops[ps->t->n_ops - 1].stream = stream;
    ps->t->uses_streams |= stream != 0;
    return 0;
}

static int add_free_v2(parser *ps, uint64_t id, uint64_t stream, bool has_stream)
{
    if (add_free(ps, id, false) != 0) return -1;
    ps->t->ops[ps->t->n_ops - 1].stream = stream;
    ps->t->ops[ps->t->n_ops - 1].has_stream = has_stream;
    ps->t->uses_streams |= has_stream;
    return 0;
}

static int parse_op(parser *ps, const tok *v, size_t n)
{
    char s1[48];
    uint64_t id = 0, bytes = 0, addr = 0, stream = 0;
    bool is_alloc = tok_is(v[0], "alloc"), is_free = tok_is(v[0], "free");
    if (!is_alloc && !is_free && !tok_is(v[0], "empty_cache") && !tok_is(v[0], "reset_peak"))
        return trace_bad(ps, "unknown operation '%s'", trace_show(v[0], s1));
    if (!is_alloc && !is_free && n > 1) return trace_bad(ps, "unexpected '%s' after the operation", trace_show(v[1], s1));
    if (is_alloc && n < 3) return trace_bad(ps, "alloc needs an id and a byte count");
    if (is_free && n < 2) return trace_bad(ps, "free needs an id");
    if ((is_alloc || is_free) && trace_u64(v[1], false, &id) != 0)
        return trace_bad(ps, "bad id '%s'", trace_show(v[1], s1));
    bool has_stream = false, oom = false, has_addr = false;
    for (size_t i = is_alloc ? 3 : 2; (is_alloc || is_free) && i < n; i++) {
        int r = has_stream ? 0 : trace_named(ps, v[i], "stream", &stream);
        if (r < 0) return -1;
        if (r > 0) {
            has_stream = true;
        } else if (is_alloc && !oom && tok_is(v[i], "oom")) {
            oom = true;
        } else if (is_alloc && i == 3 && v[i].n && v[i].p[0] >= '0' && v[i].p[0] <= '9') {
            if (trace_u64(v[i], true, &addr) != 0 || addr == 0) return trace_bad(ps, "bad address '%s'", trace_show(v[i], s1));
            has_addr = true;
        } else {
            return trace_bad(ps, "unexpected '%s' after %s", trace_show(v[i], s1),
                       is_alloc ? (has_addr ? "the address" : "the byte count") : "the id");
        }
    }
    if (is_alloc) {
        if (trace_u64(v[2], true, &bytes) != 0) return trace_bad(ps, "bad byte count '%s'", trace_show(v[2], s1));
        if (bytes == 0) return trace_bad(ps, "byte count must be >= 1");
        return add_alloc_v2(ps, id, bytes, addr, stream, oom);
    } else if (is_free) {
        return add_free_v2(ps, id, stream, has_stream);
    } else {
        new_op(ps, tok_is(v[0], "empty_cache") ? CA_OP_EMPTY_CACHE : CA_OP_RESET_PEAK, 0, 0, 0, 0, 0,
               false, false);
    }
    return 0;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static int parse_line(parser *ps, const char *p, size_t len)
{
    const char *hash = memchr(p, '#', len);
    if (hash) len = (size_t)(hash - p);
    tok v[8];
    size_t n = 0, i = 0;
    while (n < 8) {
        while (i < len && is_space(p[i])) i++;
        if (i == len) break;
        size_t start = i;
        while (i < len && !is_space(p[i])) i++;
        v[n++] = (tok){p + start, i - start};
    }
    if (n == 0) return 0;
    if (n == 8) { /* more than the longest line has: report the first extra token */
        while (i < len && is_space(p[i])) i++;
        if (i < len) {
            char s1[48];
            size_t start = i;
            while (i < len && !is_space(p[i])) i++;
            return trace_bad(ps, "unexpected '%s' (too many fields)", trace_show((tok){p + start, i - start}, s1));
        }
    }
    if (tok_is(v[0], "set")) return parse_set(ps, v, n);
    if (tok_is(v[0], "segment")) return trace_segment_line(ps, v, n);
    if (tok_is(v[0], "live")) return trace_live_line(ps, v, n);
    return parse_op(ps, v, n);
}

/* ------------------------------------------------------------ fast path */

/* Decimal digits at p (at most 19, so no overflow), one at a time, for the
 * last bytes of the buffer; returns their end, or NULL if there are none or
 * too many. */
static const char *scan_dec_tail(const char *p, const char *end, uint64_t *v)
{
    const char *start = p;
    uint64_t x = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - start < 19) x = x * 10 + (uint64_t)(*p++ - '0');
    if (p == start || (p < end && *p >= '0' && *p <= '9')) return NULL;
    *v = x;
    return p;
}

/* Decimal digits at p, eight at a time (decimal.h), at most 15 of them:
 * returns their end, or NULL if there are none or more (the general path
 * takes those). */
static const char *scan_dec(const char *p, const char *end, uint64_t *v)
{
    static const uint64_t pow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    if (end - p < 16) return scan_dec_tail(p, end, v);
    uint64_t w = dec_load8(p);
    unsigned n = dec_run8(w);
    if (n == 0) return NULL;
    if (n < 8) {
        *v = dec_value8(w, n);
        return p + n;
    }
    uint64_t w2 = dec_load8(p + 8);
    unsigned n2 = dec_run8(w2);
    if (n2 == 8) return NULL;
    *v = dec_value8(w, 8) * pow10[n2] + (n2 ? dec_value8(w2, n2) : 0);
    return p + 8 + n2;
}

/* 0x and 1..16 hex digits; returns their end or NULL. */
static const char *scan_hex(const char *p, const char *end, uint64_t *v)
{
    if (end - p < 3 || p[0] != '0' || p[1] != 'x') return NULL;
    const char *start = p += 2;
    uint64_t x = 0;
    for (; p < end && p - start < 16; p++) {
        char c = *p;
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16u;
        if (d == 16) break;
        x = x << 4 | d;
    }
    if (p == start || (p < end && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))) return NULL;
    *v = x;
    return p;
}

/* The common lines in their usual form, "alloc ID BYTES[ 0xADDR]" and
 * "free ID", single spaces, nothing after them but CR LF or LF, parsed in
 * one pass with no tokens. Returns the bytes consumed (the newline
 * included), or 0 to leave the line to parse_line, which takes every form
 * and reports every error: the fast path changes nothing unless it
 * succeeds, and it accepts no line that parse_line would read otherwise.
 * line < end. */
static size_t fast_line(parser *ps, const char *line, const char *end)
{
    const char *p = line;
    uint64_t id, bytes = 0, addr = 0;
    bool is_alloc;
    switch (*p) {
    case 'a':
        if (end - p <= 6 || memcmp(p, "alloc ", 6) != 0) return 0;
        is_alloc = true;
        p += 6;
        break;
    case 'f':
        if (end - p <= 5 || memcmp(p, "free ", 5) != 0) return 0;
        is_alloc = false;
        p += 5;
        break;
    default:
        return 0;
    }
    if (!(p = scan_dec(p, end, &id))) return 0;
    if (is_alloc) {
        if (p == end || *p != ' ' || !(p = scan_dec(p + 1, end, &bytes)) || bytes == 0) return 0;
        if (p < end && *p == ' ' && (!(p = scan_hex(p + 1, end, &addr)) || !addr)) return 0;
    }
    if (p < end && *p == '\r') p++;
    if (p < end && *p != '\n') return 0;
    if ((is_alloc ? add_alloc(ps, id, bytes, addr, true) : add_free(ps, id, true)) != 0) return 0;
    return (size_t)(p - line) + (p < end);
}

int ca_trace_parse(ca_trace *t, const char *name, const char *buf, size_t len, char *err,
                   size_t errlen)
{
    memset(t, 0, sizeof *t);
    size_t name_len = strlen(name) + 1;
    t->name = mc_xmalloc(name_len);
    memcpy(t->name, name, name_len);
    t->cfg = ca_config_default();
    parser ps = {.t = t, .err = err, .errlen = errlen};
    ps.cap_ops = len / 16 + 16; /* a first guess: generated traces have ~16 bytes a line */
    t->ops = mc_xmalloc(ps.cap_ops * sizeof *t->ops);
    mc_want_huge_pages(t->ops, ps.cap_ops * sizeof *t->ops);
    int rc = 0;
    for (size_t pos = 0; pos < len && rc == 0;) {
        ps.line++;
        size_t used = fast_line(&ps, buf + pos, buf + len);
        if (used) {
            pos += used;
            continue;
        }
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        rc = parse_line(&ps, buf + pos, end - pos);
        pos = end + 1;
    }
    if (rc == 0) rc = trace_finish_preamble(&ps);
    free(ps.ids.e);
    return rc;
}

int ca_trace_load(ca_trace *t, const char *path, char *err, size_t errlen)
{
    bool is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "<stdin>" : path;
    memset(t, 0, sizeof *t);
    FILE *fp = is_stdin ? stdin : fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "%s: cannot read: %s", name, strerror(errno));
        return -1;
    }
    /* A regular file is mapped rather than read: its bytes stay the page
     * cache's, with no copy and no fresh memory to fault in, page by page
     * (which costs more than parsing them). The file must not shrink while
     * it is parsed. Standard input is read from where it stands. */
    struct stat st;
    bool regular = fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
                   (uint64_t)st.st_size < SIZE_MAX;
    if (regular && !is_stdin) {
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fileno(fp), 0);
        if (map != MAP_FAILED) {
            fclose(fp);
            int rc = ca_trace_parse(t, name, map, (size_t)st.st_size, err, errlen);
            munmap(map, (size_t)st.st_size);
            return rc;
        }
    }
    /* Read in one piece, or for a pipe in a growing buffer. */
    size_t cap = regular ? (size_t)st.st_size + 1 : (size_t)1 << 16;
    size_t len = 0;
    char *buf = mc_xmalloc(cap);
    for (;;) {
        len += fread(buf + len, 1, cap - len, fp);
        if (len < cap) break;
        cap *= 2;
        buf = realloc(buf, cap);
        CHECK(buf != NULL, "out of host memory");
    }
    int failed = ferror(fp);
    if (!is_stdin) fclose(fp);
    int rc;
    if (failed) {
        snprintf(err, errlen, "%s: cannot read: read error", name);
        rc = -1;
    } else {
        rc = ca_trace_parse(t, name, buf, len, err, errlen);
    }
    free(buf);
    return rc;
}

void ca_trace_free(ca_trace *t)
{
    free(t->name);
    free(t->ops);
    free(t->segs);
    free(t->lives);
    memset(t, 0, sizeof *t);
}

const char *ca_op_name(ca_op_kind k)
{
    static const char *names[] = {"alloc", "free", "empty_cache", "reset_peak"};
    return (unsigned)k < 4 ? names[k] : "?";
}
