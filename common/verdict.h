/* verdict.h: the four verdict words and the shared rules that compute them
 * from measured figures. A verdict is never written by hand. */
#ifndef MC_VERDICT_H
#define MC_VERDICT_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MC_HOLDS,          /* right direction and size */
    MC_HOLDS_PARTLY,   /* right direction, wrong size, or only in some range */
    MC_DOES_NOT_HOLD,
    MC_INCONCLUSIVE    /* noise larger than the effect, or the GPU cannot show it */
} mc_verdict;

const char *mc_verdict_word(mc_verdict v);

/* Noise above this share of the figure makes the figure unusable. */
#define MC_VERDICT_MAX_NOISE 0.5

/* A claimed factor of lo..hi (e.g. "2-3x faster": 2, 3; "cuts to 60%": 0.6,
 * 0.6) against a measured factor whose relative noise is noise (mc_stats_noise:
 * 1.4826*MAD/median).
 *   inconclusive  noise > MC_VERDICT_MAX_NOISE, or measured not finite/positive
 *   holds         measured in [lo*(1-tol), hi*(1+tol)]
 *   holds-partly  measured on the same side of 1 as the claim, and its
 *                 distance from 1 exceeds 2*noise*measured (a real effect)
 *   does-not-hold otherwise (no effect beyond noise, or the other way) */
mc_verdict mc_verdict_factor(double measured, double lo, double hi, double tol, double noise);

/* Of n cases (sizes, shapes), `held` showed the claim: all → holds, some →
 * holds-partly, none → does-not-hold; n == 0 → inconclusive. */
mc_verdict mc_verdict_share(int held, int n);

#ifdef __cplusplus
}
#endif
#endif
