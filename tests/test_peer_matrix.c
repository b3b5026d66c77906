/* Tests of C22's matrix, host side (experiments/support/peer_matrix_rows.c):
 * the metric names, the host's element-by-element check of a + b, the rows
 * of a 4-GPU matrix (every ordered pair once per method, pairs without peer
 * access marked, a wrong cell failed), the verdict over every pair, and that
 * tests/fixtures/peer_matrix/peer_copy.csv (the chart's 4-GPU fixture)
 * holds exactly the rows and verdict this code writes for its synthetic
 * matrix (MC_PEER_MATRIX_ROWS=FILE writes them to FILE: the fixture is the
 * reference H200 pair's sweep rows, its verdict left out, then these). */
#define _GNU_SOURCE /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/peer_matrix.h"
#include "test_util.h"

#define FIXTURE "tests/fixtures/peer_matrix/peer_copy.csv"

static const mc_experiment EXP = {.claim = "C22", .key = "peer_copy"};

/* The fixture's matrix: 4 GPUs, 256 MiB, every pair with peer access but
 * 1 <-> 3 when nopeer13; figures a synthetic NVLink box's (B/s), distinct
 * per pair so that a swapped source and destination shows. */
static void synthetic(mc_pm_result *m, bool nopeer13)
{
    static const double base[MC_PM_NMETH] = {38e9, 375e9, 360e9, 340e9};
    memset(m, 0, sizeof *m);
    m->n = m->visible = 4;
    m->bytes = 256ull << 20;
    m->combine_bytes = MC_PM_COMBINE_MAX_BYTES;
    m->samples = 5;
    m->loops = MC_PM_LOOPS;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) m->can[i][j] = i != j && !(nopeer13 && (i + j == 4) && (i == 1 || i == 3));
    for (int k = 0; k < MC_PM_NMETH; k++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                if (i == j) continue;
                mc_pm_cell *c = &m->cell[k][i][j];
                if (k != MC_PM_PEER_OFF && !mc_pm_pair_peer(m, i, j)) {
                    c->state = MC_PM_NO_PEER;
                    continue;
                }
                double v = base[k] + (i * 4 + j) * 1e9, x[5];
                for (int r = 0; r < 5; r++) x[r] = v + (r - 2) * 0.5e9;
                c->bw = mc_stats_of(x, 5);
                c->state = MC_PM_OK;
            }
}

static const mc_pm_sweep SWEEP = {.peer = true, .size = "1 GiB", .off01 = 38.1e9, .on01 = 394.7e9,
                                  .via_host01 = 27.7e9, .read_by0 = 372.9e9};

/* Rows of mc_pm_emit (and the verdict row where v >= 0) as one string. */
static char *emitted(const mc_pm_result *m, int *verify_failures)
{
    char *buf = NULL;
    size_t len = 0;
    mc_run run;
    memset(&run, 0, sizeof run);
    run.exp = &EXP;
    run.out.fp = open_memstream(&buf, &len);
    assert_non_null(run.out.fp);
    mc_pm_emit(&run, m);
    char note[2048];
    mc_verdict v = mc_pm_verdict(&SWEEP, m, note, sizeof note);
    mc_emit_verdict(&run, v, "%s", note);
    fclose(run.out.fp);
    if (verify_failures) *verify_failures = run.verify_failures;
    return buf;
}

/* Lines of s with field f (1-based, no quoted commas before it) equal to want. */
static int count_field(const char *s, int f, const char *want)
{
    int n = 0;
    for (const char *line = s; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        const char *p = line;
        for (int k = 1; k < f && p; k++) p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
        if (p && !strncmp(p, want, strlen(want)) && (p[strlen(want)] == ',' || p[strlen(want)] == '\n')) n++;
    }
    return n;
}

static void metric_names(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(mc_pm_metric(b, sizeof b, 0, 1, "bandwidth"), "gpu0_to_gpu1_bandwidth");
    assert_string_equal(mc_pm_metric(b, sizeof b, 12, 3, "mismatches"), "gpu12_to_gpu3_mismatches");
    assert_string_equal(MC_PM_VARIANT[MC_PM_KERNEL_READ], "matrix_kernel_read");
}

