/* tfm_attention_cudnn.cu: attention through cuDNN's fused flash kernels,
 * as PyTorch 2.11 runs scaled_dot_product_attention for fp16 and bf16 on
 * the H100 (aten/src/ATen/native/cudnn/MHA.cpp, over cudnn-frontend's SDPA
 * nodes). cudnn-frontend is C++ headers that neither the toolkit nor
 * PyTorch's wheels ship, so the graphs are built here with cuDNN's own
 * graph API (cudnn_graph.h): the operations the frontend's composite SDPA
 * forward and backward nodes lower to (CompositeSDPANode,
 * CompositeSDPABackwardNode, CompositeSoftmaxNode and the causal
 * CompositeDiagonalBandMaskNode in cudnn-frontend's
 * scaled_dot_product_flash_attention.h, softmax.h, diagonal_band_mask.h),
 * in their order, with their data types; cuDNN's heuristics (mode A, as
 * PyTorch) then pick the fused engine and the first configuration that
 * builds runs. One graph per shape, layout, precision, mask and dropout,
 * built once and kept.
 *
 * Memory stays the model's (tfm_attn.c): the forward's output, softmax
 * stats, philox seed and offset and workspace, and the backward's dq, dk,
 * dv and workspace are the buffers PyTorch allocates, handed in here. The
 * backward's workspace holds, as the frontend lays out its own, the fp32 dQ
 * accumulator [B,H,Lq,Dh] and softmax_sum [B,H,Lq] (non-virtual tensors of
 * the graph), then the engine's own workspace.
 *
 * Built where make finds cuDNN 9 (MC_HAVE_CUDNN). Without it, with
 * MEMCLAIMS_CUDNN=0, or where cuDNN takes no graph for the shape, the
 * functions return nonzero and the caller runs the suite's own kernels
 * (tfm_attn_fwd, tfm_attn_bwd); the first such case says why on stderr. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_cuda.h"
#include "tfm_kernels.h"
#include "workload/core/wl_kernels.cuh"

/* --verify (tfm_verify_attn.cu, cudnn_cases) checks both passes against the
 * float64 model, dropout included through the mask the forward can write
 * out (a non-virtual RNG output); with a causal mask that write faults on
 * the H100 (cuDNN 9.19), so causal dropout is checked as run and finite.
 *
 * PyTorch's philox seed and offset, [] int64 each on the device (its
 * unpack kernel writes them from the generator's state). */
__global__ void k_write_philox(int64_t *seed, int64_t *offset, int64_t s, int64_t o)
{
    *seed = s;
    *offset = o;
}

static bool g_noted;      /* one line per process for the first fallback */
static char g_last[200]; /* why the last case fell back */

static void note_fallback(const char *why)
{
    snprintf(g_last, sizeof g_last, "%s", why);
    if (g_noted) return;
    g_noted = true;
    fprintf(stderr, "note: cuDNN attention not used (%s): the suite's own attention kernels run\n", why);
}

#ifndef MC_HAVE_CUDNN

extern "C" const char *tfm_cudnn_state(void) { return "not built with cuDNN"; }
extern "C" void tfm_cudnn_describe(char *out, size_t n) { snprintf(out, n, "the suite's kernels (not built with cuDNN)"); }
extern "C" bool tfm_cudnn_available(void) { return false; }
extern "C" void tfm_cudnn_set_enabled(bool) {}

extern "C" int tfm_cudnn_attn_fwd(mc_wl_gpu *, const tfm_attn *, void *, tfm_view, float *, const void *,
                                  tfm_view, const void *, tfm_view, const void *, tfm_view, int,
                                  const tfm_cudnn_io *)
{
    note_fallback("not built with cuDNN");
    return -1;
}

extern "C" int tfm_cudnn_attn_bwd(mc_wl_gpu *, const tfm_attn *, void *, tfm_view, void *, tfm_view, void *,
                                  tfm_view, const void *, tfm_view, const void *, tfm_view, const void *,
                                  tfm_view, const void *, tfm_view, const void *, tfm_view, const float *, int,
                                  const tfm_cudnn_io *)
{
    note_fallback("not built with cuDNN");
    return -1;
}

#else

#include <cudnn.h>

typedef cudnnBackendDescriptor_t desc;

/* Tensor ids of a graph's inputs and outputs (the variant pack's); virtual
 * tensors take ids from VIRT up. */
