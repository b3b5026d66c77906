/* optimizer.c: the optimizers' names, their parser and default learning
 * rates (optimizer.h). */
#include "optimizer.h"

#include <string.h>

static const char *const NAME[MC_WL_NOPT] = {"sgd", "momentum", "adam", "adamw"};
/* What the parser takes, by the last optimizer a model has. */
static const char *const WORDS[MC_WL_NOPT] = {"sgd", "sgd or momentum", "sgd, momentum or adam",
                                              "sgd, momentum, adam or adamw"};

const char *mc_wl_optimizer_name(mc_wl_optimizer o)
{
    return (unsigned)o < MC_WL_NOPT ? NAME[o] : "?";
}

int mc_wl_optimizer_parse(const char *s, mc_wl_optimizer most, mc_wl_optimizer *o)
{
    for (int i = 0; i <= (int)most && i < MC_WL_NOPT; i++)
        if (strcmp(s, NAME[i]) == 0) {
            *o = (mc_wl_optimizer)i;
            return 0;
        }
    return -1;
}

const char *mc_wl_optimizer_words(mc_wl_optimizer most)
{
    return (unsigned)most < MC_WL_NOPT ? WORDS[most] : "?";
}

double mc_wl_optimizer_default_lr(mc_wl_optimizer o)
{
    return o == MC_WL_ADAM || o == MC_WL_ADAMW ? 1e-3 : 0.01;
}
