/* Tests of the Transformer workload's request sequence (model-only,
 * common/workload/transformer/tfm_*.c): the exact parameter count of
 * nn.Transformer / nn.TransformerEncoder, the set-up (template layers,
 * clones, the causal mask) against hand sums, the end-of-step state for
 * every optimizer and precision, the peak's breakdown, accumulation and
 * checkpointing against the peak, OOM under a limit as a status, the trace
 * against the allocator, and the bad configurations. Whether the sequence is
 * PyTorch's is tests/scripts/test_transformer_fixtures.sh's question. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_model.h"
#include "test_util.h"
#include "workload/transformer/tfm.h"
#include "workload/core/pytorch_consts.h"

#define WS MC_PT_CUBLAS_WS_BYTES /* cuBLAS workspace of a handle on sm_90 */
#define LTWS (1ULL << 20) /* cuBLASLt workspace */

static mc_tfm_config tiny(mc_tfm_arch arch)
{
    mc_tfm_config c = mc_tfm_config_default();
    c.arch = arch;
    c.d_model = 32;
    c.heads = 4;
    c.enc_layers = 2;
    c.dec_layers = 2;
    c.ff = 64;
    c.seq = 8;
    c.batch = 4;
    return c;
}

static mc_tfm *make(const mc_tfm_config *c)
{
    char err[256];
    mc_tfm *t = mc_tfm_create(c, false, NULL, err, sizeof err);
    if (!t) print_error("create: %s\n", err);
    assert_non_null(t);
    return t;
}

/* The sizes of one layer's parameters, registration order. */
static int layer_params(const mc_tfm_config *c, bool dec, uint64_t *n)
{
    const uint64_t E = (uint64_t)c->d_model, F = (uint64_t)c->ff;
    int k = 0;
    for (int a = 0; a < (dec ? 2 : 1); a++) {
        n[k++] = 3 * E * E;
        n[k++] = 3 * E;
        n[k++] = E * E;
        n[k++] = E;
    }
    n[k++] = F * E;
    n[k++] = F;
    n[k++] = E * F;
    n[k++] = E;
    for (int a = 0; a < (dec ? 3 : 2); a++) n[k++] = E, n[k++] = E;
    return k;
}

static uint64_t layer_blocks(const mc_tfm_config *c, bool dec)
{
    uint64_t n[18], s = 0;
    int k = layer_params(c, dec, n);
    for (int i = 0; i < k; i++) s += ca_round_size(n[i] * 4);
    return s;
}

/* Σ round_size over model.parameters(). */
static uint64_t param_blocks(const mc_tfm_config *c)
{
    uint64_t s = (uint64_t)c->enc_layers * layer_blocks(c, false);
    if (c->arch == MC_TFM_TRANSFORMER)
        s += (uint64_t)c->dec_layers * layer_blocks(c, true) + 4 * ca_round_size((uint64_t)c->d_model * 4);
    return s;
}

static void param_count_exact(void **state)
{
    (void)state;
    mc_tfm_config c = mc_tfm_config_default(); /* nn.Transformer(): 44,140,544 parameters */
    assert_int_equal(mc_tfm_param_count(&c), 44140544);
    c.arch = MC_TFM_ENCODER; /* TransformerEncoder(TransformerEncoderLayer(512, 8), 6) */
    assert_int_equal(mc_tfm_param_count(&c), 18914304);
    /* E 8, F 16, one layer each, by hand: encoder layer 216 + 72 + 144 + 136 + 32 = 600,
     * decoder layer 2 * 288 + 280 + 48 = 904, norms 16 + 16 */
    c = mc_tfm_config_default();
    c.d_model = 8, c.heads = 2, c.ff = 16, c.enc_layers = 1, c.dec_layers = 1;
    assert_int_equal(mc_tfm_param_count(&c), 600 + 904 + 32);
    uint64_t n[18], s = 0;
    for (int d = 0; d < 2; d++) {
        int k = layer_params(&c, d, n);
        for (int i = 0; i < k; i++) s += n[i];
    }
    assert_int_equal(s + 32, mc_tfm_param_count(&c));
}

