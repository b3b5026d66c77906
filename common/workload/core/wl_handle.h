/* wl_handle.h: one handle over any training workload (the MLP, mlp.h; the
 * Transformer, tfm.h), so that code stepping "either workload" calls one
 * set of functions and dispatches nowhere. A model offers its handle
 * (mc_workload_handle, mc_tfm_handle) by filling an ops table with its own
 * step, allocator, live_by_category and destroy.
 *
 * Use:
 *   mc_wl *w = mc_tfm_handle(mc_tfm_create(&c, on_gpu, NULL, err, sizeof err));
 *   if (!w) ...err...
 *   mc_workload_step_result r;
 *   while (...) mc_wl_step(w, &r);
 *   mc_wl_destroy(w);          // the model too
 */
#ifndef MC_WL_HANDLE_H
#define MC_WL_HANDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc/alloc_model.h"
#include "wl_profile_table.h"
#include "wl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a model does behind the handle; model is the model's own pointer. */
typedef struct {
    const char *name;                     /* "mlp", "transformer" (for messages) */
    mc_wl_status (*step)(void *model, mc_workload_step_result *r);
    const ca_allocator *(*allocator)(const void *model);
    void (*live_by_category)(const void *model, uint64_t out[MC_WL_NCAT]);
    void (*destroy)(void *model);
    /* One more step with its GPU time by kind (wl_profile.h; on a GPU only). */
    mc_wl_status (*profile_step)(void *model, mc_workload_step_result *r, mc_prof_table *t);
    /* One forward pass in mode (wl_types.h), out_host as the model's own
     * forward takes it; NULL where the model has none. */
    mc_wl_status (*forward)(void *model, mc_wl_fwd_mode mode, float *out_host,
                            mc_workload_forward_result *r);
} mc_wl_ops;

typedef struct mc_wl mc_wl;
struct mc_wl {
    const mc_wl_ops *ops;
    void *model;                          /* owned: mc_wl_destroy destroys it */
};

/* A handle owning model, or NULL when model is NULL (so a failed create
 * passes through: mc_tfm_handle(mc_tfm_create(...)) is NULL with err set). */
mc_wl *mc_wl_wrap(const mc_wl_ops *ops, void *model);
/* One training step; fills r and returns r->status (the model's step). */
mc_wl_status mc_wl_step(mc_wl *w, mc_workload_step_result *r);
const ca_allocator *mc_wl_allocator(const mc_wl *w);
/* Live bytes of each category now (they sum to memory_allocated). */
void mc_wl_live_by_category(const mc_wl *w, uint64_t out[MC_WL_NCAT]);
const char *mc_wl_name(const mc_wl *w);
/* Whether the workload has a profiled step (mc_wl_ops.profile_step). */
bool mc_wl_can_profile(const mc_wl *w);
/* One more step, profiled into t (the workload must run on a GPU and
 * mc_wl_can_profile). */
mc_wl_status mc_wl_profile_step(mc_wl *w, mc_workload_step_result *r, mc_prof_table *t);
/* One forward pass alone (the model's forward; exits for a model without
 * one); fills r and returns r->status. */
mc_wl_status mc_wl_forward(mc_wl *w, mc_wl_fwd_mode mode, float *out_host,
                           mc_workload_forward_result *r);
/* Destroys the model and frees the handle; NULL does nothing. */
void mc_wl_destroy(mc_wl *w);

#ifdef __cplusplus
}
#endif
#endif
