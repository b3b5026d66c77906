/* fuzz_structured: random well-formed traces for the fuzz target
 * (fuzz_replay.c), built with the suite's own compiler, so that `make test`
 * fuzzes the allocator model for a fixed budget on any machine (libFuzzer
 * needs clang; `make fuzz` uses it and seeds its corpus from here).
 *
 *   fuzz_structured N SEED            runs N traces through the fuzz target
 *   fuzz_structured N SEED --write DIR  writes them to DIR/gen-K instead
 *
 * Each trace is what a snapshot taken mid-training gives: segments that
 * existed before the recording (both pools, several streams, odd sizes),
 * live blocks in them (with and without block=), then allocs, frees,
 * empty_cache and reset_peak, requests marked oom, sizes on every boundary
 * of the rules and some past any card. Most traces start with a "#conf"
 * line of every setting the model has (max_split_size_mb,
 * max_non_split_rounding_mb, roundup_power2_divisions in both forms,
 * garbage_collection_threshold, expandable_segments), which the target
 * replays as a what-if under a limit and on a small device; some carry a
 * `set` line of their own. The target checks the model's invariants after
 * every operation and aborts on a broken one. The same N and SEED give the
 * same traces. Prints "fuzz_structured: N traces (S with pre-recording
 * segments under a max_split_size what-if), no crash, no broken invariant". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MIB (1ULL << 20)
#define MAX_TEXT (1 << 16)
#define MAX_IDS 64

static uint64_t rng_state;

static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }
static bool chance(unsigned percent) { return below(100) < percent; }

typedef struct {
    char text[MAX_TEXT];
    size_t len;
} buf;

static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->text + b->len, sizeof b->text - b->len, fmt, ap);
    va_end(ap);
    if (n > 0) b->len += (size_t)n < sizeof b->text - b->len ? (size_t)n : sizeof b->text - b->len - 1;
}

/* A request size: on a boundary of the rules, or log-uniform in a band. */
static uint64_t request_size(uint64_t max_split)
{
    static const uint64_t edges[] = {1, 511, 512, 513, MIB - 1, MIB, MIB + 1, 10 * MIB - 1, 10 * MIB,
                                     10 * MIB + 1, 20 * MIB, 20 * MIB + 1};
    switch (below(10)) {
    case 0: return edges[below(sizeof edges / sizeof *edges)];
    case 1: return max_split - 512 + below(1024) + 1; /* around max_split_size */
    case 2: return chance(50) ? (1ULL << 40) + below(1ULL << 40) : (1ULL << 60) - 1; /* past any card */
    default: {
        static const uint64_t lo[] = {1, MIB, 20 * MIB}, hi[] = {MIB, 20 * MIB, 160 * MIB};
        int band = (int)below(3);
        uint64_t span = hi[band] - lo[band];
        return lo[band] + below(span >> below(12)) + 1;
    }
    }
}

static const char *conf_item(uint64_t *max_split)
{
    static char s[64];
    switch (below(6)) {
    case 0: {
        static const unsigned mb[] = {20, 21, 32, 64, 100, 512};
        unsigned v = mb[below(6)];
        *max_split = (uint64_t)v * MIB;
        snprintf(s, sizeof s, "max_split_size_mb:%u", v);
        return s;
    }
    case 1: snprintf(s, sizeof s, "max_non_split_rounding_mb:%u", chance(50) ? 20u : 40u + (unsigned)below(200)); return s;
    case 2: snprintf(s, sizeof s, "roundup_power2_divisions:%u", 1u << below(5)); return s;
    case 3: return chance(50) ? "roundup_power2_divisions:[1:2,256:4,>:8]" : "roundup_power2_divisions:[64:8,>:1]";
    case 4: snprintf(s, sizeof s, "garbage_collection_threshold:0.%u", 1u + (unsigned)below(9)); return s;
    default: return chance(50) ? "expandable_segments:True" : "expandable_segments:False";
    }
}

/* One trace into b; returns whether it has pre-recording segments under a
 * max_split_size what-if. */