/* Set-up: the template layer lives next to its clones, then goes. */
static void setup_sums(void **state)
{
    (void)state;
    for (int a = 0; a < 2; a++) {
        mc_tfm_config c = tiny((mc_tfm_arch)a);
        mc_tfm *t = make(&c);
        const ca_stats *s = ca_get_stats(mc_tfm_allocator(t));
        uint64_t W = param_blocks(&c);
        uint64_t tmpl = layer_blocks(&c, false) + (a == MC_TFM_TRANSFORMER ? layer_blocks(&c, true) : 0);
        assert_int_equal((uint64_t)s->allocated_bytes.current, W);
        assert_int_equal((uint64_t)s->allocated_bytes.peak, W + tmpl);
        uint64_t cat[MC_WL_NCAT];
        mc_tfm_live_by_category(t, cat);
        assert_int_equal(cat[MC_WL_WEIGHTS], W);
        mc_tfm_destroy(t);
    }
    mc_tfm_config c = tiny(MC_TFM_ENCODER); /* the causal mask: full, triu, full freed */
    c.causal = true;
    c.seq = 100;
    mc_tfm *t = make(&c);
    const ca_stats *s = ca_get_stats(mc_tfm_allocator(t));
    uint64_t m = ca_round_size(100 * 100 * 4);
    assert_int_equal((uint64_t)s->allocated_bytes.current, param_blocks(&c) + m);
    uint64_t tmpl = layer_blocks(&c, false); /* the template goes before the mask is made */
    assert_int_equal((uint64_t)s->allocated_bytes.peak, param_blocks(&c) + (2 * m > tmpl ? 2 * m : tmpl));
    mc_tfm_destroy(t);
}

/* After zero_grad: weights, optimizer state, workspaces, GradScaler's two
 * scalars (the mask for --causal), nothing else, step after step. */
static void end_of_step_state(void **state)
{
    (void)state;
    static const int mult[4] = {0, 1, 2, 2}; /* sgd, momentum, adam, adamw */
    for (int a = 0; a < 2; a++)
        for (int o = 0; o <= MC_WL_ADAMW; o++)
            for (int p = MC_WL_FP32; p <= MC_WL_BF16; p++)
                for (int ck = 0; ck < 2; ck++) {
                    mc_tfm_config c = tiny((mc_tfm_arch)a);
                    c.optimizer = o;
                    c.precision = (mc_wl_precision)p;
                    c.checkpoint = ck;
                    c.batch_first = o & 1;
                    c.norm_first = p == MC_WL_BF16;
                    c.activation = ck ? MC_TFM_GELU : MC_TFM_RELU;
                    c.accum = o == MC_WL_MOMENTUM ? 2 : 1;
                    /* The model's invariant walk after every operation (the
                     * test build) runs in half of the 64 combinations, chosen
                     * so that every architecture, optimizer, precision and
                     * checkpoint setting has it: 9 s to 5 s under ASan. The
                     * figures below are checked in all of them. */
                    setenv("MEMCLAIMS_MODEL_CHECKS", ((a + o + p + ck) & 1) ? "0" : "1", 1);
                    mc_tfm *t = make(&c);
                    unsetenv("MEMCLAIMS_MODEL_CHECKS");
                    uint64_t W = param_blocks(&c), scaler = p == MC_WL_FP16 ? 1024 : 0;
                    /* the recomputation's addmm runs on the backward thread: its Lt workspace */
                    uint64_t ws = 2 * WS + LTWS + (ck ? LTWS : 0);
                    for (int s = 1; s <= 3; s++) {
                        mc_workload_step_result r;
                        assert_int_equal(mc_tfm_step(t, &r), MC_WL_OK);
                        uint64_t cat[MC_WL_NCAT];
                        mc_tfm_live_by_category(t, cat);
                        assert_int_equal(cat[MC_WL_WEIGHTS], W);
                        assert_int_equal(cat[MC_WL_OPTIMIZER], (uint64_t)mult[o] * W);
                        assert_int_equal(cat[MC_WL_WORKSPACE], ws);
                        assert_int_equal(cat[MC_WL_GRADS] + cat[MC_WL_ACTIVATIONS] + cat[MC_WL_CASTS], 0);
                        assert_int_equal(cat[MC_WL_OTHER], scaler);
                        assert_int_equal(r.allocated_end, W * (1 + (uint64_t)mult[o]) + ws + scaler);
                        uint64_t sum = 0;
                        for (int k = 0; k < MC_WL_NCAT; k++) sum += r.peak_by_category[k];
                        assert_int_equal(sum, r.peak_allocated);
                        /* every gradient existed at once (sgd: before the step); with
                         * accumulation .grad holds W while the next micro-step's
                         * gradients are made (bf16 pre-norm's peak, at cuDNN's
                         * backward workspace, holds some of both) */
                        assert_true(r.peak_by_category[MC_WL_GRADS] <= (c.accum > 1 ? 2 : 1) * W);
                        assert_true(r.peak_allocated > r.allocated_end);
                        assert_true(r.peak_reserved >= r.peak_allocated);
                    }
                    mc_tfm_destroy(t);
                }
}

