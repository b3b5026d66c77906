/* reduce_scratch.c: the scratch PyTorch's CUDA reductions take from the
 * caching allocator. gpu_reduce_kernel (aten/src/ATen/native/cuda/Reduce.cuh)
 * asks setReduceConfig for a launch shape; when it splits one output's
 * inputs across blocks (ctas_per_output > 1, a "global reduce") it allocates
 * a buffer of partial results and a semaphore per output block, and frees
 * both when the kernel is queued. The workload's reductions are mse_loss's
 * mean (all of a contiguous tensor into one value) and a bias gradient's
 * sum over rows ([m,n] into [n], the reduced dimension not the fastest). The
 * constants are Reduce.cuh's; a device has maxThreadsPerMultiProcessor 2048
 * (every CUDA GPU since Volta) and sm_count SMs. */
#include <stdint.h>

#include "reduce_scratch.h"

#define MAX_NUM_THREADS 512     /* mnt_wrapper<T>::MAX_NUM_THREADS (not complex<double>) */
#define WARP 32
#define INPUT_VEC 4             /* ReduceConfig::input_vec_size == vt0 */
#define MIN_VALUES_PER_THREAD 16
#define MAX_VALUES_PER_THREAD 256
#define MAX_THREADS_PER_SM 2048

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* floor(log2(n)) as a power of two, at least 1 (Reduce.cuh last_pow2). */
static int64_t last_pow2(int64_t n)
{
    int64_t p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

void wl_reduce_scratch(int64_t outputs, int64_t inputs, bool along_rows, int arg_size,
                       int scalar_size, int sm_count, uint64_t *buf, uint64_t *sem)
{
    *buf = *sem = 0;
    int64_t dim0, dim1;
    int out_vec = 1;
    if (!along_rows) { /* reduction on the fastest-striding dimension */
        dim0 = inputs;
        dim1 = outputs;
        if (dim0 > 128) dim0 /= INPUT_VEC; /* vectorize along input */
    } else {
        dim0 = outputs;
        dim1 = inputs;
        /* get_output_vec_size: 4, 2 or 1 dividing the row length (blocks are
         * 512-byte aligned, so the address never limits it) */
        out_vec = outputs % 4 == 0 ? 4 : outputs % 2 == 0 ? 2 : 1;
        dim0 /= out_vec;
    }
    (void)scalar_size; /* only the alignment of the data, always met */
    /* set_block_dimension */
    const int64_t max_threads = MAX_NUM_THREADS / out_vec;
    int64_t d0 = dim0 < max_threads ? last_pow2(dim0) : max_threads;
    int64_t d1 = dim1 < max_threads ? last_pow2(dim1) : max_threads;
    int64_t bw = min64(d0, WARP);
    int64_t bh = min64(d1, max_threads / bw);
    bw = min64(d0, max_threads / bh);
    const int64_t threads = bw * bh;

    int64_t step_in = 1, step_out = 1;
    bool block_x_reduce = false, split_warps = false;
    if (!along_rows) {
        block_x_reduce = true; /* input_mult[0] = split_input(block_width) */
        step_in *= bw;
    } else {
        step_out *= bw;
    }
    int64_t vpt = div_up(inputs, step_in);
    if (vpt >= min64(bh * 16, MAX_VALUES_PER_THREAD)) {
        split_warps = true; /* input_mult[1] = split_input(block_height) */
        step_in *= bh;
    } else {
        step_out *= bh;
    }
    vpt = div_up(inputs, step_in);
    const int64_t target = (int64_t)sm_count * (MAX_THREADS_PER_SM / threads);
    const int64_t grid = div_up(outputs / out_vec, step_out);
    if (!split_warps || vpt < MAX_VALUES_PER_THREAD || grid > target) return;
    int64_t ctas = max64(min64(div_up(target, grid), div_up(vpt, MIN_VALUES_PER_THREAD)),
                         div_up(vpt, MAX_VALUES_PER_THREAD));
    if (ctas <= 1) return;
    /* global_memory_size, semaphore_size */
    int64_t size = (int64_t)arg_size * outputs * ctas;
    if (!block_x_reduce) size *= bw * out_vec;
    *buf = (uint64_t)size;
    *sem = (uint64_t)(4 * grid);
}
