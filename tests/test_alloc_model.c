/* Tests of the caching-allocator model (common/alloc_model.c): the golden
 * figures of every worked example in ../shared/ALLOCATOR.md, computed by
 * hand from PyTorch's rules (the comments show the arithmetic), split
 * thresholds, ties, empty_cache and max_split_size. The out-of-memory paths
 * are in test_alloc_oom.c, random sequences in test_alloc_random.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_rig.h"

/* ------------------------------------------------------------ size rules */

static void size_rules(void **state)
{
    (void)state;
    assert_int_equal(ca_round_size(1), 512);
    assert_int_equal(ca_round_size(511), 512);
    assert_int_equal(ca_round_size(512), 512);
    assert_int_equal(ca_round_size(513), 1024);
    assert_int_equal(ca_round_size(4000000), 4000256);    /* 7813 * 512 */
    assert_int_equal(ca_round_size(25000000), 25000448);  /* 48829 * 512 */
    assert_int_equal(ca_round_size(UINT64_MAX), UINT64_MAX - 511);
    assert_int_equal(ca_allocation_size(512), 2 * MiB);
    assert_int_equal(ca_allocation_size(MiB), 2 * MiB);           /* <= kSmallSize */
    assert_int_equal(ca_allocation_size(MiB + 512), 20 * MiB);    /* < kMinLargeAlloc */
    assert_int_equal(ca_allocation_size(10 * MiB - 512), 20 * MiB);
    assert_int_equal(ca_allocation_size(10 * MiB), 10 * MiB);     /* rounded to 2 MiB */
    assert_int_equal(ca_allocation_size(10 * MiB + 512), 12 * MiB);
    assert_int_equal(ca_allocation_size(25000448), 24 * MiB);
}

/* ------------------------------------------------------------ worked examples */

static void worked_examples_on_an_empty_cache(void **state)
{
    (void)state;
    static const struct {
        uint64_t request, allocated, reserved, inactive_split_bytes;
    } table[] = {
        {4, 512, 2 * MiB, 2 * MiB - 512},                     /* small pool, 2 MiB segment, split */
        {513, 1024, 2 * MiB, 2 * MiB - 1024},                 /* next multiple of 512 */
        {MiB, MiB, 2 * MiB, MiB},                             /* still small: <= kSmallSize */
        {MiB + 1, MiB + 512, 20 * MiB, 19 * MiB - 512},       /* large, < 10 MiB: 20 MiB segment */
        {4000000, 4000256, 20 * MiB, 20 * MiB - 4000256},
        {10 * MiB - 1, 10 * MiB, 10 * MiB, 0},                /* segment of exactly 10 MiB */
        {10 * MiB + 1, 10 * MiB + 512, 12 * MiB, 2 * MiB - 512}, /* remainder > 1 MiB: split */
        {25000000, 24 * MiB, 24 * MiB, 0},                    /* remainder 165,376 B: whole block */
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        rig r = rig_open(NULL, 80ULL << 30);
        uint64_t p = must_alloc(&r, table[i].request);
        assert_int_equal(st(&r)->allocated_bytes.current, table[i].allocated);
        assert_int_equal(ca_block_size(r.a, p), table[i].allocated);
        assert_int_equal(st(&r)->reserved_bytes.current, table[i].reserved);
        assert_int_equal(st(&r)->segment.current, 1);
        assert_int_equal(st(&r)->requested_bytes.current, table[i].request);
        assert_int_equal(st(&r)->active_bytes.current, table[i].allocated);
        assert_int_equal(st(&r)->inactive_split_bytes.current, table[i].inactive_split_bytes);
        assert_int_equal(st(&r)->inactive_split.current, table[i].inactive_split_bytes ? 1 : 0);
        assert_int_equal(ca_cached_free_bytes(r.a), table[i].reserved - table[i].allocated);
        assert_int_equal(ca_free(r.a, p), 0);
        rig_close(&r);
    }
    assert_int_equal(24 * MiB - 25000448, 165376); /* the remainder the table quotes */
}

