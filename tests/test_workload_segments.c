/* Tests of the MLP workload under checkpoint_sequential
 * (cfg.checkpoint_segments, mlp_segments.c), model-only: the plan
 * against torch/utils/checkpoint.py's arithmetic, the activations a
 * forward keeps (derived by hand from checkpoint_sequential's code), one
 * segment = the plain model request for request, the per-pair plan = the
 * per-pair checkpoint (confirmed against PyTorch's traces) request for
 * request, where the backward's recomputation stops, and where segments
 * lower or raise the peak. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "workload/mlp/mlp.h"
#include "workload/mlp/mlp_internal.h"

static mc_workload_config cfg(int layers, int segments)
{
    mc_workload_config c = mc_workload_config_default();
    c.layers = layers;
    c.in = c.width = c.out = 96;
    c.batch = 64;
    c.optimizer = MC_WL_ADAM;
    c.precision = MC_WL_FP32;
    c.checkpoint_segments = segments;
    return c;
}

static mc_workload *make(const mc_workload_config *c, FILE *trace)
{
    char err[200];
    mc_workload *w = mc_workload_create(c, false, trace, err, sizeof err);
    if (!w) print_error("create: %s\n", err);
    assert_non_null(w);
    return w;
}

static void plan_is_checkpoint_sequential(void **state)
{
    (void)state;
    int seg[15];
    /* L=4: 7 modules. S=2: size 3, [Linear0 ReLU0 Linear1] checkpointed, the rest plain. */
    static const int s2[7] = {0, 0, 0, -1, -1, -1, -1};
    static const int s3[7] = {0, 0, 1, 1, -1, -1, -1};
    static const int s4[7] = {0, 1, 2, -1, -1, -1, -1}; /* size 1: the tail has 4 modules */
    static const int s7[7] = {0, 1, 2, 3, 4, 5, -1};
    assert_int_equal(wl_seg_plan(4, 2, seg), 0);
    assert_memory_equal(seg, s2, sizeof s2);
    assert_int_equal(wl_seg_plan(4, 3, seg), 0);
    assert_memory_equal(seg, s3, sizeof s3);
    assert_int_equal(wl_seg_plan(4, 4, seg), 0);
    assert_memory_equal(seg, s4, sizeof s4);
    assert_int_equal(wl_seg_plan(4, 7, seg), 0);
    assert_memory_equal(seg, s7, sizeof s7);
    assert_int_equal(wl_seg_plan(4, 1, seg), 0);
    for (int m = 0; m < 7; m++) assert_int_equal(seg[m], -1);
    /* L=8: 15 modules, S=4: size 3, segments end inside pairs. */
    static const int l8s4[15] = {0, 0, 0, 1, 1, 1, 2, 2, 2, -1, -1, -1, -1, -1, -1};
    assert_int_equal(wl_seg_plan(8, 4, seg), 0);
    assert_memory_equal(seg, l8s4, sizeof l8s4);
    assert_int_equal(wl_seg_plan(4, 0, seg), -1);
    assert_int_equal(wl_seg_plan(4, 8, seg), -1); /* segment_size 0: PyTorch's range() refuses */

    char err[200];
    mc_workload_config c = cfg(4, 8);
    assert_int_equal(mc_workload_config_check(&c, err, sizeof err), -1);
    c = cfg(4, 2);
    c.precision = MC_WL_BF16;
    assert_int_equal(mc_workload_config_check(&c, err, sizeof err), -1);
    c = cfg(4, 2);
    c.checkpoint = true;
    assert_int_equal(mc_workload_config_check(&c, err, sizeof err), -1);
    c = cfg(4, 7);
    assert_int_equal(mc_workload_config_check(&c, err, sizeof err), 0);
}

/* Activations live when the forward returns (x and the output included),
 * at L=4 with every activation [64,96] fp32, counted by hand from
 * checkpoint_sequential: S=1 (plain) keeps x, r0, r1, r2, out; S=2
 * ([L0 R0 L1] checkpointed) frees r0 inside the segment and h1 (the tail's
 * input) when it returns: x, r1, r2, out; S=3 (two pairs) keeps each
 * pair's output as the next one's input: as plain; S=7 (each module alone)
 * keeps every segment's output, the pre-ReLU ones too: x, h0, r0, h1, r1,
 * h2, r2, out. */
