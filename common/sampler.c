#include "sampler.h"

#include "check.h"
#include "clock.h"

#define MAX_SERIES 16

int mc_sampler_cap(const mc_sampler *p)
{
    int min_n = p->min_n < 1 ? 1 : p->min_n;
    return p->max_n > min_n ? p->max_n : min_n;
}

mc_sampled mc_sample(const mc_sampler *p, int nseries, mc_sample_fn fn, void *ctx, double *x,
                     mc_stats *st)
{
    CHECK(nseries >= 1 && nseries <= MAX_SERIES, "mc_sample: %d series (1..%d)", nseries, MAX_SERIES);
    double (*now)(void) = p->now ? p->now : mc_now_s;
    int min_n = p->min_n < 1 ? 1 : p->min_n, cap = mc_sampler_cap(p);
    int watch = p->nwatch > 0 && p->nwatch < nseries ? p->nwatch : nseries;
    mc_sampled r = {0};
    double out[MAX_SERIES], t0 = now();
    for (;;) {
        fn(ctx, r.n, out);
        for (int s = 0; s < nseries; s++) x[s * cap + r.n] = out[s];
        r.n++;
        r.elapsed_s = now() - t0;
        if (r.n < min_n) continue;
        /* Re-summarised each sample: n is tens, each summary a sort of n. */
        r.noise = 0.0;
        for (int s = 0; s < watch; s++) {
            mc_stats w = mc_stats_of(x + s * cap, (size_t)r.n);
            double nz = mc_stats_noise(&w);
            if (nz > r.noise) r.noise = nz;
        }
        r.settled = r.noise <= p->max_noise || (p->decided && p->decided(ctx, x, cap, r.n));
        if (r.settled || r.n >= cap || r.elapsed_s >= p->budget_s) break;
    }
    for (int s = 0; s < nseries; s++) st[s] = mc_stats_of(x + s * cap, (size_t)r.n);
    return r;
}
