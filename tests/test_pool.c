/* Tests of common/pool.c: every index is called exactly once whatever the
 * number of threads (more threads than indices, none asked for), and a stop
 * that turns true starts no further index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>

#include "pool.h"

#define N 200

static atomic_int g_calls[N];
static atomic_int g_total;

static void count(void *ctx, size_t i)
{
    (void)ctx;
    atomic_fetch_add(&g_calls[i], 1);
    atomic_fetch_add(&g_total, 1);
}

static void reset(void)
{
    for (size_t i = 0; i < N; i++) atomic_store(&g_calls[i], 0);
    atomic_store(&g_total, 0);
}

static void each_index_once(void **state)
{
    (void)state;
    static const int threads[] = {1, 2, 4, 7, N + 5, 0, -3};
    for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        reset();
        mc_pool_run(count, NULL, N, threads[k], NULL);
        for (size_t i = 0; i < N; i++)
            if (atomic_load(&g_calls[i]) != 1)
                fail_msg("%d threads: index %zu called %d times", threads[k], i, atomic_load(&g_calls[i]));
        assert_int_equal(atomic_load(&g_total), N);
    }
    reset();
    mc_pool_run(count, NULL, 0, 4, NULL); /* nothing to do */
    assert_int_equal(atomic_load(&g_total), 0);
}

static int after_ten(void) { return atomic_load(&g_total) >= 10; }
static int at_once(void) { return 1; }

static void stop_starts_nothing_more(void **state)
{
    (void)state;
    reset();
    mc_pool_run(count, NULL, N, 1, after_ten); /* one thread: it checks before each index */
    assert_int_equal(atomic_load(&g_total), 10);
    for (size_t i = 0; i < N; i++) assert_int_equal(atomic_load(&g_calls[i]), i < 10);
    reset();
    mc_pool_run(count, NULL, N, 4, at_once);
    assert_int_equal(atomic_load(&g_total), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_index_once),
        cmocka_unit_test(stop_starts_nothing_more),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
