/* tfm_kernels.h: the Transformer workload's arithmetic on the GPU: LayerNorm,
 * fused attention, the elementwise chains (eager and fused). Plain C
 * API (extern "C"), callable from .c and .cu files. Kernels are in
 * tfm_layernorm.cu, tfm_attention.cu, tfm_attention_bwd.cu,
 * tfm_elementwise.cu, tfm_fused.cu; device helpers in
 * tfm_kernels.cuh.
 *
 * Contract, as wl_gpu.h: every call is asynchronous on the stream of g
 * (mc_gpu_stream), every launch is checked (CUDA errors exit MC_EXIT_CUDA),
 * and NOTHING here allocates device memory: outputs and every scratch buffer
 * come from the caller (the allocator model), sized as documented here.
 * Linear layers (GEMMs, bias in the cuBLASLt epilogue), MSE loss and its
 * backward, the casts autocast makes, fills and copies are wl_gpu.h's
 * (mc_gpu_linear, mc_gpu_gemm_dx/dw, mc_gpu_bias_grad, mc_gpu_mse,
 * mc_gpu_mse_bwd, mc_gpu_cast): not repeated here.
 *
 * dt: MC_DT_F32 / MC_DT_F16 / MC_DT_BF16 (wl_gpu.h) of the tensors named;
 * arithmetic in fp32 always. Shapes row-major; n counts elements.
 *
 * Dropout randomness is tfm_rng.h's: element e of a dropout call with
 * (seed, offset) is kept iff tfm_rng_keep(seed, offset, e, p), the same
 * decision the host reference (tfm_host_ref.h) draws; attention's dropout
 * draws tfm_rng_attn_keep (eight decisions a philox block). The caller gives
 * each dropout call of a step its own offset (see tfm_rng.h). */
#ifndef MC_TFM_KERNELS_H
#define MC_TFM_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "workload/core/wl_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ LayerNorm */

/* y[rows, n] = (x - mean) * rstd * gamma + beta, per row over n, with
 * var biased (/n) and rstd = 1 / sqrt(var + eps) (nn.LayerNorm's
 * layer_norm_eps, 1e-5 in nn.Transformer). x, y, gamma, beta: dtype dt
 * (fp32 under autocast: layer_norm is on autocast's fp32 list). mean, rstd:
 * float32 [rows], saved for the backward, as native_layer_norm returns. */
void tfm_ln_fwd(mc_wl_gpu *g, void *y, float *mean, float *rstd, const void *x,
                const void *gamma, const void *beta, int64_t rows, int64_t n, float eps, int dt);

/* dx[rows, n], dgamma[n], dbeta[n] from dy[rows, n], x, gamma, mean, rstd.
 * dx = rstd * (dy g - mean(dy g) - xhat * mean(dy g xhat)) per row;
 * dgamma = sum_rows dy xhat, dbeta = sum_rows dy (fp32 accumulation).
 * Column sums split over part_rows blocks of rows into part_g, part_b
 * (float [part_rows, n] each), then one final pass. PyTorch's layer_norm
 * backward (ATen/native/cuda/layer_norm_kernel.cu, "dgamma_blocks",
 * "dbeta_blocks") allocates two [blocks.y * threads.y, n] buffers of the
 * weight's dtype (fp32 under autocast) when the rows are many: pass those
 * and their row count. NULL with part_rows 0 (where PyTorch allocates
 * none): one block per 32 columns walks every row, no scratch. dx, dgamma
 * or dbeta NULL: not computed. */
void tfm_ln_bwd(mc_wl_gpu *g, void *dx, void *dgamma, void *dbeta, const void *dy, const void *x,
                const void *gamma, const float *mean, const float *rstd, int64_t rows, int64_t n,
                float *part_g, float *part_b, int64_t part_rows, int dt);

/* ================================================================ attention */

