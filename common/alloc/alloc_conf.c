/* alloc_conf.c: PYTORCH_CUDA_ALLOC_CONF strings (alloc_model.h,
 * ca_conf_parse), after AllocatorConfig::parseArgs and its parse* helpers in
 * c10/core/AllocatorConfig.cpp (PyTorch 2.11): the same lexer (lexArgs: the
 * characters , : [ ] are tokens of their own, spaces vanish), the same keys,
 * the same ranges and the same meaning of the roundup_power2_divisions list.
 * The keys, and the order ca_conf_format writes them in, are CA_SETTINGS'
 * (alloc_settings.h); here is how each kind of value is read and written.
 * Stricter where PyTorch uses stoi/stod, which read a prefix ("20abc" is 20
 * there): here a value must be a number and nothing more. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_model.h"

#define MAX_TOKENS 256
#define TOKEN_LEN 64

typedef struct {
    char t[MAX_TOKENS][TOKEN_LEN];
    size_t n;
    char *err;
    size_t len;
} lexed;

static int fail(lexed *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(lexed *x, const char *fmt, ...)
{
    int k = snprintf(x->err, x->len, "conf: ");
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < x->len) vsnprintf(x->err + k, x->len - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

/* lexArgs: separators are tokens, other runs of characters (spaces dropped)
 * are tokens. Non-printable characters are refused here. */
static int lex(const char *s, lexed *x)
{
    char buf[TOKEN_LEN];
    size_t b = 0;
    x->n = 0;
    for (const char *p = s;; p++) {
        char c = *p;
        bool sep = c == ',' || c == ':' || c == '[' || c == ']' || c == '\0';
        if (sep && b) {
            if (x->n == MAX_TOKENS) return fail(x, "too many items");
            memcpy(x->t[x->n], buf, b);
            x->t[x->n++][b] = '\0';
            b = 0;
        }
        if (c == '\0') break;
        if (sep) {
            if (x->n == MAX_TOKENS) return fail(x, "too many items");
            x->t[x->n][0] = c;
            x->t[x->n++][1] = '\0';
        } else if (c != ' ') {
            if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
                return fail(x, "unexpected character 0x%02x", (unsigned)(unsigned char)c);
            if (b == TOKEN_LEN - 1) return fail(x, "item '%.20s...' is too long", buf);
            buf[b++] = c;
        }
    }
    return 0;
}

static bool is(const lexed *x, size_t i, const char *s) { return i < x->n && strcmp(x->t[i], s) == 0; }

/* consumeToken */
static int expect(lexed *x, size_t i, char c, const char *after)
{
    char want[2] = {c, '\0'};
    if (!is(x, i, want)) return fail(x, "expected '%c' after %s", c, after);
    return 0;
}

/* A whole decimal number of at most 18 digits (stoi's int range is smaller:
 * max_split_size_mb and the like are also capped where they are used). */
static int number(lexed *x, size_t i, const char *key, uint64_t *v)
{
    if (i >= x->n) return fail(x, "%s needs a value", key);
    const char *t = x->t[i];
    size_t n = strlen(t);
    if (n == 0 || n > 18 || strspn(t, "0123456789") != n)
        return fail(x, "bad value '%s' for %s (a whole number)", t, key);
    *v = strtoull(t, NULL, 10);
    return 0;
}

static int boolean(lexed *x, size_t i, const char *key, bool *v)
{
    if (is(x, i, "True") || is(x, i, "False")) {
        *v = is(x, i, "True");
        return 0;
    }
    return fail(x, "bad value '%s' for %s (True or False)", i < x->n ? x->t[i] : "", key);
}

static bool pow2(uint64_t v) { return v && !(v & (v - 1)); }

/* parseMaxSplitSize / parseMaxNonSplitRoundingSize: MiB, >= kLargeBuffer. */
static int mib_setting(lexed *x, size_t i, const char *key, uint64_t *out)
{
    uint64_t v;
    if (number(x, i, key, &v)) return -1;
    if (v < CA_LARGE_BUFFER / CA_MB) return fail(x, "%s must be >= %llu", key, CA_LARGE_BUFFER / CA_MB);
    if (v > 2147483647ULL) return fail(x, "%s is out of range (at most 2147483647)", key);
    *out = v * CA_MB;
    return 0;
}

/* parseRoundUpPower2Divisions: a power of two for every interval, or a list
 * "[A:B,...,>:B]" with A in MiB (a power of two; its interval is log2(A),
 * clamped), B 0 or a power of two; the first item also fills the intervals
 * below it, ">" fills those from the last one named. Returns the index of
 * the last token used, or -1. */
