/* Tests of common/trace/whatif_sweep.c: the replays of each setting (with no
 * card, then each card with room), the answer worked out from made-up
 * results (smallest card that fits, largest that does not, the best setting
 * and its tie-breaks), and a sweep of a small trace: every replay runs
 * whatever the threads, a card too small refuses requests, the figures are
 * ca_replay's own, a replay that cannot run is counted and logged, and a
 * stop starts none. */
#define _GNU_SOURCE /* mkdtemp, asprintf */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/whatif_sweep.h"

#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

static void jobs_per_setting_and_card(void **state)
{
    (void)state;
    size_t n_sets, n;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    char *cards[] = {"8", "1.0005", "16", "12.5"}; /* 1.0005 GiB less 1 GiB: under 1 MiB, no room */
    ca_whatif_job *j = ca_whatif_jobs(cards, 4, GiB, &n);
    assert_non_null(j);
    assert_int_equal(n, n_sets * 4);
    for (size_t s = 0; s < n_sets; s++) {
        const ca_whatif_job *g = &j[4 * s];
        for (int k = 0; k < 4; k++) assert_ptr_equal(g[k].set, &sets[s]);
        assert_string_equal(g[0].card, "none");
        assert_int_equal(g[0].capacity, CA_WHATIF_NO_CARD_BYTES);
        assert_false(g[0].limit);
        assert_string_equal(g[1].card, "8");
        assert_int_equal(g[1].capacity, 7 * GiB);
        assert_string_equal(g[2].card, "16");
        assert_string_equal(g[3].card, "12.5");
        assert_int_equal(g[3].capacity, 23 * GiB / 2);
        assert_true(g[3].room == (double)g[3].capacity);
        for (int k = 1; k < 4; k++) assert_int_equal(g[k].limit, sets[s].limit_at_capacity);
    }
    free(j);
}

/* Jobs of cards 8, 16 and 24 (no context); fits[s] is the smallest card
 * setting s fits (0: none), reserved[s] its peak reserved with no card. */
static ca_whatif_job *made_up(const double *fits, const int64_t *reserved, size_t *n)
{
    char *cards[] = {"8", "16", "24"};
    ca_whatif_job *j = ca_whatif_jobs(cards, 3, 0, n);
    assert_non_null(j);
    for (size_t i = 0; i < *n; i++) {
        size_t s = (size_t)(j[i].set - ca_conf_presets(&(size_t){0}));
        bool none = !strcmp(j[i].card, "none");
        j[i].ok = true;
        j[i].res.ooms = !none && (fits[s] == 0 || strtod(j[i].card, NULL) < fits[s]);
        j[i].res.peak_reserved = none ? reserved[s] : 0;
    }
    return j;
}

static void the_answer(void **state)
{
    (void)state;
    size_t n_sets, n, best = 99;
    ca_conf_presets(&n_sets);
    assert_true(n_sets >= 3);
    double *fits = calloc(n_sets, sizeof *fits);
    int64_t *reserved = calloc(n_sets, sizeof *reserved);
    for (size_t s = 0; s < n_sets; s++) fits[s] = 24, reserved[s] = 20;
    /* the default fits 24; setting 1 fits 16 with 12 reserved, setting 2 fits 16 with 10: the best */
    fits[1] = fits[2] = 16, reserved[1] = 12, reserved[2] = 10;
    ca_whatif_job *j = made_up(fits, reserved, &n);
    ca_whatif_answer *a = ca_whatif_answers(j, n, &best);
    assert_non_null(a);
    assert_int_equal(best, 2);
    assert_string_equal(a[0].smallest, "24");
    assert_string_equal(a[0].largest_failing, "16");
    assert_string_equal(a[2].smallest, "16");
    assert_string_equal(a[2].largest_failing, "8");
    assert_ptr_equal(a[2].none, &j[2 * 4]);
    assert_int_equal(a[2].none->res.peak_reserved, 10);
    free(a), free(j);

    /* a tie on card and reserved goes to the earlier setting; the default wins ties */
    reserved[2] = 12;
    j = made_up(fits, reserved, &n);
    a = ca_whatif_answers(j, n, &best);
    assert_int_equal(best, 1);
    free(a), free(j);
    for (size_t s = 0; s < n_sets; s++) fits[s] = 16, reserved[s] = 20;
    j = made_up(fits, reserved, &n);
    a = ca_whatif_answers(j, n, &best);
    assert_int_equal(best, 0);
    free(a), free(j);

    /* none fits any card: no smallest, the largest failing is the largest tried;
       the best is the least reserved */
    for (size_t s = 0; s < n_sets; s++) fits[s] = 0, reserved[s] = 20;
    reserved[n_sets - 1] = 5;
    j = made_up(fits, reserved, &n);
    a = ca_whatif_answers(j, n, &best);
    assert_null(a[0].smallest);
    assert_string_equal(a[0].largest_failing, "24");
    assert_int_equal(best, n_sets - 1);
    free(a), free(j), free(fits), free(reserved);

    assert_true(ca_whatif_same_card("16", "16.0"));
    assert_false(ca_whatif_same_card("16", "12"));
    assert_true(ca_whatif_same_card("none", "none"));
    assert_false(ca_whatif_same_card("none", "16"));
}

