/* prefetch_pattern.cu: seed 002's PrefetchLoader on the allocator model's
 * per-stream pools (prefetch_pattern.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_cuda.h"
#include "pattern.h"
#include "pattern_read.cuh"
#include "stats.h"
#include "alloc/alloc_cuda.h"
#include "alloc/alloc_model.h"
#include "prefetch_pattern.h"

const char *const MC_PREFETCH_NAME[MC_PREFETCH_NVARIANTS] = {
    "serial", "seed_no_record_stream", "record_stream", "copy_after_compute"};

/* Stream ids for the model's pools (any distinct 64-bit values). */
#define MAIN_ID 1u
#define SIDE_ID 2u

typedef struct {
    const mc_prefetch_setup *s;
    mc_prefetch_variant v;
    ca_allocator *a;
    uint64_t *addr;        /* each batch's block */
    char *dropped;         /* batch dropped by the loop (its free requested) */
    char *freed;           /* its block returned to the pool */
    int last_done;         /* the last batch whose compute was launched, -1 none */
    cudaEvent_t *copied, *done;
    mc_prefetch_result *r;
} loader;

/* RECORD_STREAM: blocks whose reader finished go back to the pool, as
 * PyTorch's process_events does before each malloc. */
static void process_events(loader *L)
{
    for (int k = 0; k <= L->last_done; k++) {
        if (!L->dropped[k] || L->freed[k]) continue;
        cudaError_t e = cudaEventQuery(L->done[k]);
        if (e == cudaErrorNotReady) continue;
        CHECK_CUDA(e);
        CHECK(ca_free(L->a, L->addr[k]) == 0, "prefetch: batch %d's block was not live", k);
        L->freed[k] = 1;
    }
}

/* The loop lets go of batch k. */
static void drop(loader *L, int k)
{
    L->dropped[k] = 1;
    if (L->v == MC_PREFETCH_RECORD_STREAM) return; /* freed once done[k] completes */
    CHECK(ca_free(L->a, L->addr[k]) == 0, "prefetch: batch %d's block was not live", k);
    L->freed[k] = 1;
}

/* preload(): batch j's block from the side stream's pool, then its copy.
 * Returns -1 if the model refused the block. */
static int prefetch(loader *L, int j)
{
    const mc_prefetch_setup *s = L->s;
    int serial = L->v == MC_PREFETCH_SERIAL;
    cudaStream_t cs = serial ? s->main : s->side;
    if (L->v == MC_PREFETCH_RECORD_STREAM) process_events(L);
    if (L->v == MC_PREFETCH_COPY_AFTER_COMPUTE && L->last_done >= 0)
        CHECK_CUDA(cudaStreamWaitEvent(s->side, L->done[L->last_done], 0));
    if (ca_malloc_stream(L->a, s->bytes, serial ? MAIN_ID : SIDE_ID, &L->addr[j]) != CA_OK) {
        L->r->oom = 1;
        return -1;
    }
    /* The block's last owner: its reader is the one this copy may race. */
    for (int k = j - 1; k >= 0; k--) {
        if (!L->freed[k] || L->addr[k] != L->addr[j]) continue;
        int ordered = serial || (L->v == MC_PREFETCH_COPY_AFTER_COMPUTE && k <= L->last_done);
        cudaError_t e = cudaEventQuery(L->done[k]);
        if (e != cudaErrorNotReady) CHECK_CUDA(e);
        if (e == cudaErrorNotReady && !ordered) L->r->reuse_while_read++;
        break;
    }
    CHECK_CUDA(cudaMemcpyAsync((void *)(uintptr_t)L->addr[j], s->host + (uint64_t)j * s->bytes, s->bytes,
                               cudaMemcpyHostToDevice, cs));
    CHECK_CUDA(cudaEventRecord(L->copied[j], cs));
    return 0;
}

