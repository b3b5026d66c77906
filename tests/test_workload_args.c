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

/* The words live in a static buffer, as argv does for a whole program: the
 * parsed config keeps pointers into them (--profile-csv FILE). */
static int parse(const char *line, mc_workload_cli *cli, char *err)
{
    static char copy[512];
    static char *argv[64];
    snprintf(copy, sizeof copy, "workload %s", line);
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
    assert_int_equal(cli.cfg.checkpoint_segments, 0);
    assert_int_equal(parse("--layers 3 --in 4 --width 4 --out 4 --batch 4 --checkpoint-segments 5",
                           &cli, err), 0);
    assert_int_equal(cli.cfg.checkpoint_segments, 5);
    assert_false(cli.cfg.checkpoint);
    assert_int_equal(parse("--verify", &cli, err), 0);
    assert_int_equal(parse("--help", &cli, err), 0);
    assert_false(cli.profile);
    assert_null(cli.profile_csv);
    /* --profile: one more step after the CSV's, timed by kind; --profile-csv implies it */
    assert_int_equal(parse("--layers 3 --in 4 --width 4 --out 4 --batch 4 --profile", &cli, err), 0);
    assert_true(cli.profile);
    assert_null(cli.profile_csv);
    assert_int_equal(parse("--layers 3 --in 4 --width 4 --out 4 --batch 4 --profile-csv p.csv", &cli, err), 0);
    assert_true(cli.profile);
    assert_string_equal(cli.profile_csv, "p.csv");
    assert_int_equal(parse("--arch encoder --seq 8 --batch 2 --d-model 64 --heads 4 --profile", &cli, err), 0);
    assert_true(cli.profile);
    assert_int_equal(parse("--profile --help", &cli, err), 0); /* help wins */
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
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --checkpoint-segments 6",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --checkpoint-segments 0",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --checkpoint-segments 2 --checkpoint",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --checkpoint-segments 2 --precision fp16",
        "--arch encoder --seq 8 --batch 2 --d-model 64 --heads 4 --checkpoint-segments 2",
        /* --profile times GPU operations: not without the GPU, not with the check */
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --profile --model-only",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --profile-csv p.csv --model-only",
        "--arch encoder --seq 8 --batch 2 --d-model 64 --heads 4 --profile --model-only",
        "--profile --verify",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --profile-csv",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mc_workload_cli cli;
        char err[256] = "";
        assert_int_equal(parse(bad[i], &cli, err), MC_EXIT_USAGE);
        assert_true(err[0] != '\0');
        assert_null(strchr(err, '\n'));
    }
}

/* --arch transformer|encoder: every flag into mc_tfm_config, PyTorch's defaults. */
static void cli_transformer_good(void **state)
{
    (void)state;
    mc_workload_cli cli;
    char err[256];
    assert_int_equal(parse("--arch transformer --seq 64 --batch 100 --model-only", &cli, err), 0);
    assert_int_equal(cli.arch, MC_WL_ARCH_TRANSFORMER);
    assert_int_equal(cli.tfm.arch, MC_TFM_TRANSFORMER);
    assert_int_equal(cli.tfm.d_model, 512);
    assert_int_equal(cli.tfm.heads, 8);
    assert_int_equal(cli.tfm.enc_layers, 6);
    assert_int_equal(cli.tfm.dec_layers, 6);
    assert_int_equal(cli.tfm.ff, 2048);
    assert_near(cli.tfm.dropout, 0.1, 0);
    assert_int_equal(cli.tfm.seq, 64);
    assert_int_equal(cli.tfm.batch, 100);
    assert_false(cli.tfm.batch_first || cli.tfm.norm_first || cli.tfm.causal || cli.tfm.checkpoint);
    assert_int_equal(parse("--model-only --d-model 256 --heads 4 --enc-layers 3 --dec-layers 2 --ff 512 "
                           "--dropout 0 --activation gelu --norm-first --batch-first --seq 32 --batch 8 "
                           "--optimizer adamw --precision fp16 --accum 4 --checkpoint --steps 3 "
                           "--arch encoder --causal --sms 114 --limit 1G", &cli, err), 0);
    assert_int_equal(cli.tfm.arch, MC_TFM_ENCODER);
    assert_int_equal(cli.tfm.d_model, 256);
    assert_int_equal(cli.tfm.heads, 4);
    assert_int_equal(cli.tfm.enc_layers, 3);
    assert_int_equal(cli.tfm.dec_layers, 2);
    assert_int_equal(cli.tfm.ff, 512);
    assert_near(cli.tfm.dropout, 0, 0);
    assert_int_equal(cli.tfm.activation, MC_TFM_GELU);
    assert_true(cli.tfm.norm_first && cli.tfm.batch_first && cli.tfm.causal && cli.tfm.checkpoint);
    assert_int_equal(cli.tfm.optimizer, MC_WL_ADAMW);
    assert_int_equal(cli.tfm.precision, MC_WL_FP16);
    assert_int_equal(cli.tfm.accum, 4);
    assert_int_equal(cli.tfm.sm_count, 114);
    assert_int_equal(cli.tfm.alloc.limit_bytes, 1ULL << 30);
    assert_int_equal(cli.steps, 3);
    /* the MLP stays the default and keeps its flags */
    assert_int_equal(parse("--arch mlp --layers 3 --in 4 --width 4 --out 4 --batch 4", &cli, err), 0);
    assert_int_equal(cli.arch, MC_WL_ARCH_MLP);
}

static void cli_transformer_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "--arch transformer --seq 16 --batch 4 --heads 3",          /* 512 % 3 */
        "--arch transformer --seq 16 --batch 4 --causal",           /* causal needs the encoder */
        "--arch encoder --seq 0 --batch 4",                         /* a sequence of 0 */
        "--arch transformer --batch 4",                             /* no --seq */
        "--arch transformer --seq 16",                              /* no --batch */
        "--arch transformer --seq 16 --batch 6 --accum 4",
        "--arch transformer --seq 16 --batch 4 --dropout 1",
        "--arch transformer --seq 16 --batch 4 --dropout x",
        "--arch transformer --seq 16 --batch 4 --activation tanh",
        "--arch transformer --seq 16 --batch 4 --optimizer lamb",
        "--arch transformer --seq 16 --batch 4 --layers 3",         /* an MLP flag */
        "--arch transformer --seq 16 --batch 4 --inject-overflow 1",
        "--arch transformer --seq 16 --batch 4 --d-model 0",
        "--arch transformer --seq 16 --batch 4 --enc-layers",
        "--arch transformer --seq 16 --batch 4 --precision fp16 --d-model 96 --heads 8", /* head 12 */
        "--arch rnn --seq 16 --batch 4",
        "--arch",
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --d-model 64", /* a Transformer flag, MLP */
        "--layers 3 --in 4 --width 4 --out 4 --batch 4 --optimizer adamw",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mc_workload_cli cli;
        char err[256] = "";
        if (parse(bad[i], &cli, err) != MC_EXIT_USAGE) print_error("accepted: %s\n", bad[i]);
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
        cmocka_unit_test(cli_transformer_good),
        cmocka_unit_test(cli_transformer_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
