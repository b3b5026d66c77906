/* Tests of the what-if settings in the allocator model, each on a small
 * sequence whose figures are worked out by hand from the reference's rules
 * (c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.11):
 *   roundup_power2_divisions    round_size / roundup_power2_next_division
 *   garbage_collection_threshold garbage_collect_cached_blocks
 *   expandable_segments          find_expandable_block, map_block,
 *                                try_allocate_expandable_block, unmap_block
 * The invariant check runs after every operation (ca_set_debug). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alloc_rig.h"

static ca_config conf(const char *s)
{
    ca_config c = ca_config_default();
    char err[256];
    if (ca_conf_parse(s, &c, err, sizeof err) != 0) fail_msg("%s", err);
    return c;
}

/* ------------------------------------------------------------ roundup */

static void roundup_power2_divisions_rounds_sizes(void **state)
{
    (void)state;
    ca_config c = conf("roundup_power2_divisions:4");
    /* size <= 512 * divisions (2048): plain 512-byte rounding */
    assert_int_equal(ca_round_size_cfg(&c, 1200), 1536);
    /* 3000: between 2048 and 4096 in steps of 512: 3072 */
    assert_int_equal(ca_round_size_cfg(&c, 3000), 3072);
    /* 1,200,000: between 1 MiB and 2 MiB in steps of 256 KiB: 1,310,720 (large pool now) */
    assert_int_equal(ca_round_size_cfg(&c, 1200000), 1310720);
    /* 5,000,000: between 4 MiB and 8 MiB in steps of 1 MiB: 5 MiB */
    assert_int_equal(ca_round_size_cfg(&c, 5000000), 5 * MiB);
    assert_int_equal(ca_round_size_cfg(&c, 4 * MiB), 4 * MiB);        /* powers of two stay */
    assert_int_equal(ca_round_size_cfg(&c, 5 * MiB), 5 * MiB);        /* on a step: stays */
    assert_int_equal(ca_round_size_cfg(&c, 100), 512);                /* kMinBlockSize */
    /* the list form: 1 division (off) below 256 MiB, 8 from 512 MiB on */
    c = conf("roundup_power2_divisions:[256:1,512:8]");
    assert_int_equal(ca_round_size_cfg(&c, 300000000), 300000256);     /* 256 MiB interval: off */
    assert_int_equal(ca_round_size_cfg(&c, 600000000), 603979776);     /* 512 MiB + 1 * 64 MiB */
    assert_int_equal(ca_round_size_cfg(&c, 5000000), 5000192);         /* interval 2: filled with 1 */
}

static void roundup_changes_a_sequence(void **state)
{
    (void)state;
    /* Two requests of 5,000,000 B. Default: blocks of 5,000,192 B, both in
     * one 20 MiB segment (the first split leaves 15,971,328 > 1 MiB).
     * With 4 divisions: blocks of 5 MiB, both in one 20 MiB segment,
     * allocated 10 MiB. With 2 divisions: 6 MiB blocks (4 MiB + 2 MiB). */
    ca_config c = ca_config_default();
    rig r = rig_open(&c, 80ULL << 30);
    must_alloc(&r, 5000000);
    must_alloc(&r, 5000000);
    assert_int_equal(st(&r)->allocated_bytes.current, 10000384);
    assert_int_equal(st(&r)->reserved_bytes.current, 20 * MiB);
    rig_close(&r);
    c = conf("roundup_power2_divisions:4");
    r = rig_open(&c, 80ULL << 30);
    must_alloc(&r, 5000000);
    must_alloc(&r, 5000000);
    assert_int_equal(st(&r)->allocated_bytes.current, 10 * MiB);
    assert_int_equal(st(&r)->requested_bytes.current, 10000000);
    assert_int_equal(st(&r)->reserved_bytes.current, 20 * MiB);
    rig_close(&r);
    c = conf("roundup_power2_divisions:2");
    r = rig_open(&c, 80ULL << 30);
    must_alloc(&r, 5000000);
    must_alloc(&r, 5000000);
    must_alloc(&r, 5000000); /* 6 MiB blocks: 18 MiB of the 20 MiB segment */
    assert_int_equal(st(&r)->allocated_bytes.current, 18 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 20 * MiB);
    rig_close(&r);
}