/* A [B, H, L, Dh] view: element (b, h, l, d) at b * b + h * h + l * l + d
 * (strides in elements; d contiguous). What MultiheadAttention hands SDPA
 * in training (F.multi_head_attention_forward, self-attention): the packed
 * in-projection [L, B, 3E] is copied to a contiguous [3, L, B, E] and q, k,
 * v are its three [L, B, E] slices (k at + L B E, v at + 2 L B E elements),
 * each viewed {E, Dh, B E}; SDPA's output (memory-efficient and flash) is
 * [B, L, H, Dh] in memory: {L E, Dh, E}; cuDNN's (PyTorch 2.11's choice
 * for fp16/bf16 on an H100) is laid out as q: {E, Dh, B E}; the
 * memory-efficient backward's grad_q/k/v are [B, L, H, Dh] each ({L E, Dh,
 * E}) or, where q, k, v share one storage, slices of one [B, L, 3, H, Dh]
 * chunk ({3 L E, Dh, 3 E}, k at + E, v at + 2E). A packed [L, B, 3E] gives {3E, Dh, 3 B E}; a contiguous
 * [B, H, L, Dh] gives {H L Dh, L Dh, Dh}. Any such strides work. */
typedef struct {
    int64_t b, h, l;
} tfm_view;

typedef struct {
    int B, H;          /* batch, heads */
    int Lq, Lk;        /* query and key lengths */
    int Dh;            /* head dim: 16, 32, 64 or 128 */
    bool causal;       /* key j masked for query i where j > i (top-left, as SDPA's is_causal) */
    float dropout_p;   /* on the attention probabilities; 0: none */
    uint64_t seed, offset; /* tfm_rng_attn_keep stream: element (bh, i, j) is index (bh * Lq + i) * Lk + j */
    float scale;       /* softmax scale; 1 / sqrt(Dh) as SDPA's default */
} tfm_attn;

/* Head dims the kernels are built for. */
bool tfm_attn_supported(int Dh);

/* Off: tfm_attn_fwd and tfm_attn_bwd run the general (SIMT) kernels even
 * where the tensor-core ones would (--verify checks both; on by default). */
void tfm_attn_tc_set_enabled(bool on);

/* O = softmax(scale Q K^T [+ causal mask]) with dropout, times V, without
 * an L x L buffer: one block per (b * H + h, tile of query rows), online
 * softmax over tiles of keys in shared memory. q, k, v, o: dtype dt.
 * lse: float32 [B, H, Lq] contiguous, logsumexp of each row of scale Q K^T
 * (natural log), or NULL where none is kept (a forward without autograd,
 * whose SDPA computes none), saved for the backward (the only thing saved besides
 * q, k, v, o; no dropout mask: the backward regenerates it). PyTorch's
 * memory-efficient forward allocates its logsumexp [B, H, ceil(Lq / 32) 32]
 * (flash and cuDNN: [B, H, Lq]); a buffer of that size works here (the first
 * B H Lq floats are used). Dropout p > 0 and is_causal are taken as SDPA
 * gets them from MultiheadAttention (attn_mask None, is_causal True). */
void tfm_attn_fwd(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *lse,
                  const void *q, tfm_view vq, const void *k, tfm_view vk, const void *v,
                  tfm_view vv, int dt);

/* dq, dk, dv (dtype dt, views as given) from dO. delta: float32 [B, H, Lq]
 * scratch, filled first with rowsum(dO * O) (the "delta" the
 * memory-efficient and flash backends allocate; flash rounds Lq up to a
 * multiple of 128, efficient allocates [B, H, Lq]). dq_acc: NULL, or float32
 * [B, H, Lq, Dh] scratch that the caller's backend allocates anyway (cuDNN's
 * backward workspace and the memory-efficient kernel's grad_q workspace
 * hold a dQ accumulator): where given, the tensor-core kernels add dQ into
 * it with atomics in the pass that makes dK and dV, as FlashAttention-2
 * does, then write dq from it; where NULL (and on the general kernels), dQ
 * is computed by its own pass over the key tiles
 * (deterministic, no accumulator and no atomics), dK and dV by one over the
 * query tiles. */
