/* Tests of the Transformer's forward pass alone (model-only,
 * common/workload/transformer/tfm_forward.c, tfm_fastpath.c) in each of
 * core/wl_types.h's modes, from what holds whatever PyTorch's figures are:
 * without autograd nothing is left in a graph when the model returns, and
 * no memory-efficient logsumexp is made; eval() draws no dropout mask;
 * inference_mode allocates as eval() under no_grad; the output's bytes; the
 * peaks' order; which layers take the fast path under which conditions; one
 * fast-path and one Python-path layer's peak by hand; the flags left as
 * they were (a grad forward after an eval one is a fresh model's); OOM as a
 * status. Whether the sequences are PyTorch's is
 * tests/scripts/test_no_grad_fixtures.sh's question. */
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
#include "workload/core/pytorch_consts.h"
#include "workload/transformer/tfm.h"

#define WS (MC_PT_CUBLAS_WS_BYTES + MC_PT_CUBLASLT_WS_BYTES) /* the forward thread's workspaces */
#define KIB 1024ULL

static const mc_wl_fwd_mode ALL[MC_WL_FWD_NMODE] = {MC_WL_FWD_GRAD, MC_WL_FWD_NO_GRAD, MC_WL_FWD_EVAL,
                                                    MC_WL_FWD_INFERENCE};

/* d_model 64, 2 heads of 32, ff 128, seq 16, batch 4: 64 tokens, so a
 * [tokens, E] fp32 tensor is 16 KiB, [tokens, 3E] 48 KiB, [tokens, F] 32
 * KiB, layer_norm's mean and rstd 256 B (a 512 B block): small-pool
 * requests whose blocks are their sizes rounded to 512, so sums are exact. */
static mc_tfm_config tiny(mc_tfm_arch arch, bool batch_first)
{
    mc_tfm_config c = mc_tfm_config_default();
    c.arch = arch;
    c.d_model = 64;
    c.heads = 2;
    c.enc_layers = 1;
    c.dec_layers = 1;
    c.ff = 128;
    c.seq = 16;
    c.batch = 4;
    c.batch_first = batch_first;
    return c;
}

/* One forward of a fresh model; its trace in *trace (NULL: none kept). */
static mc_workload_forward_result forward(const mc_tfm_config *c, mc_wl_fwd_mode mode, char **trace)
{
    char *buf = NULL, err[256];
    size_t len = 0;
    FILE *fp = trace ? open_memstream(&buf, &len) : NULL;
    mc_tfm *t = mc_tfm_create(c, false, fp, err, sizeof err);
    if (!t) print_error("create: %s\n", err);
    assert_non_null(t);
    mc_workload_forward_result r;
    assert_int_equal(mc_tfm_forward(t, mode, NULL, &r), MC_WL_OK);
    uint64_t live[MC_WL_NCAT];
    mc_tfm_live_by_category(t, live);
    assert_int_equal(live[MC_WL_ACTIVATIONS], 0); /* del out and the inputs left nothing */
    mc_tfm_destroy(t);
    if (fp) {
        fclose(fp);
        *trace = buf;
    }
    return r;
}

/* Lines of the trace's forward (after "# forward") whose text has s. */
static int count_in_forward(const char *trace, const char *s)
{
    const char *f = strstr(trace, "# forward");
    assert_non_null(f);
    int n = 0;
    for (const char *p = strstr(f, s); p; p = strstr(p + 1, s)) n++;
    return n;
}

/* Seed 000's shape, smaller: every mode's invariants. Encoder layers draw 3
 * dropout masks each (dropout1, the FFN's, dropout2), decoder layers 4; the
 * attention's dropout draws in its kernel. Each of the 3 attentions per
 * (encoder + decoder) layer pair makes a logsumexp with autograd only. */
