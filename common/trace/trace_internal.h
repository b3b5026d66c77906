/* trace_internal.h: what the trace parser's two files share (trace.c: the
 * lines and the fast path; trace_preamble.c: v2's segment and live lines).
 * Not part of the API. */
#ifndef MC_TRACE_INTERNAL_H
#define MC_TRACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace.h"
#include "trace_ids.h"

/* A token of a line: p[0 .. n). */
typedef struct {
    const char *p;
    size_t n;
} tok;

static inline int tok_is(tok t, const char *s)
{
    size_t n = strlen(s); /* s is a literal: the compiler folds this */
    return t.n == n && memcmp(t.p, s, n) == 0;
}

/* The parser's state over one trace. */
typedef struct {
    ca_trace *t;
    id_table ids;
    size_t cap_ops;
    size_t ready_ops; /* operations the array has pages for (prefaulted) */
    size_t cap_segs, cap_lives;
    uint64_t line;
    bool set_seen[CA_N_SETTINGS + 1]; /* set lines read: one per setting, then conf */
    char *err;
    size_t errlen;
} parser;

/* A token for a message in buf (at least 48 bytes). */
const char *trace_show(tok t, char *buf);
/* Decimal, or 0x hexadecimal when hex; 0, or -1 if not a number <= 2^64-1. */
int trace_u64(tok t, bool hex, uint64_t *out);
/* "NAME:LINE: reason" into the error buffer; returns -1. */
int trace_bad(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The message for an alloc of an id that is live; returns -1. */
int trace_already_live(parser *ps, uint64_t id);
/* "name=value" with a number: 1 if v is one for name, 0 if not, -1 (with
 * the message) if its value is bad. */
int trace_named(parser *ps, tok v, const char *name, uint64_t *out);

/* trace_preamble.c: the segment and live lines, and the checks after the
 * last line (segments by address, not overlapping; lives in them). */
int trace_segment_line(parser *ps, const tok *v, size_t n);
int trace_live_line(parser *ps, const tok *v, size_t n);
int trace_finish_preamble(parser *ps);

#endif
