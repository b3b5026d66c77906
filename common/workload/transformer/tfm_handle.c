/* tfm_handle.c: the Transformer behind core/wl_handle.h's handle (mc_tfm_handle). */
#include "tfm.h"
#include "workload/core/wl_handle.h"

static mc_wl_status step(void *m, mc_workload_step_result *r)
{
    return mc_tfm_step(m, r);
}

static const ca_allocator *allocator(const void *m)
{
    return mc_tfm_allocator(m);
}

static void live_by_category(const void *m, uint64_t out[MC_WL_NCAT])
{
    mc_tfm_live_by_category(m, out);
}

static void destroy(void *m)
{
    mc_tfm_destroy(m);
}

static mc_wl_status profile_step(void *m, mc_workload_step_result *r, mc_prof_table *t)
{
    return mc_tfm_profile_step(m, r, t);
}

static mc_wl_status forward(void *m, mc_wl_fwd_mode mode, float *out_host, mc_workload_forward_result *r)
{
    return mc_tfm_forward(m, mode, out_host, r);
}

static const mc_wl_ops OPS = {"transformer", step, allocator, live_by_category, destroy, profile_step, forward};

mc_wl *mc_tfm_handle(mc_tfm *t)
{
    return mc_wl_wrap(&OPS, t);
}
