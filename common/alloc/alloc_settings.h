/* alloc_settings.h: every setting of the allocator model, declared once (an
 * X-macro, as mimalloc declares its statistics, so that the struct, the
 * parsers and the printers cannot drift). From CA_SETTINGS come:
 *   - the fields of ca_config (alloc_model.h) and ca_config_default,
 *     ca_config_equal, ca_config_check (alloc_settings.c);
 *   - the PYTORCH_CUDA_ALLOC_CONF keys ca_conf_parse reads and
 *     ca_conf_format writes (alloc_conf.c);
 *   - a trace's `set NAME BYTES` lines, read by the trace parser and written
 *     by ca_trace_format_settings (trace.c, docs/TRACE.md);
 *   - `build/replay --settings`, the list scripts/snapshot2trace reads.
 * A new setting is one row here and its effect in the model; a new KIND of
 * value also needs its reader, writer and check (alloc_conf.c,
 * alloc_settings.c).
 *
 * X(KIND, CTYPE, FIELD, DIMS, TRACE, CONF, UNIT, DEFAULT)
 *   KIND     a ca_setting_kind: how the value is read, written and checked
 *   CTYPE FIELD DIMS  the ca_config member (DIMS empty, or [N] for an array)
 *   TRACE    its trace line `set TRACE BYTES` (v1), or NULL: a trace carries
 *            it only in `set conf` (v2). Only byte-valued kinds have one.
 *   CONF     its PYTORCH_CUDA_ALLOC_CONF key, or NULL: not a conf key
 *   UNIT     the unit of its conf value, or of its set line when it has no
 *            conf key (set lines are always in bytes)
 *   DEFAULT  its value when unset (PyTorch's default)
 * Rows are in ca_conf_format's order (a string written before this table
 * existed reads the same). Plain C, no includes: alloc_model.h includes it. */
#ifndef MC_ALLOC_SETTINGS_H
#define MC_ALLOC_SETTINGS_H

typedef enum {
    CA_SETTING_BYTES,     /* uint64_t bytes; a set line only */
    CA_SETTING_MIB,       /* uint64_t bytes; conf: whole MiB >= 20 (parseMaxSplitSize):
                             CA_UNLIMITED allowed where it is the default */
    CA_SETTING_FRACTION,  /* double in (0, 1); 0 = unset (parseGarbageCollectionThreshold) */
    CA_SETTING_DIVISIONS, /* uint32_t[CA_ROUNDUP_INTERVALS], each 0 or a power of two;
                             conf: N or [MiB:N,...,>:N] (parseRoundUpPower2Divisions) */
    CA_SETTING_BOOL       /* bool; conf: True or False */
} ca_setting_kind;

#define CA_SETTINGS(X)                                                                            \
    /* set_per_process_memory_fraction: reserved bytes may not exceed this                       \
     * (int(fraction * total_memory)); CA_UNLIMITED when unset. Not a conf key                   \
     * (replay --limit, workload --limit). */                                                    \
    X(CA_SETTING_BYTES, uint64_t, limit_bytes, , "limit", NULL, "bytes", CA_UNLIMITED)            \
    /* max_split_size_mb:N, in bytes (N << 20, N >= 20); CA_UNLIMITED when unset. */              \
    X(CA_SETTING_MIB, uint64_t, max_split_size, , "max_split_size", "max_split_size_mb", "MiB",  \
      CA_UNLIMITED)                                                                               \
    /* max_non_split_rounding_mb:N, in bytes (N << 20, N >= 20); default kLargeBuffer. */         \
    X(CA_SETTING_MIB, uint64_t, max_non_split_rounding_size, , "max_non_split_rounding_size",    \
      "max_non_split_rounding_mb", "MiB", CA_LARGE_BUFFER)                                        \
    /* garbage_collection_threshold:F, F in (0, 1); 0 when unset. Acts only under a              \
     * limit (garbage_collect_cached_blocks needs set_fraction). */                               \
    X(CA_SETTING_FRACTION, double, gc_threshold, , NULL, "garbage_collection_threshold",         \
      "fraction", 0.0)                                                                            \
    /* roundup_power2_divisions: divisions for the sizes in [2^(20+i), 2^(21+i)) (index 0        \
     * also below, 15 also above); 0 = plain 512-byte rounding                                    \
     * (AllocatorConfig::roundup_power2_divisions(size)). */                                     \
    X(CA_SETTING_DIVISIONS, uint32_t, roundup_divisions, [CA_ROUNDUP_INTERVALS], NULL,           \
      "roundup_power2_divisions", "divisions", {0})                                               \
    /* expandable_segments:True */                                                                \
    X(CA_SETTING_BOOL, bool, expandable_segments, , NULL, "expandable_segments", "bool", false)

#endif
