/* tfm_rng.h: the Transformer workload's dropout randomness, one counter-based
 * generator for the GPU kernels and the float64 host reference, so both draw
 * the same decisions bit for bit. Header-only, plain C99 and CUDA C++. It
 * sits with the kernels, whose draw it is; the reference
 * (reference/tfm_host_ref.c) includes it from here.
 *
 * Philox4x32-10 (Salmon et al., SC'11; the generator cuRAND and PyTorch
 * use), keyed by the 64-bit seed; the 128-bit counter is (index / 4, offset):
 * element e of the stream (seed, offset) takes word e % 4 of block e / 4.
 * A dropout call of a step takes its own offset (PyTorch advances its philox
 * offset per kernel likewise); streams with different offsets are
 * independent. These are NOT PyTorch's exact numbers (its kernels draw
 * curand_uniform4 per thread with a grid-dependent layout): only the
 * distribution is the same.
 *
 * Keep decision in integers, so that host and device agree exactly: element
 * e is kept iff (word >> 8) < tfm_rng_threshold(p), the threshold being
 * floor((1 - p) 2^24), P(keep) = 1 - p to within 2^-24. */
#ifndef MC_TFM_RNG_H
#define MC_TFM_RNG_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TFM_HD __host__ __device__ __forceinline__
#else
#define TFM_HD static inline
#endif

#define TFM_PHILOX_M0 0xD2511F53u
#define TFM_PHILOX_M1 0xCD9E8D57u
#define TFM_PHILOX_W0 0x9E3779B9u
#define TFM_PHILOX_W1 0xBB67AE85u

typedef struct {
    uint32_t w[4];
} tfm_rng4;

/* The four words of block q of stream (seed, offset). */
TFM_HD tfm_rng4 tfm_philox(uint64_t seed, uint64_t offset, uint64_t q)
{
    uint32_t c0 = (uint32_t)q, c1 = (uint32_t)(q >> 32), c2 = (uint32_t)offset,
             c3 = (uint32_t)(offset >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)TFM_PHILOX_M0 * c0, p1 = (uint64_t)TFM_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += TFM_PHILOX_W0;
        k1 += TFM_PHILOX_W1;
    }
    tfm_rng4 r = {{c0, c1, c2, c3}};
    return r;
}

/* floor((1 - p) 2^24): a 24-bit draw below it keeps the element. */
TFM_HD uint32_t tfm_rng_threshold(float p)
{
    double t = (1.0 - (double)p) * 16777216.0;
    return t <= 0.0 ? 0u : t >= 16777216.0 ? 16777216u : (uint32_t)t;
}

TFM_HD bool tfm_rng_word_keeps(uint32_t word, uint32_t threshold) { return (word >> 8) < threshold; }

/* Whether element e of stream (seed, offset) survives dropout p. */
TFM_HD bool tfm_rng_keep(uint64_t seed, uint64_t offset, uint64_t e, float p)
{
    tfm_rng4 r = tfm_philox(seed, offset, e >> 2);
    return tfm_rng_word_keeps(r.w[e & 3], tfm_rng_threshold(p));
}

/* Attention's dropout (the probabilities, inside the fused kernels, which
 * regenerate each decision in the forward and twice in the backward):
 * sixteen decisions a philox block, one from each of its bytes, so that the
 * kernels run a quarter of the philox rounds of tfm_rng_keep's four.
 * Element e is byte e % 16 of block e / 16 (word (e % 16) / 4, its low byte
 * first), kept iff that byte is below floor((1 - p) 256): P(keep) is 1 - p
 * rounded down to a multiple of 1/256 (p = 0.1 keeps 230/256), the
 * probabilities of the kept being scaled by 1 / (1 - p) as SDPA's. This is
 * FlashAttention-2's scheme (PyTorch's flash backend compares bytes with
 * floor((1 - p) 255)). */
TFM_HD uint32_t tfm_rng_attn_threshold(float p)
{
    double t = (1.0 - (double)p) * 256.0;
    return t <= 0.0 ? 0u : t >= 256.0 ? 256u : (uint32_t)t;
}

/* Whether byte k (0..15) of block r survives under threshold thr. */
TFM_HD bool tfm_rng_attn_byte_keeps(tfm_rng4 r, int k, uint32_t thr)
{
    return ((r.w[k >> 2] >> (8 * (k & 3))) & 0xffu) < thr;
}

/* Whether element e of attention's stream (seed, offset) survives dropout p. */
TFM_HD bool tfm_rng_attn_keep(uint64_t seed, uint64_t offset, uint64_t e, float p)
{
    return tfm_rng_attn_byte_keeps(tfm_philox(seed, offset, e >> 4), (int)(e & 15), tfm_rng_attn_threshold(p));
}

#endif
