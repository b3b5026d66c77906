/* figure_compare.h: the label of one figure measured in two runs, A and B,
 * in the spirit of nvbench's compare: a change counts only when it exceeds
 * the noise of both runs (docs/RESULTS.md "Comparing two runs").
 *
 * Each side's relative spread is half its [min, max] range over its median:
 * s = (max - min) / 2 / |median|; a figure with n = 1 or no range (the
 * allocator model's exact counts) has s = 0. With r = median_B / median_A:
 *   same       |r - 1| <= max(s_A, s_B), or both are exact and equal
 *              (|r - 1| <= 1e-9, rounding of the printed figures);
 *   higher     |r - 1| exceeds both spreads, the [min, max] ranges do not
 *   lower      overlap, and B's median is above (below) A's;
 *   ambiguous  otherwise: it moved, but within what the ranges allow.
 * When a median is 0 or the medians differ in sign, r is undefined (NaN):
 * same if both medians are 0, higher/lower if the ranges do not overlap,
 * ambiguous otherwise. */
#ifndef MC_FIGURE_COMPARE_H
#define MC_FIGURE_COMPARE_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MC_SAME, MC_HIGHER, MC_LOWER, MC_AMBIGUOUS, MC_LABELS } mc_label;

/* One side's figure: the median and, when has_range, its [min, max]. */
typedef struct {
    double median, min, max;
    bool has_range;
} mc_figure;

/* Relative spread (max - min) / 2 / |median|; 0 without a range; infinity
 * when the median is 0 and the range is not. */
double mc_figure_spread(const mc_figure *f);

/* The label of B against A; *ratio gets B/A (NaN when undefined). */
mc_label mc_figure_label(const mc_figure *a, const mc_figure *b, double *ratio);

/* "same", "higher", "lower", "ambiguous". */
const char *mc_label_name(mc_label label);

#ifdef __cplusplus
}
#endif
#endif
