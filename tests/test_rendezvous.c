/* Tests of rendezvous.h over loopback, each rank a thread: a world of 4
 * gets rank 0's blob; a missing rank (rank 0 or another) makes the others
 * fail within the deadline with a line naming the rank and the step; a
 * duplicate rank is refused; a bad or busy port gives one error line; no
 * descriptor is left open. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "workload/sharded/rendezvous.h"

#define BLOB 128    /* bytes: NCCL_UNIQUE_ID_BYTES */
#define SHORT_S 0.5 /* seconds: the deadline of the cases meant to time out */
#define SLACK_S 1.0 /* seconds past the deadline a failing call may take (a loaded 2-core machine) */
#define MAXR 8

typedef struct {
    int port, rank, world, rc;
    double timeout_s, took_s;
    unsigned char blob[BLOB];
    char err[256];
} rank_arg;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A port no one listens on now: the kernel's pick for port 0. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void *rank_main(void *p)
{
    rank_arg *a = p;
    double t0 = now_s();
    a->rc = mc_rdv_exchange("127.0.0.1", a->port, a->rank, a->world, a->blob, BLOB, a->timeout_s, a->err,
                            sizeof a->err);
    a->took_s = now_s() - t0;
    return NULL;
}

/* Runs the given ranks (ranks[i] claims rank ranks[i]) of a world, each a thread. */
static void run(rank_arg *a, const int *ranks, int n, int world, int port, double timeout_s)
{
    pthread_t t[MAXR];
    for (int i = 0; i < n; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].port = port;
        a[i].rank = ranks[i];
        a[i].world = world;
        a[i].timeout_s = timeout_s;
        if (ranks[i] == 0)
            for (int b = 0; b < BLOB; b++) a[i].blob[b] = (unsigned char)(b * 7 + 3);
        assert_int_equal(pthread_create(&t[i], NULL, rank_main, &a[i]), 0);
    }
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

static void has(const char *err, const char *want)
{
    if (!strstr(err, want)) fail_msg("error \"%s\" does not say \"%s\"", err, want);
    assert_null(strchr(err, '\n'));
}

static void test_world4(void **state)
{
    (void)state;
    rank_arg a[4];
    const int ranks[4] = {3, 1, 0, 2}; /* rank 0 not first: the others retry until it listens */
    run(a, ranks, 4, 4, free_port(), 10.0);
    for (int i = 0; i < 4; i++) {
        if (a[i].rc != 0) fail_msg("rank %d: %s", a[i].rank, a[i].err);
        for (int b = 0; b < BLOB; b++) assert_int_equal(a[i].blob[b], (unsigned char)(b * 7 + 3));
    }
}

static void test_world1(void **state)
{
    (void)state;
    unsigned char b[BLOB] = {0};
    char err[256] = "";
    assert_int_equal(mc_rdv_exchange("127.0.0.1", 1, 0, 1, b, BLOB, 1.0, err, sizeof err), 0);
}

static void test_rank_missing(void **state)
{
    (void)state;
    rank_arg a[3];
    const int ranks[3] = {0, 1, 2}; /* rank 3 never comes */
    run(a, ranks, 3, 4, free_port(), SHORT_S);
    char want[128];
    snprintf(want, sizeof want, "rank 0: wait for ranks on port %d: timed out after 0.5 s (2 of 3 connected; missing 3)",
             a[0].port);
    assert_int_equal(a[0].rc, -1);
    has(a[0].err, want);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a[i].rc, -1);
        assert_true(a[i].took_s < SHORT_S + SLACK_S);
        for (int b = 0; b < BLOB && i; b++) assert_int_equal(a[i].blob[b], 0); /* nobody got it */
    }
    /* Ranks 1 and 2 reached rank 0 and wait for the blob until the same
     * deadline: whichever comes first, their time-out or rank 0 closing. */
    for (int i = 1; i < 3; i++) {
        char pre[64];
        snprintf(pre, sizeof pre, "rank %d: receive the blob from 127.0.0.1:%d: ", i, a[0].port);
        has(a[i].err, pre);
        if (!strstr(a[i].err, "timed out after 0.5 s") && !strstr(a[i].err, "closed by rank 0 before the blob"))
            fail_msg("\"%s\": neither a time-out nor rank 0 closing", a[i].err);
    }
}

