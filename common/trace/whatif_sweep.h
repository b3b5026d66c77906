/* whatif_sweep.h: one parsed trace replayed under each allocator setting
 * (alloc_presets.h) with no card and on each card size, several replays at
 * a time, and what the replays say: the smallest card each setting fits and
 * the setting that fits the smallest (build/whatif, tools/whatif.c).
 *
 * Each replay is ca_replay run as build/replay --summary --conf CONF
 * --capacity ROOM [--limit ROOM] TRACE runs it, build/replay's messages in a
 * log: the figures are read from its ca_replay_result, not its JSON. A
 * card's room is its nominal size in GiB less the CUDA context. */
#ifndef MC_WHATIF_SWEEP_H
#define MC_WHATIF_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "alloc/alloc_presets.h"
#include "replay.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* No card: a device larger than any run (1 TiB), so the figures are the run's own. */
#define CA_WHATIF_NO_CARD_BYTES (1ULL << 40)

/* One replay: a setting on a card. */
typedef struct {
    const ca_conf_preset *set;
    const char *card;  /* GiB as given, or "none" */
    double room;       /* bytes: the card less the context, or CA_WHATIF_NO_CARD_BYTES */
    uint64_t capacity; /* room as a whole number of bytes */
    bool limit;        /* the capacity is also the limit (garbage collection) */
    bool ok;           /* replayed */
    ca_replay_result res;
} ca_whatif_job;

/* The replays of every preset (ca_conf_presets), in their order: each with
 * no card, then on each card (GiB, as given) whose room, card GiB less
 * context bytes, is at least 1 MiB. A new array of *n (free it); NULL when
 * out of memory. The jobs point into cards. */
ca_whatif_job *ca_whatif_jobs(char *const cards[], size_t n_cards, uint64_t context, size_t *n);

/* Replays t under the setting conf on j's room, as build/replay --conf CONF
 * --capacity ROOM [--limit LIMIT (nonzero)] [--summary] TRACE would: the
 * trace's own limit kept unless limit is given; the CSV (summary false) or
 * the JSON line to out; build/replay's messages to log. 0, or -1 with the
 * reason in log. */
int ca_whatif_replay(const ca_trace *t, const char *conf, const ca_whatif_job *j, uint64_t limit, bool summary,
                     FILE *out, FILE *log, ca_replay_result *res);

typedef struct {
    int threads;           /* replays at once (>= 1) */
    const char *log_dir;   /* each replay's messages: LOG_DIR/replay-<setting>-<card>.log */
    int (*stop)(void);     /* nonzero: start no more replays; NULL: never */
    /* Called from the replay's thread as each replay ends (j->ok says how);
     * i counts from 0 in the jobs' order, n is their number. May be NULL. */
    void (*done)(void *ctx, const ca_whatif_job *j, size_t i, size_t n);
    void *ctx;
} ca_whatif_sweep_opts;

/* Replays every job (j->res, j->ok), each with its capacity as the limit
 * where j->limit says so or the trace had a limit of its own (a memory
 * fraction set on the run's own card says nothing about other cards).
 * Returns how many jobs failed or never ran (stopped), or -1 if /dev/null,
 * where the summaries go, cannot be opened. */
long ca_whatif_sweep(const ca_trace *t, ca_whatif_job *jobs, size_t n, const ca_whatif_sweep_opts *o);

/* Replays t under set with no card into out as a timeline (timeline.h:
 * one point per per_point operations), messages to log. 0 or -1. */
int ca_whatif_timeline(const ca_trace *t, const ca_conf_preset *set, uint64_t per_point, FILE *out, FILE *log);

/* What the replays of one setting say. */
typedef struct {
    const ca_conf_preset *set;
    const ca_whatif_job *none;   /* its replay with no card */
    const char *smallest;        /* the smallest card it fits, NULL: none */
    const char *largest_failing; /* the largest card it does not fit, NULL: none */
} ca_whatif_answer;

/* A replay fits its card when the model refused no request. */
bool ca_whatif_fits(const ca_whatif_job *j);

/* Cards compare as numbers where both are ("none" is not). */
bool ca_whatif_same_card(const char *a, const char *b);

/* One answer per preset, in their order, from jobs (ca_whatif_jobs' order,
 * replayed); *best: the setting that fits the smallest card, ties to the
 * lower peak reserved with no card, then to the earlier one. A new array
 * (free it); NULL when out of memory. */
ca_whatif_answer *ca_whatif_answers(const ca_whatif_job *jobs, size_t n_jobs, size_t *best);

#ifdef __cplusplus
}
#endif
#endif
