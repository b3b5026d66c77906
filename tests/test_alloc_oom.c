/* Tests of the allocator model's out-of-memory paths (common/alloc_model.c):
 * the per-process limit checked before asking the device, the release of
 * oversize cached blocks when max_split_size is set, the full cache release
 * with its num_alloc_retries, num_ooms, and requests the device cannot hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_rig.h"

/* ------------------------------------------------------------ out of memory */

static void limit_oom_path_counts_retries_and_ooms(void **state)
{
    (void)state;
    ca_config cfg = with_limit(LIMIT_1GIB, CA_UNLIMITED);
    rig r = rig_open(&cfg, 80ULL << 30);
    uint64_t p1 = must_alloc(&r, 500 * MiB);
    must_alloc(&r, 500 * MiB);
    assert_int_equal(ca_free(r.a, p1), 0);
    /* 1000 + 600 MiB > limit; empty the cache (500 MiB), retry: 1100 > limit. */
    uint64_t addr = 1;
    assert_int_equal(ca_malloc(r.a, 600 * MiB, &addr), CA_OOM);
    assert_int_equal(addr, 0);
    assert_int_equal(st(&r)->num_alloc_retries, 1);
    assert_int_equal(st(&r)->num_ooms, 1);
    assert_int_equal(st(&r)->reserved_bytes.current, 500 * MiB); /* the cache was emptied */
    assert_int_equal(st(&r)->allocated_bytes.current, 500 * MiB);
    must_alloc(&r, 400 * MiB); /* 900 MiB fits */
    assert_int_equal(st(&r)->num_alloc_retries, 1);
    rig_close(&r);

    /* A retry that succeeds: counted as a retry, not an OOM. */
    r = rig_open(&cfg, 80ULL << 30);
    assert_int_equal(ca_free(r.a, must_alloc(&r, 600 * MiB)), 0);
    must_alloc(&r, 700 * MiB);
    assert_int_equal(st(&r)->num_alloc_retries, 1);
    assert_int_equal(st(&r)->num_ooms, 0);
    assert_int_equal(st(&r)->reserved_bytes.current, 700 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.peak, 700 * MiB);
    rig_close(&r);

    /* The limit is inclusive: reserved may equal it. */
    cfg = with_limit(60 * MiB, CA_UNLIMITED);
    r = rig_open(&cfg, 80ULL << 30);
    must_alloc(&r, 60 * MiB);
    assert_int_equal(ca_malloc(r.a, 1, &addr), CA_OOM);
    assert_int_equal(st(&r)->num_ooms, 1);
    rig_close(&r);
}

/* release_available_cached_blocks frees one oversize block when one is big
 * enough, else oversize blocks from the largest down. */
static void oom_path_releases_oversize_blocks_first(void **state)
{
    (void)state;
    ca_config cfg = with_limit(LIMIT_1GIB, 64 * MiB);
    rig r = rig_open(&cfg, 80ULL << 30);
    must_alloc(&r, 300 * MiB);
    uint64_t b = must_alloc(&r, 300 * MiB);
    must_alloc(&r, 300 * MiB);
    assert_int_equal(ca_free(r.a, b), 0);
    /* 300 >= 200 + 20: not reused; 900 + 200 > limit; the 300 MiB block goes. */
    must_alloc(&r, 200 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 800 * MiB);
    assert_int_equal(st(&r)->num_alloc_retries, 0);
    assert_int_equal(st(&r)->segment.current, 3);
    rig_close(&r);

    r = rig_open(&cfg, 80ULL << 30);
    uint64_t a1 = must_alloc(&r, 100 * MiB), a2 = must_alloc(&r, 100 * MiB);
    must_alloc(&r, 800 * MiB);
    assert_int_equal(ca_free(r.a, a1), 0);
    assert_int_equal(ca_free(r.a, a2), 0);
    /* No single block >= 150 MiB: both 100 MiB blocks go, largest first. */
    must_alloc(&r, 150 * MiB);
    assert_int_equal(st(&r)->reserved_bytes.current, 950 * MiB);
    assert_int_equal(st(&r)->segment.current, 2);
    assert_int_equal(st(&r)->num_alloc_retries, 0);
    rig_close(&r);

    /* Falling short still releases what it passed, then the full retry fails. */
    r = rig_open(&cfg, 80ULL << 30);
    a1 = must_alloc(&r, 100 * MiB);
    must_alloc(&r, 800 * MiB);
    assert_int_equal(ca_free(r.a, a1), 0);
    uint64_t addr;
    assert_int_equal(ca_malloc(r.a, 300 * MiB, &addr), CA_OOM);
    assert_int_equal(st(&r)->reserved_bytes.current, 800 * MiB);
    assert_int_equal(st(&r)->num_alloc_retries, 1);
    assert_int_equal(st(&r)->num_ooms, 1);
    rig_close(&r);
}

/* The device itself running out (host backend capacity), no limit. */
static void device_capacity_oom(void **state)
{
    (void)state;
    rig r = rig_open(NULL, 100 * MiB);
    uint64_t p = must_alloc(&r, 60 * MiB), addr;
    assert_int_equal(ca_malloc(r.a, 60 * MiB, &addr), CA_OOM);
    assert_int_equal(st(&r)->num_alloc_retries, 1);
    assert_int_equal(st(&r)->num_ooms, 1);
    assert_int_equal(ca_free(r.a, p), 0);
    assert_int_equal(must_alloc(&r, 60 * MiB), p); /* from the cache */
    rig_close(&r);
}

static void zero_huge_and_bad_frees(void **state)
{
    (void)state;
    rig r = rig_open(NULL, 80ULL << 30);
    uint64_t addr = 7;
    assert_int_equal(ca_malloc(r.a, 0, &addr), CA_OK); /* torch.empty(0): no block */
    assert_int_equal(addr, 0);
    assert_int_equal(st(&r)->allocation.current, 0);
    assert_int_equal(ca_malloc(r.a, CA_MAX_REQUEST, &addr), CA_OOM); /* refused before malloc */
    assert_int_equal(st(&r)->num_ooms, 0);
    assert_int_equal(ca_malloc(r.a, CA_MAX_REQUEST - 1, &addr), CA_OOM); /* the device is too small */
    assert_int_equal(st(&r)->num_ooms, 1);
    uint64_t p = must_alloc(&r, 4);
    assert_int_equal(ca_free(r.a, p + 1), -1);
    assert_int_equal(ca_free(r.a, 0), 0);
    assert_int_equal(ca_free(r.a, p), 0);
    assert_int_equal(ca_free(r.a, p), -1);
    assert_int_equal(ca_block_size(r.a, p), 0);
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limit_oom_path_counts_retries_and_ooms),
        cmocka_unit_test(oom_path_releases_oversize_blocks_first),
        cmocka_unit_test(device_capacity_oom),
        cmocka_unit_test(zero_huge_and_bad_frees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
