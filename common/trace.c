/* trace.c: the memclaims-trace v1 parser (trace.h). One pass over the bytes,
 * line by line; ids are resolved to dense slots here, through a hash table
 * of the live ids. */
#define _POSIX_C_SOURCE 200809L /* fileno, fstat */
#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

/* ------------------------------------------------------------ id table */

/* The live ids: id -> index of its alloc operation + 1 (0: empty slot).
 * Freed ids leave the table, so it stays as small as the live set and in
 * cache; the error paths search the operations instead. */
typedef struct {
    uint64_t id, op1;
} id_entry;

typedef struct {
    id_entry *e;
    size_t cap, n; /* cap is a power of two */
} id_table;

static size_t id_home(const id_table *t, uint64_t id)
{
    uint64_t x = id; /* splitmix64's finaliser */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return (size_t)(x ^ (x >> 31)) & (t->cap - 1);
}

/* The entry of id, or the empty slot where it would go. */
static id_entry *id_find(const id_table *t, uint64_t id)
{
    size_t i = id_home(t, id);
    while (t->e[i].op1 && t->e[i].id != id) i = (i + 1) & (t->cap - 1);
    return &t->e[i];
}

static void id_put(id_table *t, uint64_t id, size_t op)
{
    if (2 * (t->n + 1) > t->cap) {
        id_table old = *t;
        t->cap = old.cap ? 2 * old.cap : 1024;
        t->e = calloc(t->cap, sizeof *t->e);
        CHECK(t->e != NULL, "out of host memory");
        for (size_t i = 0; i < old.cap; i++)
            if (old.e[i].op1) *id_find(t, old.e[i].id) = old.e[i];
        free(old.e);
    }
    *id_find(t, id) = (id_entry){id, op + 1};
    t->n++;
}

/* Removes the entry e (backward-shift deletion: no tombstones). */
static void id_remove(id_table *t, id_entry *e)
{
    size_t mask = t->cap - 1, i = (size_t)(e - t->e);
    for (size_t j = (i + 1) & mask; t->e[j].op1; j = (j + 1) & mask) {
        size_t home = id_home(t, t->e[j].id);
        if (((j - home) & mask) >= ((j - i) & mask)) { /* home not in (i, j] */
            t->e[i] = t->e[j];
            i = j;
        }
    }
    t->e[i].op1 = 0;
    t->n--;
}

/* ------------------------------------------------------------ tokens */

typedef struct {
    const char *p;
    size_t n;
} tok;

static inline int tok_is(tok t, const char *s)
{
    size_t n = strlen(s); /* s is a literal: the compiler folds this */
    return t.n == n && memcmp(t.p, s, n) == 0;
}

/* A token for a message: at most 40 bytes, non-printable bytes as '?'. */
static const char *show(tok t, char *buf)
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
static int parse_u64(tok t, bool hex, uint64_t *out)
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

typedef struct {
    ca_trace *t;
    id_table ids;
    size_t cap_ops;
    uint64_t line;
    bool set_seen[3];
    char *err;
    size_t errlen;
} parser;

