/* alloc_rig.h: what the allocator-model tests share: an allocator over a
 * host device with the invariant check after every operation, and short
 * accessors. Include after <cmocka.h>. */
#ifndef MC_ALLOC_RIG_H
#define MC_ALLOC_RIG_H

#include "alloc/alloc_host.h"
#include "alloc/alloc_model.h"

#define MiB (1ULL << 20)
#define LIMIT_1GIB (1073741823ULL) /* int(fraction * total) for 1 GiB of an 80 GB card */

typedef struct {
    ca_host_device *dev;
    ca_allocator *a;
} rig;

static inline rig rig_open(const ca_config *cfg, uint64_t capacity)
{
    rig r;
    r.dev = ca_host_create(capacity);
    r.a = ca_create(cfg, ca_host_backend(r.dev));
    assert_non_null(r.a);
    ca_set_debug(r.a, true); /* ca_check_invariants after every operation */
    return r;
}

static inline void rig_close(rig *r)
{
    char err[256];
    assert_int_equal(ca_check_invariants(r->a, err, sizeof err), 0);
    ca_destroy(r->a);
    assert_int_equal(ca_host_used(r->dev), 0); /* every segment went back */
    ca_host_destroy(r->dev);
}

static inline uint64_t must_alloc(rig *r, uint64_t bytes)
{
    uint64_t addr = 0;
    assert_int_equal(ca_malloc(r->a, bytes, &addr), CA_OK);
    assert_true(addr != 0);
    return addr;
}

static inline const ca_stats *st(const rig *r) { return ca_get_stats(r->a); }

static inline ca_config with_limit(uint64_t limit, uint64_t max_split)
{
    ca_config cfg = ca_config_default();
    cfg.limit_bytes = limit;
    cfg.max_split_size = max_split;
    return cfg;
}

#endif