enum {
    U_Q = 1, U_K, U_V, U_O, U_STATS, U_SEED, U_OFFSET, U_SCALE, U_DSCALE, U_NEGINF, U_DO, U_DQ, U_DK,
    U_DV, U_DQ_ACC, U_SOFTMAX_SUM, U_DSCALE_INV, U_RNG_DUMP, U_ONE, VIRT = 100
};

enum { MAX_DESC = 192, MAX_OPS = 48, MAX_PLANS = 32 };

/* The graph being built: every descriptor made (kept with the plan, which
 * refers to them), its operations in order, the first failure. */
typedef struct {
    cudnnStatus_t st;
    const char *what;
    int n, nops;
    desc d[MAX_DESC];
    desc ops[MAX_OPS];
    int64_t next_uid;
} graph;

static desc mk(graph *b, cudnnBackendDescriptorType_t t)
{
    desc d = NULL;
    if (b->st) return NULL;
    if (b->n == MAX_DESC) {
        b->st = CUDNN_STATUS_BAD_PARAM;
        b->what = "too many descriptors";
        return NULL;
    }
    const cudnnStatus_t s = cudnnBackendCreateDescriptor(t, &d);
    if (s) {
        b->st = s;
        b->what = "cudnnBackendCreateDescriptor";
        return NULL;
    }
    b->d[b->n++] = d;
    return d;
}

static void set_attr(graph *b, desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t t, int64_t n,
                     const void *v, const char *what)
{
    if (b->st) return;
    const cudnnStatus_t s = cudnnBackendSetAttribute(d, name, t, n, v);
    if (s) {
        b->st = s;
        b->what = what;
    }
}
#define SET(b, d, name, type, n, v) set_attr(b, d, name, type, n, v, #name)
/* an attribute that is one descriptor */
#define SETD(b, d, name, v) set_attr(b, d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &(v), #name)

static void fin(graph *b, desc d, const char *what)
{
    if (b->st) return;
    const cudnnStatus_t s = cudnnBackendFinalize(d);
    if (s) {
        b->st = s;
        b->what = what;
    }
}

static void add_op(graph *b, desc op, const char *what)
{
    fin(b, op, what);
    if (b->st) return;
    if (b->nops == MAX_OPS) {
        b->st = CUDNN_STATUS_BAD_PARAM;
        b->what = "too many operations";
        return;
    }
    b->ops[b->nops++] = op;
}