static void forward_keeps(void **state)
{
    (void)state;
    static const int S[4] = {1, 2, 3, 7}, kept[4] = {5, 4, 5, 8};
    for (int i = 0; i < 4; i++) {
        mc_workload_config c = cfg(4, S[i]);
        mc_workload *w = make(&c, NULL);
        uint64_t before[MC_WL_NCAT], after[MC_WL_NCAT];
        mc_workload_live_by_category(w, before);
        assert_int_equal(wl_alloc(&w->ctx, &w->x, (uint64_t)w->mb * 96 * 4, MC_WL_ACTIVATIONS, false, "x"), 0);
        assert_int_equal(wl_seg_forward(w), 0);
        mc_workload_live_by_category(w, after);
        const uint64_t act = ca_round_size(64 * 96 * 4);
        if (after[MC_WL_ACTIVATIONS] - before[MC_WL_ACTIVATIONS] != (uint64_t)kept[i] * act)
            print_error("S=%d: %llu activation bytes, expected %d x %llu\n", S[i],
                        (unsigned long long)(after[MC_WL_ACTIVATIONS] - before[MC_WL_ACTIVATIONS]),
                        kept[i], (unsigned long long)act);
        assert_int_equal(after[MC_WL_ACTIVATIONS] - before[MC_WL_ACTIVATIONS], (uint64_t)kept[i] * act);
        mc_workload_destroy(w);
    }
}

/* Two steps' request lines (comments and the trailing `# what` dropped). */
static char *requests(const mc_workload_config *c, const int *plan)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    mc_workload *w = make(c, fp);
    if (plan) memcpy(w->seg, plan, (size_t)(2 * c->layers - 1) * sizeof *plan);
    mc_workload_step_result r;
    for (int s = 0; s < 2; s++) assert_int_equal(mc_workload_step(w, &r), MC_WL_OK);
    mc_workload_destroy(w);
    fclose(fp);
    char *out = calloc(len + 1, 1), *o = out;
    assert_non_null(out);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char *hash = strstr(line, "  #");
        if (hash) *hash = '\0';
        o += sprintf(o, "%s\n", line);
    }
    free(buf);
    return out;
}

static void one_segment_is_plain(void **state)
{
    (void)state;
    for (int accum = 1; accum <= 2; accum++) {
        mc_workload_config c = cfg(5, 1);
        c.accum = accum;
        c.in = 1000; /* large-pool weights too */
        char *seg = requests(&c, NULL);
        c.checkpoint_segments = 0;
        char *plain = requests(&c, NULL);
        assert_true(strlen(plain) > 1000);
        assert_string_equal(seg, plain);
        free(seg);
        free(plain);
    }
}

/* The per-pair plan through mlp_segments.c gives cfg.checkpoint's
 * sequence (mlp_seq.c, confirmed by PyTorch's traces) exactly. */
static void pair_plan_is_checkpoint(void **state)
{
    (void)state;
    for (int L = 2; L <= 5; L += 3) {
        mc_workload_config c = cfg(L, 1);
        c.accum = 2;
        int plan[9];
        for (int m = 0; m < 2 * L - 1; m++) plan[m] = m < 2 * (L - 1) ? m / 2 : -1;
        char *seg = requests(&c, plan);
        c.checkpoint_segments = 0;
        c.checkpoint = true;
        char *pairs = requests(&c, NULL);
        assert_string_equal(seg, pairs);
        free(seg);
        free(pairs);
    }
}

/* How many request lines of two steps carry `what` in their comment. */
static int count_labelled(const mc_workload_config *c, const char *what)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    mc_workload *w = make(c, fp);
    mc_workload_step_result r;
    for (int s = 0; s < 2; s++) assert_int_equal(mc_workload_step(w, &r), MC_WL_OK);
    mc_workload_destroy(w);
    fclose(fp);
    int n = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "alloc ", 6) == 0 && strstr(line, what)) n++;
    free(buf);
    return n;
}

