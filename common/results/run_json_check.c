/* run_json_check.c: a results.json checked whole before any reader takes a
 * figure from it (run_json_check.h): types, finite numbers, counts that fit
 * a long, one key each. */
#include "run_json_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_read.h"
#include "run_json.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const char *const text_col[] = {"claim", "experiment", "variant", "param", "metric", "unit", "status", "note"};
static const char *const figure_col[] = {"param_value", "median", "min", "max", "mean", "stdev"};

/* cJSON reads a number past a double's range (1e999) as infinity. */
static bool finite_number(const cJSON *v) { return cJSON_IsNumber(v) && isfinite(v->valuedouble); }

/* As mc_run_to_json writes a figure: a number, null, or "inf"/"-inf". */
static bool is_figure(const cJSON *v)
{
    return finite_number(v) || cJSON_IsNull(v) ||
           (cJSON_IsString(v) && (!strcmp(v->valuestring, "inf") || !strcmp(v->valuestring, "-inf")));
}

/* An integer in 0..max that a reader can cast without overflow. */
static bool is_count(const cJSON *v, double max)
{
    return finite_number(v) && v->valuedouble >= 0 && v->valuedouble <= max && v->valuedouble == floor(v->valuedouble);
}

static bool string_or_null(const cJSON *v) { return !v || cJSON_IsString(v) || cJSON_IsNull(v); }

/* "MAJOR.MINOR" (or "MAJOR", read as MAJOR.0) of the schema string. */
static bool parse_version(const char *ver, long long *major, long long *minor)
{
    const char *dot = strchr(ver, '.');
    char buf[32];
    size_t len = dot ? (size_t)(dot - ver) : strlen(ver);
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, ver, len);
    buf[len] = '\0';
    *minor = 0;
    return mc_csv_parse_count(buf, MC_COUNT_MAX, major) && (!dot || mc_csv_parse_count(dot + 1, MC_COUNT_MAX, minor));
}

static int check_schema(const cJSON *doc, const char *what, char *err, size_t errlen)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    const char *prefix = MC_RESULTS_SCHEMA_NAME "/";
    if (!cJSON_IsString(s) || strncmp(s->valuestring, prefix, strlen(prefix))) {
        set_err(err, errlen, "%s: not a memclaims results document (no \"schema\": \"%s...\")", what, prefix);
        return -1;
    }
    long long major, minor;
    if (!parse_version(s->valuestring + strlen(prefix), &major, &minor)) {
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
    return 0;
}

static int check_row(const cJSON *row, const char *where, char *err, size_t errlen)
{
    if (!cJSON_IsObject(row)) {
        set_err(err, errlen, "%s: not an object", where);
        return -1;
    }
    for (size_t i = 0; i < sizeof text_col / sizeof *text_col; i++)
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(row, text_col[i]))) {
            set_err(err, errlen, "%s: \"%s\" is not a string", where, text_col[i]);
            return -1;
        }
    for (size_t i = 0; i < sizeof figure_col / sizeof *figure_col; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, figure_col[i]);
        if (!is_figure(v)) {
            set_err(err, errlen, "%s: \"%s\" is not a figure (a finite number, null, \"inf\" or \"-inf\")", where,
                    figure_col[i]);
            return -1;
        }
    }
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(row, "n");
    if (!is_count(n, (double)MC_COUNT_MAX)) {
        char shown[40] = "not a number";
        if (cJSON_IsNumber(n)) snprintf(shown, sizeof shown, "%g", n->valuedouble);
        set_err(err, errlen, "%s: n (%s) is not a count (an integer 0 to 2^53 - 1)", where, shown);
        return -1;
    }
    return 0;
}

static int check_experiment(const cJSON *e, const cJSON *exps, int index, const char *what, char *err,
                            size_t errlen)
{
    char where[512];
    snprintf(where, sizeof where, "%s: experiment %d", what, index);
    if (!cJSON_IsObject(e)) {
        set_err(err, errlen, "%s: not an object", where);
        return -1;
    }
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(e, "key");
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "claim")) || !cJSON_IsString(key) ||
        !*key->valuestring || strchr(key->valuestring, '/')) {
        /* The key names <key>.csv (results_json --csv-dir): never empty, never a path. */
        set_err(err, errlen, "%s: no \"claim\", or no \"key\" usable as a file name", where);
        return -1;
    }
    snprintf(where, sizeof where, "%s: experiment %d '%.100s'", what, index, key->valuestring);
    const cJSON *other;
    cJSON_ArrayForEach(other, exps) {
        if (other == e) break;
        if (!strcmp(mc_json_str(other, "key"), key->valuestring)) {
            set_err(err, errlen, "%s: the key is there twice", where);
            return -1;
        }
    }
    const char *words[] = {"title", "seed_claim", "method", "rule", "state", "mode", "verdict", "note"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!string_or_null(cJSON_GetObjectItemCaseSensitive(e, words[i]))) {
            set_err(err, errlen, "%s: \"%s\" is not a string or null", where, words[i]);
            return -1;
        }
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "exit_code");
    if (code && !cJSON_IsNull(code) && !is_count(code, 255)) {
        set_err(err, errlen, "%s: \"exit_code\" is not 0 to 255 or null", where);
        return -1;
    }
    const cJSON *secs = cJSON_GetObjectItemCaseSensitive(e, "seconds");
    if (secs && !is_figure(secs)) {
        set_err(err, errlen, "%s: \"seconds\" is not a finite number or null", where);
        return -1;
    }
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(e, "rows");
    if (!cJSON_IsArray(rows) && !cJSON_IsNull(rows)) {
        set_err(err, errlen, "%s: \"rows\" is not an array or null", where);
        return -1;
    }
    const cJSON *row;
    int r = 0;
    cJSON_ArrayForEach(row, rows) {
        char at[600];
        snprintf(at, sizeof at, "%s, row %d", where, ++r);
        if (check_row(row, at, err, errlen) != 0) return -1;
    }
    return 0;
}

int mc_results_check(const cJSON *doc, const char *what, char *err, size_t errlen)
{
    if (!cJSON_IsObject(doc)) {
        set_err(err, errlen, "%s: not a memclaims results document (not a JSON object)", what);
        return -1;
    }
    if (check_schema(doc, what, err, errlen) != 0) return -1;
    const char *state = mc_json_str(doc, "state");
    if (strcmp(state, "complete") && strcmp(state, "interrupted")) {
        set_err(err, errlen, "%s: \"state\" is not \"complete\" or \"interrupted\"", what);
        return -1;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "meta");
    const cJSON *exps = cJSON_GetObjectItemCaseSensitive(doc, "experiments");
    if (!cJSON_IsObject(meta) || !cJSON_IsArray(exps)) {
        set_err(err, errlen, "%s: not a memclaims results document (no meta or experiments)", what);
        return -1;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, meta) {
        if (!cJSON_IsString(v)) {
            set_err(err, errlen, "%s: meta \"%.100s\" is not a string", what, v->string);
            return -1;
        }
    }
    if (cJSON_GetArraySize(exps) == 0) {
        set_err(err, errlen, "%s: no experiments: not a run", what);
        return -1;
    }
    int index = 0;
    cJSON_ArrayForEach(v, exps)
        if (check_experiment(v, exps, ++index, what, err, errlen) != 0) return -1;
    return 0;
}