static void modes_invariants(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_TRANSFORMER, false);
    c.enc_layers = 2;
    c.dec_layers = 2;
    const uint64_t out = (uint64_t)(c.batch * c.seq * c.d_model * 4);
    mc_workload_forward_result r[MC_WL_FWD_NMODE];
    for (int m = 0; m < MC_WL_FWD_NMODE; m++) {
        char *tr;
        r[m] = forward(&c, ALL[m], &tr);
        assert_int_equal(r[m].status, MC_WL_OK);
        assert_int_equal(r[m].output_bytes, out);
        const bool grad = ALL[m] == MC_WL_FWD_GRAD, eval = ALL[m] >= MC_WL_FWD_EVAL;
        assert_int_equal(count_in_forward(tr, "dropout mask"), eval ? 0 : 2 * 3 + 2 * 4);
        assert_int_equal(count_in_forward(tr, "attention logsumexp"), grad ? 2 + 2 * 2 : 0);
        assert_true(grad ? r[m].saved_bytes > 0 : r[m].saved_bytes == 0);
        assert_int_equal(r[m].fast_layers + r[m].fast_mha, 0); /* batch_first False: no fast path */
        uint64_t sum = 0;
        for (int k = 0; k < MC_WL_NCAT; k++) sum += r[m].peak_by_category[k];
        assert_int_equal(sum, r[m].peak_allocated);
        assert_int_equal(r[m].allocated_end, r[0].allocated_end); /* weights + workspaces */
        assert_int_equal(r[m].allocated_before, r[0].allocated_before);
        assert_int_equal(r[m].peak_by_category[MC_WL_WORKSPACE], WS);
        free(tr);
    }
    /* What the graph held is what the grad forward holds beyond no_grad's when
     * the model returns (src, tgt and out in both, blocks of their sizes). */
    assert_int_equal(r[0].allocated_out - r[0].saved_bytes, r[1].allocated_out);
    assert_true(r[0].peak_allocated > r[1].peak_allocated);
    assert_true(r[1].peak_allocated >= r[2].peak_allocated);
    assert_int_equal(r[2].peak_allocated, r[3].peak_allocated); /* inference_mode is eval + no_grad */
    assert_int_equal(r[2].allocated_out, r[3].allocated_out);
    assert_int_equal(r[2].peak_reserved, r[3].peak_reserved);
    assert_true(r[0].peak_by_category[MC_WL_ACTIVATIONS] > 4 * r[2].peak_by_category[MC_WL_ACTIVATIONS]);
}

/* Which layers take PyTorch's fast paths: eval() without autograd, batch_first,
 * an even head count; the encoder's layers whole, the decoder's self-attention. */
static void fast_path_conditions(void **state)
{
    (void)state;
    mc_tfm_config e = tiny(MC_TFM_ENCODER, true);
    e.enc_layers = 3;
    for (int m = 0; m < MC_WL_FWD_NMODE; m++) {
        mc_workload_forward_result r = forward(&e, ALL[m], NULL);
        assert_int_equal(r.fast_layers, ALL[m] >= MC_WL_FWD_EVAL ? 3 : 0);
        assert_int_equal(r.fast_mha, 0);
    }
    mc_tfm_config t = tiny(MC_TFM_TRANSFORMER, true);
    t.enc_layers = 2;
    t.dec_layers = 3;
    mc_workload_forward_result r = forward(&t, MC_WL_FWD_INFERENCE, NULL);
    assert_int_equal(r.fast_layers, 2);
    assert_int_equal(r.fast_mha, 3);
    e.heads = 1; /* an odd head count: MultiheadAttention's own path */
    r = forward(&e, MC_WL_FWD_EVAL, NULL);
    assert_int_equal(r.fast_layers + r.fast_mha, 0);
    e = tiny(MC_TFM_ENCODER, false); /* not batch_first */
    r = forward(&e, MC_WL_FWD_EVAL, NULL);
    assert_int_equal(r.fast_layers + r.fast_mha, 0);
}

/* The parameters of one encoder layer, blocks of 512: in_proj 48 KiB + 1 KiB
 * (768 B), out_proj 16 KiB + 512, linear1 32 KiB + 512, linear2 32 KiB +
 * 512, two LayerNorms 4 x 512. */
#define ENC_LAYER_BYTES (48 * KIB + 1024 + 16 * KIB + 512 + 32 * KIB + 512 + 32 * KIB + 512 + 4 * 512)

/* One batch_first encoder layer in eval() under no_grad, by hand (the
 * sequence in tfm_fastpath.c): src 16 KiB; native MHA's projection 48, the
 * attention's output 16 and the out-projection 16 are live together (the
 * first two go after the last is made): 96 KiB, the peak; then layer_norm
 * (16 + 2 x 0.5, freed before the attention's output goes), the FFN's
 * [T, F] 32 and [T, E] 16 beside src and pre_ffn_res (80 KiB). The
 * workspaces come at the first GEMM. */
