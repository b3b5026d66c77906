/* Tests of mc_check_gpu_peak (common/experiment.c): a GPU peak equal to the
 * host model's passes silently, one within the placement tolerance passes
 * with a finding (when asked), one past it is a failed verification. */
#define _GNU_SOURCE /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "experiment.h"

static const mc_experiment EXP = {
    .claim = "C99",
    .key = "peak_check",
    .title = "test",
    .seed_claim = "test",
    .method = "test",
    .verdict_rule = "test",
    .flags = MC_EXP_NO_GPU,
    .default_repeats = 1,
    .default_warmup = 0,
};

/* Lines of dir/peak_check.csv whose metric column is metric and status is status. */
static int rows(const char *dir, const char *metric, const char *status)
{
    char path[512], line[2048], want[128];
    snprintf(path, sizeof path, "%s/peak_check.csv", dir);
    snprintf(want, sizeof want, ",%s,", metric);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    int n = 0;
    while (fgets(line, sizeof line, fp))
        if (strstr(line, want) && strstr(line, status)) n++;
    fclose(fp);
    return n;
}

static void checks(void **state)
{
    (void)state;
    char dir[] = "/tmp/memclaims-peak-check.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *argv[] = {"peak_check", "--out", dir, NULL};
    mc_run run;
    mc_run_begin(&run, &EXP, 3, argv);
    const unsigned long long model = 4338613760ULL;
    assert_true(mc_check_gpu_peak(&run, "equal", model, model, MC_PLACEMENT_TOL, true));
    /* the H100 reference run's C20 batch 64: 0.051% apart */
    assert_true(mc_check_gpu_peak(&run, "placed elsewhere", 4336385536ULL, model, MC_PLACEMENT_TOL, true));
    assert_true(mc_check_gpu_peak(&run, "placed elsewhere, no note", 4336385536ULL, model, MC_PLACEMENT_TOL, false));
    assert_false(mc_check_gpu_peak(&run, "past the tolerance", model + model / 100, model, MC_PLACEMENT_TOL, true));
    assert_false(mc_check_gpu_peak(&run, "exact wanted", model - 512, model, 0.0, true));
    assert_int_equal(run.verify_failures, 2);
    assert_int_equal(mc_run_end(&run), MC_EXIT_VERIFY);
    assert_int_equal(rows(dir, "finding", "placed elsewhere among real addresses"), 1);
    assert_int_equal(rows(dir, "verification", "failed"), 2);
    char path[600];
    snprintf(path, sizeof path, "%s/peak_check.csv", dir);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(checks)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
