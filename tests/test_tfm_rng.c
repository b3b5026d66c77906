/* Tests of the Transformer's dropout generator (common/workload/transformer/kernels/tfm_rng.h):
 * Philox4x32-10 against Random123's known-answer vectors, the keep rate
 * against 1 - p, the threshold's edges, and independence of offsets; attention's
 * byte stream (tfm_rng_attn_keep): which byte an element reads, its keep rate
 * (1 - p rounded down to 1/256) and its edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "workload/transformer/kernels/tfm_rng.h"
#include "test_util.h"

/* Random123 kat_vectors, philox4x32 10 rounds: counter, key, result. */
static void known_answers(void **state)
{
    (void)state;
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
         0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
         0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int t = 0; t < 3; t++) {
        const uint32_t *v = kat[t];
        const uint64_t q = (uint64_t)v[1] << 32 | v[0], off = (uint64_t)v[3] << 32 | v[2];
        const uint64_t seed = (uint64_t)v[5] << 32 | v[4];
        const tfm_rng4 r = tfm_philox(seed, off, q);
        for (int k = 0; k < 4; k++) assert_int_equal(r.w[k], v[6 + k]);
    }
}

static void keep_rate(void **state)
{
    (void)state;
    const float ps[] = {0.1f, 0.5f, 0.9f};
    const uint64_t n = 1 << 20;
    for (int t = 0; t < 3; t++) {
        uint64_t kept = 0;
        for (uint64_t e = 0; e < n; e++) kept += tfm_rng_keep(42, 7, e, ps[t]);
        const double rate = (double)kept / (double)n, want = 1.0 - (double)ps[t];
        /* binomial: 5 standard deviations */
        assert_near(rate, want, 5.0 * sqrt(want * (1 - want) / (double)n));
    }
}

static void threshold_edges(void **state)
{
    (void)state;
    assert_int_equal(tfm_rng_threshold(0.0f), 1u << 24);
    assert_int_equal(tfm_rng_threshold(0.5f), 1u << 23);
    assert_int_equal(tfm_rng_threshold(1.0f), 0);
    assert_true(tfm_rng_word_keeps(0xffffffffu, tfm_rng_threshold(0.0f))); /* p 0 keeps all */
    assert_false(tfm_rng_word_keeps(0, tfm_rng_threshold(1.0f)));          /* p 1 keeps none */
    assert_true(tfm_rng_word_keeps(0x7fffffffu, 1u << 23));
    assert_false(tfm_rng_word_keeps(0x80000000u, 1u << 23));
}

/* Same (seed, offset, e): same decision; another offset or seed: another
 * stream (agreement near 1/2 at p = 0.5, not 1). Element e uses word e % 4. */
static void streams(void **state)
{
    (void)state;
    const uint64_t n = 1 << 16;
    uint64_t same_off = 0, same_seed = 0;
    for (uint64_t e = 0; e < n; e++) {
        const bool a = tfm_rng_keep(1, 0, e, 0.5f);
        assert_true(a == tfm_rng_keep(1, 0, e, 0.5f));
        same_off += a == tfm_rng_keep(1, 1, e, 0.5f);
        same_seed += a == tfm_rng_keep(2, 0, e, 0.5f);
    }
    assert_near((double)same_off / (double)n, 0.5, 0.02);
    assert_near((double)same_seed / (double)n, 0.5, 0.02);
    const tfm_rng4 r = tfm_philox(9, 3, 5);
    for (int k = 0; k < 4; k++)
        assert_true(tfm_rng_keep(9, 3, 20 + (uint64_t)k, 0.5f) == ((r.w[k] >> 8) < (1u << 23)));
}
/* Element e of attention's stream is byte e % 16 of block e / 16, low byte
 * of word 0 first: a byte below the threshold keeps, one at it drops. */
static void attn_bytes(void **state)
{
    (void)state;
    const float p = 0.1f;
    const uint32_t thr = tfm_rng_attn_threshold(p);
    assert_int_equal(thr, 230); /* floor(0.9 * 256) */
    for (uint64_t e = 0; e < 4096; e++) {
        const tfm_rng4 r = tfm_philox(42, 9, e / 16);
        const uint32_t byte = (r.w[(e % 16) / 4] >> (8 * (e % 4))) & 0xffu;
        assert_int_equal(tfm_rng_attn_keep(42, 9, e, p), byte < thr);
    }
    assert_int_equal(tfm_rng_attn_threshold(0.0f), 256); /* p 0 keeps every byte */
    assert_int_equal(tfm_rng_attn_threshold(1.0f), 0);
    tfm_rng4 all = {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
    assert_true(tfm_rng_attn_byte_keeps(all, 15, tfm_rng_attn_threshold(0.0f)));
    assert_false(tfm_rng_attn_byte_keeps(all, 0, tfm_rng_attn_threshold(0.5f)));
}

static void attn_keep_rate(void **state)
{
    (void)state;
    const float ps[] = {0.1f, 0.3f};
    const uint64_t n = 1 << 20;
    for (int t = 0; t < 2; t++) {
        uint64_t kept = 0;
        for (uint64_t e = 0; e < n; e++) kept += tfm_rng_attn_keep(5, 3, e, ps[t]);
        const double rate = (double)kept / (double)n, want = tfm_rng_attn_threshold(ps[t]) / 256.0;
        assert_near(rate, want, 5.0 * sqrt(want * (1 - want) / (double)n));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_answers),
        cmocka_unit_test(keep_rate),
        cmocka_unit_test(threshold_edges),
        cmocka_unit_test(streams),
        cmocka_unit_test(attn_bytes),
        cmocka_unit_test(attn_keep_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
