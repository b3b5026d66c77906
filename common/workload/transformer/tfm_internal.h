/* tfm_internal.h: what the Transformer workload's files share. The
 * model replays PyTorch's eager autograd in miniature: forward ops request
 * their outputs and record nodes on a tape with the tensors they save;
 * backward runs the nodes in reverse creation order (the engine's order:
 * the ready node with the highest sequence number runs first, and in one
 * thread that is always the newest node not yet run), each node requesting
 * its gradients, then dropping its incoming gradient and its saved tensors,
 * then handing each gradient to the next node's input buffer (added in
 * place when the buffer holds the only reference, engine.cpp InputBuffer)
 * or to .grad (AccumulateGrad: stolen when it is the only reference, added
 * in place on later micro-steps). Buffers are reference counted: a block is
 * freed when the last Python variable, saved tensor, cast cache or gradient
 * buffer that holds it lets go, which is when PyTorch frees it. */
/* Which file calls which (A -> B: A calls functions of B; no file calls
 * one above it, so there is no circle):
 *
 *   tfm_measure.c, tfm_verify_step.c -> tfm_seq.c (tfm.h: life cycle, step)
 *   tfm_forward.c -> tfm_seq.c, tfm_tape.c (a forward pass alone)
 *   tfm_seq.c -> tfm_setup.c, tfm_opt.c, tfm_config.c, tfm_offload.c
 *                (tfm_offload.h), tfm_fastpath.c, tfm_attn.c, tfm_fused_ops.c,
 *                tfm_ops.c, tfm_tape.c
 *   tfm_fastpath.c -> tfm_attn.c (attn_fwd_gpu), tfm_ops.c, tfm_tape.c
 *   tfm_attn.c, tfm_fused_ops.c -> tfm_ops.c -> tfm_tape.c
 *   tfm_offload.c -> tfm_tape.c
 *   tfm_wrap.c -> tfm_config.c (a wrapper's set-up and accessors)
 *   tfm_tape.c -> the kernels (kernels/tfm_kernels.h) only
 *   kernels/, reference/ -> nothing of this folder
 *
 * The tape calls back up through function pointers alone: each node's
 * bwd_fn (set by the op that recorded it), the saved-tensor hooks
 * (tfm_saved_hooks, which tfm_seq.c installs: its checkpoint's recompute,
 * tfm_offload.c's pack, unpack, drop and freed) and a wrapper's
 * pre_backward (tfm_wrap.h). This header declares
 * nothing of tfm_seq.c or tfm_offload.c, so tfm_tape.c sees neither. */
#ifndef MC_TRANSFORMER_INTERNAL_H
#define MC_TRANSFORMER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tfm.h"
#include "workload/transformer/kernels/tfm_kernels.h"
#include "tfm_wrap.h"
#include "workload/core/optimizer_step.h"
#include "workload/core/wl_ctx.h"

/* One storage: a block of the allocator and who holds it. */
typedef struct tb {
    wl_t t;
    int refs;
    struct tb *prev, *next;    /* every live buffer, for the OOM unwind */
} tb;

/* A tensor in the forward: its storage (NULL: none), its numel and element
 * size, its producer on the tape (node -1: needs no gradient, -2 - i: the
 * parameter i itself), the producer's output slot, and whether its strides
 * are those of a contiguous tensor. */
typedef struct {
    tb *b;
    int64_t n;
    int es;
    int node, slot;
    bool contig;
    int64_t off;               /* bytes into the storage (a view's start: q, k, v, split weights) */
} tv;

#define TV_NONE ((tv){NULL, 0, 0, -1, 0, false, 0})
#define MAX_SAVED 8
#define MAX_NEXT 4

struct mc_tfm;
struct tnode;
/* A node's backward: requests its gradients into out[] (one per next edge,
 * NULL where none), calling tape_apply_return at the point where PyTorch's
 * apply() returns. Returns 0 or -1 on OOM. */
typedef int (*bwd_fn)(struct mc_tfm *T, struct tnode *nd, tb *out[MAX_NEXT]);