static void host_check_finds_each_wrong_element(void **state)
{
    (void)state;
    enum { N = 4096 };
    float *c = malloc(N * sizeof *c);
    assert_non_null(c);
    for (uint64_t k = 0; k < N; k++) c[k] = mc_pm_value(7, k) + mc_pm_value(9, k);
    assert_int_equal(mc_pm_combine_check_host(c, N, 7, 9), 0);
    assert_int_equal(mc_pm_combine_check_host(c, N, 9, 7), 0);     /* a + b == b + a */
    assert_true(mc_pm_combine_check_host(c, N, 7, 8) > N - 8);      /* another operand: nearly all wrong */
    uint32_t poison = MC_PATTERN_POISON;
    memcpy(&c[17], &poison, sizeof poison);                         /* never written */
    c[4095] += 1.0f;                                                /* the last element */
    assert_int_equal(mc_pm_combine_check_host(c, N, 7, 9), 2);
    /* Values are integers within 16 bits, so every sum is exact in float. */
    for (uint64_t k = 0; k < N; k++) {
        float v = mc_pm_value(3, k);
        assert_true(v >= -32768.0f && v <= 32767.0f && v == (float)(int)v);
    }
    free(c);
}

static void rows_cover_every_ordered_pair(void **state)
{
    (void)state;
    mc_pm_result m;
    synthetic(&m, true);
    int vf = -1;
    char *s = emitted(&m, &vf);
    assert_int_equal(vf, 0);
    assert_int_equal(count_field(s, 6, "gpu_count"), 1);
    /* 12 ordered pairs per method; 1 <-> 3 (2 ordered pairs) unmeasurable with peer access */
    assert_int_equal(count_field(s, 3, "matrix_peer_off"), 12);
    assert_int_equal(count_field(s, 3, "matrix_peer_on"), 12);
    assert_int_equal(count_field(s, 3, "matrix_kernel_read"), 12);
    assert_int_equal(count_field(s, 3, "matrix_combine"), 12 + 10); /* + a mismatches row per measured pair */
    assert_int_equal(count_field(s, 14, "no_peer_access"), 3 * 2);
    assert_int_equal(count_field(s, 14, "failed"), 0);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            char met[64];
            mc_pm_metric(met, sizeof met, i, j, "bandwidth");
            assert_int_equal(count_field(s, 6, met), i == j ? 0 : MC_PM_NMETH);
        }
    assert_non_null(strstr(s, "C22,peer_copy,matrix_peer_on,bytes,268435456,gpu1_to_gpu3_bandwidth,B/s,0,"));
    assert_non_null(strstr(s, ",no_peer_access,\"not measurable: cudaDeviceCanAccessPeer(1, 3) = 0, (3, 1) = 0\""));
    assert_non_null(strstr(s, "C22,peer_copy,matrix_combine,bytes,33554432,gpu2_to_gpu0_mismatches,count,1,0,"));
    /* the figure of 2 -> 1 is its own (375 + 9 GB/s), not 1 -> 2's */
    assert_non_null(strstr(s, "matrix_peer_on,bytes,268435456,gpu2_to_gpu1_bandwidth,B/s,5,384000000000,"));
    free(s);
}

static void a_wrong_cell_fails_and_makes_the_verdict_inconclusive(void **state)
{
    (void)state;
    mc_pm_result m;
    synthetic(&m, false);
    m.cell[MC_PM_COMBINE][3][2].host_bad = 1;
    m.cell[MC_PM_COMBINE][3][2].state = MC_PM_WRONG;
    int vf = 0;
    char *s = emitted(&m, &vf);
    assert_int_equal(vf, 1);
    assert_non_null(strstr(s, "gpu3_to_gpu2_bandwidth,B/s,5,"));
    assert_non_null(strstr(s, "gpu3_to_gpu2_mismatches,count,1,1,1,1,1,0,failed,"));
    assert_non_null(strstr(s, ",verdict,,0,,,,,,inconclusive,\"1 words or elements wrong"));
    free(s);
}