static bool make_trace(buf *b)
{
    b->len = 0;
    uint64_t max_split = 64 * MIB;
    bool split_whatif = false;
    if (chance(85)) { /* the what-if settings: one to three of them */
        put(b, "#conf ");
        unsigned n = 1 + (unsigned)below(3);
        uint64_t ms = 0;
        for (unsigned i = 0; i < n; i++) put(b, "%s%s", i ? "," : "", conf_item(&ms));
        put(b, "\n");
        if (ms) {
            max_split = ms;
            split_whatif = true;
        }
    } else {
        put(b, "# memclaims-trace v2\n");
    }
    if (chance(15)) put(b, "set conf max_split_size_mb:%u\n", 20u + (unsigned)below(80));
    if (chance(10)) put(b, "set limit %" PRIu64 "\n", (64 + below(512)) * MIB);

    /* Segments from before the recording, with live blocks. */
    static const uint64_t streams[] = {0, 7, 0x7f00};
    bool live[MAX_IDS] = {false};
    uint64_t stream_of[MAX_IDS] = {0};
    unsigned nseg = (unsigned)below(5);
    uint64_t at = 0x7f0000000000ULL, next_id = 1;
    for (unsigned s = 0; s < nseg; s++) {
        bool small = chance(30);
        uint64_t size = small ? 2 * MIB : chance(70) ? (1 + below(60)) * 2 * MIB : (1 + below(100000)) * 512;
        uint64_t stream = streams[below(3)];
        put(b, "segment 0x%" PRIx64 " %" PRIu64, at, size);
        if (stream) put(b, " stream=%" PRIu64, stream);
        put(b, "%s\n", small ? " pool=small" : size == 2 * MIB ? " pool=large" : "");
        /* Live blocks at increasing offsets, each within what is left. */
        uint64_t off = 0;
        while (off < size && next_id < MAX_IDS && chance(60)) {
            off += chance(50) ? 0 : below((size - off) / 512) * 512;
            if (off >= size) break;
            uint64_t room = size - off;
            uint64_t req = 1 + below(room < 4 * MIB ? room : 4 * MIB);
            uint64_t rounded = (req + 511) / 512 * 512;
            if (rounded > room) break;
            uint64_t blk = rounded + (chance(50) ? below((room - rounded) / 512 + 1) * 512 : 0);
            put(b, "live %" PRIu64 " %" PRIu64 " 0x%" PRIx64, next_id, req, at + off);
            if (stream) put(b, " stream=%" PRIu64, stream);
            if (chance(60)) put(b, " block=%" PRIu64, blk);
            else blk = rounded; /* the parser may widen it by a gap of up to 1 MiB */
            put(b, "\n");
            live[next_id] = true;
            stream_of[next_id] = stream;
            next_id++;
            off += blk + (small ? 0 : MIB + 512); /* leave any gap the parser may take */
        }
        at += size + 2 * MIB * (1 + below(4));
    }

    /* Operations. */
    unsigned nops = 10 + (unsigned)below(120);
    for (unsigned i = 0; i < nops; i++) {
        unsigned k = (unsigned)below(100);
        if (k < 50) {
            uint64_t id = 1 + below(MAX_IDS - 1);
            if (live[id]) continue;
            uint64_t stream = chance(70) ? 0 : streams[below(3)];
            uint64_t size = request_size(max_split);
            bool oom = size > (1ULL << 40); /* no card grants it: PyTorch marked it */
            put(b, "alloc %" PRIu64 " %" PRIu64, id, size);
            if (stream) put(b, " stream=%" PRIu64, stream);
            if (oom) put(b, " oom");
            put(b, "\n");
            if (!oom) {
                live[id] = true;
                stream_of[id] = stream;
            }
        } else if (k < 90) {
            uint64_t id = 1 + below(MAX_IDS - 1);
            if (!live[id]) continue;
            if (stream_of[id] && chance(50)) put(b, "free %" PRIu64 " stream=%" PRIu64 "\n", id, stream_of[id]);
            else put(b, "free %" PRIu64 "\n", id);
            live[id] = false;
        } else if (k < 95) {
            put(b, "empty_cache\n");
        } else {
            put(b, "reset_peak\n");
        }
    }
    return split_whatif && nseg > 0;
}

int main(int argc, char **argv)
{
    char *end;
    unsigned long long n = argc >= 3 ? strtoull(argv[1], &end, 10) : 0;
    if (argc < 3 || *end || n == 0 || (argc != 3 && (argc != 5 || strcmp(argv[3], "--write") != 0))) {
        fprintf(stderr, "usage: fuzz_structured N SEED [--write DIR]\n");
        return 2;
    }
    rng_state = strtoull(argv[2], &end, 10);
    if (*end) {
        fprintf(stderr, "fuzz_structured: SEED must be a whole number, not '%s'\n", argv[2]);
        return 2;
    }
    static buf b;
    unsigned long long split = 0;
    for (unsigned long long i = 0; i < n; i++) {
        split += make_trace(&b);
        if (argc == 5) {
            char path[4096];
            snprintf(path, sizeof path, "%s/gen-%llu", argv[4], i);
            FILE *f = fopen(path, "w");
            if (!f || fwrite(b.text, 1, b.len, f) != b.len || fclose(f) != 0) {
                fprintf(stderr, "fuzz_structured: cannot write %s\n", path);
                return 1;
            }
        } else {
            LLVMFuzzerTestOneInput((const uint8_t *)b.text, b.len);
        }
    }
    printf("fuzz_structured: %llu traces (%llu with pre-recording segments under a max_split_size what-if), "
           "%s\n", n, split, argc == 5 ? "written" : "no crash, no broken invariant");
    return 0;
}