typedef struct tnode {
    bwd_fn bwd;
    const char *what;
    tb *saved[MAX_SAVED];
    int nsaved;
    struct { int node, slot, es; } next[MAX_NEXT]; /* es: the gradient's element size */
    int nnext;
    uint64_t sa[MAX_SAVED];    /* the saved tensors' device addresses (a view's too); a parameter's: its offset */
    int sp[MAX_SAVED];         /* a saved parameter's index + 1 (0: none): its address is read in backward,
                                  where a wrapper may have put its storage since (FSDP2's reshard and
                                  gather: the saved tensor is the same parameter, its storage new) */
    tb *gin[3];                /* input buffer: the gradient of each output */
    int gin_es[3];             /* ... its element size */
    bool gin_nc[3];            /* ... held as a non-contiguous view */
    bool gin_view[3];          /* ... held as a view (its base shares the storage) */
    int64_t a[9];              /* the op's sizes, for its backward (attention: a[8] 1 where
                                * cuDNN ran the forward, so its backward must too) */
    int group;                 /* checkpointed layer (-1: none) */
    int orig_saved;            /* checkpointed: how many the first forward packed */
    bool ran, applied, released;
    bool packed[MAX_SAVED];    /* taken by the pack hook: saved[i] is NULL until its unpack */
    uint64_t host_bytes[MAX_SAVED]; /* --offload's pack: bytes kept on the host (0: none) */
    int host_slot[MAX_SAVED];  /* ... its pinned buffer in T->pin (GPU only) */
    int wrap_pre;              /* 1 + the layer whose output it made, whose wrapper's
                                  pre_backward runs before it (tfm_wrap.h); 0: none */
} tnode;

typedef struct {
    wl_t p, g, m, v, s;        /* parameter, .grad, exp_avg|momentum, exp_avg_sq, sqrt temp */
    int64_t n;                 /* elements */
    tb *cast;                  /* autocast's cached fp16/bf16 copy (NULL: none) */
    int cast_node;             /* its ToCopyBackward0 on the tape */
    char name[80];             /* its name in model.named_parameters() */
} tparam;

/* One checkpointed layer: its nodes on the tape and its inputs. */
typedef struct {
    int first, last;           /* tape range [first, last) */
    int last_saving;           /* the last node in it that saves (early stop) */
    int layer;                 /* encoder 0..N-1, decoder N.. */
    tv in, mem;                /* what _NoopSaveInputs keeps (mem: decoder only) */
    bool recomputed;
    int live_nodes;            /* nodes not yet released (frame dies at 0) */
} tgroup;

/* Saved-tensor hooks: how the tape reaches what keeps a saved tensor
 * somewhere else or makes it again, as torch.autograd.graph.
 * saved_tensors_hooks(pack_hook, unpack_hook) and checkpoint's
 * recompute-on-unpack do in PyTorch. tfm_seq.c installs them when it makes
 * the model (--checkpoint: recompute, its own; --offload: tfm_offload.c's
 * pack, unpack, drop and freed); NULL: none. The tape calls those files
 * through this table only, so neither is below it and above it at once. */
typedef struct {
    /* A tensor is saved as slot i of nd (bytes from device address addr, in
     * storage b): true when the hook keeps it, and the tape holds no
     * reference (save_on_cpu's pack_hook). */
    bool (*pack)(struct mc_tfm *T, struct tnode *nd, int i, const tb *b, uint64_t addr, uint64_t bytes);
    /* Before nd's backward runs: every packed slot back in nd->saved and
     * nd->sa (unpack_hook, at the start of apply). 0, or -1 on OOM. */
    int (*unpack)(struct mc_tfm *T, struct tnode *nd);
    /* Packed slot i of nd goes (release_variables, or the graph freed). */
    void (*drop)(struct mc_tfm *T, struct tnode *nd, int i);
    /* The graph is gone (tape_clear): a check that nothing packed outlives it. */
    void (*freed)(struct mc_tfm *T);
    /* Checkpoint: before the first node of group g runs in backward, the
     * layer's forward again, its saved tensors put in the group's nodes
     * (non-reentrant checkpoint's unpack_hook). 0, or -1 on OOM. */
    int (*recompute)(struct mc_tfm *T, int g);
} tfm_saved_hooks;

struct mc_tfm {
    wl_ctx ctx;                /* allocator, tensors, accounting, trace (core/wl_ctx.c) */
    mc_tfm_config c;
    int64_t N, L, E, H, hd, T; /* micro-batch, sequence, width, heads, head size, tokens */
    int es;                    /* compute element size: 4, or 2 under autocast */
    bool lowp;
    tb *all;                   /* live buffers */

    tparam *p;
    int np, cap_p;
    int enc_first, enc_norm, dec_first, dec_norm; /* parameter indices (-1: none) */
    int per_enc, per_dec;      /* parameters per layer: 12, 18 */

    tnode *tape;
    int nt, cap_t;
    tgroup *grp;
    int ngrp, cap_grp;
    int cur_group;             /* forward: the checkpointed layer being built (-1) */
    bool recomputing, stopped; /* a checkpoint's recomputation; its early stop */
    int rec_target, rec_base;  /* the group being recomputed; its node offset */
    tfm_saved_hooks hooks;     /* installed by tfm_seq.c at creation */
    int handle;                /* cuBLAS handle: 0 forward thread, 1 backward thread */
    /* A forward pass alone (tfm_forward.c), else both false: */
    bool no_grad;              /* autograd off: no saved tensor is kept (tfm_tape.c save) */
    bool eval;                 /* model.eval(): dropout is the identity, SDPA's dropout 0,
                                  the inference fast paths (tfm_fastpath.c) where they apply */
    int fast_layers, fast_mha; /* fast-path calls of the forward (mc_workload_forward_result) */

