/* peer_matrix.cu: measuring C22's matrix (peer_matrix.h) on the GPUs.
 *
 * Why events behind a gate and not the sweep's host clock: a copy here
 * starts and ends on one GPU's stream (the source's for a copy engine copy,
 * the destination's for a kernel), so CUDA events on that stream time the
 * transfer alone, without the host's launch and synchronization latency
 * (tens of microseconds, which the host clock counts), and the spin kernel
 * keeps the queueing of the operations out of the interval (nvbandwidth's
 * method: memcpy.cpp, doMemcpyCore). The driver-staged copy (peer access
 * off) is the exception: it may need the host while it runs, so it is not
 * held behind a gate that only the host can open; its events still bracket
 * it on the source's stream, and the first copy's enqueue cost (microseconds)
 * is small beside a 256 MiB copy (milliseconds). */
#include <stdio.h>
#include <string.h>

#include "check_cuda.h"
#include "gate.h"
#include "peer_matrix.h"

#define SEED_SRC 0xC22100000000ull /* + GPU: the copy source on each GPU */
#define SEED_VAL 0xC22200000000ull /* + GPU: the combine operand on each GPU */
#define THREADS 256
#define MAX_BLOCKS 8192u

/* ------------------------------------------------------------ kernels */

static __global__ void read_kernel(uint4 *dst, const uint4 *src, uint64_t n16)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n16;
         i += (uint64_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

/* c = a + b, four floats at a time; b may be another GPU's memory. */
static __global__ void add_kernel(float4 *c, const float4 *a, const float4 *b, uint64_t n4)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n4;
         i += (uint64_t)gridDim.x * blockDim.x) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

static __global__ void fill_value_kernel(float *v, uint64_t n, uint64_t seed)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        v[i] = mc_pm_value(seed, i);
}

static __global__ void check_sum_kernel(const float *c, uint64_t n, uint64_t seed_a, uint64_t seed_b,
                                        unsigned long long *count)
{
    unsigned long long bad = 0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        bad += c[i] != mc_pm_value(seed_a, i) + mc_pm_value(seed_b, i);
    for (int off = 16; off > 0; off /= 2) bad += __shfl_down_sync(0xffffffffu, bad, off);
    if ((threadIdx.x & 31) == 0 && bad) atomicAdd(count, bad);
}

