/* Random operation sequences through the allocator model, checked after
 * every operation against its invariants and against a naive second model
 * (naive_alloc.h) figure by figure and address by address; and a check that
 * the invariant checker itself catches corruption. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "alloc_rig.h"
#include "naive_alloc.h"

/* The checker itself catches a broken statistic and a broken block. */
static void invariant_check_detects_corruption(void **state)
{
    (void)state;
    rig r = rig_open(NULL, 80ULL << 30);
    ca_set_debug(r.a, false);
    uint64_t p = must_alloc(&r, 4);
    must_alloc(&r, 4);
    char err[256];
    r.a->st.allocated_bytes.current += 512;
    assert_int_equal(ca_check_invariants(r.a, err, sizeof err), -1);
    assert_non_null(strstr(err, "allocated_bytes"));
    r.a->st.allocated_bytes.current -= 512;
    ca_block *b = ca_map_find(r.a, p);
    b->size += 512;
    assert_int_equal(ca_check_invariants(r.a, err, sizeof err), -1);
    b->size -= 512;
    assert_int_equal(ca_check_invariants(r.a, err, sizeof err), 0);
    rig_close(&r);
}

/* The pools' size classes must follow the sizes' order, or the search
 * order would break; every class fits the table. */
static void size_classes_are_monotone(void **state)
{
    (void)state;
    unsigned prev = 0;
    /* every size to 4 MiB, then steps of about 1/1024 of the size */
    for (uint64_t size = 512; size <= (64ULL << 30); size += size < (4ULL << 20) ? 512 : (size >> 10) & ~511ULL) {
        unsigned c = ca_pool_class(size);
        assert_true(c >= prev);
        prev = c;
    }
    assert_true(ca_pool_class(UINT64_MAX - 511) < CA_POOL_CLASSES);
    assert_int_equal(ca_pool_class(512), 1);
    assert_true(ca_pool_class(2ULL << 20) < ca_pool_class((2ULL << 20) + 512 * 1024));
}

/* ------------------------------------------------------------ random sequences */

static uint64_t rng;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t random_size(void)
{
    static const uint64_t edges[] = {1, 511, 512, 513, MiB - 1, MiB, MiB + 1, 10 * MiB - 1,
                                     10 * MiB, 10 * MiB + 1, 20 * MiB - 1, 20 * MiB, 20 * MiB + 1,
                                     64 * MiB - 1, 64 * MiB, 64 * MiB + 1, 84 * MiB};
    static const int64_t nudge[] = {-512, -1, 0, 1, 512};
    switch (rnd() % 5) {
    case 0: return edges[rnd() % (sizeof edges / sizeof edges[0])];
    case 1: return 1 + rnd() % MiB;
    case 2: return 1 + rnd() % (24 * MiB);
    case 3: return (1 + rnd() % 80) * MiB + (uint64_t)nudge[rnd() % 5]; /* near whole MiB */
    default: return 1 + rnd() % (160 * MiB);
    }
}

static void check_same(const rig *r, const nv_alloc *nv, int step)
{
    const ca_stats *s = ca_get_stats(r->a);
    nv_figures f = nv_get(nv);
    int64_t got[] = {s->allocated_bytes.current, s->reserved_bytes.current, s->allocated_bytes.peak,
                     s->reserved_bytes.peak, s->segment.current, s->active_bytes.current,
                     s->inactive_split_bytes.current, s->inactive_split.current,
                     s->requested_bytes.current, s->num_alloc_retries, s->num_ooms};
    int64_t want[] = {f.allocated, f.reserved, f.peak_allocated, f.peak_reserved, f.segments,
                      f.active, f.inactive_split_bytes, f.inactive_split, f.requested, f.retries, f.ooms};
    for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) {
        if (got[i] != want[i]) {
            print_error("step %d: figure %zu is %lld, the naive model says %lld\n", step, i,
                        (long long)got[i], (long long)want[i]);
            fail();
        }
    }
}

static void random_sequences(void **state)
{
    (void)state;
    const ca_config configs[] = {
        with_limit(CA_UNLIMITED, CA_UNLIMITED), with_limit(CA_UNLIMITED, 64 * MiB),
        with_limit(LIMIT_1GIB, CA_UNLIMITED), with_limit(600 * MiB, 20 * MiB),
        with_limit(LIMIT_1GIB, 100 * MiB), with_limit(CA_UNLIMITED, CA_UNLIMITED)};
    const uint64_t capacities[] = {80ULL << 30, 80ULL << 30, 80ULL << 30, 80ULL << 30,
                                   80ULL << 30, 300 * MiB};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        rng = 1000 + c;
        rig r = rig_open(&configs[c], capacities[c]);
        nv_alloc *nv = calloc(1, sizeof *nv);
        ca_host_device *nv_dev = ca_host_create(capacities[c]);
        nv->cfg = configs[c];
        nv->be = ca_host_backend(nv_dev);
        uint64_t live[64], nv_live[64];
        size_t n = 0;
        char err[256];
        for (int step = 1; step <= 3000; step++) {
            uint64_t u = rnd() % 100;
            if (u < 2) {
                ca_empty_cache(r.a);
                nv_empty_cache(nv);
            } else if (u < 4) {
                ca_reset_peak(r.a);
                nv_reset_peak(nv);
            } else if (n > 0 && (n == 64 || u < 50)) {
                size_t k = rnd() % n;
                assert_int_equal(ca_free(r.a, live[k]), 0);
                assert_int_equal(nv_free(nv, nv_live[k]), 0);
                live[k] = live[--n];
                nv_live[k] = nv_live[n];
            } else {
                uint64_t bytes = random_size(), addr, nv_addr;
                int rc = ca_malloc(r.a, bytes, &addr);
                assert_int_equal(nv_malloc(nv, bytes, &nv_addr), rc);
                assert_int_equal(addr, nv_addr);
                if (rc == CA_OK) {
                    live[n] = addr;
                    nv_live[n++] = nv_addr;
                }
            }
            if (ca_check_invariants(r.a, err, sizeof err) != 0) {
                print_error("config %zu step %d: %s\n", c, step, err);
                fail();
            }
            check_same(&r, nv, step);
        }
        print_message("config %zu: %lld OOMs, %lld retries, %lld segments made, peak %lld segments\n",
                      c, (long long)st(&r)->num_ooms, (long long)st(&r)->num_alloc_retries,
                      (long long)st(&r)->num_device_alloc, (long long)st(&r)->segment.peak);
        for (size_t k = 0; k < n; k++) assert_int_equal(ca_free(r.a, live[k]), 0);
        ca_empty_cache(r.a);
        assert_int_equal(st(&r)->reserved_bytes.current, 0);
        rig_close(&r);
        free(nv);
        ca_host_destroy(nv_dev);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(invariant_check_detects_corruption),
        cmocka_unit_test(size_classes_are_monotone),
        cmocka_unit_test(random_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
