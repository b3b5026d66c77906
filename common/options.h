/* options.h: the command line every experiment shares, parsed strictly.
 *
 *   --device N     CUDA device ordinal (>= 0)              default 0
 *   --repeats N    timed samples per figure (>= 1)         default per experiment
 *   --warmup N     untimed runs first (>= 0)               default per experiment
 *   --quick        tiny sizes, for smoke tests
 *   --out DIR      write DIR/<key>.csv (atomically) instead of stdout
 *   --model-only   allocator experiments only: host backend, no GPU
 *   --list         print the descriptor as one tab-separated line
 *   --help         print usage and the verdict rule
 *
 * Experiments may add options of their own through a table (mc_extra_opt).
 * Any bad input (unknown flag, missing or non-numeric value, zero or negative
 * count, overflow) gives one line and MC_EXIT_USAGE, before any GPU work. */
#ifndef MC_OPTIONS_H
#define MC_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MC_OPT_FLAG,   /* bool; no value */
    MC_OPT_COUNT,  /* int >= 1 */
    MC_OPT_BYTES,  /* uint64_t >= 1; suffixes K, M, G (powers of 1024) or KiB, MiB, GiB */
    MC_OPT_STRING  /* const char *; non-empty */
} mc_opt_kind;

typedef struct {
    const char *name;   /* without the leading "--"; NULL ends a table */
    mc_opt_kind kind;
    void *dst;          /* bool *, int *, uint64_t *, const char ** */
    const char *help;
} mc_extra_opt;

typedef struct {
    int device;
    int repeats;
    int warmup;
    bool quick;
    const char *out_dir;   /* NULL: CSV to stdout */
    bool model_only;
    bool help;
    bool list;
} mc_options;

/* Sets defaults, then parses argv[1..argc). allow_model_only says whether
 * --model-only is accepted. extra may be NULL. Returns 0, or MC_EXIT_USAGE
 * with one line (no newline) in err. */
int mc_options_parse(mc_options *o, int argc, char **argv, int default_repeats,
                     int default_warmup, bool allow_model_only,
                     const mc_extra_opt *extra, char *err, size_t errlen);

/* Parses a byte count: decimal digits, optional suffix K/M/G or KiB/MiB/GiB.
 * Returns 0 and sets *out, or -1 for anything else, zero or overflow. */
int mc_parse_bytes(const char *s, uint64_t *out);

/* Parses a decimal int in [min, max]. Returns 0 or -1. */
int mc_parse_int(const char *s, long min, long max, int *out);

#ifdef __cplusplus
}
#endif
#endif
