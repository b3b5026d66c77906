/* optimizer_kernels.cu: the optimizers' updates and GradScaler's unscale
 * over many fp32 tensors per launch (optimizer_step.h), in the arithmetic
 * order of torch.optim's foreach paths: SGD, momentum, Adam (one kernel of
 * every op), AdamW (decay, the moments (lerp, mul + addcmul), then addcdiv
 * with bias corrections; its scalars formed in double as PyTorch's). */
#include <math.h>

#include "check.h"
#include "check_cuda.h"
#include "optimizer_step.h"
#include "wl_kernels.cuh"
#include "wl_profile.h"

/* ------------------------------------------------------------ foreach updates */

#define MT 24 /* tensors per launch: 5 pointers + a length each, < 4 KiB of parameters */

typedef struct {
    float *p[MT], *g[MT], *m[MT], *v[MT];
    int64_t n[MT];
} mt_args;

enum { OP_SGD, OP_MOMENTUM, OP_MOMENTUM_FIRST, OP_ADAM, OP_UNSCALE };

typedef struct {
    float lr, a, b, eps, bc1, bc2_sqrt;
    const float *inv;
    float *found;
} mt_scalars;

__global__ void k_foreach(mt_args t, mt_scalars s, int op)
{
    const int j = blockIdx.y;
    float *p = t.p[j], *gr = t.g[j], *m = t.m[j], *v = t.v[j];
    const int64_t n = t.n[j];
    float inv = op == OP_UNSCALE ? s.inv[0] : 0.0f;
    GRID_STRIDE(i, n) {
        float gi = gr[i];
        switch (op) {
        case OP_SGD: p[i] -= s.lr * gi; break;
        case OP_MOMENTUM_FIRST: m[i] = gi; p[i] -= s.lr * gi; break;
        case OP_MOMENTUM: { float b = s.a * m[i] + gi; m[i] = b; p[i] -= s.lr * b; break; }
        case OP_ADAM: {
            float mi = m[i] + (1.0f - s.a) * (gi - m[i]);          /* lerp_(grad, 1 - beta1) */
            float vi = s.b * v[i] + (1.0f - s.b) * gi * gi;          /* mul_(beta2).addcmul_ */
            m[i] = mi;
            v[i] = vi;
            p[i] -= (s.lr / s.bc1) * mi / (sqrtf(vi) / s.bc2_sqrt + s.eps);
            break;
        }
        case OP_UNSCALE:
            if (!isfinite(gi)) *s.found = 1.0f;
            gr[i] = inv == 1.0f ? gi : gi * inv;
            break;
        }
    }
}

static void foreach(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, float *const *m,
                    float *const *v, const int64_t *n, mt_scalars s, int op)
{
    for (int base = 0; base < nt; base += MT) {
        mt_args a = {};
        int cnt = nt - base < MT ? nt - base : MT;
        int64_t most = 1;
        for (int j = 0; j < cnt; j++) {
            a.p[j] = p ? p[base + j] : NULL;
            a.g[j] = gr[base + j];
            a.m[j] = m ? m[base + j] : NULL;
            a.v[j] = v ? v[base + j] : NULL;
            a.n[j] = n[base + j];
            if (a.n[j] > most) most = a.n[j];
        }
        unsigned bx = blocks_for(most);
        if (bx > 512) bx = 512;
        k_foreach<<<dim3(bx, (unsigned)cnt), THREADS, 0, mc_gpu_stream(g)>>>(a, s, op);
        CHECK_LAUNCH();
    }
}

extern "C" void mc_gpu_sgd(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, const int64_t *n, float lr)
{
    MC_PROF(g, MC_PROF_OPTIMIZER);
    mt_scalars s = {};
    s.lr = lr;
    foreach(g, nt, p, gr, NULL, NULL, n, s, OP_SGD);
}

extern "C" void mc_gpu_momentum(mc_wl_gpu *g, int nt, float *const *p, float *const *gr,
                                float *const *buf, const int64_t *n, float lr, float momentum, bool first)
{
    MC_PROF(g, MC_PROF_OPTIMIZER);
    mt_scalars s = {};
    s.lr = lr;
    s.a = momentum;
    foreach(g, nt, p, gr, buf, NULL, n, s, first ? OP_MOMENTUM_FIRST : OP_MOMENTUM);
}

extern "C" void mc_gpu_adam(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, float *const *m,
                            float *const *v, const int64_t *n, float lr, float beta1, float beta2,
                            float eps, int step)
{
    MC_PROF(g, MC_PROF_OPTIMIZER);
    mt_scalars s = {};
    s.lr = lr;
    s.a = beta1;
    s.b = beta2;
    s.eps = eps;
    s.bc1 = (float)(1.0 - pow((double)beta1, step));
    s.bc2_sqrt = (float)sqrt(1.0 - pow((double)beta2, step));
    foreach(g, nt, p, gr, m, v, n, s, OP_ADAM);
}

extern "C" void mc_gpu_unscale(mc_wl_gpu *g, int nt, float *const *gr, const int64_t *n,
                               const float *inv_scale, float *found)
{
    MC_PROF(g, MC_PROF_OPTIMIZER);
    mt_scalars s = {};
    s.inv = inv_scale;
    s.found = found;
    foreach(g, nt, NULL, gr, NULL, NULL, n, s, OP_UNSCALE);
}

/* ------------------------------------------------------------ AdamW */

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

extern "C" void mc_gpu_adamw(mc_wl_gpu *g, int nt, float *const *p, float *const *gr, float *const *m,
                          float *const *v, const int64_t *n, double lr, double beta1, double beta2,
                          double eps, double weight_decay, int step)
{
    MC_PROF(g, MC_PROF_OPTIMIZER);
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
