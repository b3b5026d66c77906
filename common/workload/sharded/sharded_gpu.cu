/* sharded_gpu.cu: sharded_gpu.h's runner. Compiled with NCCL only when the
 * Makefile found nccl.h (-DMC_HAVE_NCCL); otherwise the two entry points
 * say why they cannot run. */
#include "sharded_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "check.h"
#include "check_cuda.h"

#ifndef MC_HAVE_NCCL

extern "C" int mc_sh_gpu_available(int ranks, char *why, size_t len)
{
    (void)ranks;
    snprintf(why, len, "built without NCCL (set NCCL_HOME)");
    return 0;
}

extern "C" int mc_sh_gpu_run(const mc_sh_config *c, int steps, mc_sh_gpu_result *res, char *err,
                             size_t len)
{
    (void)c;
    (void)steps;
    (void)res;
    snprintf(err, len, "built without NCCL (set NCCL_HOME)");
    return -1;
}

#else /* MC_HAVE_NCCL */

#include <pthread.h>

#include <nccl.h>

#include "alloc/alloc_cuda.h"
#include "pattern.h"
#include "sharded_internal.h"
#include "sharded_plan.h"

#define CHECK_NCCL(call)                                                                  \
    do {                                                                                  \
        ncclResult_t mc_r_ = (call);                                                      \
        if (mc_r_ != ncclSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
                    ncclGetErrorString(mc_r_));                                           \
            exit(MC_EXIT_CUDA);                                                           \
        }                                                                                 \
    } while (0)

#define SEED_PARAM 0xC24000000000ull /* + 2 * layer + bias: the unsharded parameter's values */
#define SEED_GRAD 0xC24100000000ull  /* + event * 8192 (+ 4096 for a bias) + rank */
#define MAX_PENDING 256               /* DDP: bucket regions waiting for their all-reduce */

/* A small integer, so that sums over ranks are exact in fp32. */
static __host__ __device__ float sh_val(uint64_t seed, uint64_t i)
{
    return (float)((int)(mc_pattern_word(seed, i) & 1023u) - 512);
}

static __global__ void fill_kernel(float *p, uint64_t n, uint64_t seed, uint64_t base)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = sh_val(seed, base + i);
}

/* Counts p[i] != sum over r < nranks of sh_val(seed0 + r, base + i). */
static __global__ void check_sum_kernel(const float *p, uint64_t n, uint64_t seed0, int nranks,
                                        uint64_t base, unsigned long long *count)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        float want = 0.0f;
        for (int r = 0; r < nranks; r++) want += sh_val(seed0 + (uint64_t)r, base + i);
        if (p[i] != want) atomicAdd(count, 1ull);
    }
}

