/* pattern.h: a seeded pattern to verify copies with (nvbandwidth's idea).
 *
 * Word i (uint32, little-endian in memory) of the pattern with seed s is a
 * stateless xorshift-multiply hash of (s, i), so host and device fill and
 * check any range in parallel and a copy that lands at the wrong offset, or
 * from the wrong buffer (another seed), fails. Destinations are poisoned with
 * MC_PATTERN_POISON before a copy, so a buffer the copy never wrote fails too.
 *
 * Sizes are in bytes and must be multiples of 4. A "stride" in words chooses
 * which words are poisoned and checked: 1 = every word; S > 1 = one word in
 * each run of S words (at an offset that varies from run to run) plus the last
 * word, so a skipped page or chunk is caught at a fraction of the cost of a
 * full check. MC_PATTERN_PAGE_WORDS is one word per 4 KiB page. */
#ifndef MC_PATTERN_H
#define MC_PATTERN_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __CUDACC__
#define MC_PATTERN_HD __host__ __device__
#else
#define MC_PATTERN_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MC_PATTERN_POISON_BYTE 0xA5
#define MC_PATTERN_POISON 0xA5A5A5A5u
#define MC_PATTERN_PAGE_WORDS 1024ull /* 4 KiB / 4 bytes */

/* Word i of the pattern with seed `seed`. */
static inline MC_PATTERN_HD uint32_t mc_pattern_word(uint64_t seed, uint64_t i)
{
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    z ^= z >> 31;
    z *= 0xD6E8FEB86659FD93ull;
    z ^= z >> 32;
    return (uint32_t)z;
}

/* Index of the sampled word in run k of `stride` words (stride >= 1). */
static inline MC_PATTERN_HD uint64_t mc_pattern_sample(uint64_t k, uint64_t stride)
{
    return k * stride + (k * 2654435761ull) % stride;
}

/* ---- host ---- */

/* Writes the pattern into buf[0..bytes); returns the wrapping 64-bit sum of
 * its words (a checksum a kernel can recompute). */
uint64_t mc_pattern_fill_host(void *buf, uint64_t bytes, uint64_t seed);
/* Writes MC_PATTERN_POISON into the words `stride` selects. */
void mc_pattern_poison_host(void *buf, uint64_t bytes, uint64_t stride);
/* Number of words `stride` selects that differ from the pattern. */
uint64_t mc_pattern_check_host(const void *buf, uint64_t bytes, uint64_t seed, uint64_t stride);

/* ---- device (every word; asynchronous on stream) ---- */

void mc_pattern_fill_device(void *buf, uint64_t bytes, uint64_t seed, cudaStream_t stream);
void mc_pattern_poison_device(void *buf, uint64_t bytes, cudaStream_t stream);
/* Adds the number of words of buf that differ from the pattern to *d_count
 * (device memory, from mc_pattern_counter_new). */
void mc_pattern_check_device(const void *buf, uint64_t bytes, uint64_t seed,
                             unsigned long long *d_count, cudaStream_t stream);

/* A device counter of mismatching words, zero when new. */
unsigned long long *mc_pattern_counter_new(void);
/* Waits for stream, returns the count and resets it to zero. */
unsigned long long mc_pattern_counter_take(unsigned long long *d_count, cudaStream_t stream);
void mc_pattern_counter_free(unsigned long long *d_count);

#ifdef __cplusplus
}
#endif
#endif