/* The split thresholds themselves: large remainders must exceed 1 MiB,
 * small ones need 512 B. */
static void split_thresholds(void **state)
{
    (void)state;
    rig r = rig_open(NULL, 80ULL << 30);
    uint64_t p = must_alloc(&r, 19 * MiB); /* 20 MiB segment, remainder exactly 1 MiB */
    assert_int_equal(ca_block_size(r.a, p), 20 * MiB);
    assert_int_equal(st(&r)->inactive_split.current, 0);
    p = must_alloc(&r, 19 * MiB - 512); /* remainder 1 MiB + 512: split */
    assert_int_equal(ca_block_size(r.a, p), 19 * MiB - 512);
    assert_int_equal(st(&r)->inactive_split_bytes.current, MiB + 512);
    must_alloc(&r, MiB); /* small segment, remainder 1 MiB */
    p = must_alloc(&r, MiB - 512); /* remainder exactly 512: still split */
    assert_int_equal(ca_block_size(r.a, p), MiB - 512);
    assert_int_equal(st(&r)->inactive_split_bytes.current, MiB + 512 + 512);
    p = must_alloc(&r, 512); /* takes the last 512 B whole */
    assert_int_equal(st(&r)->inactive_split.current, 1);
    assert_int_equal(st(&r)->segment.current, 3);
    rig_close(&r);
}

/* 100 tensors of 1000x1000 float32 kept alive: 400.00 MiB, not 381.47. */
static void hundred_tensors_kept_alive(void **state)
{
    (void)state;
    rig r = rig_open(NULL, 80ULL << 30);
    uint64_t p[100];
    for (int i = 0; i < 100; i++) p[i] = must_alloc(&r, 4000000);
    /* Four 4,000,256 B blocks split a 20 MiB segment; the fifth takes the
       4,970,496 B left (its 970,240 B remainder is not > 1 MiB). */
    assert_int_equal(ca_block_size(r.a, p[3]), 4000256);
    assert_int_equal(ca_block_size(r.a, p[4]), 20 * MiB - 4 * 4000256);
    assert_int_equal(ca_block_size(r.a, p[4]), 4970496);
    assert_int_equal(st(&r)->allocated_bytes.current, 400 * MiB);
    assert_int_equal(st(&r)->allocated_bytes.peak, 400 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 400 * MiB);
    assert_int_equal(st(&r)->segment.current, 20);
    assert_int_equal(st(&r)->requested_bytes.current, 400000000);
    assert_int_equal(st(&r)->inactive_split_bytes.current, 0);
    for (int i = 0; i < 100; i++) assert_int_equal(ca_free(r.a, p[i]), 0);
    assert_int_equal(st(&r)->reserved_bytes.current, 400 * MiB); /* cached, not returned */
    ca_empty_cache(r.a);
    assert_int_equal(st(&r)->reserved_bytes.current, 0);
    rig_close(&r);
}

/* Deleting each tensor: the peak is one block, 4,000,256 B (3.81 MiB). */
static void delete_each_peaks_at_one_block(void **state)
{
    (void)state;
    for (int empty = 0; empty < 2; empty++) {
        rig r = rig_open(NULL, 80ULL << 30);
        for (int i = 0; i < 100; i++) {
            uint64_t p = must_alloc(&r, 4000000);
            assert_int_equal(ca_free(r.a, p), 0);
            if (empty) ca_empty_cache(r.a);
        }
        assert_int_equal(st(&r)->allocated_bytes.peak, 4000256);
        assert_int_equal(st(&r)->allocated_bytes.current, 0);
        assert_int_equal(st(&r)->reserved_bytes.peak, 20 * MiB);
        assert_int_equal(st(&r)->reserved_bytes.current, empty ? 0 : 20 * MiB);
        assert_int_equal(st(&r)->num_device_alloc, empty ? 100 : 1);
        rig_close(&r);
    }
}

