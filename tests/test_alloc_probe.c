/* Tests of alloc/alloc_probe.h in model-only mode (no GPU): the figures of
 * a snapshot, and mc_probe_check's text for a broken invariant, which the
 * caller records (the probe reports nothing itself). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "alloc/alloc_internal.h"
#include "alloc/alloc_probe.h"

static void snapshot_and_check(void **state)
{
    (void)state;
    mc_probe p;
    mc_probe_open(&p, false, NULL);
    assert_false(p.on_gpu);
    assert_non_null(p.host);
    ca_set_debug(p.a, false); /* the statistic broken below is not caught at the next call */
    uint64_t addr;
    assert_int_equal(ca_malloc(p.a, 4, &addr), CA_OK);
    mc_probe_snap s = mc_probe_snapshot(&p);
    assert_int_equal(s.allocated, CA_MIN_BLOCK_SIZE);   /* 4 B rounded to one block */
    assert_int_equal(s.requested, 4);
    assert_int_equal(s.reserved, CA_SMALL_BUFFER);      /* one small-pool segment */
    assert_int_equal(s.segments, 1);
    assert_int_equal(s.segments_made, 1);
    assert_int_equal(s.driver_used, 0);                 /* no driver in model-only */
    assert_null(mc_probe_check(&p));

    p.a->st.allocated_bytes.current += CA_MIN_BLOCK_SIZE;
    const char *e = mc_probe_check(&p);
    assert_non_null(e);
    assert_true(strncmp(e, "allocator model invariant broken: ", 34) == 0);
    assert_non_null(strstr(e, "allocated_bytes"));
    p.a->st.allocated_bytes.current -= CA_MIN_BLOCK_SIZE;
    assert_null(mc_probe_check(&p));
    mc_probe_close(&p);
    assert_null(p.a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(snapshot_and_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
