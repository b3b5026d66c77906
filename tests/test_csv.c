/* Tests of common/csv.c: quoting, number format, and the atomic write
 * (nothing under the final name until commit; abort leaves nothing). */
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
#include <sys/stat.h>
#include <unistd.h>

#include "csv.h"

/* What one write call puts out, via a zeroed memory stream (static buffer). */
static const char *capture_field(const char *s)
{
    static char buf[256];
    memset(buf, 0, sizeof buf);
    FILE *fp = fmemopen(buf, sizeof buf, "w");
    mc_csv_write_field(fp, s);
    fclose(fp);
    return buf;
}

static const char *capture_number(double v)
{
    static char buf[64];
    memset(buf, 0, sizeof buf);
    FILE *fp = fmemopen(buf, sizeof buf, "w");
    mc_csv_write_number(fp, v);
    fclose(fp);
    return buf;
}

static void quoting(void **state)
{
    (void)state;
    assert_string_equal(capture_field("plain"), "plain");
    assert_string_equal(capture_field(""), "");
    assert_string_equal(capture_field(NULL), "");
    assert_string_equal(capture_field("a,b"), "\"a,b\"");
    assert_string_equal(capture_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    assert_string_equal(capture_field("two\nlines"), "\"two\nlines\"");
}

static void numbers(void **state)
{
    (void)state;
    assert_string_equal(capture_number(1073741824.0), "1073741824");
    assert_string_equal(capture_number(85899345920.0), "85899345920"); /* 80 GiB, exact */
    assert_string_equal(capture_number(0.5), "0.5");
    assert_string_equal(capture_number(1.23456789012e-5), "1.23456789e-05");
    assert_string_equal(capture_number(NAN), "");
    assert_string_equal(capture_number(-3.0), "-3");
}

static void row_shape(void **state)
{
    (void)state;
    char buf[512];
    FILE *fp = fmemopen(buf, sizeof buf, "w");
    const double x[] = {1, 2, 3};
    mc_row r = {"C03", "pinned_vs_pageable", "pinned", "bytes", 4096, "h2d_bandwidth", "B/s",
                mc_stats_of(x, 3), "ok", "note, with comma"};
    mc_csv_write_row(fp, &r);
    fclose(fp);
    assert_string_equal(buf, "C03,pinned_vs_pageable,pinned,bytes,4096,h2d_bandwidth,B/s,3,2,1,3,2,1,"
                             "ok,\"note, with comma\"\n");
    /* A header has the 15 documented columns. */
    int commas = 0;
    for (const char *p = MC_CSV_HEADER; *p; p++) commas += *p == ',';
    assert_int_equal(commas, 14);
}

static char tmpdir[64];

static int count_entries(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", tmpdir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (fscanf(p, "%d", &n) != 1) n = -1;
    pclose(p);
    return n;
}

static void atomic_write(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mc_csv_test_XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char final[128];
    snprintf(final, sizeof final, "%s/x.csv", tmpdir);

    mc_file f;
    assert_int_equal(mc_file_open(&f, tmpdir, "x.csv"), 0);
    mc_csv_write_header(f.fp);
    struct stat st;
    assert_int_not_equal(stat(final, &st), 0); /* not there before commit */
    assert_int_equal(mc_file_commit(&f), 0);
    assert_int_equal(stat(final, &st), 0);
    assert_int_equal(count_entries(), 1); /* no temporary left behind */

    /* An aborted rewrite leaves the earlier file untouched and no temp. */
    assert_int_equal(mc_file_open(&f, tmpdir, "x.csv"), 0);
    fputs("half a row", f.fp);
    mc_file_abort(&f);
    FILE *fp = fopen(final, "r");
    char line[256] = "";
    assert_non_null(fgets(line, sizeof line, fp));
    fclose(fp);
    assert_string_equal(line, MC_CSV_HEADER "\n");
    assert_int_equal(count_entries(), 1);

    unlink(final);
    rmdir(tmpdir);
}

/* --out DIR: a missing folder and its parents are created (mkdir -p). */
static void open_creates_missing_folders(void **state)
{
    (void)state;
    char tmpdir[] = "/tmp/test_csv.XXXXXX";
    assert_non_null(mkdtemp(tmpdir));
    char dir[128];
    snprintf(dir, sizeof dir, "%s/a/b", tmpdir);
    mc_file f;
    assert_int_equal(mc_file_open(&f, dir, "x.csv"), 0);
    assert_int_equal(mc_file_commit(&f), 0);
    char path[160];
    snprintf(path, sizeof path, "%s/x.csv", dir);
    assert_int_equal(access(path, F_OK), 0);
    unlink(path);
    rmdir(dir);
    snprintf(path, sizeof path, "%s/a", tmpdir);
    rmdir(path);
    rmdir(tmpdir);
}

/* A path through a file cannot become a folder: -1, nothing created. */
static void open_under_a_file_fails(void **state)
{
    (void)state;
    char tmpdir[] = "/tmp/test_csv.XXXXXX";
    assert_non_null(mkdtemp(tmpdir));
    char file[128], dir[160];
    snprintf(file, sizeof file, "%s/file", tmpdir);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    snprintf(dir, sizeof dir, "%s/sub", file);
    mc_file f;
    assert_int_equal(mc_file_open(&f, dir, "x.csv"), -1);
    assert_int_equal(mc_file_open(&f, file, "x.csv"), -1);
    unlink(file);
    assert_int_equal(rmdir(tmpdir), 0); /* empty: nothing else was created */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quoting),
        cmocka_unit_test(numbers),
        cmocka_unit_test(row_shape),
        cmocka_unit_test(atomic_write),
        cmocka_unit_test(open_creates_missing_folders),
        cmocka_unit_test(open_under_a_file_fails),
    };
    return cmocka_run_group_tests_name("csv", tests, NULL, NULL);
}
