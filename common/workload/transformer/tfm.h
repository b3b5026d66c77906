/* tfm.h: the suite's second training workload (issue 9): PyTorch
 * 2.11's nn.Transformer (encoder-decoder) or nn.TransformerEncoder trained
 * with MSE in eager mode, every tensor taken from the caching-allocator
 * model in the order PyTorch requests it:
 *
 *   transformer: model = nn.Transformer(d_model, nhead, enc, dec, ff, dropout,
 *                                       activation, batch_first, norm_first)
 *                per micro-step: src = randn; tgt = randn (same shape)
 *                                loss = mse_loss(model(src, tgt), tgt) / K
 *   encoder:     layer = nn.TransformerEncoderLayer(...); model =
 *                nn.TransformerEncoder(layer, enc, enable_nested_tensor=False)
 *                [causal: mask = generate_square_subsequent_mask(L) once,
 *                 model(src, mask=mask, is_causal=True)]
 *                per micro-step: src = randn; tgt = randn (the output's shape)
 *                                loss = mse_loss(model(src), tgt) / K
 *   opt: SGD | SGD(momentum 0.9) | Adam | AdamW (foreach), GradScaler for fp16,
 *        autocast for fp16/bf16, zero_grad(set_to_none) after the step.
 *
 * Model-only (the host backend) requests the blocks and does no arithmetic.
 * On the GPU the same sequence takes real blocks from the CUDA backend and
 * computes in them (tfm_kernels.h, wl_gpu.h): no device memory outside
 * what the model requests. How the sequence follows PyTorch, and where it
 * had to assume, is said in tfm_seq.c and tfm_attn.c; how
 * the arithmetic lays out its tensors, in tfm_ops.c. The step
 * result and CSV are core/wl_types.h's. */
#ifndef MC_TRANSFORMER_H
#define MC_TRANSFORMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "alloc/alloc_model.h"
#include "stats.h"
#include "workload/core/optimizer.h"
#include "workload/core/wl_profile_table.h"
#include "workload/core/wl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MC_TFM_TRANSFORMER, MC_TFM_ENCODER } mc_tfm_arch;
typedef enum { MC_TFM_RELU, MC_TFM_GELU } mc_tfm_activation;

typedef struct {
    mc_tfm_arch arch;
    int64_t d_model, heads, enc_layers, dec_layers, ff;
    double dropout;              /* 0 <= p < 1 */
    mc_tfm_activation activation;
    bool norm_first, batch_first, causal;
    int64_t seq, batch;          /* L tokens; the whole batch B (micro-batch B/accum) */
    int accum;
    mc_wl_optimizer optimizer;   /* any, AdamW included (decoupled weight decay 0.01) */
    mc_wl_precision precision;
    bool checkpoint;             /* each encoder and decoder layer, use_reentrant=False */
    bool fused;                  /* the elementwise chains in one kernel each (tfm_fused_ops.c, C25) */
    bool offload;                /* saved activations kept on the host until backward (tfm_offload.c, C23) */
    bool build_host;             /* made on the host, then model.cuda() (tfm_setup.c); else device="cuda" */
    bool deterministic;          /* GPU: the attention backward's dQ in a pass of its own, not summed
                                    by atomics (torch.use_deterministic_algorithms); the same memory */
    ca_config alloc;
    uint64_t host_capacity;      /* the simulated device (model-only), bytes */
    int sm_count;                /* for PyTorch's reduction scratch (132 on an H100) */
    int trace_steps;             /* steps written to the trace (2) */
    uint64_t seed;               /* GPU: weights, data and dropout streams */
    uint64_t data_seed;          /* GPU: src and tgt's instead (0: seed), so that data-parallel
                                    ranks draw batches of their own from the same weights */
    double lr;                   /* 0: the reference's (sgd and momentum 0.01, adam and adamw 1e-3) */
    uint64_t cublas_ws, cublaslt_ws; /* each cuBLAS handle's workspaces, bytes (PyTorch 2.11 on
                                    sm_90: core/pytorch_consts.h); other sizes model other GPUs
                                    or versions (model-only: the GPU's cuBLAS takes them as given) */
} mc_tfm_config;

/* The GPU check's hook (tfm_verify_step.c): parameters from the host,
 * the micro-steps' src and tgt from the host instead of randn, and the
 * gradients the optimizer is about to use copied back. Floats, in
 * model.parameters() order concatenated; src, tgt [tokens, d_model] in the
 * model's layout (batch-major with batch_first, else sequence-major). */
typedef struct {
    const float *params;                  /* NULL: the model's own init */
    const float *const *src, *const *tgt; /* [accum] each, for step 1 (later steps reuse them) */
    float *grads;                         /* NULL: not captured */
    float *losses;                        /* [accum] of step 1 (loss / K as PyTorch's); NULL: none */
} mc_tfm_data;

typedef struct mc_tfm mc_tfm;

/* PyTorch's defaults: d_model 512, 8 heads, 6+6 layers, ff 2048, dropout
 * 0.1, relu, post-norm, batch_first False; seq and batch 0 (to be set). */
mc_tfm_config mc_tfm_config_default(void);
/* 0, or -1 with one line in err (a head count that does not divide d_model,
 * --causal with the encoder-decoder, a zero sequence or batch, a batch not
 * divisible by accum, a head size the attention backends do not take, ...). */
