/* replay.h: replays a parsed allocator trace (trace.h) through the model over
 * the host backend and writes one CSV row per operation: the logic behind
 * build/replay (DESIGN.md "Allocator traces and build/replay"), shared with
 * the fuzzer and the tests.
 *
 * Columns, after each operation (PyTorch's memory_stats() keys in brackets):
 *   step                 1, 2, ... over the operations
 *   op, id, bytes        as in the trace (id, bytes empty where the op has none)
 *   status               ok, or oom (PyTorch would raise OutOfMemoryError)
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
} ca_replay_opts;

typedef struct {
    uint64_t steps;           /* rows written */
    uint64_t addr_mismatches; /* allocs placed elsewhere than their line says */
    uint64_t hint_conflicts;  /* addresses that overlapped a live segment */
} ca_replay_result;

/* Addresses on, 80 GiB, no debug check, no warnings. */
ca_replay_opts ca_replay_defaults(void);

/* Writes the header and a row per operation to out. Returns 0, or -1 with
 * the reason in err: "NAME:LINE: reason" for a free of an id whose request
 * ran out of memory (malformed: no row for it), or an output error. res may
 * be NULL. */
int ca_replay(const ca_trace *t, const ca_replay_opts *o, FILE *out, ca_replay_result *res,
              char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
