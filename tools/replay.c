/* replay: replays an allocator trace (memclaims-trace v1) through the
 * allocator model over the host backend, no GPU, and writes CSV to stdout
 * (DESIGN.md "Allocator traces and build/replay"; columns in common/replay.h).
 *
 *   build/replay [options] TRACE|-
 *     --no-addresses     ignore the trace's addresses: the host backend's own
 *                        placement rule decides where segments go
 *     --capacity BYTES   the simulated device (K/M/G suffixes; default 80 GiB)
 *     --time             report parse and replay time (CLOCK_MONOTONIC) and
 *                        operations per second on stderr (make bench)
 *     --help
 *
 * Exit 0; 2 for bad usage or a malformed trace ("TRACE:LINE: reason" on
 * stderr, no row for that line). Address mismatches (with addresses on) are
 * warnings on stderr; they mean the model's choice differed from PyTorch's. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "clock.h"
#include "options.h"
#include "alloc/replay.h"
#include "alloc/trace.h"

static void help(FILE *fp)
{
    fprintf(fp,
            "usage: replay [--no-addresses] [--capacity BYTES] [--time] TRACE|-\n"
            "Replays an allocator trace through the caching-allocator model (no GPU)\n"
            "and writes one CSV row per operation:\n  %s\n"
            "  --no-addresses    ignore the trace's addresses (the host placement rule decides)\n"
            "  --capacity BYTES  simulated device size, suffixes K/M/G (default 80 GiB)\n"
            "  --time            timing and operations per second on stderr\n",
            CA_REPLAY_HEADER);
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
    const char *path = NULL;
    int timing = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) {
            help(stdout);
            return MC_EXIT_OK;
        } else if (!strcmp(a, "--no-addresses")) {
            o.use_addresses = false;
        } else if (!strcmp(a, "--time")) {
            timing = 1;
        } else if (!strcmp(a, "--capacity")) {
            if (i + 1 >= argc) return usage("%s needs a value", a);
            if (mc_parse_bytes(argv[++i], &o.capacity) != 0 || o.capacity > (1ULL << 62))
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
    ca_replay_result res = {0, 0, 0};
    int rc = ca_replay(&t, &o, stdout, &res, err, sizeof err);
    double t2 = mc_now_s();
    if (rc != 0) fprintf(stderr, "%s\n", err);
    if (res.addr_mismatches > 0)
        fprintf(stderr, "replay: %llu of the trace's addresses differ from the model's\n",
                (unsigned long long)res.addr_mismatches);
    if (res.hint_conflicts > 0)
        fprintf(stderr, "replay: %llu addresses overlapped live segments and were not used\n",
                (unsigned long long)res.hint_conflicts);
    if (timing && rc == 0)
        fprintf(stderr,
                "replay: %zu ops; parse %.6f s, replay+CSV %.6f s, total %.6f s (CLOCK_MONOTONIC); "
                "%.0f ops/s\n",
                t.n_ops, t1 - t0, t2 - t1, t2 - t0, t2 > t0 ? (double)t.n_ops / (t2 - t0) : 0.0);
    ca_trace_free(&t);
    return rc == 0 ? MC_EXIT_OK : MC_EXIT_USAGE;
}
