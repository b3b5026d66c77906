/* tfm_verify_util.cu: the helpers the GPU checks of the Transformer
 * kernels share (tfm_verify_util.h): tolerances, the error measure, the
 * report line, device buffers, uploads rounded to the dtype, downloads.
 * Their own file so that tfm_verify.cu and tfm_verify_attn.cu each call
 * it and not each other. */
#include "tfm_verify_util.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "check_cuda.h"

double tfm_v_tol(int dt) { return dt == MC_DT_F32 ? 1e-4 : dt == MC_DT_F16 ? 1e-2 : 3e-2; }

const char *tfm_v_dt_name(int dt) { return dt == MC_DT_F32 ? "fp32" : dt == MC_DT_F16 ? "fp16" : "bf16"; }

double tfm_v_err(const double *a, const double *b, int64_t n)
{
    double worst = 0, most = 1e-6;
    for (int64_t i = 0; i < n; i++) {
        const double d = fabs(a[i] - b[i]);
        if (!(d <= worst)) worst = d; /* NaN sticks */
        most = fmax(most, fabs(b[i]));
    }
    return worst / most;
}

void tfm_v_report(tfm_vctx *v, const char *what, int dt, double err, double tol)
{
    const bool ok = err <= tol; /* NaN fails */
    v->checks++;
    if (!ok) v->fails++;
    fprintf(v->log, "verify: tfm %s %s %s (err %.3g, tol %.0e)\n", what, tfm_v_dt_name(dt),
            ok ? "ok" : "FAIL", err, tol);
}

void *tfm_v_alloc(uint64_t bytes)
{
    void *p = NULL;
    CHECK_CUDA(cudaMalloc(&p, (size_t)(bytes ? bytes : 16)));
    return p;
}

void tfm_v_free(void *p)
{
    CHECK_CUDA(cudaDeviceSynchronize()); /* no kernel on g's stream still uses p */
    CHECK_CUDA(cudaFree(p));
}

double *tfm_v_host(int64_t n)
{
    double *h = (double *)calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    CHECK(h != NULL, "out of host memory");
    return h;
}

void *tfm_v_upload(double *h, int64_t n, int dt)
{
    const size_t es = (size_t)MC_DT_SIZE(dt);
    void *tmp = malloc((size_t)n * es + 1);
    CHECK(tmp != NULL, "out of host memory");
    for (int64_t i = 0; i < n; i++) {
        if (dt == MC_DT_F32) {
            ((float *)tmp)[i] = (float)h[i];
            h[i] = (float)h[i];
        } else if (dt == MC_DT_F16) {
            const __half x = __float2half_rn((float)h[i]);
            ((__half *)tmp)[i] = x;
            h[i] = __half2float(x);
        } else {
            const __nv_bfloat16 x = __float2bfloat16_rn((float)h[i]);
            ((__nv_bfloat16 *)tmp)[i] = x;
            h[i] = __bfloat162float(x);
        }
    }
    void *d = tfm_v_alloc((uint64_t)n * es);
    CHECK_CUDA(cudaMemcpy(d, tmp, (size_t)n * es, cudaMemcpyHostToDevice));
    /* The kernels run on g's non-blocking stream, which does not wait for
     * the legacy stream's copies: finish them first. */
    CHECK_CUDA(cudaDeviceSynchronize());
    free(tmp);
    return d;
}

void tfm_v_bytes_to_host(mc_wl_gpu *g, void *h, const void *d, uint64_t bytes)
{
    mc_gpu_sync(g); /* the kernels that wrote d ran on g's non-blocking stream */
    CHECK_CUDA(cudaMemcpy(h, d, (size_t)bytes, cudaMemcpyDeviceToHost));
}

void tfm_v_download(mc_wl_gpu *g, double *h, const void *d, int64_t n, int dt)
{
    float *f = (float *)malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    CHECK(f != NULL, "out of host memory");
    mc_gpu_to_host(g, f, d, n, dt);
    for (int64_t i = 0; i < n; i++) h[i] = f[i];
    free(f);
}

void tfm_v_fill(double *h, int64_t n, double lo, double hi, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        h[i] = lo + (hi - lo) * (double)(*s >> 11) / 9007199254740992.0;
    }
}
