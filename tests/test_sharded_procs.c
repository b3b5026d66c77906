/* Tests of sharded_procs.h without a GPU: the rows and the check's line
 * read back as written, and the launcher's watch over ranks that are this
 * test program started again as stand-in ranks (MC_STUB_RANKS says what
 * each does): every rank's rows merged; a rank killed mid-run, one that
 * exits with an error, and one out of memory make the others stop (they
 * take SIGUSR1 as a real rank does) and are named in one line. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "workload/sharded/sharded_procs.h"

/* ------------------------------------------------------------ a stand-in rank */

static volatile sig_atomic_t told;
static void on_usr1(int sig)
{
    (void)sig;
    told = 1;
}

/* MC_STUB_RANKS is one letter a rank: o ok (3 steps), k killed at step 2,
 * e exits 3 saying why, m out of memory at step 2, d its rows differ
 * (exit 1), w waits (for SIGUSR1, then exits 3 naming where it was). */
static int stub_rank(const char *what)
{
    if (getenv("MC_STUB_LATE") && what[atoi(getenv("RANK"))] != 'k') { /* slow to start */
        struct timespec late = {0, 300 * 1000 * 1000};
        nanosleep(&late, NULL);
    }
    signal(SIGUSR1, on_usr1); /* then taken: the launcher starts a rank with it blocked (as sh_gpu_catch_peer_end) */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_UNBLOCK, &usr1, NULL);
    const int q = atoi(getenv("RANK")), world = atoi(getenv("WORLD_SIZE"));
    if (world != (int)strlen(what) || atoi(getenv("LOCAL_RANK")) != q || strcmp(getenv("MASTER_ADDR"), "127.0.0.1") ||
        atoi(getenv("MASTER_PORT")) < 1)
        return 9;
    const char me = what[q];
    printf("%s\n", MC_SH_ROWS_HEADER);
    for (int s = 1; s <= 3; s++) {
        if (s == 2 && me == 'k') {
            fflush(stdout);
            raise(SIGKILL);
        }
        if (s == 2 && me == 'm') {
            printf("%d,%d,0,0,100,50,0,0,oom\n", q, s);
            return 0;
        }
        if (s == 2 && me == 'e') {
            fprintf(stderr, "sharded_model: rank %d: NCCL: unhandled system error\n", q);
            return 3;
        }
        if (s == 2 && me == 'w') {
            fflush(stdout);
            for (int i = 0; i < 2000 && !told; i++) { /* 20 s at most */
                struct timespec nap = {0, 10 * 1000 * 1000};
                nanosleep(&nap, NULL);
            }
            fprintf(stderr, "sharded_model: rank %d: stopped at the all-reduce of step 2: another rank ended\n", q);
            return 3;
        }
        printf("%d,%d,%d,%d,%d,%d,0.00%d,%g,ok\n", q, s, 1000 + q, 500, me == 'd' ? 999 : 1000 + q, 500, s,
               1.0 / s);
    }
    fprintf(stderr, "sharded_model: --verify passed: parameters within %.3e of one GPU's (relative; worst: rank "
            "%d, parameter 2; 0 of 100 elements beyond 1e-05, largest difference 1.000e-09); loss falls on every rank\n",
            1e-7 * (q + 1), q);
    return me == 'd' ? 1 : 0;
}

/* ------------------------------------------------------------ tests */

static char self[1024];

static int run_stub(const char *what, mc_sh_gpu_result *res, char *err, size_t len)
{
    setenv("MC_STUB_RANKS", what, 1);
    char *argv[] = {self, NULL};
    int rc = mc_sh_procs_run(argv, (int)strlen(what), 60, NULL, res, err, len);
    unsetenv("MC_STUB_RANKS");
    return rc;
}