/* Adam's peak is in the step (weights, grads, two states, the sqrt list)
 * when activations are small next to the parameters. */
static void adam_peak(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_TRANSFORMER);
    c.d_model = 256, c.heads = 4, c.ff = 1024, c.seq = 2, c.batch = 2;
    c.optimizer = MC_WL_ADAM;
    mc_tfm *t = make(&c);
    mc_workload_step_result r;
    mc_tfm_step(t, &r);
    uint64_t W = param_blocks(&c);
    assert_int_equal(r.peak_by_category[MC_WL_OPTIMIZER], 3 * W);
    assert_int_equal(r.peak_by_category[MC_WL_GRADS], W);
    assert_int_equal(r.peak_allocated, 5 * W + 2 * WS + LTWS);
    mc_tfm_destroy(t);
}

static uint64_t peak_of(mc_tfm_config c)
{
    mc_tfm *t = make(&c);
    mc_workload_step_result r = {0};
    mc_tfm_step(t, &r);
    mc_tfm_step(t, &r);
    mc_tfm_destroy(t);
    return r.peak_allocated;
}

/* Where activations dominate: accumulation over 4 micro-batches and
 * checkpointing each layer both lower the peak, by most of the activations. */
static void accumulation_and_checkpoint_lower_peak(void **state)
{
    (void)state;
    for (int a = 0; a < 2; a++)
        for (int p = MC_WL_FP32; p <= MC_WL_FP16; p++) {
            mc_tfm_config c = tiny((mc_tfm_arch)a);
            c.enc_layers = c.dec_layers = 4;
            c.d_model = 64;
            c.seq = 64;
            c.batch = 64;
            c.precision = (mc_wl_precision)p;
            uint64_t base = peak_of(c);
            mc_tfm_config k4 = c;
            k4.accum = 4;
            uint64_t acc = peak_of(k4);
            mc_tfm_config ck = c;
            ck.checkpoint = true;
            uint64_t chk = peak_of(ck);
            uint64_t fixed = param_blocks(&c) * 2 + 2 * WS + 2 * LTWS;
            assert_true(acc < base);
            assert_true(chk < base);
            assert_true(acc - fixed < (base - fixed) / 2);
            assert_true(chk - fixed < (base - fixed) / 2);
        }
}

/* A cap below the need: every step is an OOM status, and the state after it
 * is the set-up's (nothing leaks, the next step starts clean). */
static void oom_is_a_status(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_TRANSFORMER);
    c.seq = 64, c.batch = 64;
    c.alloc.limit_bytes = 40ULL << 20; /* the forward thread's workspaces fit, little more */
    mc_tfm *t = make(&c);
    for (int s = 0; s < 3; s++) {
        mc_workload_step_result r;
        assert_int_equal(mc_tfm_step(t, &r), MC_WL_OOM);
        uint64_t cat[MC_WL_NCAT];
        mc_tfm_live_by_category(t, cat);
        assert_int_equal(cat[MC_WL_GRADS] + cat[MC_WL_ACTIVATIONS] + cat[MC_WL_CASTS] + cat[MC_WL_OTHER], 0);
        assert_int_equal(cat[MC_WL_WEIGHTS], param_blocks(&c));
    }
    mc_tfm_destroy(t);
    c.alloc.limit_bytes = 1ULL << 20; /* not even the parameters: set-up OOM */
    c.d_model = 512;
    c.heads = 8;
    t = make(&c);
    assert_int_equal(mc_tfm_setup_status(t), MC_WL_OOM);
    mc_workload_step_result r;
    assert_int_equal(mc_tfm_step(t, &r), MC_WL_OOM);
    mc_tfm_destroy(t);
}

/* The GPU path is refused, with a reason (no device memory is touched). */
static void gpu_refused(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_TRANSFORMER);
    char err[256] = "";
    assert_null(mc_tfm_create(&c, true, NULL, err, sizeof err));
    assert_non_null(strstr(err, "model-only"));
}

/* The trace: its allocs and frees balance per step as the allocator says,
 * and its first step's largest live sum is the step's peak. */
