/* Tests of common/options.c: good input parses, every kind of bad input is
 * refused with one line and MC_EXIT_USAGE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "check.h"
#include "options.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int parse(mc_options *o, int argc, char **argv, bool model_only, const mc_extra_opt *x,
                 char *err)
{
    return mc_options_parse(o, argc, argv, 7, 2, model_only, x, err, 256);
}

static void defaults(void **state)
{
    (void)state;
    char *argv[] = {"exp"};
    mc_options o;
    char err[256];
    assert_int_equal(parse(&o, ARGC(argv), argv, false, NULL, err), 0);
    assert_int_equal(o.device, 0);
    assert_int_equal(o.repeats, 7);
    assert_int_equal(o.warmup, 2);
    assert_false(o.quick);
    assert_null(o.out_dir);
}

static void all_common_options(void **state)
{
    (void)state;
    char *argv[] = {"exp", "--device", "1", "--repeats", "11", "--warmup", "0", "--quick",
                    "--out", "/tmp/x", "--model-only"};
    mc_options o;
    char err[256];
    assert_int_equal(parse(&o, ARGC(argv), argv, true, NULL, err), 0);
    assert_int_equal(o.device, 1);
    assert_int_equal(o.repeats, 11);
    assert_int_equal(o.warmup, 0);
    assert_true(o.quick);
    assert_true(o.model_only);
    assert_string_equal(o.out_dir, "/tmp/x");
}

static void refuse(char **argv, int argc, bool model_only, const char *expect_in_err)
{
    mc_options o;
    char err[256];
    assert_int_equal(parse(&o, argc, argv, model_only, NULL, err), MC_EXIT_USAGE);
    assert_non_null(strstr(err, expect_in_err));
    assert_null(strchr(err, '\n')); /* one line */
}

static void bad_input(void **state)
{
    (void)state;
    char *unknown[] = {"exp", "--frobnicate"};
    refuse(unknown, 2, false, "unknown option");
    char *positional[] = {"exp", "stray"};
    refuse(positional, 2, false, "unexpected argument");
    char *missing[] = {"exp", "--repeats"};
    refuse(missing, 2, false, "needs a value");
    char *zero[] = {"exp", "--repeats", "0"};
    refuse(zero, 3, false, "--repeats");
    char *negative[] = {"exp", "--warmup", "-1"};
    refuse(negative, 3, false, "--warmup");
    char *text[] = {"exp", "--device", "one"};
    refuse(text, 3, false, "--device");
    char *trailing[] = {"exp", "--repeats", "5x"};
    refuse(trailing, 3, false, "--repeats");
    char *overflow[] = {"exp", "--repeats", "99999999999999999999"};
    refuse(overflow, 3, false, "--repeats");
    char *model[] = {"exp", "--model-only"};
    refuse(model, 2, false, "no model-only mode");
}

static void bytes(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(mc_parse_bytes("4096", &v), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(mc_parse_bytes("64M", &v), 0);
    assert_int_equal(v, 64ULL << 20);
    assert_int_equal(mc_parse_bytes("2GiB", &v), 0);
    assert_int_equal(v, 2ULL << 30);
    assert_int_equal(mc_parse_bytes("3KiB", &v), 0);
    assert_int_equal(v, 3072);
    assert_int_equal(mc_parse_bytes("0", &v), -1);
    assert_int_equal(mc_parse_bytes("", &v), -1);
    assert_int_equal(mc_parse_bytes("-5", &v), -1);
    assert_int_equal(mc_parse_bytes("5T", &v), -1);
    assert_int_equal(mc_parse_bytes("18446744073709551616", &v), -1); /* 2^64 */
    assert_int_equal(mc_parse_bytes("17179869184G", &v), -1);         /* 2^64 bytes */
}

static void extra_options(void **state)
{
    (void)state;
    bool flag = false;
    int count = 0;
    uint64_t limit = 0;
    const char *name = NULL;
    const mc_extra_opt extra[] = {
        {"checkpoint", MC_OPT_FLAG, &flag, "a flag"},
        {"layers", MC_OPT_COUNT, &count, "a count"},
        {"limit", MC_OPT_BYTES, &limit, "bytes"},
        {"name", MC_OPT_STRING, &name, "text"},
        {NULL, MC_OPT_FLAG, NULL, NULL},
    };
    char *argv[] = {"exp", "--checkpoint", "--layers", "4", "--limit", "1G", "--name", "x"};
    mc_options o;
    char err[256];
    assert_int_equal(parse(&o, ARGC(argv), argv, false, extra, err), 0);
    assert_true(flag);
    assert_int_equal(count, 4);
    assert_int_equal(limit, 1ULL << 30);
    assert_string_equal(name, "x");

    char *bad_count[] = {"exp", "--layers", "0"};
    assert_int_equal(parse(&o, 3, bad_count, false, extra, err), MC_EXIT_USAGE);
    assert_non_null(strstr(err, "--layers"));
    char *bad_limit[] = {"exp", "--limit", "lots"};
    assert_int_equal(parse(&o, 3, bad_limit, false, extra, err), MC_EXIT_USAGE);
    assert_non_null(strstr(err, "--limit"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults),
        cmocka_unit_test(all_common_options),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(bytes),
        cmocka_unit_test(extra_options),
    };
    return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
