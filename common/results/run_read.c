#define _POSIX_C_SOURCE 200809L
#include "run_read.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "csv.h"
#include "csv_read.h"
#include "run_file.h"

static char *xstrdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *p = mc_xmalloc(len);
    memcpy(p, s, len);
    return p;
}

static void *xgrow(void *p, size_t count, size_t size)
{
    void *q = realloc(p, count * size);
    CHECK(q != NULL, "out of host memory (%zu items of %zu bytes)", count, size);
    return q;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char *path_of(const char *dir, const char *name, const char *suffix)
{
    size_t len = strlen(dir) + strlen(name) + strlen(suffix) + 2;
    char *p = mc_xmalloc(len);
    snprintf(p, len, "%s/%s%s", dir, name, suffix);
    return p;
}

/* Splits a tab-separated line in place into at most max fields. */
static int tsv_split(char *line, char **f, int max)
{
    int n = 0;
    f[n++] = line;
    for (char *p = line; *p; p++) {
        if (*p != '\t') continue;
        if (n == max) return -1;
        *p = '\0';
        f[n++] = p + 1;
    }
    return n;
}

/* DIR/NAME opened for reading into *fp, its path in *path (owned). Returns
 * 1, 0 when nothing is there (*fp NULL), or -1 with err set (what is there
 * cannot be read as a file). */
static int open_in(const char *dir, const char *name, FILE **fp, char **path, char *err, size_t errlen)
{
    bool absent;
    *path = path_of(dir, name, "");
    *fp = mc_run_file_open(*path, &absent, err, errlen);
    return *fp ? 1 : absent ? 0 : -1;
}

/* ------------------------------------------------------------- meta.csv */

static int read_meta(const char *dir, mc_run_data *run, char *err, size_t errlen)
{
    FILE *fp;
    char *path;
    int got = open_in(dir, "meta.csv", &fp, &path, err, errlen);
    if (got <= 0) {
        if (got == 0) set_err(err, errlen, "%s: not a memclaims run (no meta.csv)", dir);
        free(path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    while ((got = mc_run_file_line(fp, &line, &cap, path, ++lineno, err, errlen)) > 0) {
        char *f[2];
        int n = mc_csv_split(line, f, 2);
        if (lineno == 1) {
            if (n != 2 || strcmp(f[0], "key") || strcmp(f[1], "value")) {
                set_err(err, errlen, "%s:1: not a memclaims meta.csv (header is not key,value)", path);
                got = -1;
                break;
            }
            continue;
        }
        if (n != 2) {
            set_err(err, errlen, "%s:%ld: expected key,value", path, lineno);
            got = -1;
            break;
        }
        run->meta_key = xgrow(run->meta_key, run->nmeta + 1, sizeof *run->meta_key);
        run->meta_value = xgrow(run->meta_value, run->nmeta + 1, sizeof *run->meta_value);
        run->meta_key[run->nmeta] = xstrdup(f[0]);
        run->meta_value[run->nmeta] = xstrdup(f[1]);
        run->nmeta++;
    }
    /* Provenance is what makes a folder a run: a meta.csv without it is not one. */
    if (got == 0 && lineno == 1) {
        set_err(err, errlen, "%s: empty: not a memclaims meta.csv (no key,value header)", path);
        got = -1;
    } else if (got == 0 && run->nmeta == 0) {
        set_err(err, errlen, "%s: no key,value line after the header: not a run's provenance", path);
        got = -1;
    }
    free(line);
    fclose(fp);
    free(path);
    return got < 0 ? -1 : 0;
}

/* ------------------------------------------------------ experiments.tsv */

static mc_run_experiment *find_exp(mc_run_data *run, const char *key)
{
    for (size_t i = 0; i < run->nexp; i++)
        if (!strcmp(run->exp[i].key, key)) return &run->exp[i];
    return NULL;
}

static int read_experiments(const char *dir, mc_run_data *run, char *err, size_t errlen)
{
    FILE *fp;
    char *path;
    int got = open_in(dir, "experiments.tsv", &fp, &path, err, errlen);
    if (got <= 0) {
        if (got == 0) set_err(err, errlen, "%s: not a memclaims run (no experiments.tsv)", dir);
        free(path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    while ((got = mc_run_file_line(fp, &line, &cap, path, ++lineno, err, errlen)) > 0) {
        if (!*line) continue;
        char *f[6];
        if (tsv_split(line, f, 6) != 6) {
            set_err(err, errlen, "%s:%ld: expected 6 tab-separated fields", path, lineno);
            got = -1;
            break;
        }
        if (!*f[1] || strchr(f[1], '/')) {
            set_err(err, errlen, "%s:%ld: bad experiment key '%s'", path, lineno, f[1]);
            got = -1;
            break;
        }
        /* runs.tsv and <key>.csv are found by key: a second line would get the first's. */
        if (find_exp(run, f[1])) {
            set_err(err, errlen, "%s:%ld: experiment '%s' planned twice", path, lineno, f[1]);
            got = -1;
            break;
        }
        run->exp = xgrow(run->exp, run->nexp + 1, sizeof *run->exp);
        mc_run_experiment *e = &run->exp[run->nexp++];
        memset(e, 0, sizeof *e);
        e->claim = xstrdup(f[0]);
        e->key = xstrdup(f[1]);
        e->title = xstrdup(f[2]);
        e->seed_claim = xstrdup(f[3]);
        e->method = xstrdup(f[4]);
        e->rule = xstrdup(f[5]);
    }
    /* A run plans at least one experiment; with none there is nothing to read or compare. */
    if (got == 0 && run->nexp == 0) {
        set_err(err, errlen, "%s: empty: no experiment planned", path);
        got = -1;
    }
    free(line);
    fclose(fp);
    free(path);
    return got < 0 ? -1 : 0;
}

/* ------------------------------------------------------------- runs.tsv */

static int read_runs(const char *dir, mc_run_data *run, char *err, size_t errlen)
{
    FILE *fp;
    char *path;
    int got = open_in(dir, "runs.tsv", &fp, &path, err, errlen);
    if (got <= 0) {
        free(path);
        return got; /* none: the runner never got to run anything, mc_run_interrupted says so */
    }
    run->has_runs_tsv = true;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    while ((got = mc_run_file_line(fp, &line, &cap, path, ++lineno, err, errlen)) > 0) {
        if (!*line) continue;
        char *f[5];
        int n = tsv_split(line, f, 5);
        if (n < 4) {
            set_err(err, errlen, "%s:%ld: expected key, state, exit code, seconds[, mode]", path, lineno);
            got = -1;
            break;
        }
        long long code;
        if (!mc_csv_parse_count(f[2], 255, &code)) {
            set_err(err, errlen, "%s:%ld: exit code '%s' is not 0 to 255", path, lineno, f[2]);
            got = -1;
            break;
        }
        /* Empty for an experiment the runner stopped; else the wall time it measured. */
        double seconds = 0;
        bool has_seconds = *f[3] != '\0';
        if (has_seconds && (!mc_csv_parse_number(f[3], &seconds) || !isfinite(seconds))) {
            set_err(err, errlen, "%s:%ld: seconds '%s' is not a finite number", path, lineno, f[3]);
            got = -1;
            break;
        }
        mc_run_experiment *e = find_exp(run, f[0]);
        if (!e) continue; /* not planned: nothing to attach it to */
        free(e->state);
        free(e->mode);
        free(e->seconds_text);
        e->has_run = true;
        e->state = xstrdup(f[1]);
        e->exit_code = (int)code;
        e->has_seconds = has_seconds;
        e->seconds = seconds;
        e->seconds_text = xstrdup(f[3]);
        e->mode = xstrdup(n == 5 ? f[4] : "");
    }
    free(line);
    fclose(fp);
    free(path);
    return got < 0 ? -1 : 0;
}

/* ------------------------------------------------------------ <key>.csv */

static int parse_row(char **f, mc_result_row *r, const char *path, long lineno, char *err,
                     size_t errlen)
{
    for (int i = 0; i < MC_COLS; i++) r->text[i] = xstrdup(f[i]);
    r->has_param_value = mc_csv_parse_number(f[MC_COL_PARAM_VALUE], &r->param_value);
    if (!r->has_param_value && *f[MC_COL_PARAM_VALUE]) {
        set_err(err, errlen, "%s:%ld: param_value '%s' is not a number (or out of range)", path, lineno,
                f[MC_COL_PARAM_VALUE]);
        return -1;
    }
    long long n;
    if (!mc_csv_parse_count(f[MC_COL_N], MC_COUNT_MAX, &n)) {
        set_err(err, errlen, "%s:%ld: n '%s' is not a count (0 to 2^53 - 1)", path, lineno, f[MC_COL_N]);
        return -1;
    }
    r->n = (long)n;
    for (int i = 0; i < MC_FIGS; i++) {
        const char *s = f[MC_COL_MEDIAN + i];
        r->has_fig[i] = mc_csv_parse_number(s, &r->fig[i]);
        if (!r->has_fig[i] && *s) {
            set_err(err, errlen, "%s:%ld: figure '%s' is not a number (or out of range)", path, lineno, s);
            return -1;
        }
    }
    return 0;
}

static int read_csv(const char *dir, mc_run_experiment *e, char *err, size_t errlen)
{
    struct stat st;
    char *path = path_of(dir, e->key, ".png");
    e->has_chart = stat(path, &st) == 0 && S_ISREG(st.st_mode);
    free(path);
    path = path_of(dir, e->key, ".csv");
    bool absent;
    FILE *fp = mc_run_file_open(path, &absent, err, errlen);
    if (!fp) {
        free(path);
        return absent ? 0 : -1; /* absent: the experiment left no CSV */
    }
    e->has_csv = true;
    char *line = NULL;
    size_t cap = 0, rows_cap = 0;
    long lineno = 0;
    int got;
    while ((got = mc_run_file_line(fp, &line, &cap, path, ++lineno, err, errlen)) > 0) {
        if (lineno == 1) {
            if (strcmp(line, MC_CSV_HEADER)) {
                set_err(err, errlen, "%s:1: not a memclaims CSV (unexpected header)", path);
                got = -1;
                break;
            }
            continue;
        }
        char *f[MC_COLS];
        if (mc_csv_split(line, f, MC_COLS) != MC_COLS) {
            set_err(err, errlen, "%s:%ld: expected %d CSV fields", path, lineno, MC_COLS);
            got = -1;
            break;
        }
        if (e->nrows == rows_cap) {
            rows_cap = rows_cap ? 2 * rows_cap : 64;
            e->rows = xgrow(e->rows, rows_cap, sizeof *e->rows);
        }
        mc_result_row *r = &e->rows[e->nrows++];
        memset(r, 0, sizeof *r);
        if (parse_row(f, r, path, lineno, err, errlen) != 0) {
            got = -1;
            break;
        }
    }
    /* An experiment's CSV is written whole under a temporary name and renamed:
     * one without even the header was not written by the suite. */
    if (got == 0 && lineno == 1) {
        set_err(err, errlen, "%s: empty: not a memclaims CSV (no header)", path);
        got = -1;
    }
    free(line);
    fclose(fp);
    free(path);
    return got < 0 ? -1 : 0;
}

/* ----------------------------------------------------------------- API */

int mc_run_read(const char *dir, mc_run_data *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "%s: no such run folder", dir);
        return -1;
    }
    int rc = read_meta(dir, run, err, errlen);
    if (rc == 0) rc = read_experiments(dir, run, err, errlen);
    if (rc == 0) rc = read_runs(dir, run, err, errlen);
    for (size_t i = 0; rc == 0 && i < run->nexp; i++) rc = read_csv(dir, &run->exp[i], err, errlen);
    if (rc != 0) mc_run_free(run);
    return rc;
}

void mc_run_free(mc_run_data *run)
{
    for (size_t i = 0; i < run->nmeta; i++) {
        free(run->meta_key[i]);
        free(run->meta_value[i]);
    }
    free(run->meta_key);
    free(run->meta_value);
    for (size_t i = 0; i < run->nexp; i++) {
        mc_run_experiment *e = &run->exp[i];
        free(e->claim);
        free(e->key);
        free(e->title);
        free(e->seed_claim);
        free(e->method);
        free(e->rule);
        free(e->state);
        free(e->mode);
        free(e->seconds_text);
        for (size_t j = 0; j < e->nrows; j++)
            for (int c = 0; c < MC_COLS; c++) free(e->rows[j].text[c]);
        free(e->rows);
    }
    free(run->exp);
    memset(run, 0, sizeof *run);
}

const char *mc_run_meta(const mc_run_data *run, const char *key)
{
    for (size_t i = 0; i < run->nmeta; i++)
        if (!strcmp(run->meta_key[i], key)) return run->meta_value[i];
    return NULL;
}

bool mc_run_interrupted(const mc_run_data *run)
{
    if (!run->has_runs_tsv) return true;
    for (size_t i = 0; i < run->nexp; i++) {
        const mc_run_experiment *e = &run->exp[i];
        if (!e->has_run || !strcmp(e->state, "interrupted")) return true;
    }
    return false;
}

const mc_result_row *mc_run_verdict(const mc_run_experiment *e)
{
    for (size_t i = 0; i < e->nrows; i++)
        if (!strcmp(e->rows[i].text[MC_COL_METRIC], "verdict")) return &e->rows[i];
    return NULL;
}