/* ------------------------------------------------------------ garbage collection */

static void garbage_collection_frees_old_cached_blocks(void **state)
{
    (void)state;
    /* Limit 100 MiB, threshold 0.5: collect when reserved passes 50 MiB.
     * A (12 MiB), B (30 MiB), C (40 MiB) are allocated and freed in turn,
     * each larger than what is cached, so each a whole segment of its own.
     * Every get_free_block call on the large pool counts: A's is call 1 and
     * A goes back to the pool at count 1, B at 2, C at 3. D (46 MiB) fits no
     * cached block: call 4, then garbage_collect_cached_blocks: reserved
     * 82 MiB > 50, target 32 MiB; ages A 3, B 2, C 1, average 2: A and B
     * (age >= 2) go, 42 MiB >= 32.
     * Then D's segment: 40 + 46 = 86 MiB <= 100, no retry. */
    ca_config c = conf("garbage_collection_threshold:0.5");
    c.limit_bytes = 100 * MiB;
    rig r = rig_open(&c, 80ULL << 30);
    uint64_t sizes[] = {12 * MiB, 30 * MiB, 40 * MiB};
    for (int i = 0; i < 3; i++) assert_int_equal(ca_free(r.a, must_alloc(&r, sizes[i])), 0);
    assert_int_equal(st(&r)->reserved_bytes.current, 82 * MiB);
    must_alloc(&r, 46 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 86 * MiB);
    assert_int_equal(st(&r)->segment.current, 2);
    assert_int_equal(st(&r)->num_device_free, 2);
    assert_int_equal(st(&r)->num_alloc_retries, 0);
    assert_int_equal(ca_cached_free_bytes(r.a), 40 * MiB); /* C stays cached */
    rig_close(&r);

    /* The same without the threshold: 82 + 46 > 100, so the full release
     * (A, B and C) and a counted retry: reserved 46 MiB. */
    c = ca_config_default();
    c.limit_bytes = 100 * MiB;
    r = rig_open(&c, 80ULL << 30);
    for (int i = 0; i < 3; i++) assert_int_equal(ca_free(r.a, must_alloc(&r, sizes[i])), 0);
    must_alloc(&r, 46 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 46 * MiB);
    assert_int_equal(st(&r)->num_alloc_retries, 1);
    rig_close(&r);

    /* No limit, no collection (set_fraction is false): the threshold alone does nothing. */
    c = conf("garbage_collection_threshold:0.5");
    r = rig_open(&c, 80ULL << 30);
    for (int i = 0; i < 3; i++) assert_int_equal(ca_free(r.a, must_alloc(&r, sizes[i])), 0);
    must_alloc(&r, 46 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 128 * MiB);
    rig_close(&r);
}

/* ------------------------------------------------------------ expandable segments */

