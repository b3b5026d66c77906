#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int mc_parse_int(const char *s, long min, long max, int *out)
{
    if (!s || !*s) return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end != '\0' || v < min || v > max || v > INT_MAX || v < INT_MIN) return -1;
    *out = (int)v;
    return 0;
}

int mc_parse_bytes(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9') return -1;
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    static const struct { const char *suffix; unsigned shift; } units[] = {
        {"", 0}, {"K", 10}, {"KiB", 10}, {"M", 20}, {"MiB", 20}, {"G", 30}, {"GiB", 30},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].suffix) != 0) continue;
        if (v == 0 || v > (UINT64_MAX >> units[i].shift)) return -1;
        *out = v << units[i].shift;
        return 0;
    }
    return -1;
}

static int usage_error(char *err, size_t errlen, const char *fmt, const char *arg)
{
    snprintf(err, errlen, fmt, arg);
    return MC_EXIT_USAGE;
}

static const mc_extra_opt *find_extra(const mc_extra_opt *extra, const char *name)
{
    for (; extra && extra->name; extra++)
        if (strcmp(extra->name, name) == 0) return extra;
    return NULL;
}

static int parse_extra(const mc_extra_opt *x, const char *val, char *err, size_t errlen)
{
    switch (x->kind) {
    case MC_OPT_FLAG:
        *(bool *)x->dst = true;
        return 0;
    case MC_OPT_COUNT:
        if (mc_parse_int(val, 1, INT_MAX, (int *)x->dst) != 0)
            return usage_error(err, errlen, "--%s needs a whole number >= 1", x->name);
        return 0;
    case MC_OPT_BYTES:
        if (mc_parse_bytes(val, (uint64_t *)x->dst) != 0)
            return usage_error(err, errlen, "--%s needs a byte count >= 1 (suffix K, M or G allowed)", x->name);
        return 0;
    case MC_OPT_STRING:
        if (!val || !*val) return usage_error(err, errlen, "--%s needs a non-empty value", x->name);
        *(const char **)x->dst = val;
        return 0;
    }
    return usage_error(err, errlen, "--%s: unknown option kind", x->name);
}

int mc_options_parse(mc_options *o, int argc, char **argv, int default_repeats,
                     int default_warmup, bool allow_model_only,
                     const mc_extra_opt *extra, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->repeats = default_repeats;
    o->warmup = default_warmup;
    err[0] = '\0';

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0)
            return usage_error(err, errlen, "unexpected argument '%s' (see --help)", a);
        const char *name = a + 2;
        const char *val = (i + 1 < argc) ? argv[i + 1] : NULL;

        if (!strcmp(name, "help")) { o->help = true; continue; }
        if (!strcmp(name, "list")) { o->list = true; continue; }
        if (!strcmp(name, "quick")) { o->quick = true; continue; }
        if (!strcmp(name, "model-only")) {
            if (!allow_model_only)
                return usage_error(err, errlen, "%s: this experiment has no model-only mode", a);
            o->model_only = true;
            continue;
        }
        const mc_extra_opt *x = find_extra(extra, name);
        bool takes_value = !strcmp(name, "device") || !strcmp(name, "repeats") ||
                           !strcmp(name, "warmup") || !strcmp(name, "out") ||
                           (x && x->kind != MC_OPT_FLAG);
        if (!takes_value && !x)
            return usage_error(err, errlen, "unknown option '%s' (see --help)", a);
        if (takes_value && !val)
            return usage_error(err, errlen, "%s needs a value", a);

        int rc = 0;
        if (!strcmp(name, "device")) {
            if (mc_parse_int(val, 0, 1023, &o->device) != 0)
                rc = usage_error(err, errlen, "--device needs a device number >= 0, not '%s'", val);
        } else if (!strcmp(name, "repeats")) {
            if (mc_parse_int(val, 1, 1000000, &o->repeats) != 0)
                rc = usage_error(err, errlen, "--repeats needs a whole number from 1 to 1000000, not '%s'", val);
        } else if (!strcmp(name, "warmup")) {
            if (mc_parse_int(val, 0, 1000000, &o->warmup) != 0)
                rc = usage_error(err, errlen, "--warmup needs a whole number from 0 to 1000000, not '%s'", val);
        } else if (!strcmp(name, "out")) {
            if (!*val) rc = usage_error(err, errlen, "--out needs a folder%s", "");
            o->out_dir = val;
        } else {
            rc = parse_extra(x, val, err, errlen);
        }
        if (rc) return rc;
        if (takes_value) i++;
    }
    return 0;
}
