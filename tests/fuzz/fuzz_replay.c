/* fuzz_replay: libFuzzer target for the trace parser (v1 and v2), the
 * PYTORCH_CUDA_ALLOC_CONF parser and the replay (make fuzz, scripts/fuzz).
 * Any input is parsed; a malformed one must give a "fuzz:LINE: reason"
 * message, a well-formed one is replayed through the model with the
 * invariant check after every operation (a broken invariant aborts): with
 * its addresses on an 80 GiB device; without them on a 1 GiB device, so the
 * out-of-memory paths run too; and, when the first line is a comment
 * "#conf STRING" that the conf parser accepts, under those settings with a
 * 512 MiB limit (so the garbage collection runs) on a 1 GiB device, as a
 * what-if replay, and again with no limit on a 384 MiB device. Any first
 * line (after "#conf " if there) goes through the conf parser.
 *
 * The conf parser must give one line starting "conf: " for what it refuses,
 * and what it accepts must pass ca_config_check and come back equal from
 * ca_conf_format.
 *
 * The parser's fast path (plain alloc/free lines) must agree with its general
 * path: the input is parsed again with " #" after every line, which sends
 * every line down the general path and changes nothing else, and both parses
 * must give the same result, message and operations. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/replay.h"
#include "trace/trace.h"

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
    if (rc == 0 && (u.n_ops != t->n_ops || u.n_slots != t->n_slots || !ca_config_equal(&u.cfg, &t->cfg) ||
                    u.n_segs != t->n_segs || u.n_lives != t->n_lives || u.n_expect_oom != t->n_expect_oom))
        abort();
    for (size_t i = 0; rc == 0 && i < t->n_ops; i++) {
        const ca_trace_op *a = &t->ops[i], *b = &u.ops[i];
        if (a->kind != b->kind || a->id != b->id || a->bytes != b->bytes || a->addr != b->addr ||
            a->line != b->line || a->slot != b->slot || a->stream != b->stream ||
            a->expect_oom != b->expect_oom || a->has_stream != b->has_stream)
            abort();
    }
    if (rc == 0 && t->n_segs && memcmp(u.segs, t->segs, t->n_segs * sizeof *t->segs) != 0) abort();
    if (rc == 0 && t->n_lives && memcmp(u.lives, t->lives, t->n_lives * sizeof *t->lives) != 0) abort();
    ca_trace_free(&u);
    free(text);
}

/* The input's first line (after "#conf ", if it starts so) as a
 * PYTORCH_CUDA_ALLOC_CONF string: returns 1 with cfg set if it starts with
 * "#conf " and the parser accepts the rest. */
static int first_line_conf(const uint8_t *data, size_t size, ca_config *cfg)
{
    char s[256];
    size_t n = 0;
    bool marked = size >= 6 && memcmp(data, "#conf ", 6) == 0;
    if (marked) {
        data += 6;
        size -= 6;
    }
    while (n < size && n < sizeof s - 1 && data[n] != '\n' && data[n] != '\0') {
        s[n] = (char)data[n];
        n++;
    }
    s[n] = '\0';
    *cfg = ca_config_default();
    char err[512] = "";
    if (ca_conf_parse(s, cfg, err, sizeof err) != 0) {
        if (strncmp(err, "conf: ", 6) != 0 || strchr(err, '\n')) abort();
        return 0;
    }
    char why[256], text[1024];
    if (ca_config_check(cfg, why, sizeof why) != 0) abort();
    ca_conf_format(cfg, text, sizeof text);
    ca_config back = ca_config_default();
    if (ca_conf_parse(text, &back, err, sizeof err) != 0 || !ca_config_equal(&back, cfg)) abort();
    return marked;
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
        ca_config what_if;
        if (first_line_conf(data, size, &what_if)) {
            what_if.limit_bytes = 512ULL << 20;
            o.cfg = &what_if;
            o.what_if = true;
            o.summary = true;
            o.use_addresses = true;
            if (ca_replay(&t, &o, sink, &res, err, sizeof err) != 0 && strncmp(err, "fuzz:", 5) != 0) abort();
            if (res.peak_reserved < 0 || res.n_failed > CA_REPLAY_FAILED_MAX) abort();
            /* again with no limit on a 384 MiB device: the device refuses,
             * not the limit (segments from before the recording fill it) */
            what_if.limit_bytes = CA_UNLIMITED;
            o.capacity = 384ULL << 20;
            if (ca_replay(&t, &o, sink, &res, err, sizeof err) != 0 && strncmp(err, "fuzz:", 5) != 0) abort();
            if (res.peak_reserved < 0 || res.n_failed > CA_REPLAY_FAILED_MAX) abort();
        }
    } else {
        ca_config ignored;
        first_line_conf(data, size, &ignored);
        if (strncmp(err, "fuzz:", 5) != 0 || !strstr(err, ": ")) abort(); /* every parse error names the trace and the line */
    }
    ca_trace_free(&t);
    return 0;
}
