/* run_read.h: a run folder of `scripts/run-all` read into memory:
 * meta.csv (key,value), experiments.tsv (what was planned: claim, key, title,
 * seed claim, method, verdict rule; one tab-separated line each), runs.tsv
 * (what ran: key, state, exit code, seconds[, mode]) and every <key>.csv the
 * planned experiments left (csv.h's tidy rows), noting which left a <key>.png
 * chart. Runs written before runs.tsv had a mode column read as mode "". */
#ifndef MC_RUN_READ_H
#define MC_RUN_READ_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tidy CSV's columns (csv.h MC_CSV_HEADER), in order. */
enum {
    MC_COL_CLAIM, MC_COL_EXPERIMENT, MC_COL_VARIANT, MC_COL_PARAM, MC_COL_PARAM_VALUE,
    MC_COL_METRIC, MC_COL_UNIT, MC_COL_N, MC_COL_MEDIAN, MC_COL_MIN, MC_COL_MAX,
    MC_COL_MEAN, MC_COL_STDEV, MC_COL_STATUS, MC_COL_NOTE, MC_COLS
};
/* The metric of a PyTorch counterpart's summary row (tests/torch/beside/,
 * scripts/run-all --pytorch): variant "pytorch", no figures, the note
 * setting PyTorch's figure beside the suite's; status ok or failed. Its
 * figure rows have variant "pytorch:<the suite's variant>". */
#define MC_BESIDE_METRIC "pytorch_beside"
/* The param of the one summary row per claim whose note is the sentence
 * that sets PyTorch's key figure beside the suite's (and, where they
 * disagree, the regime): REPORT.md's and the README's "PyTorch beside". */
#define MC_BESIDE_VERDICT_PARAM "verdict"
/* The metric of the row scripts/run-all adds to an experiment's CSV when
 * another process used the GPU before or while it ran (lib/gpu_share.sh):
 * variant "run", no figures, the processes in the note; its time figures
 * may read slow. */
#define MC_GPU_SHARED_METRIC "gpu_shared"

/* The five figures of a row, in CSV order from MC_COL_MEDIAN. */
enum { MC_FIG_MEDIAN, MC_FIG_MIN, MC_FIG_MAX, MC_FIG_MEAN, MC_FIG_STDEV, MC_FIGS };

typedef struct {
    char *text[MC_COLS];    /* every field as written (owned) */
    bool has_param_value;
    double param_value;     /* base units */
    long n;                 /* samples behind the figures; 0 for words */
    bool has_fig[MC_FIGS];  /* empty in the CSV -> false */
    double fig[MC_FIGS];    /* median, min, max, mean, stdev, in `unit` */
} mc_result_row;

typedef struct {
    /* experiments.tsv */
    char *claim, *key, *title, *seed_claim, *method, *rule;
    /* runs.tsv; has_run false when the runner never got to it */
    bool has_run;
    char *state;            /* ran, waived, interrupted, failed, ... */
    int exit_code;
    bool has_seconds;
    double seconds;         /* wall time of the program, s */
    char *seconds_text;     /* the same as written ("" for an interrupted one), for REPORT.md */
    char *mode;             /* "gpu", "model-only", or "" (older runs) */
    /* <key>.csv; has_csv false when the experiment left none */
    bool has_csv;
    size_t nrows;
    mc_result_row *rows;
    /* <key>.png (scripts/plot's chart) exists as a file */
    bool has_chart;
} mc_run_experiment;

typedef struct {
    size_t nmeta;
    char **meta_key, **meta_value;
    size_t nexp;
    mc_run_experiment *exp;
    bool has_runs_tsv;
} mc_run_data;

/* Reads the run folder dir. Returns 0, or -1 with one line in err (no
 * newline) naming the file, and the line where there is one: "DIR: not a
 * memclaims run (no meta.csv)", "FILE: empty: ...", "FILE: cannot read: ...",
 * "FILE:LINE: reason". Refused: a missing, empty or header-only meta.csv; a
 * missing experiments.tsv or one that plans nothing or a key twice; any of
 * the run's files that is there but not a readable regular file (runs.tsv
 * and <key>.csv may be absent); an empty <key>.csv; a number out of range
 * (an exit code past 0..255, n past MC_COUNT_MAX, a figure past a double).
 * On error *run is left empty (nothing to free). */
int mc_run_read(const char *dir, mc_run_data *run, char *err, size_t errlen);
void mc_run_free(mc_run_data *run);

/* The meta.csv value of key, or NULL. */
const char *mc_run_meta(const mc_run_data *run, const char *key);

/* True when the run stopped half-way: an experiment was interrupted, or a
 * planned one has no runs.tsv line (the runner was killed), or runs.tsv is
 * missing. */
bool mc_run_interrupted(const mc_run_data *run);

/* The verdict row of an experiment (metric "verdict"), or NULL. */
const mc_result_row *mc_run_verdict(const mc_run_experiment *e);

#ifdef __cplusplus
}
#endif
#endif
