/* alloc_settings.c: the rows of CA_SETTINGS (alloc_settings.h) as data, and
 * what follows from them alone: the defaults, equality, and the checks
 * PyTorch's AllocatorConfig applies to each kind of value (alloc_model.h).
 * The text forms are elsewhere: PYTORCH_CUDA_ALLOC_CONF in alloc_conf.c, a
 * trace's set lines in trace.c. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "alloc_model.h"

/* Each field's C type must be its kind's: the parsers and printers reach a
 * field through its offset and the kind. */
#define KIND_MATCHES(kind, field)                                                    \
    _Generic(&((ca_config *)0)->field,                                                \
             uint64_t *: (kind) == CA_SETTING_BYTES || (kind) == CA_SETTING_MIB,      \
             double *: (kind) == CA_SETTING_FRACTION,                                 \
             uint32_t(*)[CA_ROUNDUP_INTERVALS]: (kind) == CA_SETTING_DIVISIONS,       \
             bool *: (kind) == CA_SETTING_BOOL,                                       \
             default: 0)
/* A trace's set lines carry bytes (trace.c writes the field as a uint64_t). */
#define TRACE_IN_BYTES(kind, trace) \
    _Generic((trace), void *: 1, default: (kind) == CA_SETTING_BYTES || (kind) == CA_SETTING_MIB)
#define TYPE_CHECK(kind, ctype, field, dims, trace, conf, unit, def)                        \
    _Static_assert(KIND_MATCHES(kind, field), #field ": its C type is not its kind's");     \
    _Static_assert(TRACE_IN_BYTES(kind, trace), #field ": a set line needs a byte kind");
CA_SETTINGS(TYPE_CHECK)
#undef TYPE_CHECK

const ca_setting ca_settings[CA_N_SETTINGS] = {
#define ROW(kind, ctype, field, dims, trace, conf, unit, def) \
    {kind, trace, conf, unit, #field, offsetof(ca_config, field)},
    CA_SETTINGS(ROW)
#undef ROW
};

/* Static storage: every byte zero but the defaults, padding included. */
static const ca_config defaults = {
#define DEFAULT(kind, ctype, field, dims, trace, conf, unit, def) .field = def,
    CA_SETTINGS(DEFAULT)
#undef DEFAULT
};

ca_config ca_config_default(void) { return defaults; }

const char *ca_setting_name(const ca_setting *s) { return s->trace ? s->trace : s->conf; }

void *ca_setting_field(ca_config *cfg, const ca_setting *s) { return (char *)cfg + s->offset; }

const void *ca_setting_cfield(const ca_config *cfg, const ca_setting *s)
{
    return (const char *)cfg + s->offset;
}

bool ca_setting_equal(const ca_setting *s, const ca_config *x, const ca_config *y)
{
    const void *a = ca_setting_cfield(x, s), *b = ca_setting_cfield(y, s);
    switch (s->kind) {
    case CA_SETTING_BYTES:
    case CA_SETTING_MIB: return *(const uint64_t *)a == *(const uint64_t *)b;
    case CA_SETTING_FRACTION: return *(const double *)a == *(const double *)b;
    case CA_SETTING_DIVISIONS: return memcmp(a, b, CA_ROUNDUP_INTERVALS * sizeof(uint32_t)) == 0;
    case CA_SETTING_BOOL: return *(const bool *)a == *(const bool *)b;
    }
    return false;
}

bool ca_config_equal(const ca_config *x, const ca_config *y)
{
    for (size_t i = 0; i < CA_N_SETTINGS; i++)
        if (!ca_setting_equal(&ca_settings[i], x, y)) return false;
    return true;
}

/* One setting's value as AllocatorConfig would accept it; 0, or -1 with the
 * reason in err. */
static int check_one(const ca_setting *s, const ca_config *c, char *err, size_t len)
{
    const void *v = ca_setting_cfield(c, s), *def = ca_setting_cfield(&defaults, s);
    switch (s->kind) {
    case CA_SETTING_BYTES: /* any byte count: a limit */
    case CA_SETTING_BOOL: return 0;
    case CA_SETTING_MIB: { /* parseMaxSplitSize / parseMaxNonSplitRoundingSize: whole MiB, >= kLargeBuffer */
        uint64_t x = *(const uint64_t *)v;
        if (x == CA_UNLIMITED && *(const uint64_t *)def == CA_UNLIMITED) return 0; /* unset */
        if (x % CA_MB || x < CA_LARGE_BUFFER || x > CA_MAX_REQUEST) {
            snprintf(err, len, "%s must be a whole number of MiB, >= %llu MiB and <= 2^60", ca_setting_name(s),
                     (unsigned long long)(CA_LARGE_BUFFER / CA_MB));
            return -1;
        }
        return 0;
    }
    case CA_SETTING_FRACTION: { /* parseGarbageCollectionThreshold: in (0.0, 1.0); 0 here means unset */
        double x = *(const double *)v;
        if (!(x == 0.0 || (x > 0.0 && x < 1.0))) {
            snprintf(err, len, "%s must be in (0.0, 1.0)", ca_setting_name(s));
            return -1;
        }
        return 0;
    }
    case CA_SETTING_DIVISIONS: /* parseRoundUpPower2Divisions: 0 or a power of two */
        for (int i = 0; i < CA_ROUNDUP_INTERVALS; i++) {
            uint32_t d = ((const uint32_t *)v)[i];
            if (d & (d - 1)) {
                snprintf(err, len, "%s must be 0 or a power of two, not %u", ca_setting_name(s), d);
                return -1;
            }
        }
        return 0;
    }
    snprintf(err, len, "%s: unknown kind of setting", ca_setting_name(s));
    return -1;
}

int ca_config_check(const ca_config *c, char *err, size_t len)
{
    for (size_t i = 0; i < CA_N_SETTINGS; i++)
        if (check_one(&ca_settings[i], c, err, len) != 0) return -1;
    return 0;
}
