/* Tests of launcher.h: torchrun's and mpirun's variables read strictly,
 * each bad case refused with a line naming the variable. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "workload/sharded/launcher.h"

static const char *const ALL[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                  "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                                  "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE"};

static int clear(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof ALL / sizeof ALL[0]; i++) unsetenv(ALL[i]);
    return 0;
}

static void torchrun(const char *rank, const char *world, const char *local)
{
    setenv("RANK", rank, 1);
    setenv("WORLD_SIZE", world, 1);
    setenv("LOCAL_RANK", local, 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "29500", 1);
}

/* Reads the environment, expecting failure with err containing want. */
static void refused(const char *want)
{
    mc_launch l;
    char err[256] = "";
    assert_int_equal(mc_launch_from_env(&l, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("error \"%s\" does not say \"%s\"", err, want);
    assert_null(strchr(err, '\n'));
}

static void test_none(void **state)
{
    (void)state;
    mc_launch l;
    char err[256] = "";
    assert_int_equal(mc_launch_from_env(&l, err, sizeof err), 0);
    assert_int_equal(l.kind, MC_LAUNCH_NONE);
    assert_string_equal(mc_launch_kind_name(l.kind), "none");
}

static void test_torchrun(void **state)
{
    (void)state;
    torchrun("5", "8", "1");
    mc_launch l;
    char err[256] = "";
    assert_int_equal(mc_launch_from_env(&l, err, sizeof err), 0);
    assert_int_equal(l.kind, MC_LAUNCH_TORCHRUN);
    assert_int_equal(l.rank, 5);
    assert_int_equal(l.world, 8);
    assert_int_equal(l.local_rank, 1);
    assert_string_equal(l.addr, "127.0.0.1");
    assert_int_equal(l.port, 29500);
}

/* torchrun's agent holds MASTER_PORT: rank 0 listens on the next one; not at 65535. */
static void test_agent_store(void **state)
{
    (void)state;
    torchrun("0", "2", "0");
    setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
    mc_launch l;
    char err[256] = "";
    assert_int_equal(mc_launch_from_env(&l, err, sizeof err), 0);
    assert_int_equal(l.port, 29501);
    setenv("TORCHELASTIC_USE_AGENT_STORE", "False", 1);
    assert_int_equal(mc_launch_from_env(&l, err, sizeof err), 0);
    assert_int_equal(l.port, 29500);
    setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
    setenv("MASTER_PORT", "65535", 1);
    refused("no port follows it");
}

static void test_mpirun(void **state)
{
    (void)state;
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
    setenv("MASTER_ADDR", "node0", 1);
    setenv("MASTER_PORT", "65535", 1);
    mc_launch l;
    char err[256] = "";
    assert_int_equal(mc_launch_from_env(&l, err, sizeof err), 0);
    assert_int_equal(l.kind, MC_LAUNCH_MPIRUN);
    assert_string_equal(mc_launch_kind_name(l.kind), "mpirun");
    assert_int_equal(l.world, 2);
    assert_string_equal(l.addr, "node0");
    assert_int_equal(l.port, 65535);
}

static void test_both_agree(void **state)
{
    (void)state;
    torchrun("1", "2", "1");
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    mc_launch l;
    char err[256] = "";
    assert_int_equal(mc_launch_from_env(&l, err, sizeof err), 0);
    assert_int_equal(l.kind, MC_LAUNCH_TORCHRUN);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    refused("RANK=1 but OMPI_COMM_WORLD_RANK=0: two launchers disagree");
}

static void test_partial(void **state)
{
    (void)state;
    setenv("RANK", "0", 1);
    refused("RANK set but not WORLD_SIZE LOCAL_RANK: torchrun sets all three");
    clear(NULL);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
    refused("OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK set but not OMPI_COMM_WORLD_RANK");
    clear(NULL);
    torchrun("0", "2", "0");
    unsetenv("MASTER_PORT");
    refused("MASTER_PORT not set");
    unsetenv("MASTER_ADDR");
    refused("MASTER_ADDR not set");
    clear(NULL);
    setenv("MASTER_ADDR", "x", 1);
    refused("MASTER_ADDR set but no rank");
    clear(NULL);
    torchrun("0", "2", "0");
    setenv("MASTER_ADDR", "", 1);
    refused("MASTER_ADDR: empty");
}

static void test_numbers(void **state)
{
    (void)state;
    static const struct { const char *r, *w, *l, *want; } CASES[] = {
        {"2", "2", "0", "RANK=2: not below WORLD_SIZE=2"},
        {"0", "2", "2", "LOCAL_RANK=2: not below WORLD_SIZE=2"},
        {"0", "0", "0", "WORLD_SIZE=0: the world needs at least 1 rank"},
        {"one", "2", "0", "RANK=\"one\": not a non-negative decimal number"},
        {"-1", "2", "0", "RANK=\"-1\": not a non-negative decimal number"},
        {"0", "2 ", "0", "WORLD_SIZE=\"2 \": not a non-negative decimal number"},
        {"0", "", "0", "WORLD_SIZE=\"\": not a non-negative decimal number"},
        {"0", "99999999999999999999", "0", "WORLD_SIZE=99999999999999999999: larger than"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        torchrun(CASES[i].r, CASES[i].w, CASES[i].l);
        refused(CASES[i].want);
    }
    torchrun("0", "2", "0");
    setenv("MASTER_PORT", "0", 1);
    refused("MASTER_PORT=0: not in 1..65535");
    setenv("MASTER_PORT", "65536", 1);
    refused("MASTER_PORT=65536: larger than 65535");
    setenv("MASTER_PORT", "29500x", 1);
    refused("MASTER_PORT=\"29500x\": not a non-negative decimal number");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_none, clear),     cmocka_unit_test_setup(test_torchrun, clear),
        cmocka_unit_test_setup(test_agent_store, clear), cmocka_unit_test_setup(test_mpirun, clear),   cmocka_unit_test_setup(test_both_agree, clear),
        cmocka_unit_test_setup(test_partial, clear),  cmocka_unit_test_setup(test_numbers, clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
