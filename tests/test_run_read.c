/* Tests of common/results/csv_read.c, run_read.c, run_file.c and the
 * results.json reader (run_json.c, run_json_check.c): splitting the suite's
 * CSV lines, parsing its numbers and counts, reading run folders (the
 * crafted fixture runs in tests/fixtures/results/), telling an interrupted
 * run, and one clear error naming the file (and line) for what is not a run,
 * is unreadable, empty, malformed or out of range. Run from the repo root
 * (scripts/test does). */
#define _XOPEN_SOURCE 700 /* nftw, to remove the scratch runs */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results/csv_read.h"
#include "results/run_json.h"
#include "results/run_read.h"
#include "test_util.h"

#define FIXTURES "tests/fixtures/results"

static void split_plain_and_empty_fields(void **state)
{
    (void)state;
    char line[] = "C01,key,,x,\r";
    char *f[8];
    assert_int_equal(mc_csv_split(line, f, 8), 5);
    assert_string_equal(f[0], "C01");
    assert_string_equal(f[1], "key");
    assert_string_equal(f[2], "");
    assert_string_equal(f[3], "x");
    assert_string_equal(f[4], "");
}

static void split_quoted_fields(void **state)
{
    (void)state;
    char line[] = "\"events, gated\",\"say \"\"hi\"\"\",\"\",end";
    char *f[8];
    assert_int_equal(mc_csv_split(line, f, 8), 4);
    assert_string_equal(f[0], "events, gated");
    assert_string_equal(f[1], "say \"hi\"");
    assert_string_equal(f[2], "");
    assert_string_equal(f[3], "end");
}

static void split_rejects_malformed_lines(void **state)
{
    (void)state;
    char *f[3];
    char unterminated[] = "a,\"b,c";
    assert_int_equal(mc_csv_split(unterminated, f, 3), -1);
    char after_quote[] = "a,\"b\"x,c";
    assert_int_equal(mc_csv_split(after_quote, f, 3), -1);
    char stray_quote[] = "a,b\"c";
    assert_int_equal(mc_csv_split(stray_quote, f, 3), -1);
    char too_many[] = "a,b,c,d";
    assert_int_equal(mc_csv_split(too_many, f, 3), -1);
}

static void numbers_as_the_writer_writes_them(void **state)
{
    (void)state;
    double v = 0;
    assert_true(mc_csv_parse_number("4096", &v));
    assert_near(v, 4096, 0);
    assert_true(mc_csv_parse_number("1.105533069e+10", &v));
    assert_near(v, 11055330690.0, 0);
    assert_true(mc_csv_parse_number("-0.25", &v));
    assert_near(v, -0.25, 0);
    assert_true(mc_csv_parse_number("inf", &v));
    assert_true(isinf(v) && v > 0);
    assert_true(mc_csv_parse_number("-inf", &v));
    assert_true(isinf(v) && v < 0);
    assert_false(mc_csv_parse_number("", &v));
    assert_false(mc_csv_parse_number("nan", &v));
    assert_false(mc_csv_parse_number("0x10", &v));
    assert_false(mc_csv_parse_number(" 1", &v));
    assert_false(mc_csv_parse_number("12abc", &v));
    assert_false(mc_csv_parse_number("holds", &v));
}

