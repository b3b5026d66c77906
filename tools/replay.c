/* replay: replays an allocator trace (memclaims-trace v1 or v2,
 * docs/TRACE.md) through the allocator model over the host backend, no
 * GPU, and writes CSV to stdout (columns in common/trace/replay.h), or with
 * --summary one JSON object.
 *
 *   build/replay [options] TRACE|-
 *     --conf STRING      replay under these PYTORCH_CUDA_ALLOC_CONF settings
 *                        instead of the trace's (ca_conf_parse; strict)
 *     --limit BYTES      reserved-memory cap, as set_per_process_memory_fraction
 *                        leaves it (K/M/G, Ki/Mi/Gi); instead of the trace's
 *     --capacity BYTES   the simulated device (same suffixes; default 80 GiB)
 *     --summary          one JSON line (ca_replay_summary) instead of the CSV;
 *                        its alloc_retries and ooms stop at the first refused
 *                        request (PyTorch's figures when its process stops
 *                        there), after_first_oom holds the rest
 *     --no-addresses     ignore the trace's addresses: the host backend's own
 *                        placement rule decides where segments go
 *     --time             report parse and replay time (CLOCK_MONOTONIC) and
 *                        operations per second on stderr (make bench)
 *   build/replay --settings
 *                        the allocator settings (CA_SETTINGS), one a line:
 *                        trace name, conf key, unit, tab-separated
 *     --help
 *
 * Exit 0; 2 for bad usage, a bad --conf, or a malformed trace
 * ("TRACE:LINE: reason" on stderr, no row for that line). Address
 * mismatches (with addresses on, under the trace's own settings) are
 * warnings on stderr; they mean the model's choice differed from PyTorch's. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clock.h"
#include "options.h"
#include "trace/replay.h"
#include "trace/trace.h"

/* What a conf value of each kind looks like, for --help. */
static const char *value_form(ca_setting_kind k)
{
    switch (k) {
    case CA_SETTING_BYTES: return "bytes";
    case CA_SETTING_MIB: return "whole MiB >= 20";
    case CA_SETTING_FRACTION: return "a decimal in (0, 1)";
    case CA_SETTING_DIVISIONS: return "N (a power of two) or [256:1,512:2,>:8] (MiB:N, N 0 or a power of two)";
    case CA_SETTING_BOOL: return "True or False";
    }
    return "";
}

static void help(FILE *fp)
{
    fprintf(fp,
            "usage: replay [--conf STRING] [--limit BYTES] [--capacity BYTES] [--summary]\n"
            "              [--no-addresses] [--time] TRACE|-\n"
            "       replay --settings\n"
            "Replays an allocator trace (memclaims-trace v1/v2) through the caching-allocator\n"
            "model (no GPU) and writes one CSV row per operation:\n  %s\n"
            "  --conf STRING     PYTORCH_CUDA_ALLOC_CONF settings to replay under instead of the\n"
            "                    trace's, KEY:VALUE,... (garbage_collection_threshold acts only\n"
            "                    under a limit):\n",
            CA_REPLAY_HEADER);
    for (size_t k = 0; k < CA_N_SETTINGS; k++)
        if (ca_settings[k].conf)
            fprintf(fp, "                      %-29s %s\n", ca_settings[k].conf, value_form(ca_settings[k].kind));
    fprintf(fp,
            "  --limit BYTES     cap on reserved memory, as set_per_process_memory_fraction leaves\n"
            "                    it (int(fraction * total)); K/M/G/T, Ki/Mi/Gi/Ti; replaces the trace's\n"
            "  --capacity BYTES  simulated device size (default 80 GiB)\n"
            "  --summary         one JSON object instead of the CSV: steps, peak_allocated,\n"
            "                    peak_reserved, alloc_retries, ooms, after_first_oom, first_oom_step,\n"
            "                    segments_peak, largest_free_at_peak_reserved, failed, ... (docs/TRACE.md).\n"
            "                    alloc_retries and ooms count up to and including the first refused\n"
            "                    request, as PyTorch reports them when its process stops at that\n"
            "                    OutOfMemoryError (the whole run's if none); after_first_oom:\n"
            "                    {\"alloc_retries\":N,\"ooms\":N}, what the replay counted after it\n"
            "                    (null if no request was refused)\n"
            "  --no-addresses    ignore the trace's addresses (the host placement rule decides)\n"
            "  --time            timing and operations per second on stderr\n"
            "  --settings        list the allocator settings, one a line, three tab-separated\n"
            "                    fields: the name of its `set NAME BYTES` trace line, its\n"
            "                    PYTORCH_CUDA_ALLOC_CONF key, the unit of the key's value (of the\n"
            "                    set line's for a setting with no key); '-' where it has none\n");
}

