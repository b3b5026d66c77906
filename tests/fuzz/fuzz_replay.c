/* fuzz_replay: libFuzzer target for the trace parser and the replay (make
 * fuzz, scripts/fuzz). Any input is parsed; a malformed one must give a
 * "fuzz:LINE: reason" message, a well-formed one is replayed twice through
 * the model with the invariant check after every operation (a broken
 * invariant aborts): with its addresses on an 80 GiB device, and without
 * them on a 1 GiB device, so the out-of-memory paths run too.
 *
 * The parser's fast path (plain alloc/free lines) must agree with its general
 * path: the input is parsed again with " #" after every line, which sends
 * every line down the general path and changes nothing else, and both parses
 * must give the same result, message and operations. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/replay.h"
#include "alloc/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input with " #" appended to every line (a comment: same meaning). */
static char *commented(const uint8_t *data, size_t size, size_t *len)
{
    char *out = malloc(3 * size + 3);
    if (!out) abort();
    size_t n = 0;
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '\n') {
            out[n++] = ' ';
            out[n++] = '#';
        }
        out[n++] = (char)data[i];
    }
    out[n++] = ' ';
    out[n++] = '#';
    *len = n;
    return out;
}

static void same_as_general_path(const uint8_t *data, size_t size, int rc, const ca_trace *t,
                                 const char *err)
{
    size_t len;
    char *text = commented(data, size, &len);
    ca_trace u;
    char err2[512] = "";
    int rc2 = ca_trace_parse(&u, "fuzz", text, len, err2, sizeof err2);
    if (rc2 != rc || (rc != 0 && strcmp(err, err2) != 0)) abort();
    if (rc == 0 && (u.n_ops != t->n_ops || u.n_slots != t->n_slots ||
                    memcmp(&u.cfg, &t->cfg, sizeof u.cfg) != 0))
        abort();
    for (size_t i = 0; rc == 0 && i < t->n_ops; i++) {
        const ca_trace_op *a = &t->ops[i], *b = &u.ops[i];
        if (a->kind != b->kind || a->id != b->id || a->bytes != b->bytes || a->addr != b->addr ||
            a->line != b->line || a->slot != b->slot)
            abort();
    }
    ca_trace_free(&u);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    if (!sink) abort();
    ca_trace t;
    char err[512] = "";
    int rc = ca_trace_parse(&t, "fuzz", (const char *)data, size, err, sizeof err);
    same_as_general_path(data, size, rc, &t, err);
    if (rc == 0) {
        ca_replay_opts o = ca_replay_defaults();
        o.debug = true;
        ca_replay_result res;
        if (ca_replay(&t, &o, sink, &res, err, sizeof err) != 0 && strncmp(err, "fuzz:", 5) != 0) abort();
        o.use_addresses = false;
        o.capacity = 1ULL << 30;
        if (ca_replay(&t, &o, sink, &res, err, sizeof err) != 0 && strncmp(err, "fuzz:", 5) != 0) abort();
    } else if (strncmp(err, "fuzz:", 5) != 0 || !strstr(err, ": ")) {
        abort(); /* every parse error names the trace and the line */
    }
    ca_trace_free(&t);
    return 0;
}