static void second_small_tensor_shares_the_segment(void **state)
{
    (void)state;
    rig r = rig_open(NULL, 80ULL << 30);
    uint64_t a = must_alloc(&r, 4), b = must_alloc(&r, 4);
    assert_int_equal(b, a + 512);
    assert_int_equal(st(&r)->reserved_bytes.current, 2 * MiB);
    assert_int_equal(st(&r)->segment.current, 1);
    assert_int_equal(st(&r)->allocated_bytes.current, 1024);
    rig_close(&r);
}

/* empty_cache releases whole free segments only. */
static void empty_cache_releases_only_whole_segments(void **state)
{
    (void)state;
    rig r = rig_open(NULL, 80ULL << 30);
    uint64_t a = must_alloc(&r, 4), b = must_alloc(&r, 4), c = must_alloc(&r, 4000000);
    assert_int_equal(ca_free(r.a, a), 0); /* [a free][b live][rest]: a stays apart */
    assert_int_equal(ca_free(r.a, c), 0); /* the 20 MiB segment is whole again */
    assert_int_equal(st(&r)->inactive_split.current, 2);
    assert_int_equal(st(&r)->inactive_split_bytes.current, 512 + (2 * MiB - 1024));
    ca_empty_cache(r.a);
    assert_int_equal(st(&r)->reserved_bytes.current, 2 * MiB); /* b keeps its segment */
    assert_int_equal(st(&r)->segment.current, 1);
    assert_int_equal(st(&r)->num_device_free, 1);
    assert_int_equal(ca_free(r.a, b), 0); /* merges with both neighbours */
    assert_int_equal(st(&r)->inactive_split.current, 0);
    assert_int_equal(st(&r)->inactive_split_bytes.current, 0);
    ca_empty_cache(r.a);
    assert_int_equal(st(&r)->reserved_bytes.current, 0);
    assert_int_equal(st(&r)->reserved_bytes.peak, 22 * MiB);
    rig_close(&r);
}

/* Among equal-size free blocks the lowest address wins; the host backend
 * places a hinted segment where PyTorch's was. */
static void ties_go_to_the_lowest_address(void **state)
{
    (void)state;
    rig r = rig_open(NULL, 80ULL << 30);
    ca_host_hint_next(r.dev, 0x7f0004000000ULL);
    uint64_t hi = must_alloc(&r, 15 * MiB); /* a whole 16 MiB segment */
    ca_host_hint_next(r.dev, 0x7f0000000000ULL);
    uint64_t lo = must_alloc(&r, 15 * MiB);
    assert_int_equal(hi, 0x7f0004000000ULL);
    assert_int_equal(lo, 0x7f0000000000ULL);
    assert_int_equal(ca_free(r.a, lo), 0);
    assert_int_equal(ca_free(r.a, hi), 0);
    assert_int_equal(must_alloc(&r, 15 * MiB), lo);
    assert_int_equal(must_alloc(&r, 15 * MiB), hi);
    assert_int_equal(st(&r)->segment.current, 2);
    rig_close(&r);
}

/* ------------------------------------------------------------ max_split_size */