static void trace_matches_allocator(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_TRANSFORMER);
    c.precision = MC_WL_FP16;
    c.checkpoint = true;
    c.batch_first = true;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    char err[256];
    mc_tfm *t = mc_tfm_create(&c, false, fp, err, sizeof err);
    assert_non_null(t);
    mc_workload_step_result r1, r2;
    mc_tfm_step(t, &r1);
    mc_tfm_step(t, &r2);
    mc_tfm_step(t, &r2); /* not traced */
    mc_tfm_destroy(t);
    fclose(fp);
    /* replay the sizes (rounded as the allocator does) */
    uint64_t *size = calloc(1 << 20, sizeof *size);
    assert_non_null(size);
    uint64_t live = 0, peak = 0, end1 = 0;
    int step = 0, allocs = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long long id, bytes;
        if (sscanf(line, "alloc %llu %llu", &id, &bytes) == 2) {
            assert_true(id < (1 << 20));
            size[id] = ca_round_size(bytes);
            live += size[id];
            if (live > peak) peak = live;
            allocs++;
        } else if (sscanf(line, "free %llu", &id) == 1) {
            assert_true(size[id] > 0);
            live -= size[id];
            size[id] = 0;
        } else if (!strcmp(line, "reset_peak")) {
            step++;
            peak = live;
        } else if (!strncmp(line, "# end of step 1", 15)) {
            end1 = live;
            assert_int_equal(peak, r1.peak_allocated);
        }
    }
    assert_int_equal(step, 2);
    assert_int_equal(end1, r1.allocated_end);
    assert_int_equal(live, r1.allocated_end);
    assert_true(allocs > 100);
    free(size);
    free(buf);
}

/* Bytes a step holds (parameters and workspaces aside) when the forward
 * ends, read from the trace at mse_loss's first request. */
static uint64_t live_at_forward_end(const mc_tfm_config *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    char err[256];
    mc_tfm *t = mc_tfm_create(c, false, fp, err, sizeof err);
    assert_non_null(t);
    mc_workload_step_result r;
    mc_tfm_step(t, &r);
    mc_tfm_destroy(t);
    fclose(fp);
    uint64_t *size = calloc(1 << 16, sizeof *size), live = 0, got = UINT64_MAX;
    assert_non_null(size);
    bool in_step = false;
    for (char *line = strtok(buf, "\n"); line && got == UINT64_MAX; line = strtok(NULL, "\n")) {
        unsigned long long id, bytes;
        if (!strcmp(line, "reset_peak")) in_step = true;
        else if (in_step && strstr(line, "mse_loss elementwise")) got = live;
        else if (in_step && !strstr(line, "workspace") && sscanf(line, "alloc %llu %llu", &id, &bytes) == 2) {
            size[id] = ca_round_size(bytes);
            live += size[id];
        } else if (in_step && sscanf(line, "free %llu", &id) == 1) {
            live -= size[id];
        }
    }
    free(size);
    free(buf);
    return got;
}

/* One post-norm encoder layer, dropout 0, N 4, L 8, E 32 (4 heads of 8),
 * F 64: T = 32 tokens, [T,E] fp32 = 4096 bytes, [T] fp32 rounds to 512.
 * fp32 (memory-efficient attention): src, tgt; the in-projection copy
 * [3,T,E] 12288 (saved as q, k, v); attention output 4096, logsumexp
 * N*H*32*4 = 2048, its .contiguous() 4096 (out_proj's input); the
 * residual sum 4096 (norm1's input), mean and rstd 512 each; norm1's output
 * 4096 (linear1's input); relu's output [T,F] 8192 (saved, linear2's input);
 * the second sum 4096 (norm2's input) with mean and rstd; norm2's output.
 * fp16 (cuDNN): the eight cached weight and bias casts 18432; src's cast
 * 2048 (the in-projection's input); the copy 6144; philox seed and offset
 * 512 each, cuDNN's output 2048, its softmax stats 512; the fp32 sums 4096
 * each, norm1's output gone (linear1 keeps its cast, 2048), relu's output
 * 4096. */
static void forward_end_by_hand(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_ENCODER);
    c.enc_layers = 1;
    c.dropout = 0;
    assert_int_equal(live_at_forward_end(&c),
                     8 * 4096 + 12288 + 2048 + 8192 + 4 * 512);
    c.precision = MC_WL_FP16;
    assert_int_equal(live_at_forward_end(&c),
                     2 * 4096 + 18432 + 2048 + 6144 + 2048 + 3 * 512 + 4096 + 2 * 512 + 2048 + 4096 +
                         4096 + 4096 + 2 * 512);
}

