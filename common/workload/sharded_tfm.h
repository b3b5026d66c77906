/* sharded_tfm.h: one rank's allocator figures, step by step, when the
 * Transformer workload's nn.TransformerEncoder (transformer/tfm.h: fp32,
 * one micro-step, the encoder alone) trains under FSDP2 on N ranks, each
 * with its own batch of B sequences (issue 30 item 7), and (below) its
 * step on the GPUs:
 *
 *   layer = nn.TransformerEncoderLayer(...); model = nn.TransformerEncoder(
 *           layer, enc, enable_nested_tensor=False); del layer   (on the device)
 *   fsdp:  fully_shard(each model.layers[i]); fully_shard(model)
 *   zero2: the same with reshard_after_forward=False
 *   plain: no wrapper (the single-GPU step, build/workload's figures)
 *   opt = SGD | SGD(momentum) | Adam (foreach) after wrapping; dist.barrier()
 *   per step: src, tgt = randn; loss = mse_loss(model(src), tgt) / 1;
 *             backward; opt.step(); zero_grad(set_to_none=True)
 *
 * The Transformer's own request sequence (transformer/tfm_seq.c) with
 * FSDP2's requests at its hook points (transformer/tfm_wrap.h), made by
 * sharded/sharded_fsdp.c for units of the encoder layers' 12 parameters.
 * The reference: tests/torch/fsdp_transformer_reference.py; the test:
 * tests/scripts/test_fsdp_transformer_fixtures.sh; the tool:
 * build/sharded_model --model transformer. Here because it joins two
 * models (README Layout: only common/workload/ may).
 *
 * On a GPU (gpu set) the same requests take real blocks and the model's
 * kernels compute in them; FSDP2's collectives and copies are the
 * runner's (sharded/sharded_gpu.h, through hooks): mc_sh_tfm_model makes
 * this network one the runner trains, as it trains the MLP. Every rank
 * builds the same weights from the seed, then keeps its rows; rank r draws
 * its own batch (randn from a seed of its own), or, with fixed_data, the
 * sequences r B .. r B + B - 1 of one global batch drawn on the host, the
 * same every step, so that one GPU trained on the global batch is the
 * ranks' check (plain, world 1, accum N: rank r's sequences its r-th
 * micro-batch; accumulation is refused otherwise). */
#ifndef MC_SHARDED_TFM_H
#define MC_SHARDED_TFM_H

#include <stddef.h>
#include <stdio.h>

#include "workload/sharded/sharded_gpu.h"
#include "workload/sharded/sharded_seq.h"
#include "workload/transformer/tfm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    mc_tfm_config tfm;   /* the network (batch: per rank), its allocator settings and SMs */
    mc_sh_mode mode;     /* plain, zero2 or fsdp */
    int world, rank;
    FILE *trace;         /* the requests of set-up and trace_steps steps (memclaims-trace v1), or NULL */
    int trace_steps;
    /* NULL, or the segments a PyTorch run of this rank got from the driver,
     * in order (nseg addresses and sizes: the reference's NAME.rankR.segments):
     * the model's n-th new segment goes at the n-th address when its size
     * agrees, as build/replay places a trace's (kept by reference). */
    const uint64_t *seg_addr, *seg_bytes;
    int nseg;
    bool gpu;                  /* on the current CUDA device */
    const mc_sh_hooks *hooks;  /* GPU: the runner's (kept by value), or NULL */
    bool fixed_data;           /* GPU: the global batch's sequences (above) */
} mc_sh_tfm_config;

typedef struct mc_sh_tfm mc_sh_tfm;

/* 0, or -1 with one line in err (on a GPU: also a head size its kernels do
 * not take, and dropout, which would give each rank the same masks). */
int mc_sh_tfm_check(const mc_sh_tfm_config *c, char *err, size_t len);
/* Built as the wrapper leaves it; NULL with err for a bad configuration. */
mc_sh_tfm *mc_sh_tfm_create(const mc_sh_tfm_config *c, char *err, size_t len);
mc_wl_status mc_sh_tfm_step(mc_sh_tfm *s, mc_sh_step_result *out);
/* With seg_addr: the model's segment requests that did not follow the list
 * (a size that differs from PyTorch's at that place, or one past its end),
 * and the addresses that could not be used (their range not free). */
void mc_sh_tfm_segments(const mc_sh_tfm *s, int *differ, uint64_t *conflicts);
/* Bytes allocated after set-up (before the first step). */
uint64_t mc_sh_tfm_allocated(const mc_sh_tfm *s);
void mc_sh_tfm_destroy(mc_sh_tfm *s);

/* The network for the GPU runner (sharded_gpu.h): net is kept by
 * reference; the runner's mc_sh_config gives the mode, world, rank, and in
 * wl the batch a rank, optimizer, lr, seed, fixed_data and SM count. */
mc_sh_model mc_sh_tfm_model(const mc_tfm_config *net);

#ifdef __cplusplus
}
#endif
#endif