void mc_prefetch_run(const mc_prefetch_setup *s, mc_prefetch_variant v, mc_prefetch_result *r)
{
    int n = s->n;
    memset(r, 0, sizeof *r);
    loader L = {s, v, ca_create(NULL, ca_cuda_backend()), NULL, NULL, NULL, -1, NULL, NULL, r};
    CHECK(L.a != NULL, "prefetch: the allocator model refused its default settings");
    L.addr = (uint64_t *)calloc((size_t)n, sizeof *L.addr);
    L.dropped = (char *)calloc((size_t)n, 1);
    L.freed = (char *)calloc((size_t)n, 1);
    L.copied = (cudaEvent_t *)calloc((size_t)n, sizeof *L.copied);
    L.done = (cudaEvent_t *)calloc((size_t)n, sizeof *L.done);
    CHECK(L.addr && L.dropped && L.freed && L.copied && L.done, "prefetch: out of host memory");
    for (int i = 0; i < n; i++) {
        CHECK_CUDA(cudaEventCreateWithFlags(&L.copied[i], cudaEventDisableTiming));
        CHECK_CUDA(cudaEventCreateWithFlags(&L.done[i], cudaEventDisableTiming));
    }
    /* Results live outside the model: they are the experiment's, not the loader's. */
    unsigned long long *d_sum, *d_bad;
    uint32_t *d_work;
    CHECK_CUDA(cudaMalloc((void **)&d_sum, (size_t)n * sizeof *d_sum));
    CHECK_CUDA(cudaMalloc((void **)&d_bad, (size_t)n * sizeof *d_bad));
    CHECK_CUDA(cudaMalloc((void **)&d_work, (size_t)n * sizeof *d_work));
    CHECK_CUDA(cudaMemsetAsync(d_sum, 0, (size_t)n * sizeof *d_sum, s->main));
    CHECK_CUDA(cudaMemsetAsync(d_bad, 0, (size_t)n * sizeof *d_bad, s->main));
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    CHECK_CUDA(cudaDeviceSynchronize());

    CHECK_CUDA(cudaEventRecord(start, s->main));
    CHECK_CUDA(cudaStreamWaitEvent(s->side, start, 0));
    int ok = prefetch(&L, 0) == 0;
    for (int i = 0; ok && i < n; i++) {
        /* __next__: main waits for the side stream, takes batch i, prefetches i+1. */
        if (v != MC_PREFETCH_SERIAL) CHECK_CUDA(cudaStreamWaitEvent(s->main, L.copied[i], 0));
        if (i + 1 < n && v != MC_PREFETCH_SERIAL) ok = prefetch(&L, i + 1) == 0;
        /* The loop rebinds `batch`: the previous one is dropped. */
        if (i >= 1) drop(&L, i - 1);
        mc_pattern_read_kernel<<<s->blocks, 256, 0, s->main>>>((const uint32_t *)(uintptr_t)L.addr[i], s->bytes / 4,
                                                   s->seed_base + (uint64_t)i, s->rounds, d_sum + i,
                                                   d_bad + i, d_work + i);
        CHECK_LAUNCH();
        CHECK_CUDA(cudaEventRecord(L.done[i], s->main));
        L.last_done = i;
        /* Serial: the next copy on the same stream, after this compute. */
        if (i + 1 < n && v == MC_PREFETCH_SERIAL && ok) ok = prefetch(&L, i + 1) == 0;
    }
    if (ok) drop(&L, n - 1);
    CHECK_CUDA(cudaEventRecord(stop, s->main));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaDeviceSynchronize());
    if (v == MC_PREFETCH_RECORD_STREAM) process_events(&L); /* every reader is done now */
    float ms = 0.0f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    r->seconds = 1e-3 * ms;
    r->peak_reserved = (uint64_t)ca_get_stats(L.a)->reserved_bytes.peak;

    unsigned long long *sum = (unsigned long long *)calloc((size_t)n, sizeof *sum);
    unsigned long long *bad = (unsigned long long *)calloc((size_t)n, sizeof *bad);
    CHECK(sum && bad, "prefetch: out of host memory");
    CHECK_CUDA(cudaMemcpy(sum, d_sum, (size_t)n * sizeof *sum, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(bad, d_bad, (size_t)n * sizeof *bad, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n && !r->oom; i++) r->corrupted += bad[i] != 0 || sum[i] != s->sums[i];

    free(sum);
    free(bad);
    CHECK_CUDA(cudaFree(d_sum));
    CHECK_CUDA(cudaFree(d_bad));
    CHECK_CUDA(cudaFree(d_work));
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    for (int i = 0; i < n; i++) {
        CHECK_CUDA(cudaEventDestroy(L.copied[i]));
        CHECK_CUDA(cudaEventDestroy(L.done[i]));
    }
    ca_destroy(L.a); /* every block and segment back to CUDA, deferred frees included */
    free(L.addr);
    free(L.dropped);
    free(L.freed);
    free(L.copied);
    free(L.done);
}

void mc_prefetch_report(mc_run *run, const mc_prefetch_setup *s, int reps)
{
    enum { NV = MC_PREFETCH_NVARIANTS };
    double *t = (double *)calloc((size_t)NV * (size_t)reps, sizeof *t);
    CHECK(t != NULL, "prefetch: out of host memory");
    int reuse[NV] = {0}, corrupt[NV] = {0}, oom[NV] = {0};
    uint64_t peak[NV] = {0};
    mc_prefetch_result r;
    for (int rep = -run->opt.warmup; rep < reps; rep++) /* rep < 0: warm-up, not counted */
        for (int v = 0; v < NV; v++) {
            mc_prefetch_run(s, (mc_prefetch_variant)v, &r);
            if (rep < 0) continue;
            t[v * reps + rep] = r.seconds;
            reuse[v] += r.reuse_while_read;
            corrupt[v] += r.corrupted;
            oom[v] += r.oom;
            if (r.peak_reserved > peak[v]) peak[v] = r.peak_reserved;
        }
    double pv = (double)s->bytes, serial = 0.0;
    char variant[64], note[200];
    for (int v = 0; v < NV; v++) {
        mc_stats st = mc_stats_of(t + v * reps, (size_t)reps);
        if (v == MC_PREFETCH_SERIAL) serial = st.median;
        snprintf(variant, sizeof variant, "pool_%s", MC_PREFETCH_NAME[v]);
        snprintf(note, sizeof note, "%d batches, buffers from the allocator model's stream pools, %d reps%s",
                 s->n, reps, oom[v] ? "; the model refused a batch (run stopped)" : "");
        mc_emit(run, variant, "bytes", pv, "total_time_events", "s", st, oom[v] ? "oom" : "ok", note);
        mc_emit_value(run, variant, "bytes", pv, "saving_vs_serial", "ratio",
                      serial > 0 ? 1.0 - st.median / serial : 0.0, "1 - median / serial median");
        mc_emit_value(run, variant, "bytes", pv, "reuse_while_read", "count", reuse[v],
                      "copies given a block whose reader had not finished, not ordered after it; all reps");
        mc_emit_value(run, variant, "bytes", pv, "corrupted_batches", "count", corrupt[v],
                      "computes that saw a word unlike the batch's pattern or a wrong sum; all reps");
        mc_emit_value(run, variant, "bytes", pv, "peak_reserved", "bytes", (double)peak[v],
                      "the model's reserved_bytes peak, largest over reps");
        if (v != MC_PREFETCH_SEED && corrupt[v])
            mc_verify_failed(run, variant, "%d batches corrupted in %s, which orders or defers its reuse",
                             corrupt[v], MC_PREFETCH_NAME[v]);
    }
    int n_all = s->n * reps;
    mc_emit_finding(run, "Seed 002's PrefetchLoader on stream pools (%d batches x %d reps): without "
                    "record_stream the next copy took a block still being read %d times and %d of %d "
                    "batches were read corrupted; with record_stream %d and %d (peak reserved %.0f MiB "
                    "vs %.0f MiB); with the copy ordered after compute %d and %d.",
                    s->n, reps, reuse[MC_PREFETCH_SEED], corrupt[MC_PREFETCH_SEED], n_all,
                    reuse[MC_PREFETCH_RECORD_STREAM], corrupt[MC_PREFETCH_RECORD_STREAM],
                    peak[MC_PREFETCH_RECORD_STREAM] / 1048576.0, peak[MC_PREFETCH_SEED] / 1048576.0,
                    reuse[MC_PREFETCH_COPY_AFTER_COMPUTE], corrupt[MC_PREFETCH_COPY_AFTER_COMPUTE]);
    free(t);
}
