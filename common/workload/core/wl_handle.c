/* wl_handle.c: wl_handle.h's calls, each the model's own through its ops. */
#include <stdlib.h>

#include "check.h"
#include "wl_handle.h"

mc_wl *mc_wl_wrap(const mc_wl_ops *ops, void *model)
{
    if (!model) return NULL;
    mc_wl *w = mc_xmalloc(sizeof *w);
    w->ops = ops;
    w->model = model;
    return w;
}

mc_wl_status mc_wl_step(mc_wl *w, mc_workload_step_result *r)
{
    return w->ops->step(w->model, r);
}

bool mc_wl_can_profile(const mc_wl *w)
{
    return w->ops->profile_step != NULL;
}

mc_wl_status mc_wl_profile_step(mc_wl *w, mc_workload_step_result *r, mc_prof_table *t)
{
    CHECK(w->ops->profile_step != NULL, "the %s workload has no profiled step", w->ops->name);
    return w->ops->profile_step(w->model, r, t);
}

const ca_allocator *mc_wl_allocator(const mc_wl *w)
{
    return w->ops->allocator(w->model);
}

void mc_wl_live_by_category(const mc_wl *w, uint64_t out[MC_WL_NCAT])
{
    w->ops->live_by_category(w->model, out);
}

const char *mc_wl_name(const mc_wl *w)
{
    return w->ops->name;
}

mc_wl_status mc_wl_forward(mc_wl *w, mc_wl_fwd_mode mode, float *out_host,
                           mc_workload_forward_result *r)
{
    CHECK(w->ops->forward != NULL, "%s: no forward pass alone", w->ops->name);
    return w->ops->forward(w->model, mode, out_host, r);
}

void mc_wl_destroy(mc_wl *w)
{
    if (!w) return;
    w->ops->destroy(w->model);
    free(w);
}