static void oversize_blocks_with_max_split_size(void **state)
{
    (void)state;
    ca_config cfg = ca_config_default();
    cfg.max_split_size = 64 * MiB;
    rig r = rig_open(&cfg, 80ULL << 30);
    uint64_t p = must_alloc(&r, 100 * MiB);
    assert_int_equal(st(&r)->oversize_allocations.current, 1);
    assert_int_equal(st(&r)->oversize_segments.current, 1);
    assert_int_equal(ca_free(r.a, p), 0);
    /* 90 MiB >= max_split_size and 100 < 90 + 20: the whole block, unsplit. */
    p = must_alloc(&r, 90 * MiB);
    assert_int_equal(ca_block_size(r.a, p), 100 * MiB);
    assert_int_equal(st(&r)->allocated_bytes.current, 100 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 100 * MiB);
    assert_int_equal(ca_free(r.a, p), 0);
    /* 100 >= 70 + 20: refused, a new 70 MiB segment. */
    p = must_alloc(&r, 70 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 170 * MiB);
    assert_int_equal(ca_free(r.a, p), 0);
    /* 30 MiB < max_split_size may not take an oversize block: new segment. */
    p = must_alloc(&r, 30 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 200 * MiB);
    assert_int_equal(st(&r)->segment.current, 3);
    assert_int_equal(ca_largest_free_block(r.a), 100 * MiB);
    rig_close(&r);

    /* Without max_split_size the same 30 MiB splits the cached 100 MiB block. */
    r = rig_open(NULL, 80ULL << 30);
    assert_int_equal(ca_free(r.a, must_alloc(&r, 100 * MiB)), 0);
    p = must_alloc(&r, 30 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 100 * MiB);
    assert_int_equal(st(&r)->inactive_split_bytes.current, 70 * MiB);
    rig_close(&r);

    /* max_non_split_rounding_size 40 MiB: 100 < 70 + 40, so 70 MiB reuses it. */
    cfg.max_non_split_rounding_size = 40 * MiB;
    r = rig_open(&cfg, 80ULL << 30);
    assert_int_equal(ca_free(r.a, must_alloc(&r, 100 * MiB)), 0);
    p = must_alloc(&r, 70 * MiB);
    assert_int_equal(ca_block_size(r.a, p), 100 * MiB);
    assert_int_equal(st(&r)->segment.current, 1);
    rig_close(&r);
}

static void config_is_checked(void **state)
{
    (void)state;
    ca_host_device *d = ca_host_create(MiB);
    ca_config cfg = ca_config_default();
    char err[160];
    assert_int_equal(ca_config_check(&cfg, err, sizeof err), 0);
    cfg.max_split_size = 10 * MiB; /* max_split_size_mb must be >= 20 */
    assert_int_equal(ca_config_check(&cfg, err, sizeof err), -1);
    assert_null(ca_create(&cfg, ca_host_backend(d)));
    cfg.max_split_size = 64 * MiB + 1; /* whole MiB only */
    assert_null(ca_create(&cfg, ca_host_backend(d)));
    cfg.max_split_size = 20 * MiB;
    cfg.max_non_split_rounding_size = 10 * MiB;
    assert_null(ca_create(&cfg, ca_host_backend(d)));
    cfg.max_non_split_rounding_size = 20 * MiB;
    ca_allocator *a = ca_create(&cfg, ca_host_backend(d));
    assert_non_null(a);
    ca_destroy(a);
    ca_host_destroy(d);
}

static void reset_peak_sets_peaks_to_current(void **state)
{
    (void)state;
    rig r = rig_open(NULL, 80ULL << 30);
    uint64_t big = must_alloc(&r, 50 * MiB);
    must_alloc(&r, 4);
    assert_int_equal(ca_free(r.a, big), 0);
    ca_empty_cache(r.a);
    assert_int_equal(st(&r)->allocated_bytes.peak, 50 * MiB + 512);
    ca_reset_peak(r.a);
    assert_int_equal(st(&r)->allocated_bytes.peak, 512);
    assert_int_equal(st(&r)->reserved_bytes.peak, 2 * MiB);
    assert_int_equal(st(&r)->segment.peak, 1);
    assert_int_equal(st(&r)->inactive_split_bytes.peak, 2 * MiB - 512);
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(size_rules),
        cmocka_unit_test(worked_examples_on_an_empty_cache),
        cmocka_unit_test(split_thresholds),
        cmocka_unit_test(hundred_tensors_kept_alive),
        cmocka_unit_test(delete_each_peaks_at_one_block),
        cmocka_unit_test(second_small_tensor_shares_the_segment),
        cmocka_unit_test(empty_cache_releases_only_whole_segments),
        cmocka_unit_test(ties_go_to_the_lowest_address),
        cmocka_unit_test(oversize_blocks_with_max_split_size),
        cmocka_unit_test(config_is_checked),
        cmocka_unit_test(reset_peak_sets_peaks_to_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
