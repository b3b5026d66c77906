/* Tests of common/subprocess.c: a child's exit status, its stdout and
 * stderr in files, a program found on PATH or not at all, a child ended by
 * a signal (128 + N; SIGTERM also stops this process's work), and the
 * signal thread, which takes SIGTERM and ends the children running. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "subprocess.h"

static char g_dir[] = "/tmp/test_subprocess.XXXXXX";

static char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void runs_and_redirects(void **state)
{
    (void)state;
    char out[PATH_MAX], err[PATH_MAX];
    snprintf(out, sizeof out, "%s/out", g_dir);
    snprintf(err, sizeof err, "%s/err", g_dir);
    char *ok[] = {"sh", "-c", "echo to-out; echo to-err >&2; exit 3", NULL};
    assert_int_equal(mc_spawn_run(ok, out, err), 3);
    assert_string_equal(slurp(out), "to-out\n");
    assert_string_equal(slurp(err), "to-err\n");
    char *again[] = {"sh", "-c", "echo x", NULL};
    assert_int_equal(mc_spawn_run(again, out, NULL), 0);
    assert_string_equal(slurp(out), "x\n"); /* truncated, not appended */
    char *missing[] = {"no-such-program-memclaims", NULL};
    assert_int_equal(mc_spawn(missing, NULL, NULL), -1);
    assert_int_equal(mc_spawn_wait(-1), -1);
    char *killed[] = {"sh", "-c", "kill -KILL $$", NULL};
    assert_int_equal(mc_spawn_run(killed, NULL, NULL), 128 + SIGKILL);
    assert_int_equal(mc_spawn_stop_signal(), 0); /* SIGKILL is not a stop */
}

static void which(void **state)
{
    (void)state;
    char buf[PATH_MAX];
    assert_int_equal(mc_spawn_which("sh", buf, sizeof buf), 0);
    assert_true(buf[0] == '/' && access(buf, X_OK) == 0);
    assert_int_equal(mc_spawn_which("no-such-program-memclaims", buf, sizeof buf), -1);
    assert_int_equal(mc_spawn_which(g_dir, buf, sizeof buf), -1); /* a folder */
    char small[2];
    assert_int_equal(mc_spawn_which("/bin/sh", small, sizeof small), -1); /* does not fit */
    assert_int_equal(mc_spawn_which("/bin/sh", buf, sizeof buf), 0);
    assert_string_equal(buf, "/bin/sh");
}

/* SIGTERM to this process: the signal thread takes it and ends the child. */
static void a_stop_ends_children(void **state)
{
    (void)state;
    mc_spawn_catch_stop();
    char *slow[] = {"sleep", "30", NULL};
    pid_t pid = mc_spawn(slow, NULL, NULL);
    assert_true(pid > 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(kill(getpid(), SIGTERM), 0);
    assert_int_equal(mc_spawn_wait(pid), 128 + SIGTERM);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 10);
    assert_int_equal(mc_spawn_stop_signal(), SIGTERM);
}

int main(void)
{
    if (!mkdtemp(g_dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runs_and_redirects),
        cmocka_unit_test(which),
        cmocka_unit_test(a_stop_ends_children), /* last: it leaves SIGTERM caught */
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/out", g_dir), unlink(path);
    snprintf(path, sizeof path, "%s/err", g_dir), unlink(path);
    rmdir(g_dir);
    return rc;
}