static unsigned grid(uint64_t n)
{
    uint64_t b = (n + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

typedef struct {
    uint64_t addr, n, seed0;
} pending;

typedef struct {
    int rank, world;
    mc_sh_config c;
    const ncclUniqueId *id;
    ncclComm_t comm;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    unsigned long long *count;
    double comm_acc;      /* seconds of collectives and copies this step */
    uint64_t events;      /* hook calls so far: the same sequence on every rank */
    uint64_t ncoll, bad;
    uint64_t rs_seed;     /* the reduce-scatter whose input was just made */
    pending pend[MAX_PENDING];
    int npend;
    mc_sh_gpu_result *res;
    int steps;
    char err[256];
} rank_ctx;

static float *fp(uint64_t a) { return (float *)(uintptr_t)a; }

static void fill(rank_ctx *k, uint64_t addr, uint64_t n, uint64_t seed, uint64_t base)
{
    if (!n) return;
    fill_kernel<<<grid(n), 256, 0, k->s>>>(fp(addr), n, seed, base);
    CHECK_LAUNCH();
}

static void check_sum(rank_ctx *k, uint64_t addr, uint64_t n, uint64_t seed0, int nranks, uint64_t base)
{
    if (!n) return;
    check_sum_kernel<<<grid(n), 256, 0, k->s>>>(fp(addr), n, seed0, nranks, base, k->count);
    CHECK_LAUNCH();
    k->bad += mc_pattern_counter_take(k->count, k->s);
}

static void time_begin(rank_ctx *k) { CHECK_CUDA(cudaEventRecord(k->e0, k->s)); }

static void time_end(rank_ctx *k)
{
    float ms = 0;
    CHECK_CUDA(cudaEventRecord(k->e1, k->s));
    CHECK_CUDA(cudaEventSynchronize(k->e1));
    CHECK_CUDA(cudaEventElapsedTime(&ms, k->e0, k->e1));
    k->comm_acc += ms * 1e-3;
}

static void d2d(rank_ctx *k, uint64_t dst, uint64_t src, uint64_t bytes)
{
    if (bytes)
        CHECK_CUDA(cudaMemcpyAsync((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes,
                                   cudaMemcpyDeviceToDevice, k->s));
}

/* ------------------------------------------------------------ DDP */

static void ddp_copy_in(rank_ctx *k, const mc_sh_comm *c)
{
    uint64_t n = c->src_bytes[0] / 4, seed0 = SEED_GRAD + k->events * 8192;
    fill(k, c->src[0], n, seed0 + (uint64_t)k->rank, 0); /* this rank's gradient */
    time_begin(k);
    d2d(k, c->dst, c->src[0], c->src_bytes[0]);
    time_end(k);
    CHECK(k->npend < MAX_PENDING, "too many gradients waiting for their bucket");
    k->pend[k->npend++] = (pending){c->dst, n, seed0};
}

static void ddp_allreduce(rank_ctx *k, const mc_sh_comm *c)
{
    time_begin(k);
    CHECK_NCCL(ncclAllReduce(fp(c->dst), fp(c->dst), c->dst_bytes / 4, ncclFloat, ncclSum, k->comm, k->s));
    time_end(k);
    k->ncoll++;
    for (int i = 0; i < k->npend; i++)
        if (k->pend[i].addr >= c->dst && k->pend[i].addr < c->dst + c->dst_bytes)
            check_sum(k, k->pend[i].addr, k->pend[i].n, k->pend[i].seed0, k->world, 0);
}

static void ddp_copy_out(rank_ctx *k, const mc_sh_comm *c)
{
    time_begin(k);
    d2d(k, c->dst, c->src[0], c->src_bytes[0]);
    time_end(k);
    for (int i = 0; i < k->npend; i++)
        if (k->pend[i].addr == c->src[0]) {
            check_sum(k, c->dst, k->pend[i].n, k->pend[i].seed0, k->world, 0);
            k->pend[i] = k->pend[--k->npend];
            break;
        }
}

/* ------------------------------------------------------------ FSDP */

/* The all-gather buffer holds, for each rank q, [W shard, b shard] (padded);
 * the unsharded W is the ranks' W shards one after the other. */
static void fsdp_allgather(rank_ctx *k, const mc_sh_comm *c)
{
    const uint64_t sw = c->src_bytes[0], sb = c->src_bytes[1], chunk = sw + sb;
    time_begin(k);
    if (k->world == 1) {
        d2d(k, c->out[0], c->src[0], sw);
        d2d(k, c->out[1], c->src[1], sb);
    } else {
        uint64_t mine = c->dst + (uint64_t)k->rank * chunk;
        d2d(k, mine, c->src[0], sw);
        d2d(k, mine + sw, c->src[1], sb);
        CHECK_NCCL(ncclAllGather(fp(mine), fp(c->dst), chunk / 4, ncclFloat, k->comm, k->s));
        for (int q = 0; q < k->world; q++) {
            d2d(k, c->out[0] + (uint64_t)q * sw, c->dst + (uint64_t)q * chunk, sw);
            d2d(k, c->out[1] + (uint64_t)q * sb, c->dst + (uint64_t)q * chunk + sw, sb);
        }
        k->ncoll++;
    }
    time_end(k);
    for (int b = 0; b < 2; b++) /* every owner's values, in place */
        check_sum(k, c->out[b], (uint64_t)(c->rows[b] * c->cols[b]), SEED_PARAM + 2 * (uint64_t)c->layer + b, 1, 0);
}

/* First call (src set): this rank's gradients, chunk_cat into the input.
 * Second call (out set): the reduce-scatter into the sharded grads. */
static void fsdp_reduce_scatter(rank_ctx *k, const mc_sh_comm *c)
{
    const int64_t p = mc_fsdp_padded_rows(c->rows[0], k->world);
    const uint64_t sw = (uint64_t)(p * c->cols[0]) * 4, sb = (uint64_t)(p * c->cols[1]) * 4, chunk = sw + sb;
    if (c->src[0]) {
        k->rs_seed = SEED_GRAD + k->events * 8192;
        for (int b = 0; b < 2; b++)
            fill(k, c->src[b], (uint64_t)(c->rows[b] * c->cols[b]), k->rs_seed + 4096 * (uint64_t)b + (uint64_t)k->rank, 0);
        time_begin(k);
        CHECK_CUDA(cudaMemsetAsync((void *)(uintptr_t)c->dst, 0, c->dst_bytes, k->s));
        for (int q = 0; q < k->world; q++)
            for (int b = 0; b < 2; b++) {
                int64_t rows = mc_fsdp_local_rows(c->rows[b], k->world, q);
                uint64_t row_bytes = (uint64_t)c->cols[b] * 4;
                d2d(k, c->dst + (uint64_t)q * chunk + (b ? sw : 0), c->src[b] + (uint64_t)(q * p) * row_bytes,
                    (uint64_t)rows * row_bytes);
            }
        time_end(k);
        return;
    }
    time_begin(k);
    if (k->world == 1) d2d(k, c->out[0], c->dst, chunk);
    else CHECK_NCCL(ncclReduceScatter(fp(c->dst), fp(c->out[0]), chunk / 4, ncclFloat, ncclSum, k->comm, k->s));
    time_end(k);
    k->ncoll += k->world > 1;
    for (int b = 0; b < 2; b++) {
        int64_t rows = mc_fsdp_local_rows(c->rows[b], k->world, k->rank);
        check_sum(k, c->out[0] + (b ? sw : 0), (uint64_t)(rows * c->cols[b]), k->rs_seed + 4096 * (uint64_t)b,
                  k->world, (uint64_t)(k->rank * p * c->cols[b]));
    }
}

static void on_comm(void *ctx, const mc_sh_comm *c)
{
    rank_ctx *k = (rank_ctx *)ctx;
    switch (c->kind) {
    case MC_SH_COPY_TO_BUCKET: ddp_copy_in(k, c); break;
    case MC_SH_ALLREDUCE: ddp_allreduce(k, c); break;
    case MC_SH_COPY_FROM_BUCKET: ddp_copy_out(k, c); break;
    case MC_SH_ALLGATHER: fsdp_allgather(k, c); break;
    case MC_SH_REDUCE_SCATTER: fsdp_reduce_scatter(k, c); break;
    }
    k->events++;
}

/* ------------------------------------------------------------ ranks */

static void *rank_main(void *arg)
{
    rank_ctx *k = (rank_ctx *)arg;
    CHECK_CUDA(cudaSetDevice(k->rank));
    CHECK_CUDA(cudaStreamCreateWithFlags(&k->s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&k->e0));
    CHECK_CUDA(cudaEventCreate(&k->e1));
    k->count = mc_pattern_counter_new();
    CHECK_NCCL(ncclCommInitRank(&k->comm, k->world, *k->id, k->rank));
    mc_sh_config c = k->c;
    c.rank = k->rank;
    ca_backend be = ca_cuda_backend();
    mc_sh_hooks hooks = {k, on_comm};
    mc_sh_run *r = mc_sh_create(&c, &be, &hooks, k->err, sizeof k->err);
    if (r && mc_sh_setup_status(r) == MC_WL_OK && sh_sharded(r)) {
        for (int l = 0; l < r->L; l++) { /* each rank's rows of the unsharded values */
            int64_t p = mc_fsdp_padded_rows(r->ly[l].out, k->world);
            fill(k, r->ly[l].W.addr, r->ly[l].W.bytes / 4, SEED_PARAM + 2 * (uint64_t)l,
                 (uint64_t)(k->rank * p * r->ly[l].in));
            fill(k, r->ly[l].b.addr, r->ly[l].b.bytes / 4, SEED_PARAM + 2 * (uint64_t)l + 1,
                 (uint64_t)(k->rank * p));
        }
    }
    for (int s = 0; r && s < k->steps; s++) {
        mc_sh_step_result sr;
        k->comm_acc = 0;
        if (mc_sh_step(r, &sr) != MC_WL_OK) {
            k->res->oom = 1;
            break;
        }
        CHECK_CUDA(cudaStreamSynchronize(k->s));
        k->res->peak[k->rank][s] = sr.peak_allocated;
        k->res->comm_s[k->rank][s] = k->comm_acc;
    }
    CHECK_CUDA(cudaStreamSynchronize(k->s));
    mc_sh_destroy(r);
    CHECK_NCCL(ncclCommDestroy(k->comm));
    mc_pattern_counter_free(k->count);
    CHECK_CUDA(cudaEventDestroy(k->e0));
    CHECK_CUDA(cudaEventDestroy(k->e1));
    CHECK_CUDA(cudaStreamDestroy(k->s));
    return NULL;
}

extern "C" int mc_sh_gpu_available(int ranks, char *why, size_t len)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    if (n < ranks) {
        snprintf(why, len, "needs %d GPUs, found %d", ranks, n);
        return 0;
    }
    return 1;
}

extern "C" int mc_sh_gpu_run(const mc_sh_config *c, int steps, mc_sh_gpu_result *res, char *err,
                             size_t len)
{
    const int world = c->world;
    if (world < 1 || world > MC_SH_MAX_GPUS || steps < 1 || steps > MC_SH_MAX_STEPS) {
        snprintf(err, len, "ranks 1..%d and steps 1..%d", MC_SH_MAX_GPUS, MC_SH_MAX_STEPS);
        return -1;
    }
    if (!mc_sh_gpu_available(world, err, len)) return -1;
    memset(res, 0, sizeof *res);
    res->ranks = world;
    res->steps = steps;
    for (int q = 0; q < world; q++) { /* the model's own figures for each rank */
        mc_sh_config m = *c;
        m.rank = q;
        mc_sh_run *r = mc_sh_create(&m, NULL, NULL, err, len);
        if (!r) return -1;
        for (int s = 0; s < steps; s++) {
            mc_sh_step_result sr;
            mc_sh_step(r, &sr);
            res->model[q][s] = sr.peak_allocated;
        }
        mc_sh_destroy(r);
    }
    setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast off, whatever was set: it can take shared GPUs out of service */
    ncclUniqueId id;
    CHECK_NCCL(ncclGetUniqueId(&id));
    rank_ctx *k = (rank_ctx *)calloc((size_t)world, sizeof *k);
    pthread_t *t = (pthread_t *)calloc((size_t)world, sizeof *t);
    CHECK(k && t, "out of host memory");
    for (int q = 0; q < world; q++) {
        k[q].rank = q;
        k[q].world = world;
        k[q].c = *c;
        k[q].id = &id;
        k[q].res = res;
        k[q].steps = steps;
        CHECK(pthread_create(&t[q], NULL, rank_main, &k[q]) == 0, "pthread_create");
    }
    int rc = 0;
    for (int q = 0; q < world; q++) {
        pthread_join(t[q], NULL);
        res->collectives += k[q].ncoll;
        res->bad_values += k[q].bad;
        if (k[q].err[0]) {
            snprintf(err, len, "rank %d: %s", q, k[q].err);
            rc = -1;
        }
    }
    free(k);
    free(t);
    return rc;
}

#endif /* MC_HAVE_NCCL */
