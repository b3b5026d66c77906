/* pattern_read.cuh: the compute that reads a batch of pattern words (C14's
 * prefetch loop and its allocator-pool variants, common/workload/
 * prefetch_pattern.cu): one pass over w[0..n) in grid-stride order that
 * counts the words differing from mc_pattern_word(seed, i) into *bad, sums
 * them into *sum, and spends `rounds` LCG steps per word, so that the
 * experiment controls how long the compute lasts (and a copy can overtake
 * its reading). *work only keeps that arithmetic from being optimised out.
 * Launch with a block size that is a multiple of 32 (warp reductions). */
#ifndef MC_PATTERN_READ_CUH
#define MC_PATTERN_READ_CUH

#include <stdint.h>

#include "pattern.h"

static __global__ void mc_pattern_read_kernel(const uint32_t *w, uint64_t n, uint64_t seed,
                                              int rounds, unsigned long long *sum,
                                              unsigned long long *bad, uint32_t *work)
{
    unsigned long long s = 0, m = 0;
    uint32_t acc = 0;
    uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        uint32_t x = w[i];
        s += x;
        m += x != mc_pattern_word(seed, i);
        for (int r = 0; r < rounds; r++) x = x * 1664525u + 1013904223u;
        acc ^= x;
    }
    for (int off = 16; off > 0; off /= 2) {
        s += __shfl_down_sync(0xffffffffu, s, off);
        m += __shfl_down_sync(0xffffffffu, m, off);
        acc ^= __shfl_down_sync(0xffffffffu, acc, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sum, s);
        if (m) atomicAdd(bad, m);
        atomicXor(work, acc);
    }
}

#endif