static desc tensor(graph *b, int64_t uid, cudnnDataType_t dt, const int64_t dim[4], const int64_t str[4],
                   bool is_virtual, bool by_value)
{
    desc t = mk(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t align = 16;
    SET(b, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    SET(b, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
    SET(b, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str);
    SET(b, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    SET(b, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    SET(b, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    if (by_value) SET(b, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    fin(b, t, "tensor");
    return t;
}

/* A virtual tensor: an intermediate the fused kernel never writes out. */
static desc vt(graph *b, cudnnDataType_t dt, const int64_t dim[4], const int64_t str[4])
{
    return tensor(b, b->next_uid++, dt, dim, str, true, false);
}

/* A scalar passed by value (its pointer in the variant pack is host memory). */
static desc scalar(graph *b, int64_t uid, cudnnDataType_t dt)
{
    static const int64_t one[4] = {1, 1, 1, 1};
    return tensor(b, uid, dt, one, one, false, true);
}

/* An int64 [1,1,1,1] tensor on the device (philox seed, offset). */
static desc scalar_dev(graph *b, int64_t uid)
{
    static const int64_t one[4] = {1, 1, 1, 1};
    return tensor(b, uid, CUDNN_DATA_INT64, one, one, false, false);
}

/* y = mode(x[, x2[, t]]); prec: the math precision; axis >= 0 for GEN_INDEX. */
static void pw(graph *b, cudnnPointwiseMode_t mode, cudnnDataType_t prec, desc x, desc x2, desc t, desc y,
               int64_t axis)
{
    desc p = mk(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    SET(b, p, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    SET(b, p, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (axis >= 0) SET(b, p, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    fin(b, p, "pointwise descriptor");
    desc op = mk(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    SETD(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, p);
    SETD(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (x2) SETD(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, x2);
    if (t) SETD(b, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    SETD(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    add_op(b, op, "pointwise operation");
}

/* c = a b, batched over the first two dims, fp32 accumulation. */
static void matmul(graph *b, desc a, desc bm, desc c)
{
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    desc m = mk(b, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    SET(b, m, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    fin(b, m, "matmul descriptor");
    desc op = mk(b, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    SETD(b, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    SETD(b, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, bm);
    SETD(b, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    SETD(b, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, m);
    add_op(b, op, "matmul operation");
}

static void reduce(graph *b, cudnnReduceTensorOp_t how, desc x, desc y)
{
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    desc r = mk(b, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    SET(b, r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how);
    SET(b, r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    fin(b, r, "reduction descriptor");
    desc op = mk(b, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    SETD(b, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    SETD(b, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    SETD(b, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r);
    add_op(b, op, "reduction operation");
}

static void reshape(graph *b, desc x, desc y)
{
    desc op = mk(b, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    SETD(b, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
    SETD(b, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    add_op(b, op, "reshape operation");
}

/* Dropout's keep mask: Bernoulli(1 - p) from philox (seed, offset). */
static void rng(graph *b, double keep, desc seed, desc offset, desc y)
{
    const cudnnRngDistribution_t dist = CUDNN_RNG_DISTRIBUTION_BERNOULLI;
    desc r = mk(b, CUDNN_BACKEND_RNG_DESCRIPTOR);
    SET(b, r, CUDNN_ATTR_RNG_DISTRIBUTION, CUDNN_TYPE_RNG_DISTRIBUTION, 1, &dist);
    SET(b, r, CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, CUDNN_TYPE_DOUBLE, 1, &keep);
    fin(b, r, "rng descriptor");
    desc op = mk(b, CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR);
    SETD(b, op, CUDNN_ATTR_OPERATION_RNG_DESC, r);
    SETD(b, op, CUDNN_ATTR_OPERATION_RNG_YDESC, y);
    SETD(b, op, CUDNN_ATTR_OPERATION_RNG_SEED, seed);
    SETD(b, op, CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, offset);
    add_op(b, op, "rng operation");
}

/* What a graph is built for; compared whole (memset first). */
typedef struct {
    int bwd, dt, causal, stats, dump;
    float p;
    int64_t B, H, Lq, Lk, D;
    tfm_view v[8]; /* forward: q k v o; backward: q k v o do dq dk dv */
} plan_key;

typedef struct {
    plan_key key;
    graph g;
    desc plan;
    int64_t ws; /* the engine's workspace, bytes */
} plan;

static bool g_off; /* tfm_cudnn_set_enabled(false) */
static cudnnHandle_t g_handle;
static int g_state; /* 0: not tried; 1: usable; -1: not */
static plan *g_plans[MAX_PLANS];
static int g_nplans;

extern "C" const char *tfm_cudnn_state(void) { return g_last[0] ? g_last : "cuDNN"; }

static bool usable(void)
{
    if (g_state) return g_state > 0;
    char why[160];
    const char *env = getenv("MEMCLAIMS_CUDNN");
    if (env && strcmp(env, "0") == 0) {
        snprintf(why, sizeof why, "MEMCLAIMS_CUDNN=0");
    } else if (cudnnGetVersion() < 90000) {
        snprintf(why, sizeof why, "cuDNN %zu found, 9 needed", cudnnGetVersion());
    } else {
        const cudnnStatus_t s = cudnnCreate(&g_handle);
        if (s == CUDNN_STATUS_SUCCESS) {
            g_state = 1;
            return true;
        }
        snprintf(why, sizeof why, "cudnnCreate: %s", cudnnGetErrorString(s));
    }
    g_state = -1;
    note_fallback(why);
    return false;
}

extern "C" bool tfm_cudnn_available(void) { return usable(); }
extern "C" void tfm_cudnn_set_enabled(bool on) { g_off = !on; }

extern "C" void tfm_cudnn_describe(char *out, size_t n)
{
    const size_t v = cudnnGetVersion(); /* 10000 major + 100 minor + patch */
    const char *env = getenv("MEMCLAIMS_CUDNN");
    snprintf(out, n, "cuDNN %zu.%zu.%zu%s", v / 10000, v % 10000 / 100, v % 100,
             env && strcmp(env, "0") == 0 ? " turned off (MEMCLAIMS_CUDNN=0)" : "");
}

static void dims4(int64_t *d, int64_t a, int64_t b, int64_t c, int64_t e)
{
    d[0] = a, d[1] = b, d[2] = c, d[3] = e;
}

/* [B, H, L, D] of view w (D contiguous); transposed: [B, H, D, L]. */
static desc io_tensor(graph *b, int64_t uid, cudnnDataType_t dt, int64_t B, int64_t H, int64_t L, int64_t D,
                      tfm_view w, bool transposed)
{
    int64_t dim[4], str[4];
    if (transposed) {
        dims4(dim, B, H, D, L);
        dims4(str, w.b, w.h, 1, w.l);
    } else {
        dims4(dim, B, H, L, D);
        dims4(str, w.b, w.h, w.l, 1);
    }
    return tensor(b, uid, dt, dim, str, false, false);
}

/* CompositeDiagonalBandMaskNode with right bound 0 (is_causal, top left):
 * s where row >= col, else the lowest float. */
static desc causal_mask(graph *b, desc s, desc neginf, const int64_t *sdim, const int64_t *sstr)
{
    desc row = vt(b, CUDNN_DATA_INT32, sdim, sstr), col = vt(b, CUDNN_DATA_INT32, sdim, sstr);
    pw(b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, NULL, NULL, row, 2);
    pw(b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, NULL, NULL, col, 3);
    desc keep = vt(b, CUDNN_DATA_BOOLEAN, sdim, sstr);
    pw(b, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, NULL, keep, -1);
    desc y = vt(b, CUDNN_DATA_FLOAT, sdim, sstr);
    pw(b, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, neginf, keep, y, -1);
    return y;
}

/* CompositeSDPANode: O = dropout(softmax(scale Q K^T [causal])) V, Stats = max + log(sum). */
static void build_fwd(graph *b, const plan_key *k)
{
    const cudnnDataType_t io = k->dt == MC_DT_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF, F = CUDNN_DATA_FLOAT;
    const int64_t B = k->B, H = k->H, Lq = k->Lq, Lk = k->Lk, D = k->D;
    int64_t sd[4], ss[4], rd[4], rs[4];
    dims4(sd, B, H, Lq, Lk);
    dims4(ss, H * Lq * Lk, Lq * Lk, Lk, 1);
    dims4(rd, B, H, Lq, 1);
    dims4(rs, H * Lq, Lq, 1, 1);
    desc q = io_tensor(b, U_Q, io, B, H, Lq, D, k->v[0], false);
    desc kt = io_tensor(b, U_K, io, B, H, Lk, D, k->v[1], true);
    desc v = io_tensor(b, U_V, io, B, H, Lk, D, k->v[2], false);
    desc o = io_tensor(b, U_O, io, B, H, Lq, D, k->v[3], false);
    desc s = vt(b, F, sd, ss);
    matmul(b, q, kt, s);
    desc s2 = vt(b, F, sd, ss);
    pw(b, CUDNN_POINTWISE_MUL, F, s, scalar(b, U_SCALE, F), NULL, s2, -1);
    if (k->causal) s2 = causal_mask(b, s2, scalar(b, U_NEGINF, F), sd, ss);
    desc mx = vt(b, F, rd, rs), sub = vt(b, F, sd, ss), e = vt(b, F, sd, ss), z = vt(b, F, rd, rs);
    reduce(b, CUDNN_REDUCE_TENSOR_MAX, s2, mx);
    pw(b, CUDNN_POINTWISE_SUB, F, s2, mx, NULL, sub, -1);
    pw(b, CUDNN_POINTWISE_EXP, F, sub, NULL, NULL, e, -1);
    reduce(b, CUDNN_REDUCE_TENSOR_ADD, e, z);
    if (k->stats) {
        desc lg = vt(b, F, rd, rs);
        pw(b, CUDNN_POINTWISE_LOG, F, z, NULL, NULL, lg, -1);
        pw(b, CUDNN_POINTWISE_ADD, F, mx, lg, NULL, tensor(b, U_STATS, F, rd, rs, false, false), -1);
    }
    /* bmm2's A takes the input's type (the frontend sets it on the last tensor before it) */
    desc p = vt(b, k->p > 0 ? F : io, sd, ss);
    pw(b, CUDNN_POINTWISE_DIV, F, e, z, NULL, p, -1);
    if (k->p > 0) {
        desc mask = k->dump ? tensor(b, U_RNG_DUMP, F, sd, ss, false, false) : vt(b, F, sd, ss);
        rng(b, 1.0 - (double)k->p, scalar_dev(b, U_SEED), scalar_dev(b, U_OFFSET), mask);
        desc pm = vt(b, F, sd, ss), ps = vt(b, io, sd, ss);
        pw(b, CUDNN_POINTWISE_MUL, F, p, mask, NULL, pm, -1);
        pw(b, CUDNN_POINTWISE_MUL, F, pm, scalar(b, U_DSCALE, F), NULL, ps, -1);
        p = ps;
    }
    matmul(b, p, v, o);
}

/* CompositeSDPABackwardNode (fp32 dQ accumulator, no dP workspace): dV = P^T dO,
 * dS = P * (dP - softmax_sum) (dropout on both), dK = scale dS^T Q, dQ = scale dS K. */
static void build_bwd(graph *b, const plan_key *k)
{
    const cudnnDataType_t io = k->dt == MC_DT_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF, F = CUDNN_DATA_FLOAT;
    const int64_t B = k->B, H = k->H, Lq = k->Lq, Lk = k->Lk, D = k->D;
    const bool drop = k->p > 0;
    int64_t sd[4], ss[4], rd[4], rs[4], td[4], ts[4], od[4], os[4], ad[4], as[4];
    dims4(sd, B, H, Lq, Lk);
    dims4(ss, H * Lq * Lk, Lq * Lk, Lk, 1);
    dims4(td, B, H, Lk, Lq); /* P and dS transposed for dV and dK */
    dims4(ts, H * Lq * Lk, Lq * Lk, 1, Lk);
    dims4(rd, B, H, Lq, 1);
    dims4(rs, H * Lq, Lq, 1, 1);
    dims4(od, B, H, Lq, D); /* dO * O, as the frontend lays it out */
    dims4(os, H * Lq * D, Lq * D, H * D, 1);
    dims4(ad, B, H, Lq, D); /* the dQ accumulator */
    dims4(as, H * Lq * D, Lq * D, D, 1);
    desc q = io_tensor(b, U_Q, io, B, H, Lq, D, k->v[0], false);
    desc kt = io_tensor(b, U_K, io, B, H, Lk, D, k->v[1], true);
    desc vt_ = io_tensor(b, U_V, io, B, H, Lk, D, k->v[2], true);
    desc o = io_tensor(b, U_O, io, B, H, Lq, D, k->v[3], false);
    desc dout = io_tensor(b, U_DO, io, B, H, Lq, D, k->v[4], false);
    desc dq = io_tensor(b, U_DQ, io, B, H, Lq, D, k->v[5], false);
    desc dk = io_tensor(b, U_DK, io, B, H, Lk, D, k->v[6], false);
    desc dv = io_tensor(b, U_DV, io, B, H, Lk, D, k->v[7], false);
    desc stats = tensor(b, U_STATS, F, rd, rs, false, false);
    desc scale = scalar(b, U_SCALE, F);
    desc mask = NULL, dscale = NULL;
    if (drop) {
        mask = vt(b, F, sd, ss);
        rng(b, 1.0 - (double)k->p, scalar_dev(b, U_SEED), scalar_dev(b, U_OFFSET), mask);
        dscale = scalar(b, U_DSCALE, F);
    }
    /* softmax_sum = rowsum(dO * O) (1 - p) */
    desc doo = vt(b, F, od, os), r = vt(b, F, rd, rs);
    pw(b, CUDNN_POINTWISE_MUL, F, dout, o, NULL, doo, -1);
    reduce(b, CUDNN_REDUCE_TENSOR_ADD, doo, r);
    desc ssum = tensor(b, U_SOFTMAX_SUM, F, rd, rs, false, false);
    pw(b, CUDNN_POINTWISE_MUL, F, r, scalar(b, drop ? U_DSCALE_INV : U_ONE, F), NULL, ssum, -1);
    /* P = exp(scale Q K^T - stats) [causal], dropped */
    desc s = vt(b, F, sd, ss), s2 = vt(b, F, sd, ss), s3 = vt(b, F, sd, ss);
    matmul(b, q, kt, s);
    pw(b, CUDNN_POINTWISE_MUL, F, s, scale, NULL, s2, -1);
    pw(b, CUDNN_POINTWISE_SUB, F, s2, stats, NULL, s3, -1);
    if (k->causal) s3 = causal_mask(b, s3, scalar(b, U_NEGINF, F), sd, ss);
    desc e = vt(b, F, sd, ss), p = e;
    pw(b, CUDNN_POINTWISE_EXP, F, s3, NULL, NULL, e, -1);
    if (drop) {
        desc pm = vt(b, F, sd, ss), ps = vt(b, F, sd, ss);
        pw(b, CUDNN_POINTWISE_MUL, F, e, mask, NULL, pm, -1);
        pw(b, CUDNN_POINTWISE_MUL, F, pm, dscale, NULL, ps, -1);
        p = ps;
    }
    desc pt = vt(b, io, td, ts);
    reshape(b, p, pt);
    matmul(b, pt, dout, dv);
    /* dS = (dP [* mask] - softmax_sum) * P [* 1/(1-p)] * scale */
    desc dp = vt(b, F, sd, ss);
    matmul(b, dout, vt_, dp);
    if (drop) {
        desc dpm = vt(b, F, sd, ss);
        pw(b, CUDNN_POINTWISE_MUL, F, dp, mask, NULL, dpm, -1);
        dp = dpm;
    }
    desc d1 = vt(b, F, sd, ss), d2 = vt(b, F, sd, ss);
    pw(b, CUDNN_POINTWISE_SUB, F, dp, ssum, NULL, d1, -1);
    pw(b, CUDNN_POINTWISE_MUL, F, d1, e, NULL, d2, -1);
    if (drop) {
        desc d3 = vt(b, F, sd, ss);
        pw(b, CUDNN_POINTWISE_MUL, F, d2, dscale, NULL, d3, -1);
        d2 = d3;
    }
    desc ds = vt(b, F, sd, ss);
    pw(b, CUDNN_POINTWISE_MUL, F, d2, scale, NULL, ds, -1);
    desc dst = vt(b, io, td, ts);
    reshape(b, ds, dst);
    matmul(b, dst, q, dk);
    /* dQ = dS K into the fp32 accumulator, then cast */
    int64_t kd[4], ks[4];
    dims4(kd, B, H, Lk, D);
    dims4(ks, k->v[1].b, k->v[1].h, k->v[1].l, 1);
    desc kk = vt(b, io, kd, ks);
    reshape(b, kt, kk);
    desc acc = tensor(b, U_DQ_ACC, F, ad, as, false, false);
    matmul(b, ds, kk, acc);
    pw(b, CUDNN_POINTWISE_IDENTITY, F, acc, NULL, NULL, dq, -1);
}

/* The operation graph, heuristics mode A, the first configuration that
 * builds (cudnn-frontend's build_plans with HEURISTICS_CHOICE). */
static void make_plan(plan *pl)
{
    graph *b = &pl->g;
    desc og = mk(b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    SET(b, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, b->nops, b->ops);
    SET(b, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_handle);
    fin(b, og, "operation graph");
    desc heur = mk(b, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    SETD(b, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, og);
    SET(b, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    fin(b, heur, "heuristics (no engine takes the graph)");
    if (b->st) return;
    int64_t n = 0;
    cudnnStatus_t s = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                                               NULL);
    if (s || n <= 0) {
        b->st = s ? s : CUDNN_STATUS_NOT_SUPPORTED;
        b->what = "heuristics returned no engine configuration";
        return;
    }
    if (n > 8) n = 8;
    desc cfg[8];
    for (int64_t i = 0; i < n; i++) cfg[i] = mk(b, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (b->st) return;
    int64_t got = 0;
    s = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfg);
    if (s) {
        b->st = s;
        b->what = "heuristics results";
        return;
    }
    for (int64_t i = 0; i < got; i++) {
        desc p = NULL;
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &p)) continue;
        if (cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_handle) == 0 &&
            cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     &cfg[i]) == 0 &&
            cudnnBackendFinalize(p) == 0) {
            int64_t ws = 0, c = 0;
            cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &c, &ws);
            pl->plan = p;
            pl->ws = ws;
            return;
        }
        cudnnBackendDestroyDescriptor(p);
    }
    b->st = CUDNN_STATUS_NOT_SUPPORTED;
    b->what = "no engine configuration builds";
}

static void drop_plan(plan *pl)
{
    if (pl->plan) cudnnBackendDestroyDescriptor(pl->plan);
    for (int i = pl->g.n - 1; i >= 0; i--) cudnnBackendDestroyDescriptor(pl->g.d[i]);
    free(pl);
}

/* The kept plan for key k, built on first use; NULL where cuDNN takes no
 * graph for it (said once on stderr). */
static plan *plan_for(const plan_key *k)
{
    for (int i = 0; i < g_nplans; i++)
        if (memcmp(&g_plans[i]->key, k, sizeof *k) == 0) return g_plans[i];
    plan *pl = (plan *)calloc(1, sizeof *pl);
    if (!pl) return NULL;
    pl->key = *k;
    pl->g.next_uid = VIRT;
    if (k->bwd) build_bwd(&pl->g, k);
    else build_fwd(&pl->g, k);
    make_plan(pl);
    if (pl->g.st) {
        char why[160];
        snprintf(why, sizeof why, "%s: %s at B %lld H %lld L %lld Dh %lld", pl->g.what,
                 cudnnGetErrorString(pl->g.st), (long long)k->B, (long long)k->H, (long long)k->Lq,
                 (long long)k->D);
        note_fallback(why);
        drop_plan(pl);
        return NULL;
    }
    if (g_nplans == MAX_PLANS) { /* a long run of shapes: the oldest goes */
        drop_plan(g_plans[0]);
        memmove(g_plans, g_plans + 1, sizeof g_plans[0] * (MAX_PLANS - 1));
        g_nplans--;
    }
    g_plans[g_nplans++] = pl;
    return pl;
}

static int run(mc_wl_gpu *g, plan *pl, const int64_t *uids, void *const *ptrs, int n, void *ws)
{
    desc vp = NULL;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp)) return -1;
    cudnnStatus_t s = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    if (!s) s = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    if (!s) s = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (!s) s = cudnnBackendFinalize(vp);
    if (!s) s = cudnnSetStream(g_handle, mc_gpu_stream(g));
    if (!s) s = cudnnBackendExecute(g_handle, pl->plan, vp);
    cudnnBackendDestroyDescriptor(vp);
    if (s) { /* nothing written that the suite's kernels do not write again */
        char why[200];
        snprintf(why, sizeof why, "%s cudnnBackendExecute: %s at B %lld H %lld L %lld Dh %lld%s%s",
                 pl->key.bwd ? "backward" : "forward", cudnnGetErrorString(s), (long long)pl->key.B,
                 (long long)pl->key.H, (long long)pl->key.Lq,
                 (long long)pl->key.D, pl->key.causal ? " causal" : "", pl->key.p > 0 ? " dropout" : "");
        note_fallback(why);
        return -1;
    }
    return 0;
}

static void key_of(plan_key *k, int bwd, const tfm_attn *a, int dt, bool stats, bool dump)
{
    memset(k, 0, sizeof *k);
    k->bwd = bwd;
    k->dt = dt;
    k->causal = a->causal;
    k->stats = stats;
    k->dump = dump && a->dropout_p > 0;
    k->p = a->dropout_p;
    k->B = a->B, k->H = a->H, k->Lq = a->Lq, k->Lk = a->Lk, k->D = a->Dh;
}

static bool takes(const tfm_attn *a, int dt, const tfm_cudnn_io *io)
{
    return !g_off && dt != MC_DT_F32 && a->Dh % 8 == 0 && a->Dh <= 128 && io && io->seed && io->offset && usable();
}

/* The backward's engine workspace after the dQ accumulator and softmax_sum
 * (16-byte aligned), bytes. */
static uint64_t bwd_engine_offset(const tfm_attn *a)
{
    const uint64_t acc = (uint64_t)(a->B * a->H * a->Lq * a->Dh) * 4, ssum = (uint64_t)(a->B * a->H * a->Lq) * 4;
    return (acc + ssum + 15) / 16 * 16;
}

/* Whether the backward of this attention runs on cuDNN within PyTorch's
 * workspace (every tensor in view v, as tfm_attn.c passes them). */
static bool bwd_fits(const tfm_attn *a, int dt, tfm_view v)
{
    plan_key key;
    key_of(&key, 1, a, dt, true, false);
    for (int i = 0; i < 8; i++) key.v[i] = v;
    plan *pl = plan_for(&key);
    return pl && bwd_engine_offset(a) + (uint64_t)pl->ws <= tfm_cudnn_bwd_ws_bytes(a->B, a->H, a->Lq, a->Dh);
}

extern "C" int tfm_cudnn_attn_fwd(mc_wl_gpu *g, const tfm_attn *a, void *o, tfm_view vo, float *stats,
                                  const void *q, tfm_view vq, const void *k, tfm_view vk, const void *v,
                                  tfm_view vv, int dt, const tfm_cudnn_io *io)
{
    if (!takes(a, dt, io)) return -1;
    plan_key key;
    key_of(&key, 0, a, dt, stats != NULL, io->rng_dump != NULL);
    key.v[0] = vq, key.v[1] = vk, key.v[2] = vv, key.v[3] = vo;
    plan *pl = plan_for(&key);
    if (!pl) return -1;
    if ((uint64_t)pl->ws > io->ws_bytes) {
        note_fallback("the engine's forward workspace exceeds PyTorch's");
        return -1;
    }
    if (a->dropout_p > 0 && !bwd_fits(a, dt, vo)) {
        note_fallback("the engine's backward workspace exceeds PyTorch's (with dropout: the forward too)");
        return -1;
    }
    k_write_philox<<<1, 1, 0, mc_gpu_stream(g)>>>((int64_t *)io->seed, (int64_t *)io->offset, (int64_t)a->seed,
                                                 (int64_t)a->offset);
    CHECK_LAUNCH();
    float scale = a->scale, neginf = -FLT_MAX, dscale = a->dropout_p > 0 ? 1.0f / (1.0f - a->dropout_p) : 1.0f;
    int64_t uids[10] = {U_Q, U_K, U_V, U_O, U_SCALE};
    void *ptrs[10] = {(void *)q, (void *)k, (void *)v, o, &scale};
    int n = 5;
    if (stats) uids[n] = U_STATS, ptrs[n++] = stats;
    if (a->causal) uids[n] = U_NEGINF, ptrs[n++] = &neginf;
    if (a->dropout_p > 0) {
        uids[n] = U_SEED, ptrs[n++] = io->seed;
        uids[n] = U_OFFSET, ptrs[n++] = io->offset;
        uids[n] = U_DSCALE, ptrs[n++] = &dscale;
        if (key.dump) uids[n] = U_RNG_DUMP, ptrs[n++] = io->rng_dump;
    }
    return run(g, pl, uids, ptrs, n, io->ws);
}

extern "C" int tfm_cudnn_attn_bwd(mc_wl_gpu *g, const tfm_attn *a, void *dq, tfm_view vdq, void *dk,
                                  tfm_view vdk, void *dv, tfm_view vdv, const void *dout, tfm_view vdo,
                                  const void *q, tfm_view vq, const void *k, tfm_view vk, const void *v,
                                  tfm_view vv, const void *o, tfm_view vo, const float *stats, int dt,
                                  const tfm_cudnn_io *io)
{
    if (!takes(a, dt, io) || !stats) return -1;
    plan_key key;
    key_of(&key, 1, a, dt, true, false);
    key.v[0] = vq, key.v[1] = vk, key.v[2] = vv, key.v[3] = vo;
    key.v[4] = vdo, key.v[5] = vdq, key.v[6] = vdk, key.v[7] = vdv;
    plan *pl = plan_for(&key);
    if (!pl) return -1;
    const uint64_t acc = (uint64_t)(a->B * a->H * a->Lq * a->Dh) * 4, eng = bwd_engine_offset(a);
    if (eng + (uint64_t)pl->ws > io->ws_bytes) {
        note_fallback("the engine's backward workspace exceeds PyTorch's");
        return -1;
    }
    char *ws = (char *)io->ws;
    float scale = a->scale, neginf = -FLT_MAX, one = 1.0f;
    float dscale = a->dropout_p > 0 ? 1.0f / (1.0f - a->dropout_p) : 1.0f, dscale_inv = 1.0f - a->dropout_p;
    int64_t uids[20] = {U_Q, U_K, U_V, U_O, U_DO, U_DQ, U_DK, U_DV, U_STATS, U_SCALE, U_SOFTMAX_SUM, U_DQ_ACC};
    void *ptrs[20] = {(void *)q, (void *)k, (void *)v, (void *)o, (void *)dout, dq, dk, dv, (void *)stats, &scale,
                      ws + acc, ws};
    int n = 12;
    if (a->causal) uids[n] = U_NEGINF, ptrs[n++] = &neginf;
    if (a->dropout_p > 0) {
        uids[n] = U_SEED, ptrs[n++] = io->seed;
        uids[n] = U_OFFSET, ptrs[n++] = io->offset;
        uids[n] = U_DSCALE, ptrs[n++] = &dscale;
        uids[n] = U_DSCALE_INV, ptrs[n++] = &dscale_inv;
    } else {
        uids[n] = U_ONE, ptrs[n++] = &one;
    }
    return run(g, pl, uids, ptrs, n, ws + eng);
}

#endif /* MC_HAVE_CUDNN */
