#include "figure_compare.h"

#include <math.h>

/* Figures that print equal at the CSV's 10 significant digits are equal. */
#define MC_EXACT_TOLERANCE 1e-9

double mc_figure_spread(const mc_figure *f)
{
    if (!f->has_range || f->max <= f->min) return 0.0;
    if (f->median == 0.0) return INFINITY;
    return (f->max - f->min) / 2.0 / fabs(f->median);
}

/* Range of a side: [min, max] where known, else the median alone. */
static double lo(const mc_figure *f) { return f->has_range ? fmin(f->min, f->median) : f->median; }
static double hi(const mc_figure *f) { return f->has_range ? fmax(f->max, f->median) : f->median; }

static bool ranges_apart(const mc_figure *a, const mc_figure *b)
{
    return hi(a) < lo(b) || hi(b) < lo(a);
}

mc_label mc_figure_label(const mc_figure *a, const mc_figure *b, double *ratio)
{
    double r = NAN;
    if (a->median != 0.0 && (a->median > 0) == (b->median > 0) && b->median != 0.0) r = b->median / a->median;
    *ratio = r;
    mc_label moved = b->median > a->median ? MC_HIGHER : MC_LOWER;
    if (isnan(r)) {
        if (a->median == b->median) return MC_SAME;
        return ranges_apart(a, b) ? moved : MC_AMBIGUOUS;
    }
    double d = fabs(r - 1.0);
    double sa = mc_figure_spread(a), sb = mc_figure_spread(b);
    if (d <= fmax(fmax(sa, sb), MC_EXACT_TOLERANCE)) return MC_SAME;
    if (d > sa && d > sb && ranges_apart(a, b)) return moved;
    return MC_AMBIGUOUS;
}

const char *mc_label_name(mc_label label)
{
    static const char *const names[MC_LABELS] = {"same", "higher", "lower", "ambiguous"};
    return label >= 0 && label < MC_LABELS ? names[label] : "?";
}
