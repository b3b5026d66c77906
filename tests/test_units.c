/* Tests of units.h: mc_bytes_str, and that it writes what each experiment's
 * own copy wrote before (C03, C10, C13, C22) for every size that experiment
 * can pass: C03, C13 and C22 sweep 4 KiB * 4^k (to --max-bytes), C10 a
 * fixed list. Where the copies differed (a size not a whole number of the
 * unit, truncated by three of them; C13 never saying GiB), the test shows it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "units.h"

#define GIB MC_UNIT_GIB

/* The copies as they were (c03_pinned_vs_pageable.cu, c22_peer_copy.cu,
 * c13_nonblocking_copy.cu, c10_malloc_latency.c). */
static const char *c10_was(uint64_t b, char *buf, size_t len)
{
    if (b >= GIB && b % GIB == 0) snprintf(buf, len, "%llu GiB", (unsigned long long)(b >> 30));
    else if (b >= MC_UNIT_MIB && b % MC_UNIT_MIB == 0) snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
    else if (b >= MC_UNIT_KIB && b % MC_UNIT_KIB == 0) snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
    else snprintf(buf, len, "%llu B", (unsigned long long)b);
    return buf;
}

static const char *c03_was(uint64_t bytes, char *buf, size_t len)
{
    if (bytes >= GIB && bytes % GIB == 0) snprintf(buf, len, "%llu GiB", (unsigned long long)(bytes >> 30));
    else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
        snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes >> 20));
    else snprintf(buf, len, "%llu KiB", (unsigned long long)(bytes >> 10));
    return buf;
}

static const char *c22_was(uint64_t bytes, char *buf, size_t len)
{
    if (bytes >= GIB && bytes % GIB == 0) snprintf(buf, len, "%llu GiB", (unsigned long long)(bytes >> 30));
    else if (bytes >= (1ull << 20)) snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes >> 20));
    else snprintf(buf, len, "%llu KiB", (unsigned long long)(bytes >> 10));
    return buf;
}

static const char *c13_was(uint64_t bytes, char *buf, size_t len)
{
    if (bytes >= (1ull << 20)) snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes >> 20));
    else snprintf(buf, len, "%llu KiB", (unsigned long long)(bytes >> 10));
    return buf;
}

static void formats(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(mc_bytes_str(0, MC_UNIT_GIB, b, sizeof b), "0 B");
    assert_string_equal(mc_bytes_str(512, MC_UNIT_GIB, b, sizeof b), "512 B");
    assert_string_equal(mc_bytes_str(64 << 10, MC_UNIT_GIB, b, sizeof b), "64 KiB");
    assert_string_equal(mc_bytes_str(20ull << 20, MC_UNIT_GIB, b, sizeof b), "20 MiB");
    assert_string_equal(mc_bytes_str(16 * GIB, MC_UNIT_GIB, b, sizeof b), "16 GiB");
    assert_string_equal(mc_bytes_str(GIB, MC_UNIT_MIB, b, sizeof b), "1024 MiB");
    assert_string_equal(mc_bytes_str(3ull << 19, MC_UNIT_GIB, b, sizeof b), "1536 KiB");
    assert_string_equal(mc_bytes_str(1025, MC_UNIT_GIB, b, sizeof b), "1025 B");
    assert_string_equal(mc_bytes_str(GIB, MC_UNIT_KIB, b, sizeof b), "1048576 KiB");
    mc_bytes_str(16 * GIB, MC_UNIT_GIB, b, 4); /* truncated, terminated */
    assert_string_equal(b, "16 ");
}

/* Every size the sweeps can reach (4 KiB * 4^k, k < 16: past any --max-bytes). */
static void same_as_the_copies_on_their_sizes(void **state)
{
    (void)state;
    char a[32], b[32];
    for (uint64_t s = 4 << 10; s <= (4ull << 10) << 30; s *= 4) {
        assert_string_equal(mc_bytes_str(s, MC_UNIT_GIB, a, sizeof a), c03_was(s, b, sizeof b));
        assert_string_equal(mc_bytes_str(s, MC_UNIT_GIB, a, sizeof a), c22_was(s, b, sizeof b));
        assert_string_equal(mc_bytes_str(s, MC_UNIT_MIB, a, sizeof a), c13_was(s, b, sizeof b));
    }
    /* C10's was this formatter: the same for any size */
    for (uint64_t s = 0; s <= (5ull << 20); s += 256)
        assert_string_equal(mc_bytes_str(s, MC_UNIT_GIB, a, sizeof a), c10_was(s, b, sizeof b));
    for (uint64_t s = 0; s <= 20 * GIB; s += 3 * GIB / 4)
        assert_string_equal(mc_bytes_str(s, MC_UNIT_GIB, a, sizeof a), c10_was(s, b, sizeof b));
    /* where they had drifted apart: sizes no sweep passes */
    assert_string_equal(c22_was(3ull << 19, b, sizeof b), "1 MiB");
    assert_string_equal(c03_was(3ull << 19, b, sizeof b), "1536 KiB");
    assert_string_equal(c03_was(512, b, sizeof b), "0 KiB");
    assert_string_equal(c13_was(GIB, b, sizeof b), "1024 MiB");
    assert_string_equal(c03_was(GIB, b, sizeof b), "1 GiB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(formats),
        cmocka_unit_test(same_as_the_copies_on_their_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