    tb *mask;                  /* the encoder's causal mask (set-up) */
    /* GPU arithmetic (T->ctx.gpu non-NULL; transformer_gpu.c): */
    int dt;                    /* MC_DT_* of the compute dtype */
    int site;                  /* the dropout site of the op being built (tfm_host_ref.h's order) */
    uint64_t drop_base;        /* this micro-step's first dropout offset */
    int sites;                 /* dropout sites per forward */
    uint64_t micro;            /* micro-steps run, for the data and dropout streams */
    mc_tfm_data *data;         /* --verify: src, tgt and parameters from the host (NULL: randn) */
    wl_t ws_fwd, lt_fwd, ws_bwd, lt_bwd;
    wl_t red_buf, red_sem;
    wl_t scaled, ones, gmul, gdiv;
    wl_t mse, mse_tmp, loss;
    /* mc_tfm_step_as's program (tfm.h), else divide_loss true, locals_live false */
    bool divide_loss, locals_live;
    tb *kept_src, *kept_tgt;   /* locals_live: the last micro-step's, until rebound */
    tv kept_out;
    wl_t kept_loss;
    /* --offload (tfm_offload.c): pinned host buffers, reused across steps */
    struct tfm_pinned { void *p; uint64_t bytes; bool used; } *pin;
    int npin, cap_pin;
    uint64_t host_live, host_peak; /* bytes of saved activations on the host */
    int step;
    wl_optim opt;              /* the optimizer and its GradScaler (core/optimizer_step.c) */
    wl_opt_param *params;      /* T->p's tensors, in model.parameters() order */
    /* A data-parallel wrapper (tfm_wrap.h), else wrapped false: */
    bool wrapped;
    mc_tfm_wrap_hooks wrap;
    const wl_opt_param *wrap_params; /* the optimizer's list in the wrapper's place */
};
typedef struct mc_tfm mc_tfm;

/* The GPU, or NULL in model-only runs. */
#define TG(T) ((T)->ctx.gpu)
/* The context core/wl_ctx.h's shorthands (A, AK, F) act on, in functions
 * with a `mc_tfm *T`. */
#define WL_CTX (&T->ctx)
/* tfm_tape.c: the device address of a tensor: its storage's plus its offset, or a parameter's. */
uint64_t tv_addr(const mc_tfm *T, tv x);
uint64_t tape_saved_addr(const mc_tfm *T, const tnode *nd, int i); /* saved tensor i's address now */
#define TVP(T, x) ((void *)(uintptr_t)tv_addr((T), (x)))
#define TBP(b) ((void *)(uintptr_t)((b)->t.addr))
#define SAP(T, nd, i) ((void *)(uintptr_t)tape_saved_addr((T), (nd), (i)))
/* MC_DT_* of a tensor of element size es (4: fp32, else the autocast dtype). */
int tfm_dt(const mc_tfm *T, int es);

/* tfm_tape.c: buffers, the tape, backward. */
tb *tb_new(mc_tfm *T, uint64_t bytes, mc_wl_category cat, const char *what);
void tb_ref(tb *b);
void tb_unref(mc_tfm *T, tb *b);
void tv_drop(mc_tfm *T, tv *x);          /* a Python variable goes */
tv tv_view(tv x);                        /* a view: the same storage, one more reference */
int tape_node(mc_tfm *T, bwd_fn f, const char *what, int nnext);
void tape_save(mc_tfm *T, int node, tb *b);
void tape_save_tv(mc_tfm *T, int node, tv x);   /* a view or a parameter: its address kept */
void tape_edge(mc_tfm *T, int node, int k, tv from);
void tape_edge_view(mc_tfm *T, int node, int k);
void tape_apply_return(mc_tfm *T, tnode *nd);
int tape_backward(mc_tfm *T, int root, tb *grad);
void tape_clear(mc_tfm *T);
int workspaces(mc_tfm *T, bool lt);      /* first GEMM on the current handle */
int reduce_scratch(mc_tfm *T, int64_t outputs, int64_t inputs, bool along_rows, int es);
int reduce_begin(mc_tfm *T, int64_t outputs, int64_t inputs, bool along_rows, int es);
void reduce_end(mc_tfm *T);
int bias_grad(mc_tfm *T, tb *out, tb *g, int64_t rows, int64_t n, int es); /* out = g summed over rows */
void tfm_unwind(mc_tfm *T);

