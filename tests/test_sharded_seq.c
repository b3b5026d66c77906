/* Tests of one rank's data-parallel requests (common/workload/sharded_*.c)
 * without a GPU: the plain step equals build/workload's model request for
 * request in its figures; DDP's buckets and FSDP2's shard sizes by hand;
 * whole steps counted by hand on a tiny network whose every tensor takes one
 * 512-byte block; the shape of the predictions over N; and the calls the
 * step makes of a GPU runner (sharded_gpu.cu), in the order its streams
 * rely on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "test_util.h"
#include "workload/sharded/sharded_plan.h"
#include "workload/sharded/sharded_seq.h"
#include "workload/mlp/mlp.h"
#include "workload/workload_args.h"
#include "workload/core/pytorch_consts.h"

#define MIB (1ULL << 20)
/* cuBLAS forward + cuBLASLt forward + cuBLAS backward */
#define WS (MC_PT_CUBLAS_WS_BYTES + MC_PT_CUBLASLT_WS_BYTES + MC_PT_CUBLAS_WS_BYTES)

static mc_sh_config cfg(int L, int64_t in, int64_t width, int64_t out, int64_t batch,
                        mc_wl_optimizer opt, mc_sh_mode mode, int world, int rank)
{
    mc_sh_config c;
    memset(&c, 0, sizeof c);
    c.wl = mc_sh_net_default();
    c.wl.layers = L;
    c.wl.in = in;
    c.wl.width = width;
    c.wl.out = out;
    c.wl.batch = batch;
    c.wl.optimizer = opt;
    c.mode = mode;
    c.world = world;
    c.rank = rank;
    return c;
}

static mc_sh_run *make(const mc_sh_config *c)
{
    char err[200] = "";
    mc_sh_run *r = mc_sh_create(c, NULL, NULL, err, sizeof err);
    if (!r) print_error("create: %s\n", err);
    assert_non_null(r);
    assert_int_equal(mc_sh_setup_status(r), MC_WL_OK);
    return r;
}

/* ------------------------------------------------------------ plain = workload */

static void plain_equals_workload(const mc_sh_config *c)
{
    char err[200];
    mc_workload_config wc = mc_workload_config_default();
    wc.layers = c->wl.layers;
    wc.in = c->wl.in;
    wc.width = c->wl.width;
    wc.out = c->wl.out;
    wc.batch = c->wl.batch;
    wc.optimizer = c->wl.optimizer;
    mc_workload *w = mc_workload_create(&wc, false, NULL, err, sizeof err);
    assert_non_null(w);
    mc_sh_run *r = make(c);
    for (int s = 0; s < 3; s++) {
        mc_workload_step_result a;
        mc_sh_step_result b;
        assert_int_equal(mc_workload_step(w, &a), MC_WL_OK);
        assert_int_equal(mc_sh_step(r, &b), MC_WL_OK);
        assert_int_equal(b.peak_allocated, a.peak_allocated);
        assert_int_equal(b.allocated_end, a.allocated_end);
        assert_int_equal(b.peak_reserved, a.peak_reserved);
    }
    mc_sh_destroy(r);
    mc_workload_destroy(w);
}

static void test_plain_equals_workload(void **state)
{
    (void)state;
    for (int o = MC_WL_SGD; o <= MC_WL_ADAM; o++) {
        mc_sh_config small = cfg(3, 40, 96, 24, 64, (mc_wl_optimizer)o, MC_SH_PLAIN, 1, 0);
        plain_equals_workload(&small);
        /* large pool, reduction scratch, 20 MiB segments */
        mc_sh_config big = cfg(4, 1024, 2048, 512, 4096, (mc_wl_optimizer)o, MC_SH_PLAIN, 1, 0);
        plain_equals_workload(&big);
    }
}

/* ------------------------------------------------------------ plans */

static void test_ddp_buckets(void **state)
{
    (void)state;
    const uint64_t t[5] = {MIB / 2, MIB * 6 / 10, 10 * MIB, 20 * MIB, MIB};
    const uint64_t lim[2] = {MC_DDP_FIRST_BUCKET_BYTES, MC_DDP_BUCKET_CAP_BYTES};
    uint64_t b[5];
    /* 0.5 + 0.6 MiB reach 1 MiB; 10 + 20 reach 25; 1 MiB is left over. */
    assert_int_equal(mc_ddp_buckets(t, 5, lim, 2, b), 3);
    assert_int_equal(b[0], MIB / 2 + MIB * 6 / 10);
    assert_int_equal(b[1], 30 * MIB);
    assert_int_equal(b[2], MIB);
    const uint64_t none[1] = {0}; /* sys.maxsize: one bucket */
    assert_int_equal(mc_ddp_buckets(t, 5, none, 1, b), 1);
    assert_int_equal(b[0], MIB / 2 + MIB * 6 / 10 + 31 * MIB);
    const uint64_t exact[2] = {MIB, MIB}; /* ">=": a tensor of exactly the limit closes it */
    const uint64_t one[2] = {MIB, 1};
    assert_int_equal(mc_ddp_buckets(one, 2, exact, 2, b), 2);
}

