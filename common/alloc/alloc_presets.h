/* alloc_presets.h: the PYTORCH_CUDA_ALLOC_CONF settings build/whatif replays
 * a run under (the table is at the end of alloc_conf.c): the defaults,
 * expandable segments, max_split_size_mb 64/256/1024, roundup_power2_divisions
 * as one number and as a list, and garbage_collection_threshold. */
#ifndef MC_ALLOC_PRESETS_H
#define MC_ALLOC_PRESETS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;  /* short, file-name safe ([A-Za-z0-9_.-]): logs/replay-<name>-<card>.log */
    const char *conf;  /* for ca_conf_parse; "" for the defaults */
    /* Replay on a card with the card's room also as the limit
     * (set_per_process_memory_fraction): garbage collection acts only under one. */
    bool limit_at_capacity;
} ca_conf_preset;

/* The presets in report order; *n gets their count. Each parses with
 * ca_conf_parse (tests/test_alloc_presets.c). */
const ca_conf_preset *ca_conf_presets(size_t *n);

#ifdef __cplusplus
}
#endif
#endif