/* The early stop (checkpoint.py's _recomputation_hook raises once it has
 * packed as many tensors as the forward did; addmm packs its inputs before
 * its kernel, relu its result after): a segment's recomputation runs up to
 * its last ReLU's output, or up to (not into) its last Linear's addmm.
 * Counted by hand at L=4 over two steps (4 forward addmm outputs a step):
 * S=2 [L0 R0 L1]: L0 and R0 again (L1's addmm stopped before it runs);
 * S=3 [L0 R0][L1 R1]: L0 R0 L1 R1 again; S=4 [L0][R0][L1]: R0 only;
 * S=7 (every module alone but L3): R0 R1 R2, no addmm. The backward
 * thread's cuBLASLt workspace exists (once) only where some addmm is
 * recomputed. PyTorch's traces (the MLP fixtures named *_seg2, _seg4,
 * _seg7) agree. */
static void recompute_stops_early(void **state)
{
    (void)state;
    static const int S[4] = {2, 3, 4, 7};
    static const int addmm[4] = {10, 12, 8, 8}, relu[4] = {2, 4, 2, 6}, ws[4] = {1, 1, 0, 0};
    for (int i = 0; i < 4; i++) {
        mc_workload_config c = cfg(4, S[i]);
        const int a = count_labelled(&c, "addmm output of Linear");
        const int r = count_labelled(&c, "recomputed relu output");
        const int k = count_labelled(&c, "cuBLASLt workspace, backward thread");
        if (a != addmm[i] || r != relu[i] || k != ws[i])
            print_error("S=%d: %d addmm outputs, %d recomputed relu outputs, %d workspaces\n", S[i], a,
                        r, k);
        assert_int_equal(a, addmm[i]);
        assert_int_equal(r, relu[i]);
        assert_int_equal(k, ws[i]);
    }
}

static uint64_t peak_of(mc_workload_config c, uint64_t *end)
{
    mc_workload *w = make(&c, NULL);
    mc_workload_step_result r;
    for (int s = 0; s < 2; s++) assert_int_equal(mc_workload_step(w, &r), MC_WL_OK);
    mc_workload_destroy(w);
    if (end) *end = r.allocated_end;
    return r.peak_allocated;
}

/* Activation-heavy (batch 8192, width 96: the activations dwarf the rest):
 * two segments cut the peak, every module in a segment of its own raises
 * it above the plain one (each pre-ReLU output is kept as a segment's
 * input), and every S leaves the same state after the step, but for the
 * backward thread's cuBLASLt workspace (1 MiB), made by a recomputed addmm:
 * S=2..7 (segments of 2 or more modules, each with a Linear that is not
 * its last) have one, S=8..15 (segments of one module: a lone Linear's
 * recomputation stops before its addmm) none. */
static void peak_ordering(void **state)
{
    (void)state;
    mc_workload_config c = cfg(8, 0);
    c.batch = 8192;
    uint64_t plain_end, end;
    const uint64_t plain = peak_of(c, &plain_end);
    uint64_t peak[16];
    for (int s = 1; s <= 15; s++) {
        c.checkpoint_segments = s;
        peak[s] = peak_of(c, &end);
        assert_int_equal(end, plain_end + (s > 1 && s < 8 ? (1ULL << 20) : 0));
    }
    assert_int_equal(peak[1], plain);
    assert_true(peak[2] < plain);
    assert_true(peak[4] < plain);
    assert_true(peak[15] > plain);
    const uint64_t act = 8192 * 96 * 4; /* one activation, a whole large-pool block */
    assert_true(plain - peak[2] >= 2 * act);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_is_checkpoint_sequential),
        cmocka_unit_test(forward_keeps),
        cmocka_unit_test(one_segment_is_plain),
        cmocka_unit_test(pair_plan_is_checkpoint),
        cmocka_unit_test(recompute_stops_early),
        cmocka_unit_test(peak_ordering),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
