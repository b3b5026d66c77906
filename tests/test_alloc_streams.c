/* Tests of the allocator model's per-stream pools (ca_malloc_stream): a
 * freed block is reused only by its own stream (BlockComparatorSize orders
 * by stream first, get_free_block stops at another stream's block);
 * empty_cache (release_cached_blocks) releases every stream's whole cached
 * segments; OOM recovery: release_available_cached_blocks looks at the
 * requesting stream's pool only, release_cached_blocks at all of them. The
 * invariant check runs after every operation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alloc_rig.h"

static uint64_t on(rig *r, uint64_t bytes, uint64_t stream)
{
    uint64_t addr = 0;
    assert_int_equal(ca_malloc_stream(r->a, bytes, stream, &addr), CA_OK);
    assert_true(addr != 0);
    return addr;
}

static void freed_block_is_reused_only_by_its_stream(void **state)
{
    (void)state;
    ca_config cfg = ca_config_default();
    rig r = rig_open(&cfg, 80ULL << 30);
    uint64_t a = on(&r, 4000000, 1); /* stream 1: a 20 MiB segment, split */
    assert_int_equal(ca_free(r.a, a), 0);
    assert_int_equal(st(&r)->reserved_bytes.current, 20 * MiB);
    uint64_t b = on(&r, 4000000, 2); /* stream 2 cannot use stream 1's cache: a new segment */
    assert_true(b != a);
    assert_int_equal(st(&r)->reserved_bytes.current, 40 * MiB);
    assert_int_equal(st(&r)->segment.current, 2);
    uint64_t c = on(&r, 4000000, 1); /* stream 1 again: its own block back */
    assert_int_equal(c, a);
    assert_int_equal(st(&r)->reserved_bytes.current, 40 * MiB);
    /* The small pool too; and stream 0 (ca_malloc) is a stream like the others. */
    uint64_t s1 = on(&r, 1000, 1);
    assert_int_equal(ca_free(r.a, s1), 0);
    uint64_t s0 = must_alloc(&r, 1000);
    assert_true(s0 != s1);
    assert_int_equal(st(&r)->reserved_bytes.current, 44 * MiB);
    assert_int_equal(on(&r, 1000, 1), s1);
    /* Freeing needs no stream: the block remembers its own. */
    assert_int_equal(ca_free(r.a, b), 0);
    assert_int_equal(on(&r, 4000000, 2), b);
    rig_close(&r);
}

static void empty_cache_releases_every_streams_cache(void **state)
{
    (void)state;
    ca_config cfg = ca_config_default();
    rig r = rig_open(&cfg, 80ULL << 30);
    uint64_t a = on(&r, 30 * MiB, 5), b = on(&r, 30 * MiB, 6), c = on(&r, 1000, 7);
    uint64_t keep = on(&r, 4000000, 8), keep2 = on(&r, 4000000, 8);
    assert_int_equal(ca_free(r.a, a), 0);
    assert_int_equal(ca_free(r.a, b), 0);
    assert_int_equal(ca_free(r.a, c), 0);
    assert_int_equal(ca_free(r.a, keep2), 0); /* its segment still holds keep: not whole */
    assert_int_equal(st(&r)->segment.current, 4);
    ca_empty_cache(r.a);
    /* streams 5, 6 (large) and 7 (small) released; stream 8's segment stays */
    assert_int_equal(st(&r)->segment.current, 1);
    assert_int_equal(st(&r)->reserved_bytes.current, 20 * MiB);
    assert_int_equal(st(&r)->num_device_free, 3);
    assert_int_equal(ca_free(r.a, keep), 0);
    rig_close(&r);
}

static void oom_recovery_with_streams(void **state)
{
    (void)state;
    /* A 40 MiB device. Stream 1 caches a 20 MiB segment; stream 2 asks for
     * 25,000,000 B (a 24 MiB segment): 20 + 24 > 40, and release_cached_blocks
     * frees stream 1's cache for it: one retry, no OOM. */
    ca_config cfg = ca_config_default();
    rig r = rig_open(&cfg, 40 * MiB);
    uint64_t a = on(&r, 4000000, 1);
    assert_int_equal(ca_free(r.a, a), 0);
    on(&r, 25000000, 2);
    assert_int_equal(st(&r)->num_alloc_retries, 1);
    assert_int_equal(st(&r)->num_ooms, 0);
    assert_int_equal(st(&r)->reserved_bytes.current, 24 * MiB);
    /* Now nothing is cached: stream 1's 20 MiB request cannot fit (24 + 20 > 40). */
    uint64_t x = 1;
    assert_int_equal(ca_malloc_stream(r.a, 4000000, 1, &x), CA_OOM);
    assert_int_equal(x, 0);
    assert_int_equal(st(&r)->num_alloc_retries, 2);
    assert_int_equal(st(&r)->num_ooms, 1);
    rig_close(&r);
}

static void release_available_looks_at_the_requesting_stream_only(void **state)
{
    (void)state;
    /* max_split_size 20 MiB makes a 62 MiB block oversize, and too large for
     * a 40 MiB request (62 >= 40 + 20, get_free_block). Under a 64 MiB limit
     * (62 + 40 > 64): on stream 1, release_available_cached_blocks releases
     * it (the first oversize block >= 40 MiB) and the request goes through
     * with no retry counted; on stream 2 its pool has no such block, and only
     * release_cached_blocks (a counted retry) frees stream 1's. */
    ca_config cfg = with_limit(64 * MiB, 20 * MiB);
    rig r = rig_open(&cfg, 80ULL << 30);
    uint64_t a = on(&r, 62 * MiB, 1);
    assert_int_equal(ca_free(r.a, a), 0);
    uint64_t b = on(&r, 40 * MiB, 1);
    assert_int_equal(st(&r)->num_alloc_retries, 0);
    assert_int_equal(st(&r)->reserved_bytes.current, 40 * MiB);
    assert_int_equal(ca_free(r.a, b), 0);
    ca_empty_cache(r.a);
    a = on(&r, 62 * MiB, 1);
    assert_int_equal(ca_free(r.a, a), 0);
    on(&r, 40 * MiB, 2);
    assert_int_equal(st(&r)->num_alloc_retries, 1);
    assert_int_equal(st(&r)->num_ooms, 0);
    assert_int_equal(st(&r)->reserved_bytes.current, 40 * MiB);
    rig_close(&r);
}

static void too_many_streams(void **state)
{
    (void)state;
    ca_config cfg = ca_config_default();
    rig r = rig_open(&cfg, 80ULL << 30);
    uint64_t addr[CA_MAX_STREAMS];
    for (uint64_t s = 1; s < CA_MAX_STREAMS; s++) addr[s] = on(&r, 512, s); /* with stream 0: 256 */
    uint64_t x = 1;
    assert_int_equal(ca_malloc_stream(r.a, 512, 100000, &x), CA_TOO_MANY_STREAMS);
    assert_int_equal(x, 0);
    assert_int_equal(st(&r)->num_ooms, 0);
    for (uint64_t s = 1; s < CA_MAX_STREAMS; s++) assert_int_equal(ca_free(r.a, addr[s]), 0);
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(freed_block_is_reused_only_by_its_stream),
        cmocka_unit_test(empty_cache_releases_every_streams_cache),
        cmocka_unit_test(oom_recovery_with_streams),
        cmocka_unit_test(release_available_looks_at_the_requesting_stream_only),
        cmocka_unit_test(too_many_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
