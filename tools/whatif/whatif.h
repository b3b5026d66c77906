/* whatif.h: the modules of build/whatif, the .c files of tools/whatif/
 * (linked into build/whatif only) beside tools/whatif.c (main and its
 * steps): messages and the temporary folder, options and the context,
 * the snapshots made traces, the largest batch, charts, the report. The
 * sweep and the batch fit are library code: common/trace/whatif_sweep.h,
 * common/trace/batch_fit.h. */
#ifndef WI_WHATIF_H
#define WI_WHATIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace/batch_fit.h"
#include "trace/whatif_sweep.h"

#define GiB 1073741824.0
#define MiB (1ULL << 20)

/* ------------------------------------------------ messages.c: messages, memory, files */

/* The temporary folder the run writes into (NULL: none yet, or published). */
extern char *wi_work;

/* Exits with code, the temporary folder removed (after a message of its own). */
void wi_leave(int code) __attribute__((noreturn));
/* One line "whatif: ..." on stderr, in one write (threads print too). */
void wi_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One line, the temporary folder removed, exit code (2: bad input, 1: a tool failed). */
void wi_die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
/* Exits 130, nothing written, once SIGINT or SIGTERM came (mc_spawn_stop_signal). */
void wi_stop_if_interrupted(void);

/* Memory that lives until exit (paths, names, the job table) is kept
 * reachable, so that an exit on bad input leaks nothing and the code needs
 * no free for it; wi_release_kept frees it at the end of a run. wi_keep
 * returns p; it exits (CHECK) for NULL, out of memory. Thread-safe. */
void *wi_keep(void *p);
void *wi_kept_calloc(size_t n, size_t size);
void wi_release_kept(void);
/* A kept string, printf-style. */
char *wi_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
/* The first bytes of a log (kept), newlines as spaces: for a one-line message. */
char *wi_log_head(const char *path);
/* The first (last: the last) nonempty line of a tool's log, for a one-line
 * message: at most 400 bytes, non-printable ones as '?' (kept; "" if none). */
char *wi_log_line(const char *path, bool last);
/* Each nonempty line of a tool's log as a note (its warnings). */
void wi_relay_log(const char *path);
/* A message of the parser or the replay about the trace at path trace,
 * "TRACE:LINE: reason", as "line LINE of its trace: reason" (the trace is
 * a temporary file the user never sees); any other message as it is. */
const char *wi_trace_reason(const char *msg, const char *trace);

/* rm -r. */
void wi_remove_tree(const char *path);
/* mkdir -p: 0, or -1 if path is not a folder after. The folders it made
 * are removed again (where empty) if the run leaves (wi_leave). */
int wi_mkdir_p(const char *path);
/* A file of the temporary folder, opened for writing; exits 1 if it cannot be. */
FILE *wi_out_open(const char *name);
/* Closes it; exits 1 if it was not all written. */
void wi_out_close(FILE *f, const char *name);

/* ------------------------------------------------ options.c: the command line, the context */

/* A snapshot of the program at a batch (SNAPSHOT@BATCH). */
typedef struct {
    const char *path;
    int64_t batch;
} wi_snap;

typedef struct {
    bool have_context;
    double context_given; /* --context, bytes */
    uint64_t context;     /* bytes */
    char *cards;          /* GiB, comma-separated, as given */
    double largest_card;  /* GiB */
    int device;           /* --device: the snapshot's device to replay */
    int jobs;
    const char *results;
    const char *snapshot;
    /* The largest batch: snapshots of one program at batches (two or more:
     * WHATIF.md gets a table of the largest batch per card and setting, the
     * sweep runs on the one at the largest batch); --max-batch --limit
     * answers one limit on stdout instead. */
    wi_snap snaps[CA_BATCH_MAX_POINTS];
    size_t n_snaps;
    bool max_batch;
    bool have_limit;
    uint64_t limit;        /* --limit, bytes */
} wi_options;

/* Parses argv into *o; --help prints and exits 0, bad input exits 2. */
void wi_parse_args(int argc, char **argv, wi_options *o);
/* The checkout: the first folder above this program's with scripts/snapshot2trace. */
char *wi_find_root(void);
/* build/replay beside this program (the same build). */
char *wi_replay_beside(void);
/* Sets o->context (--context, else C11's figure of the latest run, else the
 * committed H100 reference's); returns where it came from. Exits 2 if none. */