static void test_fsdp_shards(void **state)
{
    (void)state;
    /* torch.chunk(5 rows, 4): 2, 2, 1 and nothing for rank 3; every shard padded to 2 rows. */
    assert_int_equal(mc_fsdp_padded_rows(5, 4), 2);
    const int64_t want[4] = {2, 2, 1, 0};
    for (int r = 0; r < 4; r++) assert_int_equal(mc_fsdp_local_rows(5, 4, r), want[r]);
    assert_int_equal(mc_fsdp_padded_rows(1000, 64), 16);
    assert_int_equal(mc_fsdp_local_rows(1000, 64, 62), 8);
    assert_int_equal(mc_fsdp_local_rows(1000, 64, 63), 0);
    assert_int_equal(mc_fsdp_padded_rows(4096, 1), 4096);
    assert_int_equal(mc_fsdp_local_rows(4096, 1, 0), 4096);
}

/* ------------------------------------------------------------ hand counts */

/* L=2, in 8, width 16, out 4, batch 2, SGD: every tensor is under 512 bytes,
 * so each takes one 512-byte block and a step's peak is 512 x the most
 * tensors live at once, plus the three workspaces. */
#define BARRIER 512 /* dist.barrier()'s tensor, which the process group keeps */

static uint64_t tiny_peak(mc_sh_mode mode, int world, int step, uint64_t *end)
{
    mc_sh_config c = cfg(2, 8, 16, 4, 2, MC_WL_SGD, mode, world, 0);
    mc_sh_run *r = make(&c);
    mc_sh_step_result res;
    for (int s = 0; s < step; s++) assert_int_equal(mc_sh_step(r, &res), MC_WL_OK);
    mc_sh_destroy(r);
    if (end) *end = res.allocated_end;
    return res.peak_allocated;
}

static void test_tiny_by_hand(void **state)
{
    (void)state;
    uint64_t end;
    /* plain: 4 parameters; x, y; r0 and h1 kept; backward at layer 1 holds
     * ones, gh1 -> gr0, gWt1, gbt1 beside x, y, r0, h1, loss: 14 blocks. */
    assert_int_equal(tiny_peak(MC_SH_PLAIN, 1, 2, &end), 14 * 512 + WS);
    assert_int_equal(end, 4 * 512 + WS);
    /* DDP: plus one bucket of 512+64+256+16 = 848 bytes (1024-byte block),
     * both in step 1 (every parameter) and after the rebuild (under 1 MiB),
     * and the process group's barrier tensor (every wrapper: one block). */
    assert_int_equal(tiny_peak(MC_SH_DDP, 2, 1, &end), 14 * 512 + 1024 + BARRIER + WS);
    assert_int_equal(tiny_peak(MC_SH_DDP, 2, 2, &end), 14 * 512 + 1024 + BARRIER + WS);
    assert_int_equal(end, 4 * 512 + 1024 + BARRIER + WS);
    /* FSDP N=2, step 2: 4 shards; at layer 1's backward: x, y, r0, h1,
     * loss, ones, gh1, uW1, ub1 (layer 1's all-gather output freed after
     * its copy-out), gr0, gWt1, gbt1, and layer 0's prefetched all-gather
     * output, 2 x (8x8 + 8) x 4 = 576 bytes, the one 1024-byte block: 16 x 512 + 1024. */
    assert_int_equal(tiny_peak(MC_SH_FSDP, 2, 2, &end), 16 * 512 + 1024 + BARRIER + WS);
    assert_int_equal(end, 4 * 512 + BARRIER + WS); /* the shards; zero_grad dropped rs_out */
    /* N=1: no all-gather output, no prefetch: 16. */
    assert_int_equal(tiny_peak(MC_SH_FSDP, 1, 2, &end), 16 * 512 + BARRIER + WS);
    /* ZeRO-2 N=2: every layer stays gathered from forward to its
     * post-backward: uW0, ub0, uW1, ub1 beside plain's 14 blocks at layer 1's
     * backward, no all-gather output (freed in forward), no prefetch: 14 + 4 = 18,
     * with 4 padded shards for the parameters (same count as plain's). */
    assert_int_equal(tiny_peak(MC_SH_ZERO2, 2, 2, &end), 18 * 512 + BARRIER + WS);
}

/* ------------------------------------------------------------ at scale */