static int bad(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(parser *ps, const char *fmt, ...)
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

static int parse_set(parser *ps, const tok *v, size_t n)
{
    static const char *names[] = {"limit", "max_split_size", "max_non_split_rounding_size"};
    char s1[48], s2[48];
    if (ps->t->n_ops > 0) return bad(ps, "set after the first operation");
    if (n < 3) return bad(ps, "set needs a name and a value");
    if (n > 3) return bad(ps, "unexpected '%s' after the value", show(v[3], s1));
    size_t k = 0;
    while (k < 3 && !tok_is(v[1], names[k])) k++;
    if (k == 3) return bad(ps, "unknown setting '%s'", show(v[1], s1));
    uint64_t x;
    if (parse_u64(v[2], true, &x) != 0) return bad(ps, "bad value '%s' for %s", show(v[2], s2), names[k]);
    if (ps->set_seen[k]) return bad(ps, "%s set twice", names[k]);
    ps->set_seen[k] = true;
    ca_config *c = &ps->t->cfg;
    if (k == 0) c->limit_bytes = x;
    if (k == 1) c->max_split_size = x;
    if (k == 2) c->max_non_split_rounding_size = x;
    char why[160];
    if (ca_config_check(c, why, sizeof why) != 0) return bad(ps, "%s", why);
    return 0;
}

static ca_trace_op *new_op(parser *ps, ca_op_kind kind)
{
    ca_trace *t = ps->t;
    CHECK(t->n_ops < ps->cap_ops, "trace parser: more operations than lines");
    ca_trace_op *op = &t->ops[t->n_ops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->line = ps->line;
    return op;
}

/* A free of an id that is not live: freed before, or never allocated. */
static int not_live(parser *ps, uint64_t id)
{
    for (size_t i = ps->t->n_ops; i-- > 0;) {
        const ca_trace_op *op = &ps->t->ops[i];
        if (op->kind == CA_OP_FREE && op->id == id)
            return bad(ps, "id %llu was already freed at line %llu", (unsigned long long)id,
                       (unsigned long long)op->line);
    }
    return bad(ps, "free of unknown id %llu", (unsigned long long)id);
}

/* An alloc or a free whose fields parsed: checks the id (quiet: no message,
 * for the fast path, which leaves errors to the general one) and records it. */
static int add_alloc(parser *ps, uint64_t id, uint64_t bytes, uint64_t addr, bool quiet)
{
    id_entry *e = ps->ids.cap ? id_find(&ps->ids, id) : NULL;
    if (e && e->op1)
        return quiet ? -1 : bad(ps, "id %llu is already live (allocated at line %llu)",
                                (unsigned long long)id, (unsigned long long)ps->t->ops[e->op1 - 1].line);
    ca_trace_op *op = new_op(ps, CA_OP_ALLOC);
    op->id = id;
    op->bytes = bytes;
    op->addr = addr;
    op->slot = ps->t->n_slots++;
    id_put(&ps->ids, id, ps->t->n_ops - 1);
    return 0;
}

static int add_free(parser *ps, uint64_t id, bool quiet)
{
    id_entry *e = ps->ids.cap ? id_find(&ps->ids, id) : NULL;
    if (!e || !e->op1) return quiet ? -1 : not_live(ps, id);
    ca_trace_op *op = new_op(ps, CA_OP_FREE);
    op->id = id;
    op->slot = ps->t->ops[e->op1 - 1].slot;
    id_remove(&ps->ids, e);
    return 0;
}

static int parse_op(parser *ps, const tok *v, size_t n)
{
    char s1[48];
    uint64_t id = 0, bytes = 0, addr = 0;
    bool is_alloc = tok_is(v[0], "alloc"), is_free = tok_is(v[0], "free");
    size_t max_args = is_alloc ? 4 : is_free ? 2 : 1;
    if (!is_alloc && !is_free && !tok_is(v[0], "empty_cache") && !tok_is(v[0], "reset_peak"))
        return bad(ps, "unknown operation '%s'", show(v[0], s1));
    if (n > max_args) return bad(ps, "unexpected '%s' after %s", show(v[max_args], s1),
                                 is_alloc ? "the address" : is_free ? "the id" : "the operation");
    if (is_alloc && n < 3) return bad(ps, "alloc needs an id and a byte count");
    if (is_free && n < 2) return bad(ps, "free needs an id");
    if ((is_alloc || is_free) && parse_u64(v[1], false, &id) != 0)
        return bad(ps, "bad id '%s'", show(v[1], s1));
    if (is_alloc) {
        if (parse_u64(v[2], true, &bytes) != 0) return bad(ps, "bad byte count '%s'", show(v[2], s1));
        if (bytes == 0) return bad(ps, "byte count must be >= 1");
        if (n == 4 && (parse_u64(v[3], true, &addr) != 0 || addr == 0))
            return bad(ps, "bad address '%s'", show(v[3], s1));
        return add_alloc(ps, id, bytes, addr, false);
    } else if (is_free) {
        return add_free(ps, id, false);
    } else {
        new_op(ps, tok_is(v[0], "empty_cache") ? CA_OP_EMPTY_CACHE : CA_OP_RESET_PEAK);
    }
    return 0;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static int parse_line(parser *ps, const char *p, size_t len)
{
    const char *hash = memchr(p, '#', len);
    if (hash) len = (size_t)(hash - p);
    tok v[5];
    size_t n = 0, i = 0;
    while (n < 5) {
        while (i < len && is_space(p[i])) i++;
        if (i == len) break;
        size_t start = i;
        while (i < len && !is_space(p[i])) i++;
        v[n++] = (tok){p + start, i - start};
    }
    if (n == 0) return 0;
    if (tok_is(v[0], "set")) return parse_set(ps, v, n);
    return parse_op(ps, v, n);
}

/* ------------------------------------------------------------ fast path */

/* Decimal digits at p (at most 19, so no overflow); returns their end, or
 * NULL if there are none or too many. */
static const char *scan_dec(const char *p, const char *end, uint64_t *v)
{
    const char *start = p;
    uint64_t x = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - start < 19) x = x * 10 + (uint64_t)(*p++ - '0');
    if (p == start || (p < end && *p >= '0' && *p <= '9')) return NULL;
    *v = x;
    return p;
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

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p;
}

/* The common lines, "alloc ID BYTES [0xADDR]" and "free ID" with nothing
 * after them, parsed in one pass with no tokens. Returns the bytes consumed
 * (the newline included), or 0 to leave the line to parse_line, which also
 * reports every error: the fast path changes nothing unless it succeeds. */
static size_t fast_line(parser *ps, const char *line, const char *end)
{
    const char *p = line;
    uint64_t id, bytes = 0, addr = 0;
    bool is_alloc = end - p > 6 && memcmp(p, "alloc ", 6) == 0;
    bool is_free = !is_alloc && end - p > 5 && memcmp(p, "free ", 5) == 0;
    if (!is_alloc && !is_free) return 0;
    p = skip_blanks(p + (is_alloc ? 6 : 5), end);
    if (!(p = scan_dec(p, end, &id))) return 0;
    if (is_alloc) {
        const char *q = skip_blanks(p, end);
        if (q == p || !(p = scan_dec(q, end, &bytes)) || bytes == 0) return 0;
        q = skip_blanks(p, end);
        if (q != p && q < end && *q != '\r' && *q != '\n' && (!(p = scan_hex(q, end, &addr)) || !addr))
            return 0; /* decimal addresses, comments and errors: the slow path */
    }
    p = skip_blanks(p, end);
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
    /* At most one operation per line, and an operation takes at least six
     * bytes ("free 1"): size the array once. */
    size_t lines = 1;
    for (const char *p = buf, *end = buf + len; (p = memchr(p, '\n', (size_t)(end - p))); p++) lines++;
    ps.cap_ops = lines < len / 6 + 1 ? lines : len / 6 + 1;
    t->ops = mc_xmalloc(ps.cap_ops * sizeof *t->ops);
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
    /* A regular file is read in one piece; a pipe grows the buffer. */
    struct stat st;
    size_t cap = fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0
                     ? (size_t)st.st_size + 1 : (size_t)1 << 16;
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
    memset(t, 0, sizeof *t);
}

const char *ca_op_name(ca_op_kind k)
{
    static const char *names[] = {"alloc", "free", "empty_cache", "reset_peak"};
    return (unsigned)k < 4 ? names[k] : "?";
}
