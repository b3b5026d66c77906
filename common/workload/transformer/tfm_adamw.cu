/* tfm_adamw.cu: AdamW over many fp32 tensors per launch (tfm_kernels.h),
 * in the arithmetic order of torch.optim.AdamW's foreach path: decay, the
 * moments (lerp, mul + addcmul), then addcdiv with bias corrections. The
 * MLP's mc_gpu_adam has no decoupled weight decay, hence this kernel. */
#include <math.h>

#include "tfm_kernels.cuh"

#define AW_MT 24 /* tensors per launch: 4 pointers + a length each, < 4 KiB of parameters */

typedef struct {
    float *p[AW_MT], *g[AW_MT], *m[AW_MT], *v[AW_MT];
    int64_t n[AW_MT];
} aw_args;

/* Each a float made from a double once, as PyTorch casts a Python float
 * Scalar to the kernel's opmath type: 1 - b2 is fl(1 - 0.999), not
 * 1 - fl(0.999), which is 1.3e-5 off in relative terms. */
typedef struct {
    float decay, one_minus_a, b, one_minus_b, step_size, bc2_sqrt, eps;
} aw_scalars;

__global__ void k_adamw(aw_args t, aw_scalars s)
{
    const int j = blockIdx.y;
    float *p = t.p[j], *m = t.m[j], *v = t.v[j];
    const float *gr = t.g[j];
    const int64_t n = t.n[j];
    GRID_STRIDE(i, n) {
        const float gi = gr[i];
        const float pi = p[i] * s.decay;                       /* _foreach_mul_(params, 1 - lr wd) */
        const float mi = m[i] + s.one_minus_a * (gi - m[i]);  /* lerp_(grad, 1 - beta1) */
        const float vi = s.b * v[i] + s.one_minus_b * gi * gi; /* mul_(beta2).addcmul_(g, g, 1 - beta2) */
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - s.step_size * (mi / (sqrtf(vi) / s.bc2_sqrt + s.eps)); /* addcdiv_ */
    }
}

extern "C" void tfm_adamw(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, float *const *m,
                          float *const *v, const int64_t *n, double lr, double beta1, double beta2,
                          double eps, double weight_decay, int step)
{
    CHECK(step >= 1, "AdamW step %d", step);
    aw_scalars s;
    s.decay = (float)(1.0 - lr * weight_decay);
    s.one_minus_a = (float)(1.0 - beta1);
    s.b = (float)beta2;
    s.one_minus_b = (float)(1.0 - beta2);
    s.eps = (float)eps;
    s.step_size = (float)(lr / (1.0 - pow(beta1, step)));
    s.bc2_sqrt = (float)sqrt(1.0 - pow(beta2, step));
    for (int base = 0; base < nt; base += AW_MT) {
        aw_args a = {};
        const int cnt = nt - base < AW_MT ? nt - base : AW_MT;
        int64_t most = 1;
        for (int j = 0; j < cnt; j++) {
            a.p[j] = p[base + j];
            a.g[j] = gr[base + j];
            a.m[j] = m[base + j];
            a.v[j] = v[base + j];
            a.n[j] = n[base + j];
            if (a.n[j] > most) most = a.n[j];
        }
        unsigned bx = blocks_for(most);
        if (bx > 512) bx = 512;
        k_adamw<<<dim3(bx, (unsigned)cnt), THREADS, 0, mc_gpu_stream(g)>>>(a, s);
        CHECK_LAUNCH();
    }
}
