#include "pattern.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "check_cuda.h"

/* ------------------------------------------------------------------ host */

static uint64_t words_of(uint64_t bytes)
{
    CHECK((bytes & 3) == 0, "pattern buffers are whole 32-bit words, got %llu bytes",
          (unsigned long long)bytes);
    return bytes / 4;
}

/* Full fills and checks of large buffers run on up to MAX_THREADS host
 * threads: one thread checks about 2.5 GiB/s, and the suite checks 1 GiB
 * buffers. Each thread takes one contiguous range of words. */
#define MAX_THREADS 8
#define WORDS_PER_THREAD_MIN (1ull << 22) /* 16 MiB */

typedef struct {
    uint32_t *w;
    uint64_t lo, hi, seed;
    int check;        /* 0: fill, result = sum; 1: check, result = mismatches */
    uint64_t result;
} range_job;

static void *run_range(void *arg)
{
    range_job *j = (range_job *)arg;
    uint64_t acc = 0;
    if (j->check) {
        for (uint64_t i = j->lo; i < j->hi; i++) acc += j->w[i] != mc_pattern_word(j->seed, i);
    } else {
        for (uint64_t i = j->lo; i < j->hi; i++) {
            j->w[i] = mc_pattern_word(j->seed, i);
            acc += j->w[i];
        }
    }
    j->result = acc;
    return NULL;
}

static uint64_t over_all_words(uint32_t *w, uint64_t n, uint64_t seed, int check)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t t = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (uint64_t)cpus;
    if (n / WORDS_PER_THREAD_MIN < t) t = n / WORDS_PER_THREAD_MIN ? n / WORDS_PER_THREAD_MIN : 1;
    range_job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (uint64_t k = 0; k < t; k++) {
        range_job j = {w, n * k / t, n * (k + 1) / t, seed, check, 0};
        jobs[k] = j;
        if (k > 0) started[k] = pthread_create(&th[k], NULL, run_range, &jobs[k]) == 0;
    }
    run_range(&jobs[0]);
    uint64_t acc = jobs[0].result;
    for (uint64_t k = 1; k < t; k++) {
        if (started[k]) pthread_join(th[k], NULL);
        else run_range(&jobs[k]); /* no thread to be had: do it here */
        acc += jobs[k].result;
    }
    return acc;
}

extern "C" uint64_t mc_pattern_fill_host(void *buf, uint64_t bytes, uint64_t seed)
{
    return over_all_words((uint32_t *)buf, words_of(bytes), seed, 0);
}

extern "C" void mc_pattern_poison_host(void *buf, uint64_t bytes, uint64_t stride)
{
    uint32_t *w = (uint32_t *)buf;
    uint64_t n = words_of(bytes);
    if (n == 0) return;
    if (stride <= 1) {
        memset(buf, MC_PATTERN_POISON_BYTE, bytes);
        return;
    }
    for (uint64_t k = 0; k * stride < n; k++) {
        uint64_t i = mc_pattern_sample(k, stride);
        if (i < n) w[i] = MC_PATTERN_POISON;
    }
    w[n - 1] = MC_PATTERN_POISON;
}

extern "C" uint64_t mc_pattern_check_host(const void *buf, uint64_t bytes, uint64_t seed,
                                          uint64_t stride)
{
    const uint32_t *w = (const uint32_t *)buf;
    uint64_t n = words_of(bytes), bad = 0;
    if (n == 0) return 0;
    if (stride <= 1) return over_all_words((uint32_t *)w, n, seed, 1);
    for (uint64_t k = 0; k * stride < n; k++) {
        uint64_t i = mc_pattern_sample(k, stride);
        if (i < n) bad += w[i] != mc_pattern_word(seed, i);
    }
    return bad + (w[n - 1] != mc_pattern_word(seed, n - 1));
}

/* ---------------------------------------------------------------- device */

static __global__ void fill_kernel(uint32_t *w, uint64_t n, uint64_t seed)
{
    uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        w[i] = mc_pattern_word(seed, i);
}

static __global__ void check_kernel(const uint32_t *w, uint64_t n, uint64_t seed,
                                    unsigned long long *count)
{
    unsigned long long bad = 0;
    uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        bad += w[i] != mc_pattern_word(seed, i);
    for (int off = 16; off > 0; off /= 2) bad += __shfl_down_sync(0xffffffffu, bad, off);
    if ((threadIdx.x & 31) == 0 && bad) atomicAdd(count, bad);
}

/* Enough blocks to fill the GPU a few times over; grid-stride loops do the rest. */
static unsigned grid_for(uint64_t n, int threads)
{
    int dev = 0, sms = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    uint64_t want = (n + threads - 1) / threads, cap = (uint64_t)sms * 16;
    if (want < 1) want = 1;
    return (unsigned)(want < cap ? want : cap);
}

extern "C" void mc_pattern_fill_device(void *buf, uint64_t bytes, uint64_t seed,
                                       cudaStream_t stream)
{
    uint64_t n = words_of(bytes);
    if (n == 0) return;
    fill_kernel<<<grid_for(n, 256), 256, 0, stream>>>((uint32_t *)buf, n, seed);
    CHECK_LAUNCH();
}

extern "C" void mc_pattern_poison_device(void *buf, uint64_t bytes, cudaStream_t stream)
{
    CHECK_CUDA(cudaMemsetAsync(buf, MC_PATTERN_POISON_BYTE, bytes, stream));
}

extern "C" void mc_pattern_check_device(const void *buf, uint64_t bytes, uint64_t seed,
                                        unsigned long long *d_count, cudaStream_t stream)
{
    uint64_t n = words_of(bytes);
    if (n == 0) return;
    check_kernel<<<grid_for(n, 256), 256, 0, stream>>>((const uint32_t *)buf, n, seed, d_count);
    CHECK_LAUNCH();
}

extern "C" unsigned long long *mc_pattern_counter_new(void)
{
    unsigned long long *c = NULL;
    CHECK_CUDA(cudaMalloc((void **)&c, sizeof *c));
    CHECK_CUDA(cudaMemset(c, 0, sizeof *c));
    return c;
}

extern "C" unsigned long long mc_pattern_counter_take(unsigned long long *d_count,
                                                      cudaStream_t stream)
{
    unsigned long long v = 0;
    CHECK_CUDA(cudaMemcpyAsync(&v, d_count, sizeof v, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemsetAsync(d_count, 0, sizeof v, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    return v;
}

extern "C" void mc_pattern_counter_free(unsigned long long *d_count)
{
    CHECK_CUDA(cudaFree(d_count));
}
