/* Tests of the trace replay (common/replay.c): the exact CSV for a small
 * trace worked out by hand, the effect of the trace's addresses on a
 * tie-break, a free of an id whose request ran out of memory, and an
 * output that cannot be written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/replay.h"

/* Replays text; returns ca_replay's result, the CSV in out (static). */
static int replay_text(const char *text, ca_replay_opts o, const char **out, ca_replay_result *res,
                       char *err, size_t errlen)
{
    static char csv[8192];
    ca_trace t;
    assert_int_equal(ca_trace_parse(&t, "t", text, strlen(text), err, errlen), 0);
    FILE *fp = tmpfile();
    assert_non_null(fp);
    int rc = ca_replay(&t, &o, fp, res, err, errlen);
    rewind(fp);
    size_t n = fread(csv, 1, sizeof csv - 1, fp);
    csv[n] = '\0';
    fclose(fp);
    ca_trace_free(&t);
    *out = csv;
    return rc;
}

static void small_trace_exact_csv(void **state)
{
    (void)state;
    const char *csv;
    char err[256];
    ca_replay_result res;
    /* 4 B: a 2 MiB segment split at 512; 25,000,000 B: a whole 24 MiB segment;
       free, empty_cache (releases the 24 MiB), reset_peak. */
    int rc = replay_text("set limit 1073741823\nalloc 7 4\nalloc 8 25000000\nfree 8\nempty_cache\n"
                         "reset_peak\nfree 7\n",
                         ca_replay_defaults(), &csv, &res, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_string_equal(csv,
        CA_REPLAY_HEADER "\n"
        "1,alloc,7,4,ok,512,2097152,512,2097152,1,512,2096640,1,4,0,0\n"
        "2,alloc,8,25000000,ok,25166336,27262976,25166336,27262976,2,25166336,2096640,1,25000004,0,0\n"
        "3,free,8,,ok,512,27262976,25166336,27262976,2,512,2096640,1,4,0,0\n"
        "4,empty_cache,,,ok,512,2097152,25166336,27262976,1,512,2096640,1,4,0,0\n"
        "5,reset_peak,,,ok,512,2097152,512,2097152,1,512,2096640,1,4,0,0\n"
        "6,free,7,,ok,0,2097152,512,2097152,1,0,0,0,0,0,0\n");
    assert_int_equal(res.steps, 6);
    assert_int_equal(res.addr_mismatches, 0);
}

/* Two free 16 MiB blocks: a whole segment and the back of a split one. The
 * lower address wins the 2 MiB request, so where the segments were placed
 * decides the inactive-split figures and what empty_cache can release. */
static void addresses_decide_ties(void **state)
{
    (void)state;
    const char *text =
        "alloc 2 16777216 0x7f0000000000\n" /* a whole 16 MiB segment, low */
        "alloc 1 4194304 0x7f0002000000\n"  /* a 20 MiB segment, high: 4 MiB live + 16 MiB free */
        "free 2\n"
        "alloc 3 2097152 0x7f0000000000\n"  /* PyTorch took the lower, whole block */
        "empty_cache\n";
    const char *csv;
    char err[256];
    ca_replay_result res;
    ca_replay_opts o = ca_replay_defaults();
    o.debug = true;
    assert_int_equal(replay_text(text, o, &csv, &res, err, sizeof err), 0);
    /* The whole block is split (inactive 16 + 14 MiB); nothing can be released. */
    assert_non_null(strstr(csv, "\n4,alloc,3,2097152,ok,6291456,37748736,20971520,37748736,2,6291456,31457280,2,6291456,0,0\n"
                                "5,empty_cache,,,ok,6291456,37748736,20971520,37748736,2,6291456,31457280,2,6291456,0,0\n"));
    assert_int_equal(res.addr_mismatches, 0);
    assert_int_equal(res.hint_conflicts, 0);

    /* Without addresses the host rule puts the second segment below the
       first: the split block is lower, is split again (inactive 14 MiB), and
       the whole segment goes back to the device. */
    o.use_addresses = false;
    assert_int_equal(replay_text(text, o, &csv, &res, err, sizeof err), 0);
    assert_non_null(strstr(csv, "\n4,alloc,3,2097152,ok,6291456,37748736,20971520,37748736,2,6291456,14680064,1,6291456,0,0\n"
                                "5,empty_cache,,,ok,6291456,20971520,20971520,37748736,1,6291456,14680064,1,6291456,0,0\n"));
}

static void wrong_address_is_counted(void **state)
{
    (void)state;
    const char *csv;
    char err[256];
    ca_replay_result res;
    /* The second request comes from the cache at 0x...200, not where the line says. */
    int rc = replay_text("alloc 1 4 0x7f0000000000\nalloc 2 4 0x7f0000001000\n", ca_replay_defaults(),
                         &csv, &res, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_int_equal(res.addr_mismatches, 1);
}

static void free_of_an_oom_id_is_malformed(void **state)
{
    (void)state;
    const char *csv;
    char err[256];
    ca_replay_result res;
    int rc = replay_text("set limit 1048576\nalloc 1 4\nalloc 2 4\nfree 1\n", ca_replay_defaults(),
                         &csv, &res, err, sizeof err);
    assert_int_equal(rc, -1);
    assert_string_equal(err, "t:4: id 1 was never allocated: its request at line 2 ran out of memory");
    /* The rows before it stand; none for the malformed line. */
    assert_string_equal(csv,
        CA_REPLAY_HEADER "\n"
        "1,alloc,1,4,oom,0,0,0,0,0,0,0,0,0,1,1\n"
        "2,alloc,2,4,oom,0,0,0,0,0,0,0,0,0,2,2\n");
    assert_int_equal(res.steps, 2);
}

static void unwritable_output_is_an_error(void **state)
{
    (void)state;
    FILE *full = fopen("/dev/full", "w");
    if (!full) skip();
    ca_trace t;
    char err[256];
    assert_int_equal(ca_trace_parse(&t, "t", "alloc 1 4\n", 10, err, sizeof err), 0);
    ca_replay_opts o = ca_replay_defaults();
    assert_int_equal(ca_replay(&t, &o, full, NULL, err, sizeof err), -1);
    assert_string_equal(err, "t: could not write the output");
    fclose(full);
    ca_trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_trace_exact_csv),
        cmocka_unit_test(addresses_decide_ties),
        cmocka_unit_test(wrong_address_is_counted),
        cmocka_unit_test(free_of_an_oom_id_is_malformed),
        cmocka_unit_test(unwritable_output_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