void tfm_attn_bwd(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk,
                  tfm_view vdk, void *dv, tfm_view vdv, float *delta, float *dq_acc, const void *dout,
                  tfm_view vdo, const void *q, tfm_view vq, const void *k, tfm_view vk,
                  const void *v, tfm_view vv, const void *o, tfm_view vo, const float *lse,
                  int dt);

/* The same through cuDNN's fused flash kernels (tfm_attention_cudnn.cu), as
 * PyTorch 2.11 runs SDPA in fp16 and bf16 on the H100. The buffers are the
 * caller's, as PyTorch allocates them: seed and offset, int64 [1] each on
 * the device (the forward writes a->seed and a->offset there; the backward
 * reads them); ws: the forward's workspace, or the backward's (the fp32 dQ
 * accumulator [B, H, Lq, Dh], then softmax_sum [B, H, Lq], then the
 * engine's); rng_dump: NULL, or float [B, H, Lq, Lk] that receives the
 * forward's dropout keep mask (--verify compares against it). Returns 0
 * where cuDNN ran; nonzero (nothing done) where it is not built in, is
 * turned off (MEMCLAIMS_CUDNN=0), or takes no graph for the case (fp32, a
 * head size that is no multiple of 8 or over 128): the caller then runs
 * tfm_attn_fwd / tfm_attn_bwd. The first such case is one line on stderr. */
typedef struct {
    void *seed, *offset;
    void *ws;
    uint64_t ws_bytes;
    float *rng_dump;
} tfm_cudnn_io;

/* The backward's workspace as PyTorch 2.11 allocates it for cuDNN's SDPA
 * (bytes): the dQ accumulator and softmax_sum, fp32, plus 256. */
static inline uint64_t tfm_cudnn_bwd_ws_bytes(int64_t B, int64_t H, int64_t Lq, int64_t Dh)
{
    return (uint64_t)(B * H * Lq * (Dh + 1) * 4 + 256);
}

/* With dropout the forward runs on cuDNN only where the backward will too
 * (its engine's workspace fits in tfm_cudnn_bwd_ws_bytes): the suite's
 * kernels cannot redraw cuDNN's dropout mask. */
int tfm_cudnn_attn_fwd(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *stats, const void *q,
                       tfm_view vq, const void *k, tfm_view vk, const void *v, tfm_view vv, int dt,
                       const tfm_cudnn_io *io);
int tfm_cudnn_attn_bwd(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk, tfm_view vdk,
                       void *dv, tfm_view vdv, const void *dout, tfm_view vdo, const void *q, tfm_view vq,
                       const void *k, tfm_view vk, const void *v, tfm_view vv, const void *o, tfm_view vo,
                       const float *stats, int dt, const tfm_cudnn_io *io);
/* Whether cuDNN's kernels can run here (built in, cudnnCreate works, not
 * turned off); else why not, in tfm_cudnn_state(). */
bool tfm_cudnn_available(void);
/* For a run's provenance, without touching the GPU: "cuDNN 9.19.0" (the
 * library loaded), with " turned off (MEMCLAIMS_CUDNN=0)" where it is, or
 * "the suite's kernels (not built with cuDNN)". */
void tfm_cudnn_describe(char *out, size_t n);
/* Off: the calls return nonzero, so the suite's kernels run (--verify's
 * whole steps with dropout, whose float64 model draws the suite's stream). */
void tfm_cudnn_set_enabled(bool on);
/* Why cuDNN did not run the last case it did not run, or "cuDNN". */
const char *tfm_cudnn_state(void);

/* ================================================================ eager elementwise */

enum { TFM_ACT_NONE = 0, TFM_ACT_RELU = 1, TFM_ACT_GELU = 2 };

