/* optimizer_ref.c: the optimizers' updates in float64 (optimizer_ref.h). */
#include "optimizer_ref.h"

#include <math.h>

void mc_opt_ref_sgd(double *p, const double *g, int64_t n, double lr)
{
    for (int64_t i = 0; i < n; i++) p[i] -= lr * g[i];
}

void mc_opt_ref_momentum(double *p, const double *g, double *buf, int64_t n, double lr,
                         double momentum, bool first)
{
    for (int64_t i = 0; i < n; i++) {
        buf[i] = first ? g[i] : momentum * buf[i] + g[i];
        p[i] -= lr * buf[i];
    }
}

void mc_opt_ref_adam(double *p, const double *g, double *m, double *v, int64_t n, double lr,
                     double beta1, double beta2, double eps, int t)
{
    double bc1 = 1 - pow(beta1, t), bc2s = sqrt(1 - pow(beta2, t));
    for (int64_t i = 0; i < n; i++) {
        m[i] += (1 - beta1) * (g[i] - m[i]);
        v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
        p[i] -= lr / bc1 * m[i] / (sqrt(v[i]) / bc2s + eps);
    }
}

void mc_opt_ref_adamw(double *p, const double *g, double *m, double *v, int64_t n, double lr,
                      double beta1, double beta2, double eps, double weight_decay, int t)
{
    const double bc1 = 1.0 - pow(beta1, t), bc2 = 1.0 - pow(beta2, t);
    for (int64_t i = 0; i < n; i++) {
        p[i] *= 1.0 - lr * weight_decay;
        m[i] = beta1 * m[i] + (1.0 - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i];
        p[i] -= lr / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + eps);
    }
}
