/* Tests of dataset_file.c: the record generator and checksum, writing a
 * file and reading its records back, page-cache residency and read-ahead
 * from the running system, and /proc/<pid>/status parsing. */
#define _GNU_SOURCE /* fmemopen, mkstemp, posix_fadvise */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/dataset_file.h"
#include "test_util.h"

#define SEED 42ULL

/* splitmix64's published first outputs for state 0 (Vigna's reference). */
static void splitmix_reference(void **state)
{
    (void)state;
    assert_true(mc_ds_splitmix64(0) == 0xe220a8397b1dcdafULL);
}

static void records_differ_and_repeat(void **state)
{
    (void)state;
    uint64_t a[MC_DS_WORDS], b[MC_DS_WORDS], c[MC_DS_WORDS];
    mc_ds_record(SEED, 7, a);
    mc_ds_record(SEED, 7, b);
    mc_ds_record(SEED, 8, c);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    assert_true(mc_ds_checksum(a) == mc_ds_expected_checksum(SEED, 7));
    assert_true(mc_ds_checksum(c) != mc_ds_checksum(a));
    a[MC_DS_WORDS - 1] ^= 1; /* one flipped bit in the last word */
    assert_true(mc_ds_checksum(a) != mc_ds_expected_checksum(SEED, 7));
    assert_true(mc_ds_expected_checksum(SEED, 7) != mc_ds_expected_checksum(SEED + 1, 7));
}

static int temp_file(char *path, size_t len)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, len, "%s/test_dataset_file.XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    return fd;
}

/* 300 records (not a multiple of the 256-record write chunk): the file has
 * the right size and every record reads back as generated. */
static void write_and_read_back(void **state)
{
    (void)state;
    char path[512];
    int fd = temp_file(path, sizeof path);
    const uint64_t n = 300, size = n * MC_DS_RECORD_BYTES;
    assert_int_equal(mc_ds_write(fd, SEED, size), 0);
    assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)size);
    uint64_t w[MC_DS_WORDS];
    for (uint64_t i = 0; i < n; i++) {
        assert_int_equal(pread(fd, w, sizeof w, (off_t)(i * MC_DS_RECORD_BYTES)), (ssize_t)sizeof w);
        assert_true(mc_ds_checksum(w) == mc_ds_expected_checksum(SEED, i));
    }
    /* Just written and read: in the page cache; DONTNEED may drop them. */
    double cached = mc_ds_resident_share(path, size);
    assert_true(cached > 0.99 && cached <= 1.0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    double dropped = mc_ds_resident_share(path, size);
    assert_true(dropped >= 0.0 && dropped <= cached); /* tmpfs keeps its pages */
    close(fd);
    unlink(path);
    assert_true(isnan(mc_ds_resident_share(path, size))); /* no file */
}

static void write_refuses_partial_record(void **state)
{
    (void)state;
    char path[512];
    int fd = temp_file(path, sizeof path);
    assert_int_equal(mc_ds_write(fd, SEED, MC_DS_RECORD_BYTES + 1), -1);
    assert_int_equal(lseek(fd, 0, SEEK_END), 0);
    close(fd);
    unlink(path);
}

static void status_parse(void **state)
{
    (void)state;
    char text[] = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t   512 kB\n"
                  "RssFile:\t   256 kB\nThreads:\t1\n";
    FILE *fp = fmemopen(text, strlen(text), "r");
    assert_non_null(fp);
    mc_proc_mem m = mc_proc_mem_parse(fp);
    fclose(fp);
    assert_near(m.rss, 1024 * 1024.0, 0);
    assert_near(m.hwm, 2048 * 1024.0, 0);
    assert_near(m.anon, 512 * 1024.0, 0);
    assert_near(m.file, 256 * 1024.0, 0);
    char none[] = "Name:\tx\n";
    fp = fmemopen(none, strlen(none), "r");
    m = mc_proc_mem_parse(fp);
    fclose(fp);
    assert_near(m.rss, -1, 0);
}

/* Touching 8 MiB of fresh heap raises this process's RssAnon by about that. */
static void status_self_sees_growth(void **state)
{
    (void)state;
    mc_proc_mem a = mc_proc_mem_self();
    assert_true(a.rss > 0 && a.hwm >= a.rss && a.anon > 0);
    const size_t n = 8u << 20;
    unsigned char *p = malloc(n);
    assert_non_null(p);
    memset(p, 1, n);
    mc_proc_mem b = mc_proc_mem_self();
    assert_true(b.anon - a.anon >= 0.9 * (double)n);
    assert_true(p[n - 1] == 1);
    free(p);
}

static void read_ahead_of_tmp(void **state)
{
    (void)state;
    assert_int_equal(mc_ds_read_ahead_kb("/nonexistent/x"), -1);
    long kb = mc_ds_read_ahead_kb("/tmp"); /* -1 on tmpfs or overlay: no block device */
    assert_true(kb >= -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splitmix_reference),
        cmocka_unit_test(records_differ_and_repeat),
        cmocka_unit_test(write_and_read_back),
        cmocka_unit_test(write_refuses_partial_record),
        cmocka_unit_test(status_parse),
        cmocka_unit_test(status_self_sees_growth),
        cmocka_unit_test(read_ahead_of_tmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
