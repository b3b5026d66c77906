/* tfm_verify_util.h: what the GPU checks of the Transformer kernels
 * (tfm_verify.cu, tfm_verify_attn.cu) share, in tfm_verify_util.cu:
 * device buffers, uploads that round the host's values to the dtype first
 * (so the reference sees the same inputs), downloads, the error measure and
 * the per-dtype tolerance, and the one-line report. CUDA C++ (host side)
 * only. */
#ifndef MC_TFM_VERIFY_UTIL_H
#define MC_TFM_VERIFY_UTIL_H

#include <stdio.h>

#include "workload/core/wl_gpu.h"

typedef struct {
    FILE *log;
    int fails, checks;
    mc_wl_gpu *g;
} tfm_vctx;

/* Relative tolerance of a result stored in dt: fp32 1e-4, fp16 1e-2, bf16 3e-2. */
double tfm_v_tol(int dt);
const char *tfm_v_dt_name(int dt);

/* max |a - b| / max(max |b|, 1e-6). */
double tfm_v_err(const double *a, const double *b, int64_t n);

/* Prints "verify: tfm <what> <dtype> ok|FAIL (err E, tol T)", counts a fail. */
void tfm_v_report(tfm_vctx *v, const char *what, int dt, double err, double tol);

void *tfm_v_alloc(uint64_t bytes);
void tfm_v_free(void *p);
/* Rounds h[0, n) to dt in place, then copies it to a new device buffer. */
void *tfm_v_upload(double *h, int64_t n, int dt);
/* Device buffer of n dt elements -> doubles. */
void tfm_v_download(mc_wl_gpu *g, double *h, const void *d, int64_t n, int dt);
/* bytes of d -> h, after g's stream has finished. */
void tfm_v_bytes_to_host(mc_wl_gpu *g, void *h, const void *d, uint64_t bytes);
/* Uniform values in [lo, hi) from a small LCG. */
void tfm_v_fill(double *h, int64_t n, double lo, double hi, uint64_t *state);
double *tfm_v_host(int64_t n); /* zeroed, exits on failure */

int tfm_verify_attention(tfm_vctx *v);

#endif