static long divisions(lexed *x, size_t i, const char *key, uint32_t *d)
{
    if (i >= x->n) return fail(x, "%s needs a value", key);
    if (!is(x, i, "[")) {
        uint64_t v;
        if (number(x, i, key, &v)) return -1;
        if (!pow2(v) || v > (1u << 30)) return fail(x, "%s must be a power of two, not %s", key, x->t[i]);
        for (int k = 0; k < CA_ROUNDUP_INTERVALS; k++) d[k] = (uint32_t)v;
        return (long)i;
    }
    size_t last = 0;
    bool first = true;
    while (++i < x->n && !is(x, i, "]")) {
        size_t at = i;
        if (expect(x, ++i, ':', "an interval")) return -1;
        uint64_t v;
        if (number(x, ++i, key, &v)) return -1;
        if (v != 0 && (!pow2(v) || v > (1u << 30)))
            return fail(x, "%s: divisions must be 0 or a power of two, not %s", key, x->t[i]);
        if (is(x, at, ">")) {
            for (size_t k = last; k < CA_ROUNDUP_INTERVALS; k++) d[k] = (uint32_t)v;
        } else {
            uint64_t mb;
            if (number(x, at, key, &mb)) return -1;
            if (!pow2(mb)) return fail(x, "%s: intervals must be powers of two (MiB), not %s", key, x->t[at]);
            size_t idx = (size_t)(63 - __builtin_clzll(mb));
            if (idx > CA_ROUNDUP_INTERVALS - 1) idx = CA_ROUNDUP_INTERVALS - 1;
            if (first) {
                for (size_t k = 0; k < idx; k++) d[k] = (uint32_t)v;
                first = false;
            }
            d[idx] = (uint32_t)v;
            last = idx;
        }
        if (i + 1 >= x->n) return fail(x, "%s: the list has no closing ']'", key);
        if (!is(x, i + 1, "]") && expect(x, ++i, ',', "a division")) return -1;
    }
    if (i >= x->n) return fail(x, "%s: the list has no closing ']'", key);
    return (long)i;
}

/* parseGarbageCollectionThreshold: a decimal in (0.0, 1.0) (no hexadecimal,
 * no nan or inf). */
static int fraction(lexed *x, size_t i, const char *key, double *out)
{
    char *end;
    errno = 0;
    double g = i < x->n ? strtod(x->t[i], &end) : 0.0;
    if (i >= x->n || end == x->t[i] || *end || errno || !isfinite(g) || strchr(x->t[i], 'x') ||
        strchr(x->t[i], 'X'))
        return fail(x, "bad value '%s' for %s (a decimal number)", i < x->n ? x->t[i] : "", key);
    if (!(g > 0.0 && g < 1.0)) return fail(x, "%s must be in (0.0, 1.0), not %s", key, x->t[i]);
    *out = g;
    return 0;
}

/* The value of setting s at token i, into cfg. Returns the index of the last
 * token used, or -1. */
static long setting_value(lexed *x, size_t i, const ca_setting *s, ca_config *cfg)
{
    void *v = ca_setting_field(cfg, s);
    int rc = -1;
    switch (s->kind) {
    case CA_SETTING_BYTES: rc = fail(x, "%s is not a conf key", s->field); break; /* no row has both */
    case CA_SETTING_MIB: rc = mib_setting(x, i, s->conf, v); break;
    case CA_SETTING_FRACTION: rc = fraction(x, i, s->conf, v); break;
    case CA_SETTING_DIVISIONS: return divisions(x, i, s->conf, v);
    case CA_SETTING_BOOL: rc = boolean(x, i, s->conf, v); break;
    }
    return rc == 0 ? (long)i : -1;
}

static const ca_setting *conf_key(const char *key)
{
    for (size_t k = 0; k < CA_N_SETTINGS; k++)
        if (ca_settings[k].conf && !strcmp(ca_settings[k].conf, key)) return &ca_settings[k];
    return NULL;
}

/* The keys known, for the message about an unknown one: the settings', then
 * those checked and ignored. */
static int unknown_key(lexed *x, const char *key)
{
    char known[512] = "";
    size_t n = 0;
    for (size_t k = 0; k < CA_N_SETTINGS && n < sizeof known; k++)
        if (ca_settings[k].conf) n += (size_t)snprintf(known + n, sizeof known - n, "%s, ", ca_settings[k].conf);
    return fail(x, "unknown key '%s' (known: %sbackend, release_lock_on_cudamalloc, pinned_*)", key, known);
}

