/* linear_stack.c: the checks of a Linear stack's shape (linear_stack.h). */
#include "linear_stack.h"

#include <stdio.h>

int wl_stack_check_shape(int layers, int64_t in, int64_t width, int64_t out, int64_t batch,
                         char *err, size_t len)
{
    if (layers < 2 || layers > MC_WL_MAX_LAYERS) {
        snprintf(err, len, "layers must be from 2 to %d, not %d", MC_WL_MAX_LAYERS, layers);
        return -1;
    }
    const int64_t sz[4] = {in, width, out, batch};
    const char *nm[4] = {"in", "width", "out", "batch"};
    for (int i = 0; i < 4; i++)
        if (sz[i] < 1 || sz[i] > MC_WL_MAX_FEATURES) {
            snprintf(err, len, "%s must be from 1 to %lld, not %lld", nm[i],
                     (long long)MC_WL_MAX_FEATURES, (long long)sz[i]);
            return -1;
        }
    return 0;
}

int wl_stack_check_bytes(int64_t in, int64_t width, int64_t out, int64_t batch, char *err,
                         size_t len)
{
    int64_t widest = in > width ? in : width;
    if (out > widest) widest = out;
    if ((double)widest * (double)widest > 0x1p48 || (double)batch * (double)widest > 0x1p48) {
        snprintf(err, len, "tensor sizes too large");
        return -1;
    }
    return 0;
}