/* y = relu(x) or gelu(x) (erf form, F.gelu's default), n elements of dt. */
void tfm_act_fwd(mc_wl_gpu *g, void *y, const void *x, int64_t n, int act, int dt);
/* dx from dy: relu from its OUTPUT y (threshold_backward(dy, y, 0), what
 * relu saves); gelu from its INPUT x (gelu_backward(dy, x), what gelu saves).
 * saved: y for relu, x for gelu. */
void tfm_act_bwd(mc_wl_gpu *g, void *dx, const void *dy, const void *saved, int64_t n, int act,
                 int dt);

/* native_dropout: mask[i] = kept (uint8 0/1, as its bool mask), y = x * mask
 * / (1 - p). n elements of dt; 0 < p < 1. */
void tfm_dropout_fwd(mc_wl_gpu *g, void *y, uint8_t *mask, const void *x, int64_t n, float p,
                     uint64_t seed, uint64_t offset, int dt);
/* native_dropout_backward: dx = dy * mask / (1 - p). */
void tfm_dropout_bwd(mc_wl_gpu *g, void *dx, const void *dy, const uint8_t *mask, int64_t n,
                     float p, int dt);

/* out = a + b, elementwise with type promotion (under autocast the residual
 * is fp32 and the branch fp16/bf16: out fp32). dt_out, dt_a, dt_b each
 * MC_DT_*; out may alias a or b when of the same dtype. */
void tfm_add(mc_wl_gpu *g, void *out, int dt_out, const void *a, int dt_a, const void *b,
             int dt_b, int64_t n);

/* h[rows, n] += b[n] (matmul's add_ of the bias), in place. */
void tfm_bias_add(mc_wl_gpu *g, void *h, const void *b, int64_t rows, int64_t n, int dt);

/* ================================================================ fused chains (C25) */

/* One kernel for the chain that eager runs as bias add, activation,
 * dropout and residual add:
 *   u = h + bias (bias [n_cols] broadcast over rows; NULL: h already has it),
 *   y = [res +] dropout(act(u)).
 * h, bias: dtype dt (the Linear's output, computed WITHOUT the bias
 * epilogue); y and res: dtype dt_out (res NULL: no residual; then dt_out
 * is usually dt). p == 0: no dropout. rows * n_cols elements.
 * bits: uint8 [rows * n_cols] saved for the backward: bit 0 = kept by
 * dropout (always 1 when p == 0), bit 1 = u > 0 (relu's derivative). For
 * gelu the backward also needs u, recomputed from h and bias: h is saved
 * (by the fused chain, instead of eager's separate activation output).
 * Eager PyTorch adds the bias inside cuBLASLt (addmm's epilogue), so the
 * usual call passes bias NULL and h from mc_gpu_linear; the fused kernel
 * then replaces activation, dropout and residual add.
 * Saved bytes per element, fused vs eager for the FFN's first chain
 * (linear1 -> act -> dropout, the dropout output saved by linear2 in both):
 *   relu: fused 1 (bits) vs eager sizeof(dt) (relu's output) + 1 (mask);
 *   gelu: fused sizeof(dt) (h) + 1 vs eager sizeof(dt) (gelu's input) + 1.
 * (With p == 0 eager saves no mask; fused relu still saves its 1 byte.) */
void tfm_fused_fwd(mc_wl_gpu *g, void *y, int dt_out, uint8_t *bits, const void *h,
                   const void *bias, const void *res, int64_t rows, int64_t n_cols, int act,
                   float p, uint64_t seed, uint64_t offset, int dt);
/* du = dy * kept / (1 - p) * act'(u), dtype dt (the Linear's output
 * gradient); dy dtype dt_out. h and bias needed for gelu only (NULL
 * otherwise). The residual's gradient is dy itself (no kernel). The bias
 * gradient is then mc_gpu_bias_grad over du, as eager's. */
void tfm_fused_bwd(mc_wl_gpu *g, void *du, const void *dy, int dt_out, const uint8_t *bits,
                   const void *h, const void *bias, int64_t rows, int64_t n_cols, int act,
                   float p, int dt);

#ifdef __cplusplus
}
#endif
#endif