/* tfm_ops.c: forward ops. Each returns its output with one
 * reference (the Python variable), or TV_NONE after an OOM or a
 * checkpoint's early stop. */
tv param_tv(mc_tfm *T, int i);
/* F.linear(x, W, b) on rows x in: addmm, or (matmul: the input is a
 * transposed 3-D view) matmul's reshape copy, mm and add_. */
tv op_linear(mc_tfm *T, tv x, tv W, tv b, int64_t rows, int64_t in, int64_t out, bool matmul);
tv op_layer_norm(mc_tfm *T, tv x, int pw, int pb);
tv op_dropout(mc_tfm *T, tv x);
tv op_activation(mc_tfm *T, tv x);
tv op_add(mc_tfm *T, tv a, tv b);
tv op_to(mc_tfm *T, tv x, int es);       /* autocast's cast of a non-leaf */
/* A copy; CloneBackward passes through. parts > 1: [tokens, parts E] to
 * parts blocks of [tokens, E] (the packed projection's .contiguous()). */
tv op_contiguous(mc_tfm *T, tv x, int parts, const char *what);
/* A view whose backward's reshape copies (parts > 1: the blocks packed back). */
tv op_view_copy_bwd(mc_tfm *T, tv x, int parts, const char *what);
tv op_transpose(mc_tfm *T, tv x);                      /* x.transpose(1, 0), a node of its own */
int op_split(mc_tfm *T, int param, int64_t n_first);   /* SplitWithSizesBackward0's node */
tv op_select(mc_tfm *T, tv whole, int idx, int64_t n_part, const char *what); /* proj[idx] */
void cast_cache_clear(mc_tfm *T);                      /* autocast region exit */

/* tfm_fused_ops.c: the elementwise chains in one kernel each (--fused). */
tv op_fused_act_dropout(mc_tfm *T, tv h, int64_t rows);            /* dropout(act(h)) */
tv op_fused_dropout_add(mc_tfm *T, tv res, tv branch, int64_t rows); /* res + dropout(branch) */

/* tfm_attn.c: MultiheadAttention (need_weights False) as F.multi_head_attention_forward
 * runs it (tfm_seq.c takes MultiheadAttention.forward's fast path, tfm_fastpath.c,
 * where it applies). */
typedef enum { MC_TFM_SDPA_EFFICIENT, MC_TFM_SDPA_FLASH, MC_TFM_SDPA_CUDNN } mc_tfm_sdpa;
tv mha_forward(mc_tfm *T, tv q_in, tv kv_in, int p0, bool self_attn, bool causal, int64_t S);
/* The attention kernel on the GPU: o (the model's layout, [N, L, H, hd] in
 * memory) from q, k, v laid out as vin; lse NULL where none is kept. io:
 * the cuDNN backend's buffers (cuDNN's kernels run where they take the
 * case), or NULL (the suite's own kernels). */
bool attn_fwd_gpu(mc_tfm *T, void *o, float *lse, const void *q, const void *k, const void *v,
                  tfm_view vin, bool causal, const tfm_cudnn_io *io); /* true: cuDNN's kernels ran */

/* tfm_fastpath.c: PyTorch's inference fast paths, taken in eval() without
 * autograd (torch/nn/modules/transformer.py, activation.py). */
bool tfm_mha_fast(const mc_tfm *T);                  /* MultiheadAttention.forward's, self-attention */
bool tfm_layer_fast(const mc_tfm *T, int layer);      /* TransformerEncoderLayer.forward's */
tv tfm_native_mha(mc_tfm *T, tv x, int p0);           /* torch._native_multi_head_attention */
tv tfm_fast_encoder_layer(mc_tfm *T, int layer, tv x); /* torch._transformer_encoder_layer_fwd */

/* tfm_seq.c: model(src, tgt) (the encoder: model(src)); src, tgt the caller's. */
tv tfm_model_forward(mc_tfm *T, tv src, tv tgt);

/* tfm_opt.c: the optimizer step and zero_grad over T->p; the parameter
 * list of the optimizer (after tfm_build_params). */
void tfm_opt_params(mc_tfm *T);
int tfm_optimizer(mc_tfm *T, bool *skipped);
void tfm_zero_grad(mc_tfm *T);

/* tfm_setup.c: the parameter list (names, sizes), set-up's
 * requests, and on the GPU the parameters' values. Parameters per layer. */
enum { TFM_ENC_PER = 12, TFM_DEC_PER = 18 };
void tfm_build_params(mc_tfm *T);
int tfm_setup(mc_tfm *T);
void tfm_init_params(mc_tfm *T);

#endif