static uint64_t peak_of(const mc_sh_config *c)
{
    char err[200] = "";
    uint64_t p = 0;
    if (mc_sh_predict_peak(c, 3, &p, err, sizeof err) != 0) print_error("%s\n", err);
    return p;
}

static void test_scaling(void **state)
{
    (void)state;
    /* 8 Linear layers of 4096, Adam, 32 rows a rank: parameter-dominated. */
    uint64_t prev = UINT64_MAX;
    mc_sh_config d = cfg(8, 4096, 4096, 4096, 32, MC_WL_ADAM, MC_SH_DDP, 1, 0);
    uint64_t ddp1 = peak_of(&d);
    d.world = 64;
    assert_int_equal(peak_of(&d), ddp1); /* DDP's memory does not depend on N */
    for (int n = 1; n <= 64; n *= 2) {
        mc_sh_config f = cfg(8, 4096, 4096, 4096, 32, MC_WL_ADAM, MC_SH_FSDP, n, 0);
        uint64_t p = peak_of(&f);
        assert_true(p > 0 && p < prev); /* more ranks, less each */
        mc_sh_config z = f;
        z.mode = MC_SH_ZERO2;
        assert_true(peak_of(&z) >= p);  /* ZeRO-2 keeps every layer gathered */
        prev = p;
    }
    /* At N = 64 the unsharded floor (a gathered layer, its full gradient,
     * the reduce-scatter input, the prefetch, workspaces) bounds the gain. */
    assert_true(ddp1 / prev >= 4);
    /* Adam's state is sharded over local rows: at N = 4 steady state holds
     * the padded shards and the local exp_avg, exp_avg_sq, nothing else. */
    mc_sh_config f4 = cfg(2, 4096, 4096, 4096, 32, MC_WL_ADAM, MC_SH_FSDP, 4, 0);
    mc_sh_run *r = make(&f4);
    mc_sh_step_result res;
    for (int s = 0; s < 2; s++) assert_int_equal(mc_sh_step(r, &res), MC_WL_OK);
    mc_sh_destroy(r);
    uint64_t shardW = ca_round_size(1024ULL * 4096 * 4), shardb = ca_round_size(1024ULL * 4);
    assert_int_equal(res.allocated_end, 2 * 3 * (shardW + shardb) + BARRIER + WS);
}

static void test_bad_config(void **state)
{
    (void)state;
    char err[200];
    mc_sh_config c = cfg(2, 8, 16, 4, 2, MC_WL_SGD, MC_SH_FSDP, 2, 2);
    assert_null(mc_sh_create(&c, NULL, NULL, err, sizeof err));
    assert_non_null(strstr(err, "rank"));
    c.rank = 0;
    c.wl.optimizer = MC_WL_ADAMW; /* the MLP's optimizers only */
    assert_null(mc_sh_create(&c, NULL, NULL, err, sizeof err));
    c.wl.optimizer = MC_WL_SGD;
    mc_workload_config wc = mc_workload_config_default(); /* build/sharded_model's flags */
    wc.layers = 2;
    wc.in = wc.width = wc.out = wc.batch = 8;
    mc_sh_net net;
    assert_int_equal(mc_workload_sharded_net(&wc, &net, err, sizeof err), 0);
    assert_int_equal(net.layers, 2);
    wc.precision = MC_WL_BF16;
    assert_int_equal(mc_workload_sharded_net(&wc, &net, err, sizeof err), -1);
    assert_non_null(strstr(err, "fp32"));
    wc.precision = MC_WL_FP32;
    wc.accum = 2;
    assert_int_equal(mc_workload_sharded_net(&wc, &net, err, sizeof err), -1);
    c.world = 0;
    assert_null(mc_sh_create(&c, NULL, NULL, err, sizeof err));
    mc_sh_mode m;
    assert_int_equal(mc_sh_mode_parse("fsdp", &m), 0);
    assert_int_equal(m, MC_SH_FSDP);
    assert_int_equal(mc_sh_mode_parse("zero3", &m), -1);
}

/* ------------------------------------------------------------ the runner's calls */

#define MAX_CALLS 4096

typedef struct {
    int n;
    mc_sh_comm c[MAX_CALLS];
} calls;

static void record(void *ctx, const mc_sh_comm *c)
{
    calls *k = ctx;
    assert_true(k->n < MAX_CALLS);
    k->c[k->n++] = *c;
}

static int count(const calls *k, int from, int to, mc_sh_comm_kind kind)
{
    int n = 0;
    for (int i = from; i < to; i++) n += k->c[i].kind == kind;
    return n;
}

/* One step's calls [from, to) of a run of L layers in mode m: what the
 * streams of sharded_gpu.cu need of their order. */