static void test_rank0_missing(void **state)
{
    (void)state;
    rank_arg a[3];
    const int ranks[3] = {1, 2, 3};
    int port = free_port();
    double t0 = now_s();
    run(a, ranks, 3, 4, port, SHORT_S);
    assert_true(now_s() - t0 < SHORT_S + SLACK_S);
    for (int i = 0; i < 3; i++) {
        char want[128];
        snprintf(want, sizeof want, "rank %d: connect to 127.0.0.1:%d: timed out after 0.5 s (Connection refused)",
                 ranks[i], port);
        assert_int_equal(a[i].rc, -1);
        assert_string_equal(a[i].err, want);
        assert_true(a[i].took_s >= SHORT_S * 0.9);
    }
}

static void test_refused(void **state)
{
    (void)state;
    /* Two processes say rank 1 and rank 2 never comes (so rank 0 is still
     * listening when the second rank 1 arrives): the second is refused at
     * once, the first waits with rank 0 until its deadline. */
    rank_arg a[3];
    const int dup[3] = {0, 1, 1};
    run(a, dup, 3, 3, free_port(), 2 * SHORT_S);
    assert_int_equal(a[0].rc, -1);
    has(a[0].err, "(1 of 2 connected; missing 2)");
    int second = a[1].took_s < a[2].took_s ? 1 : 2;
    has(a[second].err, "rank 1: refused by rank 0 at 127.0.0.1:");
    has(a[second].err, "this rank already connected");
    assert_true(a[second].took_s < SHORT_S);

    /* A rank from a bigger world: refused, then rank 0 times out missing rank 1. */
    int port = free_port();
    rank_arg b[2];
    const int r5[1] = {5};
    pthread_t t;
    b[0] = (rank_arg){.port = port, .rank = 0, .world = 2, .timeout_s = SHORT_S};
    assert_int_equal(pthread_create(&t, NULL, rank_main, &b[0]), 0);
    run(&b[1], r5, 1, 8, port, SHORT_S);
    pthread_join(t, NULL);
    has(b[1].err, "rank 5: refused by rank 0 at 127.0.0.1:");
    has(b[1].err, "a different world size");
    has(b[0].err, "(0 of 1 connected; missing 1)");
}

static void test_bad_port(void **state)
{
    (void)state;
    unsigned char b[BLOB] = {0};
    char err[256] = "";
    assert_int_equal(mc_rdv_exchange("127.0.0.1", 70000, 1, 2, b, BLOB, 1.0, err, sizeof err), -1);
    assert_string_equal(err, "rank 1: port 70000 not in 1..65535");
    assert_int_equal(mc_rdv_exchange("127.0.0.1", 0, 0, 2, b, BLOB, 1.0, err, sizeof err), -1);
    assert_string_equal(err, "rank 0: port 0 not in 1..65535");

    /* A port someone else listens on: rank 0 cannot take it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    socklen_t l = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    char want[96];
    snprintf(want, sizeof want, "rank 0: listen on port %d: Address already in use", ntohs(a.sin_port));
    assert_int_equal(mc_rdv_exchange("127.0.0.1", ntohs(a.sin_port), 0, 2, b, BLOB, 1.0, err, sizeof err), -1);
    assert_string_equal(err, want);
    close(fd);

    assert_int_equal(mc_rdv_exchange("no-such-host.invalid", 29500, 1, 2, b, BLOB, 1.0, err, sizeof err), -1);
    has(err, "rank 1: resolve no-such-host.invalid: ");
    assert_int_equal(mc_rdv_exchange("127.0.0.1", 29500, 2, 2, b, BLOB, 1.0, err, sizeof err), -1);
    assert_string_equal(err, "rank 2: not in a world of 2");
}

/* Open descriptors of this process, /proc/self/fd's entries. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

static int fds_before;
static int count_fds(void **state)
{
    (void)state;
    fds_before = open_fds();
    return 0;
}

/* Every call before, failed ones included, closed what it opened (the
 * last test: cmocka 1.1 does not count a failed group teardown). */
static void test_no_fd_left(void **state)
{
    (void)state;
    assert_true(fds_before > 0);
    assert_int_equal(open_fds(), fds_before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world4),      cmocka_unit_test(test_world1),
        cmocka_unit_test(test_rank_missing), cmocka_unit_test(test_rank0_missing),
        cmocka_unit_test(test_refused),     cmocka_unit_test(test_bad_port),
        cmocka_unit_test(test_no_fd_left),
    };
    return cmocka_run_group_tests(tests, count_fds, NULL);
}