static void bad_configs(void **state)
{
    (void)state;
    for (int i = 0; i < 10; i++) {
        mc_tfm_config c = tiny(MC_TFM_TRANSFORMER);
        switch (i) {
        case 0: c.heads = 5; break;                          /* does not divide d_model */
        case 1: c.causal = true; break;                      /* causal with the encoder-decoder */
        case 2: c.seq = 0; break;                            /* a sequence of 0 */
        case 3: c.batch = 6, c.accum = 4; break;             /* not divisible */
        case 4: c.dropout = 1.0; break;
        case 5: c.precision = MC_WL_FP16, c.d_model = 48, c.heads = 4; break; /* head 12: not %8 */
        case 6: c.d_model = 1024, c.heads = 2; break;        /* head 512 > 256 */
        case 7: c.enc_layers = 0; break;
        case 8: c.optimizer = 7; break;
        case 9: c.batch = 0; break;
        }
        char err[256] = "";
        assert_int_equal(mc_tfm_config_check(&c, err, sizeof err), -1);
        assert_true(err[0] && !strchr(err, '\n'));
        assert_null(mc_tfm_create(&c, false, NULL, err, sizeof err));
    }
    mc_tfm_config c = tiny(MC_TFM_ENCODER);
    c.causal = true;
    char err[256];
    assert_int_equal(mc_tfm_config_check(&c, err, sizeof err), 0);
}

/* --offload (C23): the saved activations leave the device between their
 * forward and their node's backward, so where activations dominate the
 * peak and the activations at it fall; the end of each step holds what
 * keep's does; with --checkpoint it is refused with one line. */
static void offload_lowers_peak_same_end(void **state)
{
    (void)state;
    for (int a = 0; a < 2; a++)
        for (int p = MC_WL_FP32; p <= MC_WL_BF16; p++) {
            mc_tfm_config c = tiny((mc_tfm_arch)a);
            c.d_model = 64;
            c.seq = 32;
            c.batch = 32;
            c.precision = (mc_wl_precision)p;
            c.fused = p == MC_WL_BF16;
            c.batch_first = p == MC_WL_FP16;
            c.accum = a ? 2 : 1;
            c.optimizer = MC_WL_ADAM;
            mc_tfm_config o = c;
            o.offload = true;
            setenv("MEMCLAIMS_MODEL_CHECKS", p == MC_WL_FP32 ? "1" : "0", 1);
            mc_tfm *tk = make(&c), *to = make(&o);
            unsetenv("MEMCLAIMS_MODEL_CHECKS");
            for (int s = 1; s <= 3; s++) {
                mc_workload_step_result rk, ro;
                assert_int_equal(mc_tfm_step(tk, &rk), MC_WL_OK);
                assert_int_equal(mc_tfm_step(to, &ro), MC_WL_OK);
                uint64_t ck[MC_WL_NCAT], co[MC_WL_NCAT];
                mc_tfm_live_by_category(tk, ck);
                mc_tfm_live_by_category(to, co);
                assert_memory_equal(ck, co, sizeof ck);
                uint64_t sum = 0;
                for (int k = 0; k < MC_WL_NCAT; k++) sum += ro.peak_by_category[k];
                assert_int_equal(sum, ro.peak_allocated);
                assert_true(ro.peak_allocated < rk.peak_allocated);
                /* activations at the peak: fewer (the encoder with accum 2 keeps 64%) */
                assert_true(ro.peak_by_category[MC_WL_ACTIVATIONS] < rk.peak_by_category[MC_WL_ACTIVATIONS]);
            }
            mc_tfm_destroy(tk);
            mc_tfm_destroy(to);
        }
    mc_tfm_config c = tiny(MC_TFM_TRANSFORMER);
    c.offload = c.checkpoint = true;
    char err[256] = "";
    assert_null(mc_tfm_create(&c, false, NULL, err, sizeof err));
    assert_true(strstr(err, "--offload") && !strchr(err, '\n'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(param_count_exact),
        cmocka_unit_test(setup_sums),
        cmocka_unit_test(end_of_step_state),
        cmocka_unit_test(adam_peak),
        cmocka_unit_test(accumulation_and_checkpoint_lower_peak),
        cmocka_unit_test(oom_is_a_status),
        cmocka_unit_test(gpu_refused),
        cmocka_unit_test(trace_matches_allocator),
        cmocka_unit_test(forward_end_by_hand),
        cmocka_unit_test(bad_configs),
        cmocka_unit_test(offload_lowers_peak_same_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