/* --settings: CA_SETTINGS, one row a line (docs/TRACE.md; scripts/snapshot2trace reads it). */
static void print_settings(FILE *fp)
{
    for (size_t k = 0; k < CA_N_SETTINGS; k++) {
        const ca_setting *s = &ca_settings[k];
        fprintf(fp, "%s\t%s\t%s\n", s->trace ? s->trace : "-", s->conf ? s->conf : "-", s->unit);
    }
}

/* A byte count: digits and an optional binary suffix (K, Ki, KiB = 2^10;
 * M, Mi, MiB; G, Gi, GiB; T, Ti, TiB), as the project's options take them. */
static int parse_size(const char *s, uint64_t *out)
{
    static const struct { const char *suffix; unsigned shift; } units[] = {
        {"", 0},   {"K", 10}, {"Ki", 10}, {"KiB", 10}, {"M", 20}, {"Mi", 20}, {"MiB", 20},
        {"G", 30}, {"Gi", 30}, {"GiB", 30}, {"T", 40}, {"Ti", 40}, {"TiB", 40}};
    uint64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].suffix) != 0) continue;
        if (v == 0 || v > (UINT64_MAX >> units[i].shift)) return -1;
        *out = v << units[i].shift;
        return 0;
    }
    return -1;
}

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "replay: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    help(stderr);
    return MC_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    ca_replay_opts o = ca_replay_defaults();
    o.warn = stderr;
    /* The test build checks the model after every operation unless
     * MEMCLAIMS_MODEL_CHECKS=0 (ca_debug_default). */
    o.debug = ca_debug_default();
    const char *path = NULL, *conf = NULL;
    int timing = 0;
    bool have_limit = false, capacity_given = false;
    uint64_t limit = CA_UNLIMITED;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) {
            help(stdout);
            return MC_EXIT_OK;
        } else if (!strcmp(a, "--settings")) {
            print_settings(stdout);
            return fflush(stdout) == 0 && !ferror(stdout) ? MC_EXIT_OK : MC_EXIT_USAGE;
        } else if (!strcmp(a, "--no-addresses")) {
            o.use_addresses = false;
        } else if (!strcmp(a, "--time")) {
            timing = 1;
        } else if (!strcmp(a, "--summary")) {
            o.summary = true;
        } else if (!strcmp(a, "--conf")) {
            if (i + 1 >= argc) return usage("%s needs a value", a);
            conf = argv[++i];
            ca_config probe = ca_config_default();
            char why[512];
            if (ca_conf_parse(conf, &probe, why, sizeof why) != 0) { /* one line, no usage text */
                fprintf(stderr, "replay: --%s\n", why);
                return MC_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--limit")) {
            if (i + 1 >= argc) return usage("%s needs a value", a);
            if (parse_size(argv[++i], &limit) != 0 || limit == 0)
                return usage("bad --limit '%s' (bytes >= 1; K/M/G/T or Ki/Mi/Gi/Ti)", argv[i]);
            have_limit = true;
        } else if (!strcmp(a, "--capacity")) {
            if (i + 1 >= argc) return usage("%s needs a value", a);
            capacity_given = true;
            if (parse_size(argv[++i], &o.capacity) != 0 || o.capacity > (1ULL << 62))
                return usage("bad --capacity '%s' (bytes >= 1, at most 2^62)", argv[i]);
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage("unknown option '%s'", a);
        } else if (path) {
            return usage("more than one trace given ('%s')", a);
        } else {
            path = a;
        }
    }
    if (!path) return usage("no trace given");

    char err[512];
    ca_trace t;
    double t0 = mc_now_s();
    if (ca_trace_load(&t, path, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        ca_trace_free(&t);
        return MC_EXIT_USAGE;
    }
    double t1 = mc_now_s();
    /* --conf replaces the trace's allocator settings, --limit its limit. */
    ca_config cfg;
    char why[512];
    if (ca_replay_config(&t, conf, have_limit ? &limit : NULL, o.capacity, &cfg, why, sizeof why) != 0) {
        ca_trace_free(&t); /* the capacity: --conf was checked as it was read */
        return usage("%s", why);
    }
    o.what_if = conf || have_limit || capacity_given;
    o.cfg = &cfg;
    ca_replay_result res;
    memset(&res, 0, sizeof res);
    int rc = ca_replay(&t, &o, stdout, &res, err, sizeof err);
    double t2 = mc_now_s();
    if (rc != 0) fprintf(stderr, "%s\n", err);
    ca_replay_notes(&t, &cfg, &res, stderr);
    if (timing && rc == 0)
        fprintf(stderr,
                "replay: %zu ops; parse %.6f s, replay+CSV %.6f s, total %.6f s (CLOCK_MONOTONIC); "
                "%.0f ops/s\n",
                t.n_ops, t1 - t0, t2 - t1, t2 - t0, t2 > t0 ? (double)t.n_ops / (t2 - t0) : 0.0);
    ca_trace_free(&t);
    return rc == 0 ? MC_EXIT_OK : MC_EXIT_USAGE;
}
