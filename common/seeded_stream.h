/* seeded_stream.h: element i of a seeded stream of 64-bit values, stateless,
 * the same on the host and the device, so inputs are filled in parallel on
 * the GPU and recomputed exactly by a host reference (C04's SGEMM, C05's
 * GEMM rig). splitmix64's finaliser of seed + (i + 1) * 2^64/phi; callers
 * map its bits to the values they need. */
#ifndef MC_SEEDED_STREAM_H
#define MC_SEEDED_STREAM_H

#include <stdint.h>

#ifdef __CUDACC__
#define MC_SEEDED_HD __host__ __device__
#else
#define MC_SEEDED_HD
#endif

static inline MC_SEEDED_HD uint64_t mc_seeded_bits(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif
