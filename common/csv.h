/* csv.h: the tidy CSV every experiment writes (DESIGN.md "Output").
 *
 *   claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,
 *   mean,stdev,status,note
 *
 * Raw base units (bytes, seconds, bytes/s, fractions). Fields are quoted per
 * RFC 4180 where they hold a comma, quote or newline. A file is written under
 * a temporary name in the same folder and renamed on close, so an interrupted
 * run never leaves a half file under the final name. */
#ifndef MC_CSV_H
#define MC_CSV_H

#include <stdio.h>

#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_CSV_HEADER \
    "claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note"

typedef struct {
    const char *claim;       /* "C03" */
    const char *experiment;  /* key, "pinned_vs_pageable" */
    const char *variant;     /* "pinned", "pageable", ... ("" for none) */
    const char *param;       /* name of the swept parameter ("" for none) */
    double param_value;      /* its value in base units (ignored when param is "") */
    const char *metric;      /* "h2d_bandwidth", "verdict", ... */
    const char *unit;        /* "B/s", "s", "bytes", "ratio", ... */
    mc_stats stats;
    const char *status;      /* ok, oom, failed, waived, or the verdict word */
    const char *note;        /* free text, may be "" */
} mc_row;

/* An atomic output file: written to "<dir>/.<name>.tmp.<pid>", renamed to
 * "<dir>/<name>" by mc_file_commit. With dir == NULL it is stdout, and commit
 * only flushes. */
typedef struct {
    FILE *fp;
    char *tmp_path;    /* NULL for stdout */
    char *final_path;
} mc_file;

/* Creates dir and its missing parents first (mkdir -p). Returns 0, or -1
 * with errno set (a path component is a file, not writable, ...). */
int mc_file_open(mc_file *f, const char *dir, const char *name);
/* Flushes, fsyncs, closes and renames. Returns 0 or -1 (the temp is removed). */
int mc_file_commit(mc_file *f);
/* Closes and removes the temporary file; the final name is never touched. */
void mc_file_abort(mc_file *f);
/* Removes the temporary file of the file being written, from a signal
 * handler (async-signal-safe: unlink only). */
void mc_file_abort_from_signal(void);

/* Writes s to fp as one CSV field, quoted where needed. */
void mc_csv_write_field(FILE *fp, const char *s);
/* Writes a number in base units: integral values (|v| < 2^53) without a
 * fraction, others with 10 significant digits; NaN as empty. */
void mc_csv_write_number(FILE *fp, double v);
void mc_csv_write_header(FILE *fp);
void mc_csv_write_row(FILE *fp, const mc_row *row);

#ifdef __cplusplus
}
#endif
#endif