static unsigned blocks_for(uint64_t n)
{
    uint64_t b = n / THREADS + 1;
    return (unsigned)(b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

extern "C" void mc_pm_launch_read(void *dst, const void *src, uint64_t bytes, cudaStream_t stream)
{
    uint64_t n16 = bytes / 16;
    read_kernel<<<blocks_for(n16), THREADS, 0, stream>>>((uint4 *)dst, (const uint4 *)src, n16);
    CHECK_LAUNCH();
}

/* ------------------------------------------------------------ the bench */

typedef struct {
    int n;
    uint64_t bytes, cbytes;
    void *src[MC_PM_MAX_GPUS], *dst[MC_PM_MAX_GPUS]; /* bytes each */
    float *val[MC_PM_MAX_GPUS];                      /* cbytes each: the combine operand */
    float *host;                                     /* pinned, cbytes: a + b for the host check */
    cudaStream_t s[MC_PM_MAX_GPUS];
    cudaEvent_t t0[MC_PM_MAX_GPUS], t1[MC_PM_MAX_GPUS];
    mc_gate gate[MC_PM_MAX_GPUS];                    /* mapped per GPU: one GPU's mapping is its own */
    unsigned long long *count[MC_PM_MAX_GPUS];
} bench;

static void free_buffers(bench *b)
{
    for (int d = 0; d < b->n; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        if (b->src[d]) CHECK_CUDA(cudaFree(b->src[d]));
        if (b->dst[d]) CHECK_CUDA(cudaFree(b->dst[d]));
        if (b->val[d]) CHECK_CUDA(cudaFree(b->val[d]));
        b->src[d] = b->dst[d] = NULL;
        b->val[d] = NULL;
    }
    if (b->host) CHECK_CUDA(cudaFreeHost(b->host));
    b->host = NULL;
}

/* Every buffer at `bytes`, filled; false when out of memory (nothing held). */
static bool alloc_buffers(bench *b, uint64_t bytes)
{
    b->bytes = bytes;
    b->cbytes = bytes < MC_PM_COMBINE_MAX_BYTES ? bytes : MC_PM_COMBINE_MAX_BYTES;
    bool ok = true;
    for (int d = 0; d < b->n && ok; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        ok = CUDA_OK_OR_OOM(cudaMalloc(&b->src[d], bytes)) && CUDA_OK_OR_OOM(cudaMalloc(&b->dst[d], bytes)) &&
             CUDA_OK_OR_OOM(cudaMalloc((void **)&b->val[d], b->cbytes));
    }
    if (ok) ok = CUDA_OK_OR_OOM(cudaMallocHost((void **)&b->host, b->cbytes));
    if (!ok) {
        free_buffers(b);
        return false;
    }
    for (int d = 0; d < b->n; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        mc_pattern_fill_device(b->src[d], bytes, SEED_SRC + d, b->s[d]);
        uint64_t nv = b->cbytes / sizeof(float);
        fill_value_kernel<<<blocks_for(nv), THREADS, 0, b->s[d]>>>(b->val[d], nv, SEED_VAL + d);
        CHECK_LAUNCH();
        CHECK_CUDA(cudaStreamSynchronize(b->s[d]));
    }
    return true;
}

/* Queues one operation of method k from GPU i to GPU j on the initiator's
 * stream (the current device is the initiator). */
static void issue(bench *b, int k, int i, int j)
{
    switch (k) {
    case MC_PM_PEER_OFF:
    case MC_PM_PEER_ON:
        CHECK_CUDA(cudaMemcpyPeerAsync(b->dst[j], j, b->src[i], i, b->bytes, b->s[i]));
        break;
    case MC_PM_KERNEL_READ:
        mc_pm_launch_read(b->dst[j], b->src[i], b->bytes, b->s[j]);
        break;
    case MC_PM_COMBINE: {
        uint64_t n4 = b->cbytes / 16;
        add_kernel<<<blocks_for(n4), THREADS, 0, b->s[j]>>>((float4 *)b->dst[j], (const float4 *)b->val[j],
                                                            (const float4 *)b->val[i], n4);
        CHECK_LAUNCH();
        break;
    }
    }
}

/* One cell: `samples` samples, each with the destination poisoned, `warmup`
 * untimed and `loops` timed operations, then the destination checked on its
 * GPU. COMBINE's last result is also checked on the host, every element. */
static void measure_cell(bench *b, const mc_pm_options *opt, int k, int i, int j, mc_pm_cell *c)
{
    const int g = k == MC_PM_PEER_OFF || k == MC_PM_PEER_ON ? i : j; /* the initiating GPU */
    const bool gated = k != MC_PM_PEER_OFF;
    const uint64_t bytes = k == MC_PM_COMBINE ? b->cbytes : b->bytes;
    double x[MC_PM_MAX_SAMPLES] = {0};
    int ns = opt->samples < MC_PM_MAX_SAMPLES ? opt->samples : MC_PM_MAX_SAMPLES;
    if (ns < 1) ns = 1;
    for (int r = 0; r < ns; r++) {
        CHECK_CUDA(cudaSetDevice(j));
        mc_pattern_poison_device(b->dst[j], bytes, b->s[j]);
        CHECK_CUDA(cudaStreamSynchronize(b->s[j]));
        CHECK_CUDA(cudaSetDevice(g));
        if (gated) mc_gate_close(&b->gate[g], b->s[g]);
        for (int w = 0; w < opt->warmup; w++) issue(b, k, i, j);
        CHECK_CUDA(cudaEventRecord(b->t0[g], b->s[g]));
        for (int l = 0; l < MC_PM_LOOPS; l++) issue(b, k, i, j);
        CHECK_CUDA(cudaEventRecord(b->t1[g], b->s[g]));
        if (gated) mc_gate_release(&b->gate[g]);
        CHECK_CUDA(cudaEventSynchronize(b->t1[g]));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, b->t0[g], b->t1[g]));
        x[r] = (double)bytes * MC_PM_LOOPS / ((double)ms * 1e-3); /* B/s */
        CHECK_CUDA(cudaSetDevice(j));
        if (k == MC_PM_COMBINE) {
            uint64_t n = bytes / sizeof(float);
            check_sum_kernel<<<blocks_for(n), THREADS, 0, b->s[j]>>>((const float *)b->dst[j], n, SEED_VAL + j,
                                                                     SEED_VAL + i, b->count[j]);
            CHECK_LAUNCH();
        } else {
            mc_pattern_check_device(b->dst[j], bytes, SEED_SRC + i, b->count[j], b->s[j]);
        }
        c->bad += mc_pattern_counter_take(b->count[j], b->s[j]);
    }
    c->bw = mc_stats_of(x, (size_t)ns);
    if (k == MC_PM_COMBINE) {
        CHECK_CUDA(cudaMemcpyAsync(b->host, b->dst[j], bytes, cudaMemcpyDeviceToHost, b->s[j]));
        CHECK_CUDA(cudaStreamSynchronize(b->s[j]));
        c->host_bad = mc_pm_combine_check_host(b->host, bytes / sizeof(float), SEED_VAL + j, SEED_VAL + i);
    }
    c->state = c->bad || c->host_bad ? MC_PM_WRONG : MC_PM_OK;
}