static void fast_layer_by_hand(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_ENCODER, true);
    mc_workload_forward_result r = forward(&c, MC_WL_FWD_EVAL, NULL);
    assert_int_equal(r.fast_layers, 1);
    assert_int_equal(r.allocated_before, ENC_LAYER_BYTES);
    assert_int_equal(r.peak_by_category[MC_WL_ACTIVATIONS], 96 * KIB);
    assert_int_equal(r.peak_allocated, ENC_LAYER_BYTES + WS + 96 * KIB);
    assert_int_equal(r.allocated_out, ENC_LAYER_BYTES + WS + 32 * KIB); /* src, out */
    assert_int_equal(r.allocated_end, ENC_LAYER_BYTES + WS);
}

/* The same layer, not batch_first (MultiheadAttention in Python, eval(),
 * no_grad): the in-projection 48 KiB and its .contiguous() copy 48 beside
 * src are the peak (112 KiB); then the attention's output and its permuted
 * copy 16 + 16 beside the copy (96), the FFN's linear1 and relu outputs 32
 * + 32 (96). Dropout returns its input. */
static void python_layer_by_hand(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_ENCODER, false);
    mc_workload_forward_result r = forward(&c, MC_WL_FWD_EVAL, NULL);
    assert_int_equal(r.fast_layers, 0);
    assert_int_equal(r.peak_by_category[MC_WL_ACTIVATIONS], 112 * KIB);
    assert_int_equal(r.peak_allocated, ENC_LAYER_BYTES + WS + 112 * KIB);
    assert_int_equal(r.allocated_out, ENC_LAYER_BYTES + WS + 32 * KIB);
}

/* A forward leaves the model as it was: after an eval() forward, a grad
 * forward is a fresh model's (dropout drawn again, the graph kept), and
 * after it a training step runs. */
static void flags_restored(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_TRANSFORMER, true);
    mc_workload_forward_result fresh = forward(&c, MC_WL_FWD_GRAD, NULL), a, b;
    char err[256];
    mc_tfm *t = mc_tfm_create(&c, false, NULL, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(mc_tfm_forward(t, MC_WL_FWD_EVAL, NULL, &a), MC_WL_OK);
    assert_int_equal(mc_tfm_forward(t, MC_WL_FWD_GRAD, NULL, &b), MC_WL_OK);
    assert_int_equal(b.peak_allocated, fresh.peak_allocated);
    assert_int_equal(b.allocated_out, fresh.allocated_out);
    assert_int_equal(b.saved_bytes, fresh.saved_bytes);
    assert_int_equal(b.fast_layers + b.fast_mha, 0);
    mc_workload_step_result s;
    assert_int_equal(mc_tfm_step(t, &s), MC_WL_OK);
    mc_tfm_destroy(t);
}

/* Under a limit the grad forward does not fit and the eval one does: OOM
 * is returned, what the forward held goes, and the next forward runs. */
static void oom_is_a_status(void **state)
{
    (void)state;
    mc_tfm_config c = tiny(MC_TFM_TRANSFORMER, false);
    c.enc_layers = c.dec_layers = 2;
    c.batch = 64;
    mc_workload_forward_result g = forward(&c, MC_WL_FWD_GRAD, NULL), e = forward(&c, MC_WL_FWD_EVAL, NULL);
    c.alloc.limit_bytes = (g.peak_reserved + e.peak_reserved) / 2;
    char err[256];
    mc_tfm *t = mc_tfm_create(&c, false, NULL, err, sizeof err);
    assert_non_null(t);
    mc_workload_forward_result r;
    assert_int_equal(mc_tfm_forward(t, MC_WL_FWD_GRAD, NULL, &r), MC_WL_OOM);
    uint64_t live[MC_WL_NCAT];
    mc_tfm_live_by_category(t, live);
    assert_int_equal(live[MC_WL_ACTIVATIONS], 0);
    assert_int_equal(mc_tfm_forward(t, MC_WL_FWD_EVAL, NULL, &r), MC_WL_OK);
    assert_int_equal(r.peak_allocated, e.peak_allocated);
    mc_tfm_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(modes_invariants),
        cmocka_unit_test(fast_path_conditions),
        cmocka_unit_test(fast_layer_by_hand),
        cmocka_unit_test(python_layer_by_hand),
        cmocka_unit_test(flags_restored),
        cmocka_unit_test(oom_is_a_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