static void expandable_segments_map_pages(void **state)
{
    (void)state;
    /* Three requests of 25,000,000 B (blocks of 25,000,448). Default: each a
     * 24 MiB segment of its own, whole (the 165,376 B left is not > 1 MiB):
     * reserved 72 MiB, 3 segments. Expandable: one segment per stream and
     * pool, mapped 20 MiB pages at a time (large pool): the first maps 2
     * pages (40 MiB) and splits (should_split: >= 512 B left); the second
     * takes the free 16,943,104 B at the end plus one more page; the third
     * one more page: reserved 80 MiB, the segment statistic 0. */
    ca_config c = ca_config_default();
    rig r = rig_open(&c, 80ULL << 30);
    for (int i = 0; i < 3; i++) must_alloc(&r, 25000000);
    assert_int_equal(st(&r)->reserved_bytes.current, 72 * MiB);
    assert_int_equal(st(&r)->allocated_bytes.current, 75497472);
    rig_close(&r);

    c = conf("expandable_segments:True");
    r = rig_open(&c, 80ULL << 30);
    uint64_t a = must_alloc(&r, 25000000);
    assert_int_equal(st(&r)->reserved_bytes.current, 40 * MiB);
    uint64_t b = must_alloc(&r, 25000000);
    assert_int_equal(b, a + 25000448); /* right after it, in the same address space */
    assert_int_equal(st(&r)->reserved_bytes.current, 60 * MiB);
    uint64_t c3 = must_alloc(&r, 25000000);
    assert_int_equal(st(&r)->reserved_bytes.current, 80 * MiB);
    assert_int_equal(st(&r)->allocated_bytes.current, 3 * 25000448);
    assert_int_equal(st(&r)->segment.current, 0);
    assert_int_equal(st(&r)->inactive_split.current, 0);
    assert_int_equal(st(&r)->num_device_alloc, 3); /* one map_block each (2, 1 and 1 pages) */
    /* empty_cache with the first block freed: the one whole page under it
     * [0, 20 MiB) is unmapped; the 4,028,928 B after it stay mapped and free. */
    assert_int_equal(ca_free(r.a, a), 0);
    ca_empty_cache(r.a);
    assert_int_equal(st(&r)->reserved_bytes.current, 60 * MiB);
    /* A small request: the small pool's own segment, a 2 MiB page. */
    uint64_t s = must_alloc(&r, 1000);
    assert_int_equal(st(&r)->reserved_bytes.current, 62 * MiB);
    /* Everything freed and released: no page stays mapped, the segments go. */
    assert_int_equal(ca_free(r.a, b), 0);
    assert_int_equal(ca_free(r.a, c3), 0);
    assert_int_equal(ca_free(r.a, s), 0);
    ca_empty_cache(r.a);
    assert_int_equal(st(&r)->reserved_bytes.current, 0);
    assert_int_equal(ca_host_used(r.dev), 0);
    rig_close(&r);
}

static void expandable_segments_out_of_memory(void **state)
{
    (void)state;
    /* A 50 MiB device: the first 25,000,000 B maps 40 MiB; the second needs
     * one more 20 MiB page (60 > 50). The free 16,943,104 B holds no whole
     * page (pages end at 20 and 40 MiB; it runs from 25,000,448 to 40 MiB),
     * so release_cached_blocks unmaps nothing: the retry fails, OOM. */
    ca_config c = conf("expandable_segments:True");
    rig r = rig_open(&c, 50 * MiB);
    uint64_t a = must_alloc(&r, 25000000);
    uint64_t x = 1;
    assert_int_equal(ca_malloc(r.a, 25000000, &x), CA_OOM);
    assert_int_equal(st(&r)->num_alloc_retries, 1);
    assert_int_equal(st(&r)->num_ooms, 1);
    assert_int_equal(st(&r)->reserved_bytes.current, 40 * MiB);
    /* Streams: another stream gets its own expandable segment. */
    assert_int_equal(ca_free(r.a, a), 0);
    uint64_t b = 0;
    assert_int_equal(ca_malloc_stream(r.a, 4000000, 3, &b), CA_OK);
    /* 40 MiB mapped on stream 0 + 20 MiB > 50: the retry's release unmaps stream 0's pages */
    assert_int_equal(st(&r)->num_alloc_retries, 2);
    assert_int_equal(st(&r)->reserved_bytes.current, 20 * MiB);
    assert_int_equal(ca_free(r.a, b), 0);
    rig_close(&r);
}

static void expandable_segments_may_pass_the_limit(void **state)
{
    (void)state;
    /* alloc_block checks the limit against get_allocation_size (24 MiB for
     * 25,000,000 B), then maps whole 20 MiB pages for the request: 40 MiB,
     * over a 30 MiB limit, as in PyTorch. */
    ca_config c = conf("expandable_segments:True");
    c.limit_bytes = 30 * MiB;
    rig r = rig_open(&c, 80ULL << 30);
    must_alloc(&r, 25000000);
    assert_int_equal(st(&r)->reserved_bytes.current, 40 * MiB);
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundup_power2_divisions_rounds_sizes),
        cmocka_unit_test(roundup_changes_a_sequence),
        cmocka_unit_test(garbage_collection_frees_old_cached_blocks),
        cmocka_unit_test(expandable_segments_map_pages),
        cmocka_unit_test(expandable_segments_out_of_memory),
        cmocka_unit_test(expandable_segments_may_pass_the_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