static void check_step(const calls *k, int from, int to, int L, mc_sh_mode m, int world)
{
    assert_int_equal(k->c[from].kind, MC_SH_STEP_BEGIN);
    assert_int_equal(count(k, from, to, MC_SH_STEP_BEGIN), 1);
    assert_int_equal(count(k, from, to, MC_SH_BACKWARD_END), 1);
    int end = from;
    while (k->c[end].kind != MC_SH_BACKWARD_END) end++;
    if (m == MC_SH_ZERO2 || m == MC_SH_FSDP) {
        /* every copy-out reads the all-gather of its layer made before it (N > 1) */
        int gathers = 0;
        for (int i = from; i < to; i++) {
            if (k->c[i].kind != MC_SH_COPY_OUT) continue;
            if (world == 1) {
                assert_int_equal(k->c[i].dst, 0);
                continue;
            }
            int j = i - 1;
            while (j >= from && !(k->c[j].kind == MC_SH_ALLGATHER && k->c[j].layer == k->c[i].layer)) j--;
            assert_true(j >= from);
            assert_int_equal(k->c[j].dst, k->c[i].dst);
            gathers++;
        }
        assert_int_equal(count(k, from, to, MC_SH_ALLGATHER), world > 1 ? gathers : 0);
        assert_int_equal(count(k, from, to, MC_SH_COPY_OUT), m == MC_SH_FSDP ? 2 * L : L);
        /* every reduce-scatter reads the chunk_cat just before it; its input is
         * waited for once, before the backward's end */
        assert_int_equal(count(k, from, end, MC_SH_REDUCE_SCATTER), L);
        assert_int_equal(count(k, from, end, MC_SH_INPUT_FREED), L);
        for (int i = from; i < end; i++) {
            if (k->c[i].kind != MC_SH_REDUCE_SCATTER) continue;
            assert_int_equal(k->c[i - 1].kind, MC_SH_CHUNK_CAT);
            assert_int_equal(k->c[i - 1].dst, k->c[i].dst);
            int j = i + 1;
            while (j < end && !(k->c[j].kind == MC_SH_INPUT_FREED && k->c[j].dst == k->c[i].dst)) j++;
            assert_true(j < end);
        }
    } else if (m == MC_SH_DDP) {
        /* each bucket all-reduced once, after every gradient copied into it;
         * the copies back after the backward's end */
        for (int i = from; i < end; i++) {
            if (k->c[i].kind != MC_SH_ALLREDUCE) continue;
            for (int j = i + 1; j < end; j++)
                if (k->c[j].kind == MC_SH_COPY_TO_BUCKET)
                    assert_false(k->c[j].dst >= k->c[i].dst && k->c[j].dst < k->c[i].dst + k->c[i].dst_bytes);
        }
        assert_int_equal(count(k, from, end, MC_SH_COPY_TO_BUCKET), 2 * L);
        assert_int_equal(count(k, end, to, MC_SH_COPY_FROM_BUCKET), 2 * L);
        assert_int_equal(count(k, from, to, MC_SH_ALLGATHER) + count(k, from, to, MC_SH_REDUCE_SCATTER), 0);
    } else {
        assert_int_equal(to - from, 2); /* plain: the step's start and the backward's end */
    }
}

static void test_runner_calls(void **state)
{
    (void)state;
    static const mc_sh_mode modes[] = {MC_SH_PLAIN, MC_SH_DDP, MC_SH_ZERO2, MC_SH_FSDP};
    static const int worlds[] = {1, 3};
    static calls k;
    for (int mi = 0; mi < 4; mi++)
        for (int wi = 0; wi < 2; wi++) {
            const int L = 4;
            mc_sh_config c = cfg(L, 100, 999, 10, 64, MC_WL_ADAM, modes[mi], worlds[wi], worlds[wi] - 1);
            mc_sh_hooks h = {&k, record};
            char err[200] = "";
            k.n = 0;
            mc_sh_run *r = mc_sh_create(&c, NULL, &h, err, sizeof err);
            assert_non_null(r);
            assert_int_equal(k.n, 0); /* set-up asks nothing of the runner */
            int begin[4];
            for (int s = 0; s < 3; s++) {
                mc_sh_step_result res;
                begin[s] = k.n;
                assert_int_equal(mc_sh_step(r, &res), MC_WL_OK);
            }
            begin[3] = k.n;
            for (int s = 0; s < 3; s++) check_step(&k, begin[s], begin[s + 1], L, modes[mi], worlds[wi]);
            mc_sh_destroy(r);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_equals_workload),
        cmocka_unit_test(test_ddp_buckets),
        cmocka_unit_test(test_fsdp_shards),
        cmocka_unit_test(test_tiny_by_hand),
        cmocka_unit_test(test_scaling),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_runner_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