static void verdict_over_every_pair(void **state)
{
    (void)state;
    mc_pm_result m;
    char note[2048];
    synthetic(&m, false);
    assert_int_equal(mc_pm_verdict(&SWEEP, &m, note, sizeof note), MC_HOLDS_PARTLY);
    assert_non_null(strstr(note, "over the 12 ordered pairs of 4 GPUs"));
    assert_non_null(strstr(note, "in place on 12 (256 MiB, 361.0 to 374.0 GB/s, slowest GPU 0 -> 1)"));
    assert_non_null(strstr(note, "every element right (host check), on 12; every pair has peer access"));
    synthetic(&m, true);
    assert_int_equal(mc_pm_verdict(&SWEEP, &m, note, sizeof note), MC_HOLDS_PARTLY);
    assert_non_null(strstr(note, "on 10 (256 MiB"));
    assert_non_null(strstr(note, "no peer access (a copy is needed) between 1<->3;"));
    /* no pair at all can: holds, whatever the sweep's pair said */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) m.can[i][j] = false;
    mc_pm_sweep sw = SWEEP;
    sw.peer = false;
    assert_int_equal(mc_pm_verdict(&sw, &m, note, sizeof note), MC_HOLDS);
    assert_non_null(strstr(note, "no pair of the 4 GPUs can access each other's memory"));
    assert_null(strstr(note, "PyTorch"));
    /* GPU 0 and 1 cannot, 2 and 3 can: holds-partly */
    m.can[2][3] = m.can[3][2] = true;
    assert_int_equal(mc_pm_verdict(&sw, &m, note, sizeof note), MC_HOLDS_PARTLY);
    assert_non_null(strstr(note, "no peer access between GPU 0 and GPU 1"));
    /* without a matrix (out of memory), the sweep's rule as before */
    m.n = 0;
    assert_int_equal(mc_pm_verdict(&SWEEP, &m, note, sizeof note), MC_HOLDS_PARTLY);
    assert_string_equal(note, "without peer access a copy is needed (38.1 GB/s GPU 0 -> 1 at 1 GiB); with it a "
                              "kernel on GPU 0 reads GPU 1's memory in place at 372.9 GB/s, and peer copies run "
                              "at 394.7 GB/s; in PyTorch an operation on tensors of two devices still raises "
                              "(tests/torch/peer_reference.py)");
    assert_int_equal(mc_pm_verdict(&sw, NULL, note, sizeof note), MC_HOLDS);
    sw.bad = 3;
    assert_int_equal(mc_pm_verdict(&sw, NULL, note, sizeof note), MC_INCONCLUSIVE);
}

/* The chart's fixture ends with exactly what this code writes for the
 * synthetic matrix with 1 <-> 3 unreachable (after the sweep's rows). */
static void fixture_is_this_codes_output(void **state)
{
    (void)state;
    mc_pm_result m;
    synthetic(&m, true);
    char *s = emitted(&m, NULL);
    FILE *fp = fopen(FIXTURE, "r");
    assert_non_null(fp);
    static char fix[1 << 16];
    size_t n = fread(fix, 1, sizeof fix - 1, fp);
    fclose(fp);
    fix[n] = '\0';
    size_t ls = strlen(s);
    const char *out = getenv("MC_PEER_MATRIX_ROWS"); /* where to write them, to regenerate the fixture */
    if (out) {
        FILE *o = fopen(out, "w");
        assert_non_null(o);
        fputs(s, o);
        fclose(o);
    }
    const bool same = n >= ls && !strcmp(fix + n - ls, s);
    free(s);
    if (!same) {
        print_error("%s does not end with this code's matrix rows and verdict; to see them: "
                    "MC_PEER_MATRIX_ROWS=FILE %s\n", FIXTURE, "build/san/tests/test_peer_matrix");
        fail();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(metric_names),
        cmocka_unit_test(host_check_finds_each_wrong_element),
        cmocka_unit_test(rows_cover_every_ordered_pair),
        cmocka_unit_test(a_wrong_cell_fails_and_makes_the_verdict_inconclusive),
        cmocka_unit_test(verdict_over_every_pair),
        cmocka_unit_test(fixture_is_this_codes_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
