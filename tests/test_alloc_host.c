/* Tests of the host backend (common/alloc_host.c): its documented placement
 * rule (regions growing down from CA_HOST_TOP, holes filled lowest first),
 * capacity, freed ranges merging, and the address hint (next successful
 * request only, 0 clears, conflicts fall back to the rule and are counted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alloc/alloc_host.h"

#define MiB (1ULL << 20)
#define TOP CA_HOST_TOP
#define R CA_HOST_REGION /* a new region's granularity (32 MiB) */

static uint64_t seg(ca_backend *b, uint64_t bytes)
{
    uint64_t addr = 0;
    assert_int_equal(b->dev_malloc(b->ctx, bytes, &addr), 0);
    return addr;
}

static void regions_grow_down_and_holes_fill_lowest_first(void **state)
{
    (void)state;
    ca_host_device *d = ca_host_create(1ULL << 30);
    ca_backend b = ca_host_backend(d);
    uint64_t s0 = seg(&b, 2 * MiB);            /* a new region: its bottom */
    uint64_t s1 = seg(&b, 2 * MiB);            /* the hole above s0 */
    uint64_t s2 = seg(&b, R);                  /* R - 4 MiB left up there: a region below */
    uint64_t s3 = seg(&b, R + 2 * MiB);        /* a region of 2 R below that */
    assert_int_equal(s0, TOP - R);
    assert_int_equal(s1, TOP - R + 2 * MiB);
    assert_int_equal(s2, TOP - 2 * R);
    assert_int_equal(s3, TOP - 4 * R);
    assert_int_equal(seg(&b, R - 2 * MiB), TOP - 3 * R + 2 * MiB); /* the top of s3's region */
    b.dev_free(b.ctx, s1, 2 * MiB);
    assert_int_equal(seg(&b, 4 * MiB), TOP - R + 2 * MiB); /* s1's place merged with the hole above */
    b.dev_free(b.ctx, s2, R);
    b.dev_free(b.ctx, s0, 2 * MiB);            /* [s2][s0] merge: R + 2 MiB free below s1's place */
    assert_int_equal(seg(&b, R + 2 * MiB), TOP - 2 * R);
    assert_int_equal(ca_host_segments(d), 4);
    assert_int_equal(ca_host_used(d), 3 * R + 6 * MiB);
    ca_host_destroy(d);
}

static void capacity_is_enforced(void **state)
{
    (void)state;
    ca_host_device *d = ca_host_create(10 * MiB);
    ca_backend b = ca_host_backend(d);
    uint64_t addr = 0, s = seg(&b, 8 * MiB);
    assert_int_not_equal(b.dev_malloc(b.ctx, 4 * MiB, &addr), 0);
    assert_int_equal(ca_host_used(d), 8 * MiB);
    b.dev_free(b.ctx, s, 8 * MiB);
    seg(&b, 10 * MiB); /* exactly the capacity */
    assert_int_equal(ca_host_used(d), 10 * MiB);
    ca_host_destroy(d);
}

static void hint_applies_to_the_next_success_only(void **state)
{
    (void)state;
    ca_host_device *d = ca_host_create(100 * MiB);
    ca_backend b = ca_host_backend(d);
    uint64_t addr = 0;
    ca_host_hint_next(d, 0x7f0000000000ULL);
    assert_int_not_equal(b.dev_malloc(b.ctx, 200 * MiB, &addr), 0); /* refused: hint kept */
    assert_int_equal(seg(&b, 2 * MiB), 0x7f0000000000ULL);
    assert_int_equal(seg(&b, 2 * MiB), TOP - R); /* used up: the rule again */
    ca_host_hint_next(d, 0x7f0000400000ULL);
    ca_host_hint_next(d, 0); /* cleared */
    assert_int_equal(seg(&b, 2 * MiB), TOP - R + 2 * MiB);
    assert_int_equal(ca_host_hint_conflicts(d), 0);
    ca_host_destroy(d);
}

static void conflicting_hints_fall_back(void **state)
{
    (void)state;
    ca_host_device *d = ca_host_create(1ULL << 30);
    ca_backend b = ca_host_backend(d);
    uint64_t s = seg(&b, R); /* fills the first region */
    assert_int_equal(s, TOP - R);
    ca_host_hint_next(d, s + 2 * MiB); /* inside a live segment */
    assert_int_equal(seg(&b, 2 * MiB), s - R);
    ca_host_hint_next(d, UINT64_MAX - MiB); /* runs off the address space */
    assert_int_equal(seg(&b, 2 * MiB), s - R + 2 * MiB);
    ca_host_hint_next(d, s - 512); /* overlaps the start of s */
    assert_int_equal(seg(&b, 4 * MiB), s - R + 4 * MiB);
    assert_int_equal(ca_host_hint_conflicts(d), 3);
    /* A hint that fits exactly between two segments is used. */
    b.dev_free(b.ctx, s - R + 2 * MiB, 2 * MiB);
    ca_host_hint_next(d, s - R + 2 * MiB);
    assert_int_equal(seg(&b, 2 * MiB), s - R + 2 * MiB);
    assert_int_equal(ca_host_hint_conflicts(d), 3);
    ca_host_destroy(d);
}

/* Through the model: a hinted request's new segment lands at the hint. */
static void model_follows_the_hint(void **state)
{
    (void)state;
    ca_host_device *d = ca_host_create(1ULL << 30);
    ca_allocator *a = ca_create(NULL, ca_host_backend(d));
    uint64_t p = 0, q = 0;
    ca_host_hint_next(d, 0x7f7209a00000ULL);
    assert_int_equal(ca_malloc(a, 4000000, &p), CA_OK);
    assert_int_equal(p, 0x7f7209a00000ULL);
    ca_host_hint_next(d, 0x7f0000000000ULL); /* not used: the block comes from the cache */
    assert_int_equal(ca_malloc(a, 4000000, &q), CA_OK);
    assert_int_equal(q, p + 4000256);
    ca_host_hint_next(d, 0);
    ca_destroy(a);
    assert_int_equal(ca_host_used(d), 0);
    ca_host_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(regions_grow_down_and_holes_fill_lowest_first),
        cmocka_unit_test(capacity_is_enforced),
        cmocka_unit_test(hint_applies_to_the_next_success_only),
        cmocka_unit_test(conflicting_hints_fall_back),
        cmocka_unit_test(model_follows_the_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
