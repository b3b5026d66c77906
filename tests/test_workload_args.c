/* Tests of the training workload's command line (common/workload_args.c):
 * every flag parsed into the config, and each malformed line (out-of-range,
 * non-numeric, unknown, missing or stray values) refused with one line and
 * MC_EXIT_USAGE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "test_util.h"
#include "workload/workload_args.h"

static int parse(const char *line, mc_workload_cli *cli, char *err)
{
    char copy[512];
    snprintf(copy, sizeof copy, "workload %s", line);
    char *argv[64];
    int argc = 0;
    for (char *tok = strtok(copy, " "); tok && argc < 64; tok = strtok(NULL, " ")) argv[argc++] = tok;
    return mc_workload_parse_args(cli, argc, argv, err, 256);
}

static void cli_good(void **state)
{
    (void)state;
    mc_workload_cli cli;
    char err[256];
    assert_int_equal(parse("--layers 3 --in 64 --width 32 --out 8 --batch 16 --optimizer adam "
                           "--precision bf16 --accum 4 --checkpoint --steps 7 --model-only "
                           "--limit 2G --lr 0.5", &cli, err), 0);
    assert_int_equal(cli.cfg.layers, 3);
    assert_int_equal(cli.cfg.in, 64);
    assert_int_equal(cli.cfg.width, 32);
    assert_int_equal(cli.cfg.out, 8);
    assert_int_equal(cli.cfg.batch, 16);
    assert_int_equal(cli.cfg.optimizer, MC_WL_ADAM);
    assert_int_equal(cli.cfg.precision, MC_WL_BF16);
    assert_int_equal(cli.cfg.accum, 4);
    assert_true(cli.cfg.checkpoint && cli.model_only);
    assert_int_equal(cli.steps, 7);
    assert_int_equal(cli.cfg.alloc.limit_bytes, 2ULL << 30);
    assert_near(cli.cfg.lr, 0.5, 0);
    assert_int_equal(parse("--verify", &cli, err), 0);
    assert_int_equal(parse("--help", &cli, err), 0);
}

static void cli_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "--layers 1 --in 4 --width 4 --out 4 --batch 4",
        "--layers 3 --in 4 --width 4 --out 4 --batch 6 --accum 4",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --optimizer rmsprop",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --precision fp8",
        "--layers 3 --in 4 --width 4 --out 4 --batch 0",
        "--layers 3 --in 4 --width 4 --out 4",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --frobnicate",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --steps",
        "--layers 3 --in x --width 4 --out 4 --batch 4",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --limit 0",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --inject-overflow 2",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --max-split-size 1M",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 stray",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --lr -1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mc_workload_cli cli;
        char err[256] = "";
        assert_int_equal(parse(bad[i], &cli, err), MC_EXIT_USAGE);
        assert_true(err[0] != '\0');
        assert_null(strchr(err, '\n'));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cli_good),
        cmocka_unit_test(cli_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
