/* Tests of the calls the Transformer under FSDP2 makes of a GPU runner
 * (sharded_tfm.h, sharded/sharded_fsdp.c: mc_sh_hooks), without a GPU: the
 * model-only run with a recording runner. Each step starts and ends once;
 * each layer is all-gathered once in the forward and (ZeRO-3) once more
 * in the backward, its copy-out always after its own all-gather, its
 * gradients chunk_cat'ed and reduce-scattered once, every reduce-scatter
 * input waited for before it is freed; every call names the layer's 12
 * parameters with their shapes, and its buffers' sizes agree with them.
 * The --verify check's one GPU (plain, world 1, the ranks' batches as
 * data_chunks) trains them as micro-steps of gradient accumulation, which
 * no other mode or world takes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "workload/sharded/sharded_plan.h"
#include "workload/sharded_tfm.h"

#define MAX_CALLS 4096

typedef struct {
    int n;
    mc_sh_comm_kind kind[MAX_CALLS];
    int layer[MAX_CALLS];
    const char *bad; /* the first inconsistency seen, or NULL */
    int world;
    int64_t rows[12], cols[12];
} recorder;

static void on_comm(void *ctx, const mc_sh_comm *c)
{
    recorder *r = ctx;
    assert_true(r->n < MAX_CALLS);
    r->kind[r->n] = c->kind;
    r->layer[r->n++] = c->layer;
    if (r->bad) return;
    const bool unit = c->kind == MC_SH_ALLGATHER || c->kind == MC_SH_COPY_OUT || c->kind == MC_SH_CHUNK_CAT ||
                      c->kind == MC_SH_REDUCE_SCATTER;
    if (!unit) return;
    if (c->n != 12) {
        r->bad = "a call names other than the layer's 12 parameters";
        return;
    }
    uint64_t shards = 0; /* a rank's chunk: the padded shards */
    for (int k = 0; k < 12; k++) {
        if (c->rows[k] != r->rows[k] || c->cols[k] != r->cols[k]) r->bad = "a parameter's shape is not its own";
        shards += (uint64_t)(mc_fsdp_padded_rows(c->rows[k], r->world) * c->cols[k]) * 4;
    }
    if (c->kind == MC_SH_ALLGATHER) {
        uint64_t src = 0;
        for (int k = 0; k < 12; k++) src += c->src_bytes[k];
        if (src != shards || c->dst_bytes < (uint64_t)r->world * shards) r->bad = "all-gather sizes";
    }
    if (c->kind == MC_SH_COPY_OUT)
        for (int k = 0; k < 12; k++)
            if (c->out_bytes[k] < (uint64_t)(r->world * mc_fsdp_padded_rows(c->rows[k], r->world) * c->cols[k]) * 4)
                r->bad = "an unsharded parameter smaller than its padded rows";
    if (c->kind == MC_SH_CHUNK_CAT && c->dst_bytes < (uint64_t)r->world * shards) r->bad = "chunk_cat's input";
    if (c->kind == MC_SH_REDUCE_SCATTER && c->out_bytes[0] < shards) r->bad = "reduce-scatter's output";
}

static int count(const recorder *r, int from, int to, mc_sh_comm_kind k)
{
    int n = 0;
    for (int i = from; i < to; i++) n += r->kind[i] == k;
    return n;
}

/* A small encoder: head size 12, ff 33 (odd: padded shards), no dropout. */
static mc_sh_tfm_config small(mc_sh_mode mode, int world, int accum, int64_t batch)
{
    mc_sh_tfm_config c = {.tfm = mc_tfm_config_default(), .mode = mode, .world = world, .rank = 0};
    c.tfm.arch = MC_TFM_ENCODER;
    c.tfm.d_model = 48;
    c.tfm.heads = 4;
    c.tfm.enc_layers = 2;
    c.tfm.ff = 33;
    c.tfm.dropout = 0;
    c.tfm.seq = 9;
    c.tfm.batch = batch;
    c.tfm.accum = accum;
    return c;
}

