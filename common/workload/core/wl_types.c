/* wl_types.c: the names of wl_types.h's enums and the step's CSV row. */
#include "wl_types.h"

#include <inttypes.h>
#include <math.h>

static const char *const CAT_NAME[MC_WL_NCAT] = {
    "weights", "casts", "grads", "optimizer", "activations", "workspace", "other"};

const char *mc_wl_category_name(mc_wl_category c)
{
    return (unsigned)c < MC_WL_NCAT ? CAT_NAME[c] : "?";
}

static const char *const FWD_NAME[MC_WL_FWD_NMODE] = {"grad", "no_grad", "eval_no_grad",
                                                         "inference_mode"};

const char *mc_wl_fwd_mode_name(mc_wl_fwd_mode m)
{
    return (unsigned)m < MC_WL_FWD_NMODE ? FWD_NAME[m] : "?";
}

const char *mc_wl_precision_name(mc_wl_precision p)
{
    return p == MC_WL_FP32 ? "fp32" : p == MC_WL_FP16 ? "fp16" : "bf16";
}

static void num(FILE *fp, double v, bool comma)
{
    if (isfinite(v)) {
        if (v == floor(v) && fabs(v) < 0x1p53) fprintf(fp, "%.0f", v);
        else fprintf(fp, "%.10g", v);
    }
    if (comma) fputc(',', fp);
}

void mc_workload_csv_row(FILE *fp, const mc_workload_step_result *r)
{
    fprintf(fp, "%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", r->step,
            r->peak_allocated, r->allocated_end, r->peak_reserved, r->reserved_end);
    num(fp, r->step_time_s, true);
    num(fp, r->loss, true);
    num(fp, r->loss_scale, true);
    fprintf(fp, "%d,%s", r->skipped ? 1 : 0, r->status == MC_WL_OK ? "ok" : "oom");
    for (int c = 0; c < MC_WL_NCAT; c++) fprintf(fp, ",%" PRIu64, r->peak_by_category[c]);
    fputc('\n', fp);
}