static void test_rows_round_trip(void **state)
{
    (void)state;
    static mc_sh_gpu_result a, b;
    memset(&a, 0, sizeof a);
    a.ranks = 2;
    a.steps = 3;
    a.oom_rank = 1;
    a.oom_step = 3;
    a.done[0] = 3;
    a.done[1] = 2;
    for (int q = 0; q < 2; q++)
        for (int s = 0; s < 3; s++) {
            a.peak[q][s] = 123456789012ull + (uint64_t)(q * 10 + s);
            a.end[q][s] = 5;
            a.model_peak[q][s] = a.peak[q][s];
            a.model_end[q][s] = 5;
            a.time_s[q][s] = 0.001 * (s + 1);
            a.loss[q][s] = 1.5 / (s + 1);
        }
    char *text = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    fprintf(m, "%s\n", MC_SH_ROWS_HEADER);
    mc_sh_rows_write(m, &a, 0);
    mc_sh_rows_write(m, &a, 1);
    fclose(m);
    memset(&b, 0, sizeof b);
    b.ranks = 2;
    b.oom_rank = -1;
    char err[200] = "";
    assert_int_equal(mc_sh_rows_read(text, &b, err, sizeof err), 0);
    assert_int_equal(b.done[0], 3);
    assert_int_equal(b.done[1], 2);
    assert_int_equal(b.oom_rank, 1);
    assert_int_equal(b.oom_step, 3);
    assert_int_equal(b.steps, 3);
    assert_true(b.peak[1][1] == a.peak[1][1] && b.peak[0][2] == a.peak[0][2]);
    assert_true(b.loss[0][2] > 0.49 && b.loss[0][2] < 0.51);
    free(text);
    /* A rank outside the world, a cut line, another header: refused, naming the line. */
    assert_int_equal(mc_sh_rows_read(MC_SH_ROWS_HEADER "\n2,1,1,1,1,1,0.1,1,ok\n", &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 2"));
    assert_int_equal(mc_sh_rows_read(MC_SH_ROWS_HEADER "\n0,1,1,1,1,1,0.1,1,ok", &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "not ended"));
    assert_int_equal(mc_sh_rows_read("step,peak\n", &b, err, sizeof err), -1);
    assert_int_equal(mc_sh_rows_read(MC_SH_ROWS_HEADER "\n0,1,1,1,1,1,0.1,1,fine\n", &b, err, sizeof err), -1);
}

static void test_check_line(void **state)
{
    (void)state;
    mc_sh_check v = {.verified = true, .passed = true, .max_rel = 1.25e-7, .max_abs = 3e-9, .worst_rank = 1,
                     .worst_param = 4, .elems = 1000, .elems_off = 0, .loss_falls = true},
                w;
    char line[600];
    mc_sh_check_format(&v, true, line, sizeof line);
    assert_non_null(strstr(line, "momentum"));
    assert_int_equal(mc_sh_check_parse(line, &w), 0);
    assert_true(w.verified && w.passed && w.loss_falls);
    assert_int_equal(w.worst_rank, 1);
    assert_int_equal(w.worst_param, 4);
    assert_true(w.elems == 1000 && w.elems_off == 0);
    assert_true(w.max_rel > 1.24e-7 && w.max_rel < 1.26e-7);
    v.passed = false;
    v.loss_falls = false;
    mc_sh_check_format(&v, false, line, sizeof line);
    assert_int_equal(mc_sh_check_parse(line, &w), 0);
    assert_false(w.passed);
    assert_false(w.loss_falls);
    assert_int_equal(mc_sh_check_parse("sharded_model: rank 0: step 3 not done", &w), -1);
    /* Merged: the worst rank's figures, sums, and every rank must pass. */
    mc_sh_check acc = {.verified = true, .passed = true, .loss_falls = true}, a = v, b = v;
    a.passed = true;
    a.loss_falls = true;
    a.max_rel = 1e-8;
    a.worst_rank = 0;
    b.passed = true;
    b.loss_falls = true;
    b.max_rel = 2e-6;
    b.worst_rank = 1;
    mc_sh_check_merge(&acc, &a, 0);
    mc_sh_check_merge(&acc, &b, 1);
    assert_int_equal(acc.worst_rank, 1);
    assert_true(acc.passed && acc.elems == 2000);
    b.passed = false;
    mc_sh_check_merge(&acc, &b, 2);
    assert_false(acc.passed);
}

static void test_ranks_merged(void **state)
{
    (void)state;
    static mc_sh_gpu_result res;
    char err[1024] = "";
    assert_int_equal(run_stub("ooo", &res, err, sizeof err), 0);
    assert_int_equal(res.ranks, 3);
    assert_int_equal(res.oom_rank, -1);
    for (int q = 0; q < 3; q++) {
        assert_int_equal(res.done[q], 3);
        assert_int_equal(res.peak[q][2], 1000 + q);
    }
    assert_true(res.check.verified && res.check.passed);
    assert_int_equal(res.check.worst_rank, 2);
    assert_true(res.check.elems == 300);
    /* A rank whose figures differ (exit 1) is no failure of the run. */
    assert_int_equal(run_stub("od", &res, err, sizeof err), 0);
    assert_int_equal(res.model_peak[1][0], 999);
}

static void test_killed_rank(void **state)
{
    (void)state;
    static mc_sh_gpu_result res;
    char err[1024] = "";
    assert_int_equal(run_stub("wkw", &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "rank 1: killed by signal 9"));
    assert_non_null(strstr(err, "the others stopped within"));
    assert_non_null(strstr(err, "rank 0: stopped at the all-reduce of step 2"));
    assert_non_null(strstr(err, "rank 2: stopped at"));
    assert_int_equal(res.done[0], 1); /* the steps before it stand */
    assert_int_equal(res.done[1], 1);
    assert_false(res.check.verified);
}

static void test_error_rank(void **state)
{
    (void)state;
    static mc_sh_gpu_result res;
    char err[1024] = "";
    assert_int_equal(run_stub("ew", &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "rank 0: exit 3: NCCL: unhandled system error"));
    assert_non_null(strstr(err, "rank 1: stopped at"));
}

/* A SIGUSR1 that comes before a rank has set its handler waits for it: the
 * stand-in ranks 'l' sleep 300 ms before they do, while rank 0 is killed at once. */
static void test_early_stop(void **state)
{
    (void)state;
    static mc_sh_gpu_result res;
    char err[1024] = "";
    setenv("MC_STUB_LATE", "1", 1);
    assert_int_equal(run_stub("kww", &res, err, sizeof err), -1);
    unsetenv("MC_STUB_LATE");
    assert_non_null(strstr(err, "rank 0: killed by signal 9"));
    assert_non_null(strstr(err, "rank 1: stopped at")); /* not "killed by signal 10" */
    assert_non_null(strstr(err, "rank 2: stopped at"));
}

/* --ranks-out: each rank's rows and check line written whole, rank 0's
 * merge of them all; a rank that never writes is named after the wait. */
static void test_ranks_out(void **state)
{
    (void)state;
    char dir[] = "/tmp/memclaims-ranks-out-XXXXXX", err[300] = "", path[300];
    assert_non_null(mkdtemp(dir));
    static mc_sh_gpu_result r;
    memset(&r, 0, sizeof r);
    r.ranks = 2;
    r.steps = 2;
    r.oom_rank = -1;
    for (int q = 0; q < 2; q++) {
        r.done[q] = 2;
        for (int s = 0; s < 2; s++) r.peak[q][s] = r.model_peak[q][s] = 1000u + (uint64_t)(10 * q + s);
    }
    assert_int_equal(mc_sh_ranks_out(dir, 1, 2, &r, "--verify passed: one", 5, err, sizeof err), 0);
    assert_int_equal(mc_sh_ranks_out(dir, 0, 2, &r, "--verify passed: zero", 5, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/ranks.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[2000] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    static mc_sh_gpu_result back;
    memset(&back, 0, sizeof back);
    back.ranks = 2;
    back.oom_rank = -1;
    assert_int_equal(mc_sh_rows_read(text, &back, err, sizeof err), 0);
    assert_true(back.done[0] == 2 && back.done[1] == 2 && back.peak[1][1] == 1011);
    assert_null(strstr(text + 1, MC_SH_ROWS_HEADER)); /* one header */
    snprintf(path, sizeof path, "%s/verify.txt", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_string_equal(text, "--verify passed: zero\n--verify passed: one\n");
    /* A world of 3 whose rank 2 never writes: rank 0 names it, merges nothing. */
    char dir2[] = "/tmp/memclaims-ranks-out-XXXXXX";
    assert_non_null(mkdtemp(dir2));
    assert_int_equal(mc_sh_ranks_out(dir2, 0, 3, &r, "", 0.2, err, sizeof err), -1);
    assert_non_null(strstr(err, "rank 1's figures not in"));
    snprintf(path, sizeof path, "%s/ranks.csv", dir2);
    assert_int_not_equal(access(path, F_OK), 0);
    const char *names[] = {"rank0.csv", "rank1.csv", "rank0.verify", "rank1.verify", "ranks.csv", "verify.txt"};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/rank0.csv", dir2);
    unlink(path);
    rmdir(dir);
    rmdir(dir2);
}

static void test_oom_rank(void **state)
{
    (void)state;
    static mc_sh_gpu_result res;
    char err[1024] = "";
    assert_int_equal(run_stub("wm", &res, err, sizeof err), 0); /* a result */
    assert_int_equal(res.oom_rank, 1);
    assert_int_equal(res.oom_step, 2);
    assert_int_equal(res.done[0], 1);
}

int main(void)
{
    const char *stub = getenv("MC_STUB_RANKS");
    if (stub && getenv("RANK")) return stub_rank(stub);
    if (mc_self_exe(self, sizeof self) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_round_trip), cmocka_unit_test(test_check_line),
        cmocka_unit_test(test_ranks_merged),    cmocka_unit_test(test_killed_rank),
        cmocka_unit_test(test_error_rank),      cmocka_unit_test(test_oom_rank),
        cmocka_unit_test(test_early_stop),      cmocka_unit_test(test_ranks_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