static void counts_as_the_writer_writes_them(void **state)
{
    (void)state;
    long long v = -1;
    assert_true(mc_csv_parse_count("0", 255, &v));
    assert_int_equal(v, 0);
    assert_true(mc_csv_parse_count("255", 255, &v));
    assert_int_equal(v, 255);
    assert_true(mc_csv_parse_count("9007199254740991", MC_COUNT_MAX, &v));
    assert_true(v == MC_COUNT_MAX);
    assert_true(mc_csv_parse_count("3", 5, &v)); /* a max below 10 */
    assert_false(mc_csv_parse_count("7", 5, &v));
    assert_false(mc_csv_parse_count("256", 255, &v));
    assert_false(mc_csv_parse_count("9007199254740992", MC_COUNT_MAX, &v));
    /* strtol would clamp this to LONG_MAX and say nothing */
    assert_false(mc_csv_parse_count("99999999999999999999", MC_COUNT_MAX, &v));
    const char *bad[] = {"", "-1", "+1", " 1", "1 ", "1.0", "1e3", "0x10", "inf"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (mc_csv_parse_count(bad[i], MC_COUNT_MAX, &v)) {
            print_error("'%s' read as a count\n", bad[i]);
            fail();
        }
}

static void reads_a_run_folder(void **state)
{
    (void)state;
    mc_run_data run;
    char err[512] = "";
    assert_int_equal(mc_run_read(FIXTURES "/labels-a", &run, err, sizeof err), 0);
    assert_string_equal(mc_run_meta(&run, "gpu_name"), "NVIDIA H100 80GB HBM3");
    assert_null(mc_run_meta(&run, "no_such_key"));
    assert_int_equal(run.nexp, 2);
    const mc_run_experiment *e = &run.exp[0];
    assert_string_equal(e->claim, "C90");
    assert_string_equal(e->key, "label_cases");
    assert_string_equal(e->rule, "rule C90");
    assert_true(e->has_run);
    assert_string_equal(e->state, "ran");
    assert_string_equal(e->mode, "gpu");
    assert_near(e->seconds, 1.0, 0);
    assert_string_equal(e->seconds_text, "1.0");
    assert_false(e->has_chart);
    assert_true(e->has_csv);
    assert_int_equal(e->nrows, 10);
    /* same_exact: param 4096, n 1, figures exact */
    const mc_result_row *r = &e->rows[0];
    assert_string_equal(r->text[MC_COL_VARIANT], "same_exact");
    assert_true(r->has_param_value);
    assert_near(r->param_value, 4096, 0);
    assert_int_equal(r->n, 1);
    assert_near(r->fig[MC_FIG_MEDIAN], 2097152, 0);
    /* a quoted note with a comma survives */
    assert_string_equal(e->rows[4].text[MC_COL_NOTE], "moved 20%, ranges overlap");
    assert_near(e->rows[4].fig[MC_FIG_MAX], 130, 0);
    /* words: no figures */
    assert_false(e->rows[8].has_fig[MC_FIG_MEDIAN]);
    assert_false(e->rows[8].has_param_value);
    const mc_result_row *v = mc_run_verdict(e);
    assert_non_null(v);
    assert_string_equal(v->text[MC_COL_STATUS], "holds");
    assert_false(mc_run_interrupted(&run));
    mc_run_free(&run);
}

static void tells_an_interrupted_run(void **state)
{
    (void)state;
    mc_run_data run;
    char err[512] = "";
    assert_int_equal(mc_run_read(FIXTURES "/interrupted", &run, err, sizeof err), 0);
    assert_true(mc_run_interrupted(&run));
    assert_int_equal(run.nexp, 3);
    assert_false(run.exp[2].has_csv);       /* randn_bytes left no CSV */
    assert_string_equal(run.exp[2].state, "interrupted");
    assert_false(run.exp[2].has_seconds);
    assert_string_equal(run.exp[2].seconds_text, ""); /* REPORT.md gives it as written */
    mc_run_free(&run);

    assert_int_equal(mc_run_read(FIXTURES "/model-only", &run, err, sizeof err), 0);
    assert_false(mc_run_interrupted(&run));
    assert_string_equal(run.exp[0].mode, "model-only");
    assert_string_equal(run.exp[1].state, "waived");
    mc_run_free(&run);
}

static void not_a_run_is_one_line(void **state)
{
    (void)state;
    mc_run_data run;
    char err[512] = "";
    assert_int_equal(mc_run_read("tests/fixtures", &run, err, sizeof err), -1);
    assert_string_equal(err, "tests/fixtures: not a memclaims run (no meta.csv)");
    assert_int_equal(mc_run_read("tests/fixtures/no-such-folder", &run, err, sizeof err), -1);
    assert_non_null(strstr(err, "no such run folder"));
    assert_null(strchr(err, '\n'));
}

/* A run folder in a temporary directory with one CSV of the given body. */
static char *make_run(const char *csv_body)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/test_run_read.XXXXXX");
    assert_non_null(mkdtemp(dir));
    char path[128];
    FILE *fp;
    snprintf(path, sizeof path, "%s/meta.csv", dir);
    assert_non_null(fp = fopen(path, "w"));
    fputs("key,value\ngpu_status,ok\n", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/experiments.tsv", dir);
    assert_non_null(fp = fopen(path, "w"));
    fputs("C01\tk\ttitle\tseed\tmethod\trule\n", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/k.csv", dir);
    assert_non_null(fp = fopen(path, "w"));
    fputs(csv_body, fp);
    fclose(fp);
    return dir;
}

static void remove_run(const char *dir)
{
    const char *names[] = {"meta.csv", "experiments.tsv", "k.csv", "k.png"};
    char path[128];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* REPORT.md links <key>.png where scripts/plot left one. */
static void notes_a_chart(void **state)
{
    (void)state;
    char *dir = make_run("claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note\n"
                         "C01,k,,,,verdict,,0,,,,,,holds,\n");
    mc_run_data run;
    char err[512] = "";
    assert_int_equal(mc_run_read(dir, &run, err, sizeof err), 0);
    assert_false(run.exp[0].has_chart);
    assert_false(run.exp[0].has_run); /* no runs.tsv */
    mc_run_free(&run);
    char path[128];
    snprintf(path, sizeof path, "%s/k.png", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(mc_run_read(dir, &run, err, sizeof err), 0);
    assert_true(run.exp[0].has_chart);
    mc_run_free(&run);
    remove_run(dir);
}

static void malformed_csv_names_file_and_line(void **state)
{
    (void)state;
    static const struct {
        const char *body, *says;
    } cases[] = {
        {"claim,experiment\n", ":1: not a memclaims CSV"},
        {"claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note\n"
         "C01,k,,,,m,s,1,1,1,1,1,0,ok,\nC01,k,,,,m,s,1,1,1,1\n",
         "k.csv:3: expected 15 CSV fields"},
        {"claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note\n"
         "C01,k,,,,m,s,x,1,1,1,1,0,ok,\n",
         "k.csv:2: n 'x' is not a count"},
        {"claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note\n"
         "C01,k,,,,m,s,1,fast,1,1,1,0,ok,\n",
         "k.csv:2: figure 'fast' is not a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *dir = make_run(cases[i].body);
        mc_run_data run;
        char err[512] = "";
        assert_int_equal(mc_run_read(dir, &run, err, sizeof err), -1);
        if (!strstr(err, cases[i].says)) {
            print_error("case %zu: got '%s', want '%s'\n", i, err, cases[i].says);
            fail();
        }
        assert_int_equal(run.nexp, 0); /* nothing left to free */
        remove_run(dir);
    }
}

/* ------------------------------------------------- hostile run folders */

#define HEADER "claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note\n"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void put(const char *dir, const char *name, const char *body, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(fwrite(body, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

#define PUT(dir, name, body) put(dir, name, body, strlen(body))

/* A good run of one experiment k with one figure; each case then spoils one file. */
static char *good_run(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/test_run_read.XXXXXX");
    assert_non_null(mkdtemp(dir));
    PUT(dir, "meta.csv", "key,value\ngpu_status,ok\n");
    PUT(dir, "experiments.tsv", "C01\tk\ttitle\tseed\tmethod\trule\n");
    PUT(dir, "runs.tsv", "k\tran\t0\t0.5\tgpu\n");
    PUT(dir, "k.csv", HEADER "C01,k,,,,m,s,5,1,1,1,1,0,ok,\nC01,k,,,,verdict,,0,,,,,,holds,\n");
    return dir;
}

/* Replaces dir/name by a directory, a symbolic link loop, a dangling link or a FIFO. */
static void replace(const char *dir, const char *name, char kind)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    if (kind == 'd') assert_int_equal(mkdir(path, 0755), 0);
    if (kind == 'l') assert_int_equal(symlink(path, path), 0);
    if (kind == 'n') assert_int_equal(symlink("no-such-file", path), 0);
    if (kind == 'f') assert_int_equal(mkfifo(path, 0644), 0);
}

static void expect_refused(const char *dir, const char *says, const char *what)
{
    mc_run_data run;
    char err[512] = "";
    int rc = mc_run_read(dir, &run, err, sizeof err);
    if (rc != -1 || !strstr(err, says) || strchr(err, '\n') || strncmp(err, dir, strlen(dir))) {
        print_error("%s: rc %d, got '%s', want '%s' on one line naming the file\n", what, rc, err, says);
        fail();
    }
    assert_int_equal(run.nexp, 0);
    assert_int_equal(run.nmeta, 0);
}

static void refuses_what_is_not_a_run(void **state)
{
    (void)state;
    static const struct {
        const char *what, *file, *body; /* body NULL: file replaced as kind says */
        char kind;
        const char *says;
    } cases[] = {
        {"empty meta.csv", "meta.csv", "", 0, "/meta.csv: empty: not a memclaims meta.csv"},
        {"meta.csv with only its header", "meta.csv", "key,value\n", 0, "/meta.csv: no key,value line"},
        {"meta.csv a directory", "meta.csv", NULL, 'd', "/meta.csv: cannot read: a directory"},
        {"meta.csv a link loop", "meta.csv", NULL, 'l', "/meta.csv: cannot read: Too many levels"},
        {"meta.csv a dangling link", "meta.csv", NULL, 'n', "/meta.csv: cannot read: a symbolic link to nothing"},
        {"meta.csv a FIFO", "meta.csv", NULL, 'f', "/meta.csv: cannot read: a FIFO"},
        {"empty experiments.tsv", "experiments.tsv", "", 0, "/experiments.tsv: empty: no experiment planned"},
        {"blank experiments.tsv", "experiments.tsv", "\n\n", 0, "/experiments.tsv: empty: no experiment planned"},
        {"experiments.tsv a directory", "experiments.tsv", NULL, 'd', "/experiments.tsv: cannot read: a directory"},
        {"a key planned twice", "experiments.tsv", "C01\tk\tt\ts\tm\tr\nC01\tk\tt\ts\tm\tr\n", 0,
         "/experiments.tsv:2: experiment 'k' planned twice"},
        {"runs.tsv a directory", "runs.tsv", NULL, 'd', "/runs.tsv: cannot read: a directory"},
        {"an exit code past 255", "runs.tsv", "k\tfailed\t256\t0.5\tgpu\n", 0, "/runs.tsv:1: exit code '256' is not 0 to 255"},
        {"an exit code past LONG_MAX", "runs.tsv", "k\tran\t0\t0.5\tgpu\nk\tfailed\t99999999999999999999\t1\tgpu\n", 0,
         "/runs.tsv:2: exit code '99999999999999999999'"},
        {"a negative exit code", "runs.tsv", "k\tfailed\t-1\t0.5\tgpu\n", 0, "/runs.tsv:1: exit code '-1'"},
        {"seconds past a double", "runs.tsv", "k\tran\t0\t1e999\tgpu\n", 0, "/runs.tsv:1: seconds '1e999'"},
        {"seconds not a number", "runs.tsv", "k\tran\t0\tsoon\tgpu\n", 0, "/runs.tsv:1: seconds 'soon'"},
        {"empty k.csv", "k.csv", "", 0, "/k.csv: empty: not a memclaims CSV"},
        {"k.csv a directory", "k.csv", NULL, 'd', "/k.csv: cannot read: a directory"},
        {"k.csv a link loop", "k.csv", NULL, 'l', "/k.csv: cannot read: Too many levels"},
        {"k.csv a dangling link", "k.csv", NULL, 'n', "/k.csv: cannot read: a symbolic link to nothing"},
        {"k.csv a FIFO", "k.csv", NULL, 'f', "/k.csv: cannot read: a FIFO"},
        {"n past LONG_MAX", "k.csv", HEADER "C01,k,,,,m,s,99999999999999999999,1,1,1,1,0,ok,\n", 0,
         "/k.csv:2: n '99999999999999999999' is not a count"},
        {"n of 2^53", "k.csv", HEADER "C01,k,,,,m,s,9007199254740992,1,1,1,1,0,ok,\n", 0, "/k.csv:2: n '9007199254740992'"},
        {"a negative n", "k.csv", HEADER "C01,k,,,,m,s,-5,1,1,1,1,0,ok,\n", 0, "/k.csv:2: n '-5'"},
        {"a figure past a double", "k.csv", HEADER "C01,k,,,,m,s,5,1e999,1,1,1,0,ok,\n", 0, "/k.csv:2: figure '1e999'"},
        {"a param_value past a double", "k.csv", HEADER "C01,k,,bytes,-1e400,m,s,5,1,1,1,1,0,ok,\n", 0,
         "/k.csv:2: param_value '-1e400'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *dir = good_run();
        if (cases[i].body) PUT(dir, cases[i].file, cases[i].body);
        else replace(dir, cases[i].file, cases[i].kind);
        expect_refused(dir, cases[i].says, cases[i].what);
        rm_tree(dir);
    }
    /* A NUL byte would cut the line short where strlen stops. */
    static const char nul[] = HEADER "C01,k,,,,m,s,5,1,1,1,1,0,ok,\0tail\n";
    char *dir = good_run();
    put(dir, "k.csv", nul, sizeof nul - 1);
    expect_refused(dir, "/k.csv:2: a NUL byte", "a NUL byte");
    rm_tree(dir);
}

static void takes_what_a_run_may_lack(void **state)
{
    (void)state;
    char *dir = good_run();
    mc_run_data run;
    char err[512] = "";
    assert_int_equal(mc_run_read(dir, &run, err, sizeof err), 0);
    assert_int_equal(run.exp[0].rows[0].n, 5);
    assert_int_equal(run.exp[0].exit_code, 0);
    mc_run_free(&run);
    /* No k.csv, no runs.tsv: an experiment that left nothing, a runner stopped early. */
    char path[256];
    snprintf(path, sizeof path, "%s/k.csv", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/runs.tsv", dir);
    unlink(path);
    assert_int_equal(mc_run_read(dir, &run, err, sizeof err), 0);
    assert_false(run.exp[0].has_csv);
    assert_true(mc_run_interrupted(&run));
    mc_run_free(&run);
    /* The largest count and exit code, an interrupted one's empty seconds, a header-only CSV. */
    PUT(dir, "runs.tsv", "k\tinterrupted\t255\t\tgpu\n");
    PUT(dir, "k.csv", HEADER "C01,k,,,,m,s,9007199254740991,1,1,1,1,0,ok,\n");
    assert_int_equal(mc_run_read(dir, &run, err, sizeof err), 0);
    assert_true(run.exp[0].rows[0].n == 9007199254740991L);
    assert_int_equal(run.exp[0].exit_code, 255);
    assert_false(run.exp[0].has_seconds);
    mc_run_free(&run);
    PUT(dir, "k.csv", HEADER);
    assert_int_equal(mc_run_read(dir, &run, err, sizeof err), 0);
    assert_true(run.exp[0].has_csv);
    assert_int_equal(run.exp[0].nrows, 0);
    mc_run_free(&run);
    rm_tree(dir);
}

/* ------------------------------------------------- hostile results.json */

#define ROW(n, median) \
    "{\"claim\":\"C01\",\"experiment\":\"k\",\"variant\":\"\",\"param\":\"\",\"param_value\":null," \
    "\"metric\":\"m\",\"unit\":\"s\",\"n\":" n ",\"median\":" median ",\"min\":1,\"max\":1,\"mean\":1," \
    "\"stdev\":0,\"status\":\"ok\",\"note\":\"\"}"
#define DOC(state, meta, exps) \
    "{\"schema\":\"memclaims-results/1.0\",\"run\":\"r\",\"state\":" state ",\"meta\":" meta \
    ",\"experiments\":" exps "}\n"
#define EXP(key, rows) \
    "{\"claim\":\"C01\",\"key\":" key ",\"title\":\"t\",\"state\":\"ran\",\"exit_code\":0,\"seconds\":0.5," \
    "\"mode\":\"gpu\",\"verdict\":null,\"note\":null,\"rows\":" rows "}"

static void expect_json(const char *text, size_t len, const char *says, const char *what)
{
    char dir[] = "/tmp/test_run_json.XXXXXX", path[64], err[512] = "";
    assert_non_null(mkdtemp(dir));
    put(dir, "results.json", text, len);
    snprintf(path, sizeof path, "%s/results.json", dir);
    cJSON *doc = mc_results_read(path, err, sizeof err);
    bool ok = says ? !doc && strstr(err, says) && !strchr(err, '\n') && !strncmp(err, path, strlen(path)) : doc != NULL;
    if (!ok) {
        print_error("%s: got %s '%s', want %s\n", what, doc ? "a document" : "NULL", err, says ? says : "a document");
        fail();
    }
    cJSON_Delete(doc);
    rm_tree(dir);
}

#define JSON(text, says, what) expect_json(text, strlen(text), says, what)

static void refuses_what_is_not_a_results_document(void **state)
{
    (void)state;
    JSON(DOC("\"complete\"", "{\"gpu_status\":\"ok\"}", "[" EXP("\"k\"", "[" ROW("5", "1") "]") "]"), NULL, "a good one");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "null") "," EXP("\"j\"", "[]") "]"), NULL, "rows null or empty");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[" ROW("9007199254740991", "\"inf\"") "]") "]"), NULL,
         "the largest count, an infinite figure");
    JSON("", "results.json: empty", "an empty file");
    JSON("{\"schema\":\n\"memclaims-results/1.0\",,}", "results.json:2: not valid JSON", "broken JSON");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "null") "]") "{}", "results.json:2: not valid JSON",
         "text after the document");
    JSON("[1]", "not a memclaims results document", "an array");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[" ROW("1e300", "1") "]") "]"),
         "experiment 1 'k', row 1: n (1e+300) is not a count", "n 1e300 (a float-to-int cast overflow)");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[" ROW("1e999", "1") "]") "]"), "row 1: n (inf)", "n 1e999");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[" ROW("-1", "1") "]") "]"), "row 1: n (-1)", "a negative n");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[" ROW("2.5", "1") "]") "]"), "row 1: n (2.5)", "a fractional n");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[" ROW("9007199254740992", "1") "]") "]"), "row 1: n (9.0072e+15)",
         "n of 2^53");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[" ROW("\"5\"", "1") "]") "]"), "row 1: n (not a number)", "n a string");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[" ROW("5", "1e999") "]") "]"), "row 1: \"median\" is not a figure",
         "a median past a double");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[" ROW("5", "\"fast\"") "]") "]"), "\"median\" is not a figure",
         "a median that is a word");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "[1]") "]"), "experiment 1 'k', row 1: not an object", "a row not an object");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "{}") "]"), "\"rows\" is not an array or null", "rows an object");
    JSON(DOC("\"complete\"", "{}", "[]"), "no experiments: not a run", "no experiments");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"../k\"", "null") "]"), "experiment 1: no \"claim\", or no \"key\" usable",
         "a key that is a path");
    JSON(DOC("\"complete\"", "{}", "[" EXP("\"k\"", "null") "," EXP("\"k\"", "null") "]"), "experiment 2 'k': the key is there twice",
         "a key twice");
    JSON(DOC("\"done\"", "{}", "[" EXP("\"k\"", "null") "]"), "\"state\" is not", "an unknown state");
    JSON(DOC("\"complete\"", "{\"gpu_memory\":85899345920}", "[" EXP("\"k\"", "null") "]"),
         "meta \"gpu_memory\" is not a string", "a meta value not a string");
    JSON("{\"schema\":\"memclaims-results/99999999999999999999.0\"}", "unreadable schema version", "a major past any count");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_plain_and_empty_fields),
        cmocka_unit_test(split_quoted_fields),
        cmocka_unit_test(split_rejects_malformed_lines),
        cmocka_unit_test(numbers_as_the_writer_writes_them),
        cmocka_unit_test(counts_as_the_writer_writes_them),
        cmocka_unit_test(reads_a_run_folder),
        cmocka_unit_test(tells_an_interrupted_run),
        cmocka_unit_test(not_a_run_is_one_line),
        cmocka_unit_test(notes_a_chart),
        cmocka_unit_test(malformed_csv_names_file_and_line),
        cmocka_unit_test(refuses_what_is_not_a_run),
        cmocka_unit_test(takes_what_a_run_may_lack),
        cmocka_unit_test(refuses_what_is_not_a_results_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
