/* Tests of the trace parser (common/trace/trace.c, v1 and v2): well-formed traces in every
 * allowed form, and each kind of malformed line with its exact
 * "TRACE:LINE: reason" message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "trace/trace.h"

static int parse(ca_trace *t, const char *text, char *err, size_t len)
{
    return ca_trace_parse(t, "t", text, strlen(text), err, len);
}

static void good_trace(void **state)
{
    (void)state;
    const char *text =
        "# memclaims-trace v1\n"
        "\n"
        "set limit 1073741823          # bytes\n"
        "set max_split_size 0x4000000\n"
        "set max_non_split_rounding_size 41943040\n"
        "alloc 1 4000000 0x7f7209a00000  # a comment after an operation\r\n"
        "\talloc  2\t513\n"
        "free 1\n"
        "   \n"
        "empty_cache\n"
        "alloc 1 0x10 140737488355328\n"   /* id 1 again, once freed; hex bytes */
        "reset_peak\n"
        "free 2\n"
        "free 1";                          /* no newline at the end */
    ca_trace t;
    char err[256] = "";
    assert_int_equal(parse(&t, text, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_string_equal(t.name, "t");
    assert_int_equal(t.cfg.limit_bytes, 1073741823);
    assert_int_equal(t.cfg.max_split_size, 64ULL << 20);
    assert_int_equal(t.cfg.max_non_split_rounding_size, 40ULL << 20);
    assert_int_equal(t.n_ops, 8);
    assert_int_equal(t.n_slots, 3);
    const ca_trace_op *op = t.ops;
    assert_int_equal(op[0].kind, CA_OP_ALLOC);
    assert_int_equal(op[0].id, 1);
    assert_int_equal(op[0].bytes, 4000000);
    assert_int_equal(op[0].addr, 0x7f7209a00000ULL);
    assert_int_equal(op[0].line, 6);
    assert_int_equal(op[0].slot, 0);
    assert_int_equal(op[1].addr, 0); /* none given */
    assert_int_equal(op[1].bytes, 513);
    assert_int_equal(op[1].slot, 1);
    assert_int_equal(op[2].kind, CA_OP_FREE);
    assert_int_equal(op[2].slot, 0);
    assert_int_equal(op[3].kind, CA_OP_EMPTY_CACHE);
    assert_int_equal(op[3].line, 10);
    assert_int_equal(op[4].bytes, 16);
    assert_int_equal(op[4].addr, 140737488355328ULL);
    assert_int_equal(op[4].slot, 2);
    assert_int_equal(op[5].kind, CA_OP_RESET_PEAK);
    assert_int_equal(op[6].slot, 1);
    assert_int_equal(op[7].slot, 2); /* the second life of id 1 */
    assert_int_equal(op[7].line, 14);
    ca_trace_free(&t);
}

static void defaults_and_empty_input(void **state)
{
    (void)state;
    ca_trace t;
    char err[64];
    assert_int_equal(parse(&t, "", err, sizeof err), 0);
    assert_int_equal(t.n_ops, 0);
    assert_int_equal(t.cfg.limit_bytes, CA_UNLIMITED);
    assert_int_equal(t.cfg.max_split_size, CA_UNLIMITED);
    assert_int_equal(t.cfg.max_non_split_rounding_size, CA_LARGE_BUFFER);
    ca_trace_free(&t);
    assert_int_equal(parse(&t, "# only a comment\n\n", err, sizeof err), 0);
    assert_int_equal(t.n_ops, 0);
    ca_trace_free(&t);
    assert_string_equal(ca_op_name(CA_OP_EMPTY_CACHE), "empty_cache");
}

static void malformed_lines(void **state)
{
    (void)state;
    static const struct {
        const char *text, *err;
    } cases[] = {
        {"bogus 1", "t:1: unknown operation 'bogus'"},
        {"# comment\n\nALLOC 1 5", "t:3: unknown operation 'ALLOC'"},
        {"alloc 1", "t:1: alloc needs an id and a byte count"},
        {"alloc", "t:1: alloc needs an id and a byte count"},
        {"alloc x 5", "t:1: bad id 'x'"},
        {"alloc 0x1 5", "t:1: bad id '0x1'"},
        {"alloc -1 5", "t:1: bad id '-1'"},
        {"alloc 18446744073709551616 5", "t:1: bad id '18446744073709551616'"},
        {"alloc 1 -5", "t:1: bad byte count '-5'"},
        {"alloc 1 5k", "t:1: bad byte count '5k'"},
        {"alloc 1 0", "t:1: byte count must be >= 1"},
        {"alloc 1 0x", "t:1: bad byte count '0x'"},
        {"alloc 1 0x10000000000000000", "t:1: bad byte count '0x10000000000000000'"},
        {"alloc 1 18446744073709551616", "t:1: bad byte count '18446744073709551616'"},
        {"alloc 1 5 0xzz", "t:1: bad address '0xzz'"},
        {"alloc 1 5 0", "t:1: bad address '0'"},
        {"alloc 1 5 0x10 extra", "t:1: unexpected 'extra' after the address"},
        {"free", "t:1: free needs an id"},
        {"free 1 2", "t:1: unexpected '2' after the id"},
        {"empty_cache now", "t:1: unexpected 'now' after the operation"},
        {"reset_peak 1", "t:1: unexpected '1' after the operation"},
        {"free 7", "t:1: free of unknown id 7"},
        {"alloc 1 5\nfree 2", "t:2: free of unknown id 2"},
        {"alloc 1 5\nfree 1\nfree 1", "t:3: id 1 was already freed at line 2"},
        {"alloc 1 5\nalloc 1 6", "t:2: id 1 is already live (allocated at line 1)"},
        {"alloc 1 5\nset limit 5", "t:2: set after the first operation"},
        {"set foo 1", "t:1: unknown setting 'foo'"},
        {"set limit", "t:1: set needs a name and a value"},
        {"set", "t:1: set needs a name and a value"},
        {"set limit x", "t:1: bad value 'x' for limit"},
        {"set limit 5 6", "t:1: unexpected '6' after the value"},
        {"set limit 1\nset limit 2", "t:2: limit set twice"},
        {"set max_split_size 1000",
         "t:1: max_split_size must be a whole number of MiB, >= 20 MiB and <= 2^60"},
        {"set max_split_size 10485760",
         "t:1: max_split_size must be a whole number of MiB, >= 20 MiB and <= 2^60"},
        {"set max_non_split_rounding_size 1048576",
         "t:1: max_non_split_rounding_size must be a whole number of MiB, >= 20 MiB and <= 2^60"},
        {"al\x01loc 1 2", "t:1: unknown operation 'al?loc'"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         "t:1: unknown operation 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ca_trace t;
        char err[256] = "";
        if (parse(&t, cases[i].text, err, sizeof err) != -1 || strcmp(err, cases[i].err) != 0) {
            print_error("case %zu (%s): got '%s', want '%s'\n", i, cases[i].text, err, cases[i].err);
            fail();
        }
        ca_trace_free(&t);
    }
}

static void good_v2_trace(void **state)
{
    (void)state;
    const char *text =
        "# memclaims-trace v2\n"
        "set conf max_split_size_mb:64,roundup_power2_divisions:[256:1,>:4]\n"
        "set limit 1073741823\n"
        "segment 0x7f0001400000 2097152\n"
        "segment 0x7f0000000000 20971520 stream=0x5 pool=large\n"
        "live 9 4000000 0x7f0000000000 stream=5 block=4000256\n"
        "live 8 1000 0x7f0001400000\n"
        "live 7 3000 0x7f0000800000 stream=5\n"
        "alloc 1 4000000 0x7f7209a00000 stream=3\n"
        "alloc 2 1000000000000 oom\n"
        "alloc 2 5 stream=3 oom\n"           /* an oom id is never live: reusable */
        "free 1 stream=3\n"
        "free 9\n"
        "free 8 stream=0\n";
    ca_trace t;
    char err[256] = "";
    assert_int_equal(parse(&t, text, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(t.cfg.max_split_size, 64ULL << 20);
    assert_int_equal(t.cfg.roundup_divisions[0], 1);
    assert_int_equal(t.cfg.roundup_divisions[9], 4);
    assert_int_equal(t.cfg.limit_bytes, 1073741823);
    assert_int_equal(t.n_segs, 2);
    assert_int_equal(t.segs[0].addr, 0x7f0000000000ULL); /* sorted by address */
    assert_false(t.segs[0].small);
    assert_int_equal(t.segs[0].stream, 5);
    assert_int_equal(t.segs[0].n_live, 2);
    assert_true(t.segs[1].small);                        /* 2 MiB: small by default */
    assert_int_equal(t.segs[1].n_live, 1);
    assert_int_equal(t.n_lives, 3);
    const ca_trace_live *l = &t.lives[t.segs[0].first_live];
    assert_int_equal(l[0].id, 9);
    assert_int_equal(l[0].block, 4000256);
    assert_int_equal(l[1].id, 7);                        /* by address within the segment */
    assert_int_equal(l[1].block, 0);
    assert_int_equal(t.lives[t.segs[1].first_live].id, 8);
    assert_int_equal(t.n_ops, 6);
    assert_int_equal(t.n_slots, 6);                      /* 3 live, 3 allocs */
    assert_int_equal(t.n_expect_oom, 2);
    assert_true(t.uses_streams);
    assert_int_equal(t.ops[0].stream, 3);
    assert_false(t.ops[0].expect_oom);
    assert_true(t.ops[1].expect_oom);
    assert_int_equal(t.ops[1].stream, 0);
    assert_int_equal(t.ops[2].stream, 3);
    assert_true(t.ops[3].has_stream);
    assert_int_equal(t.ops[4].slot, l[0].slot);          /* free 9: the live block's slot */
    assert_false(t.ops[4].has_stream);
    ca_trace_free(&t);
}

/* The set lines ca_trace_format_settings writes (build/workload's trace
 * header) read back as the same settings, for each setting with a trace
 * name alone and all of them together; the defaults write nothing. */
static void set_lines_round_trip(void **state)
{
    (void)state;
    ca_config def = ca_config_default();
    char text[1024], err[256] = "";
    assert_int_equal(ca_trace_format_settings(&def, text, sizeof text), 0);
    assert_string_equal(text, "");
    ca_config all = def;
    int named = 0;
    for (size_t k = 0; k <= CA_N_SETTINGS; k++) {
        ca_config c = k < CA_N_SETTINGS ? def : all;
        if (k < CA_N_SETTINGS) {
            if (!ca_settings[k].trace) continue;
            /* a value its check accepts: 64 MiB is a limit and a split size */
            *(uint64_t *)ca_setting_field(&c, &ca_settings[k]) = 64ULL << 20;
            *(uint64_t *)ca_setting_field(&all, &ca_settings[k]) = (uint64_t)(40 + 8 * named++) << 20;
        }
        int n = ca_trace_format_settings(&c, text, sizeof text);
        assert_int_equal(n, (int)strlen(text));
        if (k < CA_N_SETTINGS) {
            char want[128];
            snprintf(want, sizeof want, "set %s 67108864", ca_settings[k].trace);
            assert_string_equal(text, want);
        } else {
            int lines = 1;
            for (const char *p = text; *p; p++) lines += *p == '\n';
            assert_int_equal(lines, named); /* one line each, none after the last */
        }
        strcat(text, "\nalloc 1 5\n");
        ca_trace t;
        if (parse(&t, text, err, sizeof err) != 0) fail_msg("'%s' refused: %s", text, err);
        if (!ca_config_equal(&t.cfg, &c)) fail_msg("'%s' read back differently", text);
        ca_trace_free(&t);
    }
    assert_int_equal(named, 3); /* limit, max_split_size, max_non_split_rounding_size */
    /* build/workload's header, byte for byte as before the table */
    ca_config w = def;
    w.limit_bytes = 1073741823;
    w.max_split_size = 64ULL << 20;
    ca_trace_format_settings(&w, text, sizeof text);
    assert_string_equal(text, "set limit 1073741823\nset max_split_size 67108864");
    /* settings that only `set conf` carries are not set lines */
    w = def;
    w.expandable_segments = true;
    w.gc_threshold = 0.5;
    assert_int_equal(ca_trace_format_settings(&w, text, sizeof text), 0);
}

static void malformed_v2_lines(void **state)
{
    (void)state;
    static const struct {
        const char *text, *err;
    } cases[] = {
        {"alloc 1 5 stream=x", "t:1: bad value 'x' for stream"},
        {"alloc 1 5 stream=", "t:1: bad value '' for stream"},
        {"alloc 1 5 stream=1 stream=2", "t:1: unexpected 'stream=2' after the byte count"},
        {"alloc 1 5 oom oom", "t:1: unexpected 'oom' after the byte count"},
        {"alloc 1 5 stream=1 0x7f00", "t:1: unexpected '0x7f00' after the byte count"},
        {"alloc 1 5 0x7f00 OOM", "t:1: unexpected 'OOM' after the address"},
        {"free 1 stream=2", "t:1: free of unknown id 1"},
        {"alloc 1 5\nfree 1 oom", "t:2: unexpected 'oom' after the id"},
        {"alloc 1 5 oom\nfree 1", "t:2: free of unknown id 1"},
        {"alloc 1 5\nalloc 1 6 oom", "t:2: id 1 is already live (allocated at line 1)"},
        {"set conf foo:1", "t:1: conf: unknown key 'foo' (known: max_split_size_mb, max_non_split_rounding_mb, "
                           "garbage_collection_threshold, roundup_power2_divisions, expandable_segments, backend, "
                           "release_lock_on_cudamalloc, pinned_*)"},
        {"set conf max_split_size_mb:10", "t:1: conf: max_split_size_mb must be >= 20"},
        {"set conf expandable_segments:True\nset conf expandable_segments:False", "t:2: conf set twice"},
        {"segment 0x7f0000000000", "t:1: segment needs an address and a byte count"},
        {"segment 0 2097152", "t:1: bad segment address '0' (nonzero, a multiple of 512)"},
        {"segment 0x7f0000000001 2097152", "t:1: bad segment address '0x7f0000000001' (nonzero, a multiple of 512)"},
        {"segment 0x7f0000000000 1000", "t:1: bad segment size '1000' (nonzero, a multiple of 512)"},
        {"segment 0x7f0000000000 2097152 pool=huge", "t:1: unexpected 'pool=huge' in a segment line"},
        {"segment 0x7f0000000000 2097152 stream=q", "t:1: bad value 'q' for stream"},
        {"alloc 1 5\nsegment 0x7f0000000000 2097152", "t:2: segment after the first operation"},
        {"empty_cache\nlive 1 5 0x7f0000000000", "t:2: live after the first operation"},
        {"live 1 5", "t:1: live needs an id, a byte count and an address"},
        {"live 1 5 0", "t:1: bad address '0'"},
        {"live 1 0 0x7f0000000000", "t:1: bad byte count '0'"},
        {"live 1 5 0x7f0000000000 block=0", "t:1: block size must be >= 1"},
        {"live 1 5 0x7f0000000000 size=3", "t:1: unexpected 'size=3' in a live line"},
        {"segment 0x7f0000000000 2097152\nlive 1 5 0x7f0000000000\nlive 1 5 0x7f0000000200",
         "t:3: id 1 is already live (allocated at line 2)"},
        {"segment 0x7f0000000000 20971520\nsegment 0x7f0000100000 2097152",
         "t:2: segment overlaps the segment at line 1"},
        {"segment 0x7f0000000000 2097152\nlive 1 5 0x7f0000200000", "t:2: live block 0x7f0000200000 lies in no segment"},
        {"live 1 5 0x7f0000000000", "t:1: live block 0x7f0000000000 lies in no segment"},
        {"segment 0x7f0000000000 2097152 stream=1\nlive 1 5 0x7f0000000000",
         "t:2: live block on stream 0 lies in the segment of stream 1 (line 1)"},
        {"alloc 1 5 a b c d e f g h", "t:1: unexpected 'f' (too many fields)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ca_trace t;
        char err[512] = "";
        if (parse(&t, cases[i].text, err, sizeof err) != -1 || strcmp(err, cases[i].err) != 0) {
            print_error("case %zu (%s): got '%s', want '%s'\n", i, cases[i].text, err, cases[i].err);
            fail();
        }
        ca_trace_free(&t);
    }
}

/* A NUL byte is just another byte: the buffer has a length. */
static void nul_bytes_are_malformed_not_the_end(void **state)
{
    (void)state;
    const char text[] = "alloc 1 5\nfr\0ee 1\n";
    ca_trace t;
    char err[128];
    assert_int_equal(ca_trace_parse(&t, "t", text, sizeof text - 1, err, sizeof err), -1);
    assert_string_equal(err, "t:2: unknown operation 'fr?ee'");
    ca_trace_free(&t);
}

static void load_reports_unreadable_files(void **state)
{
    (void)state;
    ca_trace t;
    char err[256];
    assert_int_equal(ca_trace_load(&t, "/nonexistent/x.trace", err, sizeof err), -1);
    assert_string_equal(err, "/nonexistent/x.trace: cannot read: No such file or directory");
    ca_trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_trace),
        cmocka_unit_test(defaults_and_empty_input),
        cmocka_unit_test(malformed_lines),
        cmocka_unit_test(good_v2_trace),
        cmocka_unit_test(set_lines_round_trip),
        cmocka_unit_test(malformed_v2_lines),
        cmocka_unit_test(nul_bytes_are_malformed_not_the_end),
        cmocka_unit_test(load_reports_unreadable_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
