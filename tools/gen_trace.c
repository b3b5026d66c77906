/* gen_trace: writes a reproducible random allocator trace (memclaims-trace
 * v1, or v2 with --streams) to stdout, for the replay benchmark (make bench)
 * and tests.
 *
 *   build/gen_trace [--ops N] [--seed S] [--max-live N] [--max-live-bytes BYTES]
 *                   [--limit BYTES] [--max-split-size BYTES] [--streams N]
 *
 * --streams N (default 1): each request goes to a stream drawn uniformly
 * from 0..N-1 (stream=S on the line when S > 0). With 1 the output is the
 * same v1 trace as without the option.
 *
 * Requests mix sizes: half small (1 B .. 1 MiB), a third medium (1 .. 20 MiB),
 * some large (20 .. 256 MiB), and sizes on the allocator's boundaries, each
 * log-uniform within its band. Allocations and frees alternate at random
 * while at most --max-live tensors (default 1000) of at most
 * --max-live-bytes (default 8 GiB) are alive; a few empty_cache and
 * reset_peak operations are mixed in. No addresses: the host backend places
 * segments. The same arguments always give the same bytes. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_model.h"
#include "check.h"
#include "options.h"

static uint64_t rng_state;

static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double uniform(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }

/* log-uniform in [lo, hi] */
static uint64_t log_uniform(uint64_t lo, uint64_t hi)
{
    double l = (double)lo, h = (double)hi;
    double v = l * exp(uniform() * log(h / l));
    uint64_t x = (uint64_t)v;
    return x < lo ? lo : x > hi ? hi : x;
}

static uint64_t request_size(void)
{
    static const uint64_t edges[] = {1, 511, 512, 513, CA_SMALL_SIZE - 1, CA_SMALL_SIZE,
                                     CA_SMALL_SIZE + 1, CA_MIN_LARGE_ALLOC - 1, CA_MIN_LARGE_ALLOC,
                                     CA_MIN_LARGE_ALLOC + 1, CA_LARGE_BUFFER - 1, CA_LARGE_BUFFER,
                                     CA_LARGE_BUFFER + 1, 4000000, 25000000};
    double u = uniform();
    if (u < 0.50) return log_uniform(1, CA_SMALL_SIZE);
    if (u < 0.85) return log_uniform(CA_SMALL_SIZE, CA_LARGE_BUFFER);
    if (u < 0.95) return log_uniform(CA_LARGE_BUFFER, 256ULL << 20);
    return edges[rnd() % (sizeof edges / sizeof edges[0])];
}

#define USAGE "usage: gen_trace [--ops N] [--seed S] [--max-live N] [--max-live-bytes BYTES]\n" \
              "                 [--limit BYTES] [--max-split-size BYTES] [--streams N]\n"

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gen_trace: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n" USAGE);
    return MC_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    uint64_t ops = 1000000, seed = 1, max_live = 1000, max_bytes = 8ULL << 30;
    uint64_t limit = 0, max_split = 0, streams = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) {
            printf(USAGE "Writes a reproducible random allocator trace to stdout.\n");
            return MC_EXIT_OK;
        }
        if (i + 1 >= argc) return usage("unknown option or missing value: '%s'", a);
        const char *v = argv[++i];
        uint64_t *dst = !strcmp(a, "--ops") ? &ops
                      : !strcmp(a, "--seed") ? &seed
                      : !strcmp(a, "--max-live") ? &max_live
                      : !strcmp(a, "--max-live-bytes") ? &max_bytes
                      : !strcmp(a, "--limit") ? &limit
                      : !strcmp(a, "--max-split-size") ? &max_split
                      : !strcmp(a, "--streams") ? &streams : NULL;
        if (!dst) return usage("unknown option '%s'", a);
        if (mc_parse_bytes(v, dst) != 0) return usage("bad value '%s' for %s", v, a);
        if (dst == &streams && streams > CA_MAX_STREAMS) return usage("--streams is at most %d", CA_MAX_STREAMS);
    }
    rng_state = seed;
    uint64_t *live_id = mc_xmalloc(max_live * sizeof *live_id);
    uint64_t *live_bytes = mc_xmalloc(max_live * sizeof *live_bytes);
    uint64_t n_live = 0, bytes_live = 0, next_id = 1;
    static char buf[1 << 16];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    if (streams > 1)
        printf("# memclaims-trace v2\n# gen_trace --ops %" PRIu64 " --seed %" PRIu64 " --streams %" PRIu64 "\n",
               ops, seed, streams);
    else
        printf("# memclaims-trace v1\n# gen_trace --ops %" PRIu64 " --seed %" PRIu64 "\n", ops, seed);
    if (limit) printf("set limit %" PRIu64 "\n", limit);
    if (max_split) printf("set max_split_size %" PRIu64 "\n", max_split);
    for (uint64_t i = 0; i < ops; i++) {
        double u = uniform();
        if (u < 0.0005) {
            puts("empty_cache");
            continue;
        }
        if (u < 0.001) {
            puts("reset_peak");
            continue;
        }
        uint64_t size = request_size();
        bool room = n_live < max_live && bytes_live + size <= max_bytes;
        if (room && (n_live == 0 || uniform() < 0.5)) {
            uint64_t stream = streams > 1 ? rnd() % streams : 0;
            if (stream)
                printf("alloc %" PRIu64 " %" PRIu64 " stream=%" PRIu64 "\n", next_id, size, stream);
            else
                printf("alloc %" PRIu64 " %" PRIu64 "\n", next_id, size);
            live_id[n_live] = next_id++;
            live_bytes[n_live++] = size;
            bytes_live += size;
        } else if (n_live > 0) {
            uint64_t k = rnd() % n_live;
            printf("free %" PRIu64 "\n", live_id[k]);
            bytes_live -= live_bytes[k];
            live_id[k] = live_id[--n_live];
            live_bytes[k] = live_bytes[n_live];
        } else {
            puts("reset_peak"); /* nothing fits and nothing is live: max_live_bytes is tiny */
        }
    }
    free(live_id);
    free(live_bytes);
    return fflush(stdout) == 0 ? MC_EXIT_OK : MC_EXIT_USAGE;
}
