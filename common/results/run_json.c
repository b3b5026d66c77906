#define _POSIX_C_SOURCE 200809L
#include "run_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "csv.h"
#include "run_file.h"
#include "run_json_check.h"

static const char *const column_name[MC_COLS] = {
    "claim", "experiment", "variant", "param", "param_value", "metric", "unit", "n",
    "median", "min", "max", "mean", "stdev", "status", "note",
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* cJSON's constructors return NULL only when malloc fails. */
static cJSON *must(cJSON *item)
{
    CHECK(item != NULL, "out of host memory building JSON");
    return item;
}

static void add(cJSON *obj, const char *name, cJSON *item)
{
    CHECK(cJSON_AddItemToObject(obj, name, must(item)), "out of host memory building JSON");
}

static cJSON *str_or_null(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* A figure: a number, null when absent, "inf"/"-inf" where JSON has no number. */
static cJSON *figure(bool has, double v)
{
    if (!has || isnan(v)) return cJSON_CreateNull();
    if (isinf(v)) return cJSON_CreateString(v > 0 ? "inf" : "-inf");
    return cJSON_CreateNumber(v);
}

static cJSON *row_to_json(const mc_result_row *r)
{
    cJSON *o = must(cJSON_CreateObject());
    for (int c = 0; c < MC_COLS; c++) {
        if (c == MC_COL_PARAM_VALUE)
            add(o, column_name[c], figure(r->has_param_value, r->param_value));
        else if (c == MC_COL_N)
            add(o, column_name[c], cJSON_CreateNumber((double)r->n));
        else if (c >= MC_COL_MEDIAN && c <= MC_COL_STDEV)
            add(o, column_name[c], figure(r->has_fig[c - MC_COL_MEDIAN], r->fig[c - MC_COL_MEDIAN]));
        else
            add(o, column_name[c], cJSON_CreateString(r->text[c]));
    }
    return o;
}

static cJSON *experiment_to_json(const mc_run_experiment *e)
{
    cJSON *o = must(cJSON_CreateObject());
    add(o, "claim", cJSON_CreateString(e->claim));
    add(o, "key", cJSON_CreateString(e->key));
    add(o, "title", cJSON_CreateString(e->title));
    add(o, "seed_claim", cJSON_CreateString(e->seed_claim));
    add(o, "method", cJSON_CreateString(e->method));
    add(o, "rule", cJSON_CreateString(e->rule));
    add(o, "state", str_or_null(e->has_run ? e->state : NULL));
    add(o, "exit_code", e->has_run ? cJSON_CreateNumber(e->exit_code) : cJSON_CreateNull());
    add(o, "seconds", figure(e->has_run && e->has_seconds, e->seconds));
    add(o, "mode", str_or_null(e->has_run ? e->mode : NULL));
    const mc_result_row *v = mc_run_verdict(e);
    add(o, "verdict", str_or_null(v ? v->text[MC_COL_STATUS] : NULL));
    add(o, "note", str_or_null(v ? v->text[MC_COL_NOTE] : NULL));
    cJSON *rows = must(cJSON_CreateArray());
    for (size_t i = 0; i < e->nrows; i++)
        CHECK(cJSON_AddItemToArray(rows, row_to_json(&e->rows[i])), "out of host memory");
    add(o, "rows", e->has_csv ? rows : (cJSON_Delete(rows), cJSON_CreateNull()));
    return o;
}

cJSON *mc_run_to_json(const mc_run_data *run, const char *name, bool interrupted)
{
    cJSON *doc = must(cJSON_CreateObject());
    char schema[64];
    snprintf(schema, sizeof schema, "%s/%d.%d", MC_RESULTS_SCHEMA_NAME, MC_RESULTS_SCHEMA_MAJOR,
             MC_RESULTS_SCHEMA_MINOR);
    add(doc, "schema", cJSON_CreateString(schema));
    add(doc, "run", cJSON_CreateString(name));
    add(doc, "state", cJSON_CreateString(interrupted || mc_run_interrupted(run) ? "interrupted" : "complete"));
    cJSON *meta = must(cJSON_CreateObject());
    for (size_t i = 0; i < run->nmeta; i++) add(meta, run->meta_key[i], cJSON_CreateString(run->meta_value[i]));
    add(doc, "meta", meta);
    cJSON *exps = must(cJSON_CreateArray());
    for (size_t i = 0; i < run->nexp; i++)
        CHECK(cJSON_AddItemToArray(exps, experiment_to_json(&run->exp[i])), "out of host memory");
    add(doc, "experiments", exps);
    return doc;
}

/* -------------------------------------------------------------- reading */

/* The line of position pos in text, for a parse error. */
static long line_of(const char *text, const char *pos)
{
    long line = 1;
    for (const char *p = text; p < pos && *p; p++) line += *p == '\n';
    return line;
}

cJSON *mc_results_read(const char *path, char *err, size_t errlen)
{
    bool absent;
    FILE *fp = mc_run_file_open(path, &absent, err, errlen);
    if (!fp) {
        if (absent) set_err(err, errlen, "%s: no such file", path);
        return NULL;
    }
    size_t len;
    char *text = mc_run_file_slurp(fp, path, &len, err, errlen);
    fclose(fp);
    if (!text) return NULL;
    const char *end = NULL;
    /* Whole-document parse: text after the JSON value is an error too. */
    cJSON *doc = len ? cJSON_ParseWithOpts(text, &end, true) : NULL;
    if (!len) set_err(err, errlen, "%s: empty: not a memclaims results document", path);
    else if (!doc) set_err(err, errlen, "%s:%ld: not valid JSON", path, line_of(text, end ? end : text));
    free(text);
    if (doc && mc_results_check(doc, path, err, errlen) != 0) {
        cJSON_Delete(doc);
        doc = NULL;
    }
    return doc;
}

static const char *base_name(const char *dir)
{
    /* The last component of dir, trailing slashes ignored, into a static buffer. */
    static char name[256];
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/') start--;
    size_t n = len - start < sizeof name - 1 ? len - start : sizeof name - 1;
    memcpy(name, dir + start, n);
    name[n] = '\0';
    return name;
}

cJSON *mc_results_load(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "%s: no such run folder", dir);
        return NULL;
    }
    size_t len = strlen(dir) + sizeof "/results.json";
    char *path = mc_xmalloc(len);
    snprintf(path, len, "%s/results.json", dir);
    /* Anything under the name, readable or not, is the run's document: only
     * a run without one at all is read from its CSV files. */
    bool absent = lstat(path, &st) != 0;
    cJSON *doc = absent ? NULL : mc_results_read(path, err, errlen);
    free(path);
    if (!absent) return doc;
    mc_run_data run;
    if (mc_run_read(dir, &run, err, errlen) != 0) return NULL;
    doc = mc_run_to_json(&run, base_name(dir), false);
    mc_run_free(&run);
    return doc;
}

const char *mc_json_str(const cJSON *obj, const char *name)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(s) ? s->valuestring : "";
}

/* ------------------------------------------------------- back to CSV */

static void write_figure(FILE *fp, const cJSON *v)
{
    if (cJSON_IsNumber(v)) mc_csv_write_number(fp, v->valuedouble);
    else if (cJSON_IsString(v)) fputs(v->valuestring, fp);
}

void mc_results_write_csv(FILE *fp, const cJSON *experiment)
{
    mc_csv_write_header(fp);
    const cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(experiment, "rows")) {
        for (int c = 0; c < MC_COLS; c++) {
            if (c) fputc(',', fp);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, column_name[c]);
            if (c == MC_COL_PARAM_VALUE || c == MC_COL_N || (c >= MC_COL_MEDIAN && c <= MC_COL_STDEV))
                write_figure(fp, v);
            else
                mc_csv_write_field(fp, cJSON_IsString(v) ? v->valuestring : "");
        }
        fputc('\n', fp);
    }
}