char *wi_find_context(wi_options *o, const char *root);

/* ------------------------------------------------ convert.c: snapshots to traces */

/* The snapshots paths[0..n) as traces, every scripts/snapshot2trace at once:
 * each in WORK/run-K.trace (trace_path[K]: its name is in the replays'
 * messages; the caller removes it) with its log (log[K]: what it said is
 * warnings), parsed into t[K]. A snapshot it or the parser refuses: one
 * line naming it, exit 2; a failure of the tool: exit 1. */
void wi_convert(const wi_options *o, const char *convert_path, const char *const *paths, size_t n, ca_trace *t,
                char **trace_path, char **log);

/* ------------------------------------------------ max_batch.c: the largest batch */

/* Fits the traces of o->snaps (t[k] of snapshot k); one line and exit 2 for
 * snapshots that do not pair or cannot be fitted; notes the requests that
 * follow no affine rule. */
void wi_fit_batches(const wi_options *o, const ca_trace *t, ca_batch_fit *f);
/* --max-batch --limit: the search, then on stdout the peaks at the answer
 * and the next batch and "max_batch N"; nothing written. Returns the exit code. */
int wi_max_batch_main(const wi_options *o, const char *convert_path);

typedef struct {
    int64_t max_batch;  /* 0: not even batch 1 fits */
    bool unbounded;     /* fits as far as the fit goes */
    int replays;
} wi_batch_cell;

/* The largest batch per preset (ca_conf_presets) and card room (bytes,
 * ascending), threads rows at once: cells[set * n_cards + card]. */
void wi_batch_table(const ca_batch_fit *f, const double *room, size_t n_cards, int threads, wi_batch_cell *cells);
/* WHATIF.md's largest-batch section and chart: the fit of o's snapshots,
 * the table per setting and card (rooms: bytes, in the cards' order), the
 * curve of peak reserved against batch with the cards' rooms as lines
 * (max_batch.png, where gnuplot draws it). Called before the report. */
typedef struct {
    const wi_options *o;
    ca_batch_fit fit;
    size_t n_cards;
    char **cards;       /* as given */
    double *room;       /* bytes */
    wi_batch_cell *cells;
    bool drawn;         /* max_batch.png */
    double seconds;
} wi_batch_info;
void wi_batch_section(wi_batch_info *bi, const char *root, const ca_trace *t, int threads);
void wi_write_batch_md(FILE *f, const wi_batch_info *bi);

/* ------------------------------------------------ charts.c */

#define WI_N_CHARTS 3

/* Draws the charts with ROOT/plots/whatif_<key>.gp into the temporary
 * folder, all at once; drawn[k] says which made a PNG. A chart gnuplot
 * cannot draw is noted and left out. */
void wi_draw_charts(const char *root, const ca_whatif_answer *ans, size_t n_ans, const ca_whatif_job *jobs,
                    size_t n_jobs, const char *best, bool drawn[WI_N_CHARTS]);
/* WHATIF.md's links to the charts drawn. */
void wi_chart_links(FILE *f, const bool drawn[WI_N_CHARTS]);
/* One chart: ROOT/plots/whatif_<key>.gp run in the temporary folder with
 * -e vars (fixed file names only), its PNG as <key>.png there; false (and
 * a note) where gnuplot is missing or fails. */
bool wi_draw_one(const char *root, const char *key, const char *vars);

/* ------------------------------------------------ report.c: WHATIF.md and the CSV files */

typedef struct {
    const wi_batch_info *batch; /* the largest batch's section, or NULL */
    const char *snapshot, *cards_top, *context_from;
    int device;
    uint64_t context, ops;
    size_t n_jobs;
    double seconds;
} wi_report_info;

/* whatif.csv (a row per replay) and failed.csv (their first refused requests). */
void wi_write_sweep_csvs(const ca_whatif_job *jobs, size_t n);
void wi_write_whatif_md(const wi_report_info *ri, const ca_whatif_answer *ans, size_t n_ans, size_t best,
                        const ca_whatif_job *jobs, size_t n_jobs, const bool drawn[WI_N_CHARTS]);
/* answer.csv: a row per setting. */
void wi_write_answer_csv(const ca_whatif_answer *ans, size_t n);

#endif
