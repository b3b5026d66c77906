#include "verdict.h"

#include <math.h>

const char *mc_verdict_word(mc_verdict v)
{
    switch (v) {
    case MC_HOLDS: return "holds";
    case MC_HOLDS_PARTLY: return "holds-partly";
    case MC_DOES_NOT_HOLD: return "does-not-hold";
    case MC_INCONCLUSIVE: return "inconclusive";
    }
    return "inconclusive";
}

mc_verdict mc_verdict_factor(double measured, double lo, double hi, double tol, double noise)
{
    if (!isfinite(measured) || measured <= 0.0 || !(noise <= MC_VERDICT_MAX_NOISE))
        return MC_INCONCLUSIVE;
    if (measured >= lo * (1.0 - tol) && measured <= hi * (1.0 + tol)) return MC_HOLDS;
    double effect = measured - 1.0;
    double claimed = 0.5 * (lo + hi) - 1.0;
    int same_side = (effect > 0.0 && claimed > 0.0) || (effect < 0.0 && claimed < 0.0);
    if (same_side && fabs(effect) > 2.0 * noise * measured) return MC_HOLDS_PARTLY;
    return MC_DOES_NOT_HOLD;
}

mc_verdict mc_verdict_share(int held, int n)
{
    if (n <= 0) return MC_INCONCLUSIVE;
    if (held >= n) return MC_HOLDS;
    if (held > 0) return MC_HOLDS_PARTLY;
    return MC_DOES_NOT_HOLD;
}