int mc_tfm_config_check(const mc_tfm_config *c, char *err, size_t len);
/* Seed 000's two models, which the training claims run beside the MLP:
 * gradient accumulation on nn.Transformer(d_model=256) over torch.randn(64,
 * 100, 256) (batch_first False: sequence 64, batch 100), Adam fp32; mixed
 * precision on nn.Transformer(d_model=512, batch_first=True) over
 * torch.randn(32, 100, 512) (batch 32, sequence 100), Adam. PyTorch's other
 * defaults; the caller sets the sizes it sweeps. */
mc_tfm_config mc_tfm_seed000_accum(int64_t seq, int64_t batch);
mc_tfm_config mc_tfm_seed000_amp(int64_t batch, mc_wl_precision precision);
#define MC_TFM_SEED000_ACCUM_SEQ 64
#define MC_TFM_SEED000_ACCUM_BATCH 100
#define MC_TFM_SEED000_AMP_SEQ 100
#define MC_TFM_SEED000_AMP_BATCH 32

/* The first step whose peak is the steady one: Adam's state exists and
 * block placement has settled (step 2's peak still differs by a block's
 * placement, in PyTorch too). */
#define MC_TFM_STEADY_STEP 3

/* What the GPU run needs beyond that: a head size its attention kernels
 * take. 0, or -1 with one line in err. */
int mc_tfm_gpu_check(const mc_tfm_config *c, char *err, size_t len);
/* Parameters of the model, exactly as sum(p.numel() for p in model.parameters()). */
uint64_t mc_tfm_param_count(const mc_tfm_config *c);

/* Model-only, or on the current CUDA device (on_gpu). trace: memclaims-trace
 * v1 of set-up and the first trace_steps steps. data: NULL, or the GPU
 * check's hook (kept by reference; on_gpu only). */
mc_tfm *mc_tfm_create(const mc_tfm_config *c, bool on_gpu, FILE *trace, char *err, size_t len);
mc_tfm *mc_tfm_create_with(const mc_tfm_config *c, bool on_gpu, FILE *trace, mc_tfm_data *data,
                           char *err, size_t len);
mc_wl_status mc_tfm_setup_status(const mc_tfm *t);
mc_wl_status mc_tfm_step(mc_tfm *t, mc_workload_step_result *r);

/* One step as a program writes its loop rather than as mc_tfm_step does
 * (seed 000's C07 functions, issue 32 item 4; tfm_seed_program.c):
 *
 *   [zero_grad]; for K micro-steps: src = randn; tgt = randn (seq, batch);
 *   out = model(src, tgt); loss = mse_loss(out, tgt) [/ K]; loss.backward()
 *   then opt.step(); [zero_grad]
 *
 * With locals_live, src, tgt, out and loss are a function's variables:
 * each lives until the next micro-step rebinds it (after the new value is
 * made) and the last until the step's end, after opt.step(). seq and batch
 * (the micro-batch) replace the configuration's for this step; accum is at
 * most the configuration's; a causal encoder keeps its sequence. */
typedef struct {
    int64_t seq, batch; /* tokens per sequence; sequences per micro-step */
    int accum;          /* micro-steps */
    bool divide_loss;   /* loss / K: a 4-byte tensor and DivBackward0 */
    bool zero_grad_before, zero_grad_after;
    bool locals_live;
} mc_tfm_step_shape;
mc_wl_status mc_tfm_step_as(mc_tfm *t, const mc_tfm_step_shape *s, mc_workload_step_result *r);

/* Seed 000's C07 program (tfm_seed_program.c): its model's configuration
 * (built on the host, as the seed builds it), then its two functions,
 * large_batch() and gradient_accumulation(), as two steps of T made from
 * that configuration: out[0] and out[1] (peak_allocated is what each
 * returns; allocated_end memory_allocated() after it). 0, or -1 where a
 * step ran out of memory. */
mc_tfm_config mc_tfm_seed000_c07_config(void);
int mc_tfm_seed000_c07(mc_tfm *t, mc_workload_step_result out[2]);
/* One forward pass alone (C27), in one of core/wl_types.h's modes, every
 * request in PyTorch 2.11's order (tfm_forward.c; eval()'s fast paths:
 * tfm_fastpath.c):
 *   [peak reset] src = randn [; tgt = randn]; out = model(src[, tgt]); del out, src[, tgt]
 * fp32 without checkpointing, offload or --fused (exits for another). The
 * micro-batch is batch / accum. On a GPU out_host (if not NULL) receives
 * out, tokens x d_model floats in the model's layout. An OOM frees what the
 * forward held and returns MC_WL_OOM; the figures are those at the failure. */
mc_wl_status mc_tfm_forward(mc_tfm *t, mc_wl_fwd_mode mode, float *out_host,
                            mc_workload_forward_result *r);
/* build/workload --profile: one more step with its GPU time split by kind,
 * as mc_workload_profile_step (on a GPU only). */
mc_wl_status mc_tfm_profile_step(mc_tfm *t, mc_workload_step_result *r, mc_prof_table *tab);
void mc_tfm_destroy(mc_tfm *t);
const ca_allocator *mc_tfm_allocator(const mc_tfm *t);
/* Live bytes of each category now (they sum to memory_allocated). */
void mc_tfm_live_by_category(const mc_tfm *t, uint64_t out[MC_WL_NCAT]);
/* The model behind core/wl_handle.h's handle, as mc_workload_handle. */
typedef struct mc_wl mc_wl;
mc_wl *mc_tfm_handle(mc_tfm *t);

#ifdef __cplusplus
}
#endif
#endif
