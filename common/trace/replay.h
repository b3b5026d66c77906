/* replay.h: replays a parsed allocator trace (trace.h) through the model over
 * the host backend and writes one CSV row per operation: the logic behind
 * build/replay (DESIGN.md "Allocator traces and build/replay"), shared with
 * the fuzzer and the tests.
 *
 * Columns, after each operation (PyTorch's memory_stats() keys in brackets):
 *   step                 1, 2, ... over the operations
 *   op, id, bytes        as in the trace (id, bytes empty where the op has none)
 *   status               ok, or oom (PyTorch would raise OutOfMemoryError), or
 *                        skipped (what-if: a free of an id the model refused)
 *   allocated            [allocated_bytes.all.current]
 *   reserved             [reserved_bytes.all.current]
 *   peak_allocated       [allocated_bytes.all.peak]
 *   peak_reserved        [reserved_bytes.all.peak]
 *   segments             [segment.all.current]
 *   active               [active_bytes.all.current]
 *   inactive_split_bytes [inactive_split_bytes.all.current]
 *   inactive_split       [inactive_split.all.current]
 *   requested            [requested_bytes.all.current]
 *   num_alloc_retries    [num_alloc_retries]
 *   num_ooms             [num_ooms]
 *
 * With addresses on, an alloc that needs a new segment places it at the
 * address on its line (ca_host_hint_next), so the replay follows PyTorch's
 * tie-breaks exactly. An alloc whose block lands elsewhere than its line
 * says is counted (and reported to warn) as an address mismatch. */
#ifndef MC_REPLAY_H
#define MC_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CA_REPLAY_HEADER                                                                  \
    "step,op,id,bytes,status,allocated,reserved,peak_allocated,peak_reserved,segments,"    \
    "active,inactive_split_bytes,inactive_split,requested,num_alloc_retries,num_ooms"

#define CA_REPLAY_DEFAULT_CAPACITY (80ULL << 30) /* 80 GiB, an H100 80GB-class card */

typedef struct {
    bool use_addresses;  /* place new segments at the trace's addresses */
    uint64_t capacity;   /* the simulated device, bytes (> 0) */
    bool debug;          /* ca_check_invariants after every operation; abort if broken */
    FILE *warn;          /* address mismatches and conflicts (first 10); NULL: silent */
    const ca_config *cfg; /* the settings to replay under; NULL: the trace's own */
    bool summary;        /* write one JSON object (ca_replay_summary) instead of the CSV */
    bool what_if;        /* the trace meets other conditions than it was recorded under
                            (also implied by a cfg other than the trace's): a free of an
                            id the model refused is skipped (status "skipped"), not an error */
} ca_replay_opts;

#define CA_REPLAY_FAILED_MAX 10

typedef struct {
    uint64_t steps;           /* operations replayed (rows written without summary) */
    uint64_t addr_mismatches; /* allocs placed elsewhere than their line says */
    uint64_t hint_conflicts;  /* addresses that overlapped a live segment */
    /* Whole-run figures (reset_peak lines do not reset them), taken after
     * each operation: */
    int64_t peak_allocated, peak_reserved, peak_requested, segments_peak;
    /* num_alloc_retries, num_ooms as PyTorch reports them when its process
     * stops at the first OutOfMemoryError: up to and including the first
     * refused request (the whole run's if none was refused) */
    int64_t alloc_retries, ooms;
    /* what the replay counted after the first refused request (0 if none):
     * a program that catches the error and goes on ends with the sums */
    int64_t after_oom_retries, after_oom_ooms;
    uint64_t first_oom_step;              /* the first refused request's step; 0: none */
    uint64_t first_oom_bytes;             /* its bytes */
    uint64_t refused;                     /* requests refused (oom rows) */
    uint64_t largest_free_at_peak_reserved; /* the largest cached free block when
                                             reserved first reached its peak */
    uint64_t free_at_peak_reserved;       /* reserved - allocated then */
    bool preload_refused;                 /* what-if: the segments from before the recording do
                                             not fit the device; nothing was replayed (refused,
                                             ooms and unexpected_ooms count it as one request) */
    uint64_t expected_ooms;               /* alloc lines marked oom */
    uint64_t expected_ooms_granted;       /* of those, the model granted (then freed at once) */
    uint64_t unexpected_ooms;             /* refused requests not marked oom */
    uint64_t device_allocs, device_frees; /* num_device_alloc / num_device_free */
    uint64_t skipped_frees;               /* what-if: frees of ids the model refused */
    size_t n_failed;                      /* the first refused requests: */
    struct { uint64_t step, id, bytes; } failed[CA_REPLAY_FAILED_MAX];
} ca_replay_result;

/* Addresses on, 80 GiB, no debug check, no warnings, the trace's settings, CSV. */
ca_replay_opts ca_replay_defaults(void);

/* Replays t: preloads its segments and live blocks, then writes the header
 * and a row per operation to out (or, with o->summary, one JSON line).
 * Returns 0, or -1 with the reason in err: "NAME:LINE: reason" for a free of
 * an id whose request ran out of memory (malformed: no row for it), a free
 * on another stream than the alloc's, a preamble that does not fit (in a
 * what-if replay, a device too small for its segments is an answer instead:
 * res->preload_refused, the run refused at its start), more streams than
 * the model keeps, invalid settings, or an output error. res may be NULL.
 *
 * An alloc marked oom (PyTorch refused it) is requested all the same; if
 * the model grants it, the block is freed at once (the program never had
 * it) and counted in expected_ooms_granted. With settings other than the
 * trace's (o->cfg) or expandable segments, address mismatches are counted
 * but not reported to warn: they are expected. */
int ca_replay(const ca_trace *t, const ca_replay_opts *o, FILE *out, ca_replay_result *res,
              char *err, size_t errlen);

/* The settings a what-if replay runs under, as build/replay's --conf and
 * --limit set them: the trace's own; with conf (PYTORCH_CUDA_ALLOC_CONF's
 * text; NULL: none) the defaults with conf applied and the trace's limit
 * kept; then *limit where limit is not NULL. A capacity (bytes) above 2^61
 * leaves expandable segments no address space and is refused. 0, or -1 with
 * the reason in err ("--" and ca_conf_parse's, or the capacity's). Used by
 * build/replay and build/whatif, so the two replay the same way. */
int ca_replay_config(const ca_trace *t, const char *conf, const uint64_t *limit, uint64_t capacity,
                     ca_config *cfg, char *err, size_t errlen);
/* After a replay under cfg, what build/replay says on stderr, one line each
 * into log: trace addresses the model placed elsewhere (only under the
 * trace's own settings, where they should agree), and address hints not
 * used because they overlapped live segments. */
void ca_replay_notes(const ca_trace *t, const ca_config *cfg, const ca_replay_result *res, FILE *log);

/* Writes res as one JSON object on one line (keys in docs/TRACE.md), with
 * the settings cfg it ran under. Returns 0, or -1 if the write failed. */
int ca_replay_summary(FILE *out, const ca_replay_result *res, const ca_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
