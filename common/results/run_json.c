#define _POSIX_C_SOURCE 200809L
#include "run_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "csv.h"

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

int mc_results_check_schema(const cJSON *doc, const char *what, char *err, size_t errlen)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    const char *prefix = MC_RESULTS_SCHEMA_NAME "/";
    if (!cJSON_IsString(s) || strncmp(s->valuestring, prefix, strlen(prefix))) {
        set_err(err, errlen, "%s: not a memclaims results document (no \"schema\": \"%s...\")", what, prefix);
        return -1;
    }
    /* "NAME/MAJOR.MINOR"; a bare "NAME/MAJOR" reads as MAJOR.0. */
    const char *ver = s->valuestring + strlen(prefix);
    char *end;
    long major = strtol(ver, &end, 10), minor = 0;
    bool ok = end != ver && (*ver >= '0' && *ver <= '9');
    if (ok && *end == '.') {
        const char *m = end + 1;
        minor = strtol(m, &end, 10);
        ok = end != m && (*m >= '0' && *m <= '9');
    }
    if (!ok || *end) {
        set_err(err, errlen, "%s: unreadable schema version '%s'", what, s->valuestring);
        return -1;
    }
    if (major != MC_RESULTS_SCHEMA_MAJOR || minor > MC_RESULTS_SCHEMA_MINOR) {
        bool newer = major > MC_RESULTS_SCHEMA_MAJOR || minor > MC_RESULTS_SCHEMA_MINOR;
        set_err(err, errlen, "%s: schema %s is %s than this memclaims reads (%s/%d.0 to %d.%d)%s", what,
                s->valuestring, newer ? "newer" : "older", MC_RESULTS_SCHEMA_NAME,
                MC_RESULTS_SCHEMA_MAJOR, MC_RESULTS_SCHEMA_MAJOR, MC_RESULTS_SCHEMA_MINOR,
                newer ? ": update memclaims" : ": regenerate it with build/results_json RUN_DIR");
        return -1;
    }
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "experiments")) ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "meta"))) {
        set_err(err, errlen, "%s: not a memclaims results document (no meta or experiments)", what);
        return -1;
    }
    return 0;
}

static char *read_file(const char *path, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = mc_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            cap *= 2;
            char *bigger = realloc(buf, cap);
            CHECK(bigger != NULL, "out of host memory reading %s", path);
            buf = bigger;
        }
    }
    int failed = ferror(fp);
    fclose(fp);
    if (failed) {
        free(buf);
        set_err(err, errlen, "%s: read error", path);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
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
    if (stat(path, &st) == 0) {
        char *text = read_file(path, err, errlen);
        cJSON *doc = text ? cJSON_Parse(text) : NULL;
        if (text && !doc) set_err(err, errlen, "%s: not valid JSON", path);
        if (doc && mc_results_check_schema(doc, path, err, errlen) != 0) {
            cJSON_Delete(doc);
            doc = NULL;
        }
        free(text);
        free(path);
        return doc;
    }
    free(path);
    mc_run_data run;
    if (mc_run_read(dir, &run, err, errlen) != 0) return NULL;
    cJSON *doc = mc_run_to_json(&run, base_name(dir), false);
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