static void run(mc_sh_mode mode, int world, int layers)
{
    recorder rec;
    memset(&rec, 0, sizeof rec);
    rec.world = world;
    mc_sh_hooks hooks = {&rec, on_comm};
    mc_sh_tfm_config c = small(mode, world, 1, 3);
    c.rank = world - 1;
    c.hooks = &hooks;
    c.tfm.enc_layers = layers;
    c.tfm.optimizer = MC_WL_ADAM;
    char err[256];
    mc_sh_tfm *s = mc_sh_tfm_create(&c, err, sizeof err);
    if (!s) fail_msg("%s", err);
    const int64_t E = 48, F = 33;
    const int64_t rows[12] = {3 * E, 3 * E, E, E, F, F, E, E, E, E, E, E}, cols[12] = {E, 1, E, 1, E, 1, F, 1, 1, 1, 1, 1};
    memcpy(rec.rows, rows, sizeof rows);
    memcpy(rec.cols, cols, sizeof cols);
    const int steps = 3;
    for (int k = 0; k < steps; k++) {
        const int from = rec.n;
        mc_sh_step_result out;
        assert_int_equal(mc_sh_tfm_step(s, &out), MC_WL_OK);
        const int to = rec.n;
        assert_int_equal(rec.kind[from], MC_SH_STEP_BEGIN);
        assert_int_equal(rec.kind[to - 1], MC_SH_STEP_END);
        assert_int_equal(count(&rec, from, to, MC_SH_STEP_BEGIN), 1);
        assert_int_equal(count(&rec, from, to, MC_SH_STEP_END), 1);
        assert_int_equal(count(&rec, from, to, MC_SH_BACKWARD_END), 1);
        const int gathers = mode == MC_SH_FSDP ? 2 * layers : layers; /* ZeRO-3 gathers again in backward */
        assert_int_equal(count(&rec, from, to, MC_SH_ALLGATHER), world > 1 ? gathers : 0);
        assert_int_equal(count(&rec, from, to, MC_SH_COPY_OUT), gathers);
        assert_int_equal(count(&rec, from, to, MC_SH_CHUNK_CAT), layers);
        assert_int_equal(count(&rec, from, to, MC_SH_REDUCE_SCATTER), layers);
        assert_int_equal(count(&rec, from, to, MC_SH_INPUT_FREED), layers);
        /* a layer's copy-out follows its own all-gather; each reduce-scatter
           follows its chunk_cat, and each input is waited for before the
           next reduce-scatter input is made or the backward ends */
        int pending[64] = {0}, waits_owed = 0;
        for (int i = from; i < to; i++) {
            const int l = rec.layer[i];
            switch (rec.kind[i]) {
            case MC_SH_ALLGATHER: pending[l] = 1; break;
            case MC_SH_COPY_OUT:
                if (world > 1) assert_true(pending[l]);
                pending[l] = 0;
                break;
            case MC_SH_CHUNK_CAT: assert_int_equal(waits_owed, 0); break;
            case MC_SH_REDUCE_SCATTER:
                assert_int_equal(rec.kind[i - 1], MC_SH_CHUNK_CAT);
                waits_owed++;
                break;
            case MC_SH_INPUT_FREED: waits_owed--; break;
            case MC_SH_BACKWARD_END: assert_int_equal(waits_owed, 0); break;
            default: break;
            }
        }
    }
    if (rec.bad) fail_msg("%s", rec.bad);
    mc_sh_tfm_destroy(s);
}

static void test_zero3(void **state)
{
    (void)state;
    run(MC_SH_FSDP, 2, 3);
    run(MC_SH_FSDP, 3, 1);
    run(MC_SH_FSDP, 1, 2);
}

static void test_zero2(void **state)
{
    (void)state;
    run(MC_SH_ZERO2, 2, 3);
    run(MC_SH_ZERO2, 4, 2);
}

static void test_accumulation_only_for_the_check(void **state)
{
    (void)state;
    char err[256];
    mc_sh_tfm_config c = small(MC_SH_PLAIN, 1, 2, 6);
    assert_int_equal(mc_sh_tfm_check(&c, err, sizeof err), 0);
    c = small(MC_SH_PLAIN, 2, 2, 6);
    assert_int_equal(mc_sh_tfm_check(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "accumulation"));
    c = small(MC_SH_FSDP, 2, 2, 6);
    assert_int_equal(mc_sh_tfm_check(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "accumulation"));
    c = small(MC_SH_PLAIN, 1, 4, 6); /* 6 sequences are not 4 micro-batches */
    assert_int_equal(mc_sh_tfm_check(&c, err, sizeof err), -1);
}

/* The runner's one GPU of the check (data_chunks N, N B sequences) is a
 * model of N micro-steps of B sequences: its activations are a rank's,
 * so its peak stays below one step over all N B sequences at once. */
static void test_check_reference_takes_micro_steps(void **state)
{
    (void)state;
    mc_tfm_config net = small(MC_SH_PLAIN, 1, 1, 3).tfm;
    net.heads = 3; /* head size 16, as the GPU's kernels take (M.check checks for the GPU) */
    const mc_sh_model M = mc_sh_tfm_model(&net);
    mc_sh_config c = {.wl = mc_sh_net_default(), .mode = MC_SH_PLAIN, .world = 1, .model = &M};
    c.wl.batch = 4 * 16;
    c.wl.optimizer = MC_WL_MOMENTUM;
    char err[256];
    uint64_t peak[2];
    for (int chunks = 1; chunks <= 4; chunks += 3) {
        c.data_chunks = chunks;
        if (M.check(&c, err, sizeof err) != 0) fail_msg("%s", err);
        void *m = M.create(&c, false, NULL, err, sizeof err);
        if (!m) fail_msg("%s", err);
        mc_sh_step_result r;
        assert_int_equal(M.step(m, &r), MC_WL_OK);
        peak[chunks > 1] = r.peak_allocated;
        M.destroy(m);
    }
    assert_true(peak[1] < peak[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero3),
        cmocka_unit_test(test_zero2),
        cmocka_unit_test(test_accumulation_only_for_the_check),
        cmocka_unit_test(test_check_reference_takes_micro_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
