/* mlp_handle.c: the MLP behind core/wl_handle.h's handle (mc_workload_handle). */
#include "mlp.h"
#include "mlp_forward.h"
#include "workload/core/wl_handle.h"

static mc_wl_status step(void *m, mc_workload_step_result *r)
{
    return mc_workload_step(m, r);
}

static const ca_allocator *allocator(const void *m)
{
    return mc_workload_allocator(m);
}

static void live_by_category(const void *m, uint64_t out[MC_WL_NCAT])
{
    mc_workload_live_by_category(m, out);
}

static void destroy(void *m)
{
    mc_workload_destroy(m);
}

static mc_wl_status profile_step(void *m, mc_workload_step_result *r, mc_prof_table *t)
{
    return mc_workload_profile_step(m, r, t);
}

/* No dropout, no fast path: eval() is train() and inference_mode is no_grad. */
static mc_wl_status forward(void *m, mc_wl_fwd_mode mode, float *out_host, mc_workload_forward_result *r)
{
    return mc_workload_forward(m, mode == MC_WL_FWD_GRAD, out_host, r);
}

static const mc_wl_ops OPS = {"mlp", step, allocator, live_by_category, destroy, profile_step, forward};

mc_wl *mc_workload_handle(mc_workload *w)
{
    return mc_wl_wrap(&OPS, w);
}
