/* Tests of the trace replay (common/trace/replay.c): the exact CSV for a
 * small trace worked out by hand, the effect of the trace's addresses on a
 * tie-break, a free of an id whose request ran out of memory, an output that
 * cannot be written; v2: the exact summary of a trace with a preloaded
 * segment, a second stream and a request PyTorch refused, the same under
 * other settings, and v2's replay errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/replay.h"

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

static const char *v2_text = "segment 0x7f0000000000 20971520\n"
                             "live 100 4000000 0x7f0000000000\n"
                             "alloc 1 4000000 stream=7\n"
                             "alloc 2 90000000000 oom\n"
                             "free 100\n";

/* The summary of a v2 trace, by hand: the preloaded segment holds 4,000,256 B
 * (20 MiB reserved); stream 7 cannot use its free back, so a second segment
 * (reserved 40 MiB, the peak; the largest free block 20 MiB - 4,000,256 B);
 * the 90 GB request PyTorch refused is refused here too (80 GiB: one retry,
 * one OOM). */
static void summary_of_a_v2_trace(void **state)
{
    (void)state;
    const char *out;
    char err[256];
    ca_replay_result res;
    ca_replay_opts o = ca_replay_defaults();
    o.summary = true;
    assert_int_equal(replay_text(v2_text, o, &out, &res, err, sizeof err), 0);
    assert_string_equal(out,
        "{\"steps\":3,\"peak_allocated\":8000512,\"peak_reserved\":41943040,\"peak_requested\":8000000,"
        "\"alloc_retries\":1,\"ooms\":1,\"after_first_oom\":{\"alloc_retries\":0,\"ooms\":0},\"refused\":1,\"preload_refused\":false,\"first_oom_step\":2,\"first_oom_bytes\":90000000000,"
        "\"segments_peak\":2,\"largest_free_at_peak_reserved\":16971264,\"free_at_peak_reserved\":33942528,"
        "\"expected_ooms\":1,\"expected_ooms_granted\":0,\"unexpected_ooms\":0,\"device_allocs\":1,"
        "\"device_frees\":0,\"addr_mismatches\":0,\"skipped_frees\":0,\"conf\":\"\",\"limit\":null,"
        "\"failed\":[{\"step\":2,\"id\":2,\"bytes\":90000000000}]}\n");

    /* On a 200 GiB device the model grants it (a 90,001,375,232 B segment,
     * split): counted, and freed at once. */
    o.capacity = 200ULL << 30;
    assert_int_equal(replay_text(v2_text, o, &out, &res, err, sizeof err), 0);
    assert_int_equal(res.expected_ooms, 1);
    assert_int_equal(res.expected_ooms_granted, 1);
    assert_int_equal(res.refused, 0);
    assert_int_equal(res.first_oom_step, 0);
    assert_non_null(strstr(out, "\"first_oom_step\":null,\"first_oom_bytes\":null"));
    assert_non_null(strstr(out, "\"ooms\":0,\"after_first_oom\":null,"));
    assert_int_equal(res.peak_reserved, 41943040 + 90001375232LL);
    assert_int_equal(res.peak_allocated, 8000512 + 90000000000LL);

    /* Under other settings: a limit of 30 MiB. Stream 7's segment no longer fits. */
    ca_config cfg = ca_config_default();
    cfg.limit_bytes = 30ULL << 20;
    o = ca_replay_defaults();
    o.cfg = &cfg;
    assert_int_equal(replay_text(v2_text, o, &out, &res, err, sizeof err), 0);
    assert_int_equal(res.refused, 2);
    assert_int_equal(res.unexpected_ooms, 1);
    assert_int_equal(res.first_oom_step, 1);
    assert_int_equal(res.peak_reserved, 20971520);
    assert_int_equal(res.failed[0].id, 1);
    assert_int_equal(res.failed[1].id, 2);
    /* Each refused request costs one retry (release_cached_blocks, then
     * alloc_block again) and one OOM: PyTorch's process would stop at the
     * first, so alloc_retries and ooms count that one; the second is after. */
    assert_int_equal(res.alloc_retries, 1);
    assert_int_equal(res.ooms, 1);
    assert_int_equal(res.after_oom_retries, 1);
    assert_int_equal(res.after_oom_ooms, 1);

    /* What-if: a request the model refuses leaves its later free nothing to
     * do; the row says skipped (under the trace's own settings: an error). */
    cfg.limit_bytes = 20ULL << 20;
    o.summary = false;
    assert_int_equal(replay_text("alloc 1 30000000\nfree 1\n", o, &out, &res, err, sizeof err), 0);
    assert_int_equal(res.skipped_frees, 1);
    assert_non_null(strstr(out, "\n2,free,1,,skipped,0,0,"));
}

static void v2_replay_errors(void **state)
{
    (void)state;
    const char *out;
    char err[256];
    ca_replay_result res;
    assert_int_equal(replay_text("alloc 1 5 stream=7\nfree 1 stream=2\n", ca_replay_defaults(), &out, &res,
                                 err, sizeof err), -1);
    assert_string_equal(err, "t:2: id 1 is freed on stream 2 but was allocated on stream 7");
    assert_int_equal(replay_text("segment 0x7f0000000000 2097152\nlive 1 3000000 0x7f0000000000\n",
                                 ca_replay_defaults(), &out, &res, err, sizeof err), -1);
    assert_string_equal(err, "t:1: live block 0x7f0000000000 of 3000320 bytes (3000000 requested) does not "
                             "fit before 0x7f0000200000");
    assert_int_equal(replay_text("segment 0x7f0000000000 2097152\nlive 1 512 0x7f0000000000\n"
                                 "live 2 512 0x7f0000000000\n",
                                 ca_replay_defaults(), &out, &res, err, sizeof err), -1);
    assert_string_equal(err, "t:1: live block 0x7f0000000000 of 512 bytes (512 requested) does not fit before "
                             "0x7f0000000000");
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
        cmocka_unit_test(summary_of_a_v2_trace),
        cmocka_unit_test(v2_replay_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