int ca_conf_parse(const char *s, ca_config *cfg, char *err, size_t len)
{
    lexed *x = malloc(sizeof *x);
    if (!x) {
        snprintf(err, len, "conf: out of host memory");
        return -1;
    }
    x->err = err;
    x->len = len;
    int rc = lex(s, x);
    for (size_t i = 0; rc == 0 && i < x->n; i++) {
        const char *key = x->t[i];
        bool ignored;
        uint64_t v;
        if (strchr(",:[]", key[0]) && key[1] == '\0') {
            rc = fail(x, "expected a key, found '%s'", key);
            break;
        }
        if (expect(x, ++i, ':', key)) {
            rc = -1;
            break;
        }
        ++i;
        const ca_setting *setting = conf_key(key);
        if (setting) {
            long j = setting_value(x, i, setting, cfg);
            if (j < 0) rc = -1; else i = (size_t)j;
        } else if (!strcmp(key, "release_lock_on_cudamalloc") ||
                   !strcmp(key, "pinned_use_cuda_host_register") ||
                   !strcmp(key, "pinned_use_background_threads")) {
            rc = boolean(x, i, key, &ignored); /* no effect on the device allocator's figures */
        } else if (!strcmp(key, "pinned_num_register_threads")) {
            rc = number(x, i, key, &v);
            if (rc == 0 && (!pow2(v) || v > 128))
                rc = fail(x, "%s must be a power of two <= 128", key);
        } else if (!strcmp(key, "backend")) {
            if (is(x, i, "cudaMallocAsync"))
                rc = fail(x, "backend:cudaMallocAsync is a different allocator (CUDA's own pools); the model is the native one");
            else if (!is(x, i, "native"))
                rc = fail(x, "bad value '%s' for backend (native or cudaMallocAsync)", i < x->n ? x->t[i] : "");
        } else {
            rc = unknown_key(x, key);
        }
        if (rc == 0 && i + 1 < x->n && expect(x, ++i, ',', "a setting")) rc = -1;
    }
    free(x);
    if (rc == 0) {
        char why[160];
        if (ca_config_check(cfg, why, sizeof why) != 0) {
            snprintf(err, len, "conf: %s", why);
            rc = -1;
        }
    }
    return rc;
}

int ca_conf_format(const ca_config *c, char *out, size_t len)
{
    char buf[512] = "";
    size_t n = 0;
#define PUT(...) n += (size_t)snprintf(buf + n, sizeof buf - n, __VA_ARGS__)
    const ca_config def = ca_config_default();
    for (size_t k = 0; k < CA_N_SETTINGS; k++) {
        const ca_setting *s = &ca_settings[k];
        if (!s->conf || ca_setting_equal(s, c, &def)) continue; /* not a conf key, or unset */
        const void *v = ca_setting_cfield(c, s);
        PUT("%s%s:", n ? "," : "", s->conf);
        switch (s->kind) {
        case CA_SETTING_BYTES: break; /* no row has both */
        case CA_SETTING_MIB: PUT("%llu", (unsigned long long)(*(const uint64_t *)v / CA_MB)); break;
        case CA_SETTING_FRACTION: PUT("%.17g", *(const double *)v); break;
        case CA_SETTING_BOOL: PUT("%s", *(const bool *)v ? "True" : "False"); break;
        case CA_SETTING_DIVISIONS: {
            const uint32_t *d = v;
            bool same = true;
            for (int i = 0; i < CA_ROUNDUP_INTERVALS; i++) same &= d[i] == d[0];
            if (same) {
                PUT("%u", d[0]);
            } else { /* every interval named: ">" would also cover the last one named */
                PUT("[");
                for (int i = 0; i < CA_ROUNDUP_INTERVALS; i++)
                    PUT("%llu:%u%s", 1ULL << i, d[i], i + 1 < CA_ROUNDUP_INTERVALS ? "," : "]");
            }
            break;
        }
        }
    }
#undef PUT
    return snprintf(out, len, "%s", buf);
}

/* ================================================================== presets
 * The allocator settings build/whatif replays a run under, in the order its
 * report lists them (alloc_presets.h). Kept apart from the parser above:
 * this is a list of strings the parser reads, not part of it. */

#include "alloc_presets.h"

static const ca_conf_preset presets[] = {
    {"default", "", false},
    {"expandable_segments", "expandable_segments:True", false},
    {"max_split_64MiB", "max_split_size_mb:64", false},
    {"max_split_256MiB", "max_split_size_mb:256", false},
    {"max_split_1024MiB", "max_split_size_mb:1024", false},
    {"roundup_power2_4", "roundup_power2_divisions:4", false},
    {"roundup_power2_list", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", false},
    /* garbage_collect_cached_blocks runs only under set_per_process_memory_fraction */
    {"gc_0.6_limit", "garbage_collection_threshold:0.6", true},
};

const ca_conf_preset *ca_conf_presets(size_t *n)
{
    *n = sizeof presets / sizeof presets[0];
    return presets;
}