/* Peer access between i and j, both ways (nvbandwidth's enablePeerAcess). */
static void set_peer(int i, int j, bool on)
{
    const int a[2] = {i, j};
    for (int d = 0; d < 2; d++) {
        CHECK_CUDA(cudaSetDevice(a[d]));
        if (on) CHECK_CUDA(cudaDeviceEnablePeerAccess(a[1 - d], 0));
        else CHECK_CUDA(cudaDeviceDisablePeerAccess(a[1 - d]));
    }
}

void mc_pm_measure(mc_run *run, const mc_pm_options *opt, mc_pm_result *m)
{
    memset(m, 0, sizeof *m);
    CHECK_CUDA(cudaGetDeviceCount(&m->visible));
    bench b;
    memset(&b, 0, sizeof b);
    b.n = m->visible < MC_PM_MAX_GPUS ? m->visible : MC_PM_MAX_GPUS;
    if (b.n < 2) return;
    int prev = 0;
    CHECK_CUDA(cudaGetDevice(&prev));
    for (int d = 0; d < b.n; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaStreamCreateWithFlags(&b.s[d], cudaStreamNonBlocking));
        CHECK_CUDA(cudaEventCreate(&b.t0[d]));
        CHECK_CUDA(cudaEventCreate(&b.t1[d]));
        mc_gate_init(&b.gate[d]);
        b.count[d] = mc_pattern_counter_new();
        for (int e = 0; e < b.n; e++)
            if (e != d) {
                int can = 0;
                CHECK_CUDA(cudaDeviceCanAccessPeer(&can, d, e));
                m->can[d][e] = can != 0;
            }
    }
    uint64_t bytes = opt->bytes;
    while (bytes >= (1ull << 20) && !alloc_buffers(&b, bytes)) {
        mc_emit(run, "matrix", "bytes", (double)bytes, "allocation", "bytes", mc_stats_of(NULL, 0), "oom",
                "three device buffers on each GPU and one pinned host buffer of this size");
        bytes /= 2;
    }
    if (bytes >= (1ull << 20)) {
        m->n = b.n;
        m->bytes = b.bytes;
        m->combine_bytes = b.cbytes;
        m->samples = opt->samples < MC_PM_MAX_SAMPLES ? opt->samples : MC_PM_MAX_SAMPLES;
        m->loops = MC_PM_LOOPS;
        /* Peer access off (as the sweep leaves it) for every ordered pair. */
        for (int i = 0; i < b.n; i++)
            for (int j = 0; j < b.n; j++)
                if (i != j) measure_cell(&b, opt, MC_PM_PEER_OFF, i, j, &m->cell[MC_PM_PEER_OFF][i][j]);
        /* Then per unordered pair: enable both ways, both directions, disable
         * again (one pair at a time: no GPU nears its limit of peers). */
        for (int i = 0; i < b.n; i++)
            for (int j = i + 1; j < b.n; j++) {
                const bool peer = mc_pm_pair_peer(m, i, j);
                if (peer) set_peer(i, j, true);
                for (int k = MC_PM_PEER_ON; k < MC_PM_NMETH; k++)
                    for (int dir = 0; dir < 2; dir++) {
                        const int s = dir ? j : i, t = dir ? i : j;
                        if (peer) measure_cell(&b, opt, k, s, t, &m->cell[k][s][t]);
                        else m->cell[k][s][t].state = MC_PM_NO_PEER;
                    }
                if (peer) set_peer(i, j, false);
                mc_log(run, "matrix GPU %d <-> %d done%s", i, j, peer ? "" : " (no peer access)");
            }
        free_buffers(&b);
    }
    for (int d = 0; d < b.n; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        mc_pattern_counter_free(b.count[d]);
        mc_gate_destroy(&b.gate[d]);
        CHECK_CUDA(cudaEventDestroy(b.t0[d]));
        CHECK_CUDA(cudaEventDestroy(b.t1[d]));
        CHECK_CUDA(cudaStreamDestroy(b.s[d]));
    }
    CHECK_CUDA(cudaSetDevice(prev));
}