/* ------------------------------------------------------------ a real sweep */

/* Two 4 MiB blocks: one 20 MiB segment (kLargeBuffer) holds both. */
static const char trace_text[] = "alloc 1 4194304\nalloc 2 4194304\nfree 1\nfree 2\n";

static atomic_int g_done;
static void count_done(void *ctx, const ca_whatif_job *j, size_t i, size_t n)
{
    (void)j, (void)i;
    assert_int_equal(n, *(size_t *)ctx);
    atomic_fetch_add(&g_done, 1);
}
static int stop_now(void) { return 1; }

static void a_sweep(void **state)
{
    (void)state;
    char err[256], dir[] = "/tmp/test_whatif_sweep.XXXXXX";
    assert_non_null(mkdtemp(dir));
    ca_trace t;
    assert_int_equal(ca_trace_parse(&t, "t", trace_text, strlen(trace_text), err, sizeof err), 0);
    char *cards[] = {"0.01", "1"}; /* 10.24 MiB: no room for the segment; 1 GiB: room */
    for (int threads = 1; threads <= 4; threads += 3) {
        size_t n;
        ca_whatif_job *j = ca_whatif_jobs(cards, 2, 0, &n);
        atomic_store(&g_done, 0);
        ca_whatif_sweep_opts o = {.threads = threads, .log_dir = dir, .done = count_done, .ctx = &n};
        assert_int_equal(ca_whatif_sweep(&t, j, n, &o), 0);
        assert_int_equal(atomic_load(&g_done), (int)n);
        for (size_t i = 0; i < n; i += 3) {
            assert_true(j[i].ok && j[i + 1].ok && j[i + 2].ok);
            assert_true(ca_whatif_fits(&j[i]));      /* no card */
            assert_false(ca_whatif_fits(&j[i + 1])); /* 0.01 GiB */
            assert_true(j[i + 1].res.refused > 0);
            assert_true(ca_whatif_fits(&j[i + 2])); /* 1 GiB */
        }
        /* the default with no card, as ca_replay gives it */
        ca_config cfg = ca_config_default();
        ca_replay_opts ro = ca_replay_defaults();
        ro.cfg = &cfg, ro.what_if = true, ro.summary = true, ro.capacity = CA_WHATIF_NO_CARD_BYTES;
        ca_replay_result want;
        FILE *null = fopen("/dev/null", "w");
        assert_int_equal(ca_replay(&t, &ro, null, &want, err, sizeof err), 0);
        fclose(null);
        assert_memory_equal(&j[0].res, &want, sizeof want);
        assert_int_equal(j[0].res.peak_reserved, 20 * MiB);
        char *log;
        assert_true(asprintf(&log, "%s/replay-default-0.01.log", dir) > 0);
        assert_int_equal(access(log, F_OK), 0);
        free(log);

        /* a room the replay refuses (under 1 byte): counted, and said in its log */
        j[1].room = 0.25;
        assert_int_equal(ca_whatif_sweep(&t, j, n, &o), 1);
        assert_false(j[1].ok);
        assert_true(asprintf(&log, "%s/replay-default-0.01.log", dir) > 0);
        FILE *f = fopen(log, "r");
        char line[256] = "";
        assert_non_null(fgets(line, sizeof line, f));
        fclose(f);
        free(log);
        assert_non_null(strstr(line, "bad --capacity"));

        /* stopped before the first: none runs */
        atomic_store(&g_done, 0);
        o.stop = stop_now;
        assert_int_equal(ca_whatif_sweep(&t, j, n, &o), (long)n);
        assert_int_equal(atomic_load(&g_done), 0);
        free(j);
    }
    ca_trace_free(&t);
    char *rm;
    assert_true(asprintf(&rm, "rm -rf '%s'", dir) > 0);
    assert_int_equal(system(rm), 0);
    free(rm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jobs_per_setting_and_card),
        cmocka_unit_test(the_answer),
        cmocka_unit_test(a_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
