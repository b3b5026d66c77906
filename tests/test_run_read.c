/* Tests of common/results/csv_read.c and common/results/run_read.c: splitting the suite's
 * CSV lines, parsing its numbers, reading run folders (the crafted fixture
 * runs in tests/fixtures/results/), telling an interrupted run, and one
 * clear error for what is not a run or is malformed. Run from the repo root
 * (scripts/test does). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results/csv_read.h"
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_plain_and_empty_fields),
        cmocka_unit_test(split_quoted_fields),
        cmocka_unit_test(split_rejects_malformed_lines),
        cmocka_unit_test(numbers_as_the_writer_writes_them),
        cmocka_unit_test(reads_a_run_folder),
        cmocka_unit_test(tells_an_interrupted_run),
        cmocka_unit_test(not_a_run_is_one_line),
        cmocka_unit_test(notes_a_chart),
        cmocka_unit_test(malformed_csv_names_file_and_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
