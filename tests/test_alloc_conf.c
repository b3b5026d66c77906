/* Tests of the PYTORCH_CUDA_ALLOC_CONF parser (common/alloc/alloc_conf.c,
 * after AllocatorConfig::parseArgs in c10/core/AllocatorConfig.cpp): every
 * key, both forms of roundup_power2_divisions, the keys that are checked and
 * ignored, and bad keys and values with their one-line messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "alloc/alloc_model.h"

#define MiB (1ULL << 20)

static ca_config parsed(const char *s)
{
    ca_config c = ca_config_default();
    char err[512] = "";
    if (ca_conf_parse(s, &c, err, sizeof err) != 0) fail_msg("'%s' refused: %s", s, err);
    return c;
}

static void every_key(void **state)
{
    (void)state;
    ca_config c = parsed("max_split_size_mb:64,max_non_split_rounding_mb:40,"
                         "garbage_collection_threshold:0.6,expandable_segments:True");
    assert_int_equal(c.max_split_size, 64 * MiB);
    assert_int_equal(c.max_non_split_rounding_size, 40 * MiB);
    assert_true(c.gc_threshold == 0.6);
    assert_true(c.expandable_segments);
    assert_int_equal(c.limit_bytes, CA_UNLIMITED); /* not a conf key */
    c = parsed("expandable_segments:False");
    assert_false(c.expandable_segments);
    c = parsed("");
    ca_config d = ca_config_default();
    assert_true(ca_config_equal(&c, &d));
    /* lexArgs drops spaces; the last of a key given twice wins, as in PyTorch */
    c = parsed(" max_split_size_mb : 20 , max_split_size_mb:128 ");
    assert_int_equal(c.max_split_size, 128 * MiB);
    /* checked, no effect on the device allocator's figures */
    c = parsed("release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:True,"
               "pinned_num_register_threads:8,pinned_use_background_threads:False,backend:native");
    assert_true(ca_config_equal(&c, &d));
}

static void roundup_forms(void **state)
{
    (void)state;
    ca_config c = parsed("roundup_power2_divisions:4");
    for (int i = 0; i < CA_ROUNDUP_INTERVALS; i++) assert_int_equal(c.roundup_divisions[i], 4);
    /* The list: intervals in MiB, index log2(MiB) (1 MiB is 0, 256 MiB is 8);
     * the first item also fills the intervals below it; ">" fills from the
     * last one named, that one included (std::fill from last_index), so the
     * 1024:4 below becomes 8, as in PyTorch. */
    c = parsed("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
    for (int i = 0; i <= 8; i++) assert_int_equal(c.roundup_divisions[i], 1);
    assert_int_equal(c.roundup_divisions[9], 2);
    for (int i = 10; i < CA_ROUNDUP_INTERVALS; i++) assert_int_equal(c.roundup_divisions[i], 8);
    c = parsed("roundup_power2_divisions:[1:0,64:16]");
    for (int i = 0; i < 6; i++) assert_int_equal(c.roundup_divisions[i], 0);
    assert_int_equal(c.roundup_divisions[6], 16);
    assert_int_equal(c.roundup_divisions[7], 0);
    c = parsed("roundup_power2_divisions:[>:2]");
    for (int i = 0; i < CA_ROUNDUP_INTERVALS; i++) assert_int_equal(c.roundup_divisions[i], 2);
    /* an interval past 32 GiB is clamped to the last */
    c = parsed("roundup_power2_divisions:[1048576:4]");
    assert_int_equal(c.roundup_divisions[15], 4);
    assert_int_equal(c.roundup_divisions[0], 4);
}

static void format_round_trips(void **state)
{
    (void)state;
    const char *confs[] = {"", "max_split_size_mb:64", "roundup_power2_divisions:[256:1,512:2,>:8]",
                           "garbage_collection_threshold:0.25,expandable_segments:True",
                           "max_non_split_rounding_mb:30,roundup_power2_divisions:2"};
    for (size_t i = 0; i < sizeof confs / sizeof confs[0]; i++) {
        ca_config c = parsed(confs[i]);
        char text[1024];
        ca_conf_format(&c, text, sizeof text);
        ca_config back = parsed(text);
        if (!ca_config_equal(&c, &back)) fail_msg("'%s' came back as '%s'", confs[i], text);
    }
    char text[64];
    ca_config d = ca_config_default();
    ca_conf_format(&d, text, sizeof text);
    assert_string_equal(text, "");
}

/* ------------------------------------------------------------ the table */

/* Variant v (0, 1, 2) of a value other than the default, that PyTorch
 * accepts, for setting s: the ends of each range and one between. */
static void set_other(ca_config *c, const ca_setting *s, int v)
{
    void *f = ca_setting_field(c, s);
    switch (s->kind) {
    case CA_SETTING_BYTES: *(uint64_t *)f = 1000 + (uint64_t)v; break;
    case CA_SETTING_MIB: { /* 21 MiB, 64 MiB, and the most stoi reads */
        static const uint64_t mib[] = {21, 64, 2147483647};
        *(uint64_t *)f = mib[v] * MiB;
        break;
    }
    case CA_SETTING_FRACTION: { /* %.17g must bring each back exactly */
        static const double g[] = {0.1, 0.5, 0.99999999999999989};
        *(double *)f = g[v];
        break;
    }
    case CA_SETTING_DIVISIONS: /* all alike (the N form), then two lists */
        for (int i = 0; i < CA_ROUNDUP_INTERVALS; i++)
            ((uint32_t *)f)[i] = v == 0 ? 4u : v == 1 ? 1u << (i % 5) : i % 3 ? 1u << 30 : 0u;
        break;
    case CA_SETTING_BOOL: *(bool *)f = true; break;
    }
}

/* ca_conf_format then ca_conf_parse gives back what was formatted; the text
 * names the keys in the table's order. */
static void round_trip(const ca_config *c, const char *why)
{
    char text[1024], err[512] = "";
    if (ca_config_check(c, err, sizeof err) != 0) fail_msg("%s: the test's value is refused: %s", why, err);
    int n = ca_conf_format(c, text, sizeof text);
    assert_int_equal(n, (int)strlen(text));
    ca_config back = ca_config_default();
    if (ca_conf_parse(text, &back, err, sizeof err) != 0) fail_msg("%s: '%s' refused: %s", why, text, err);
    if (!ca_config_equal(&back, c)) fail_msg("%s: '%s' came back otherwise", why, text);
    const char *at = text;
    ca_config def = ca_config_default();
    for (size_t k = 0; k < CA_N_SETTINGS; k++) {
        const ca_setting *s = &ca_settings[k];
        if (!s->conf) continue;
        char key[96];
        snprintf(key, sizeof key, "%s:", s->conf);
        const char *p = strstr(text, key);
        if (ca_setting_equal(s, c, &def)) {
            if (p) fail_msg("%s: '%s' names %s, which is at its default", why, text, s->conf);
            continue;
        }
        if (!p || p < at) fail_msg("%s: '%s' lacks %s or names it out of the table's order", why, text, s->conf);
        at = p;
    }
}

static void every_setting_round_trips(void **state)
{
    (void)state;
    char why[128];
    for (int v = 0; v < 3; v++) {
        ca_config all = ca_config_default();
        for (size_t k = 0; k < CA_N_SETTINGS; k++) {
            if (!ca_settings[k].conf) continue;
            ca_config one = ca_config_default();
            set_other(&one, &ca_settings[k], v);
            set_other(&all, &ca_settings[k], v);
            snprintf(why, sizeof why, "%s alone, variant %d", ca_settings[k].conf, v);
            round_trip(&one, why);
        }
        snprintf(why, sizeof why, "every key, variant %d", v);
        round_trip(&all, why);
    }
    ca_config def = ca_config_default();
    round_trip(&def, "the defaults");
}

/* What the code that reads the table relies on. */
static void the_table_is_consistent(void **state)
{
    (void)state;
    ca_config def = ca_config_default();
    char err[256];
    assert_int_equal(ca_config_check(&def, err, sizeof err), 0);
    int keys = 0;
    for (size_t k = 0; k < CA_N_SETTINGS; k++) {
        const ca_setting *s = &ca_settings[k];
        assert_non_null(s->trace ? s->trace : s->conf); /* a name to be set by */
        assert_non_null(s->unit);
        assert_true(s->unit[0] != '\0' && !strchr(s->unit, '\t'));
        assert_string_equal(ca_setting_name(s), s->trace ? s->trace : s->conf);
        if (s->trace) { /* a set line carries bytes; "conf" is the set line of PYTORCH_CUDA_ALLOC_CONF */
            assert_true(s->kind == CA_SETTING_BYTES || s->kind == CA_SETTING_MIB);
            assert_string_not_equal(s->trace, "conf");
        }
        if (s->conf) {
            keys++;
            assert_true(s->kind != CA_SETTING_BYTES); /* no conf form for plain bytes */
        }
        for (size_t j = 0; j < k; j++) {
            const ca_setting *o = &ca_settings[j];
            assert_true(!s->trace || !o->trace || strcmp(s->trace, o->trace) != 0);
            assert_true(!s->conf || !o->conf || strcmp(s->conf, o->conf) != 0);
            assert_true(o->offset != s->offset);
        }
        /* a value other than the default differs from it field-wise */
        ca_config c = def;
        set_other(&c, s, 0);
        assert_false(ca_setting_equal(s, &c, &def));
        assert_false(ca_config_equal(&c, &def));
    }
    assert_true(keys > 0);
    /* the message about an unknown key names every key */
    ca_config c = def;
    char msg[512] = "";
    assert_int_equal(ca_conf_parse("nope:1", &c, msg, sizeof msg), -1);
    for (size_t k = 0; k < CA_N_SETTINGS; k++)
        if (ca_settings[k].conf && !strstr(msg, ca_settings[k].conf))
            fail_msg("'%s' does not name %s", msg, ca_settings[k].conf);
}

static void refused(const char *s, const char *want)
{
    ca_config c = ca_config_default();
    char err[512] = "";
    if (ca_conf_parse(s, &c, err, sizeof err) == 0) fail_msg("'%s' was accepted", s);
    if (!strstr(err, want)) fail_msg("'%s': message '%s' lacks '%s'", s, err, want);
    assert_non_null(strstr(err, "conf: ") == err ? err : NULL);
    assert_null(strchr(err, '\n'));
}

static void bad_keys_and_values(void **state)
{
    (void)state;
    refused("max_split_size_mbs:64", "unknown key 'max_split_size_mbs'");
    refused("foo:1", "unknown key 'foo'");
    refused("max_split_size_mb:19", "must be >= 20");
    refused("max_split_size_mb:abc", "bad value 'abc' for max_split_size_mb");
    refused("max_split_size_mb:20abc", "bad value '20abc'"); /* stoi would read 20 */
    refused("max_split_size_mb:-64", "bad value '-64'");
    refused("max_split_size_mb:99999999999", "out of range");
    refused("max_split_size_mb", "expected ':' after max_split_size_mb");
    refused("max_split_size_mb:", "needs a value");
    refused("max_non_split_rounding_mb:10", "must be >= 20");
    refused("garbage_collection_threshold:1.0", "in (0.0, 1.0)");
    refused("garbage_collection_threshold:0", "in (0.0, 1.0)");
    refused("garbage_collection_threshold:0.5x", "bad value '0.5x'");
    refused("garbage_collection_threshold:nan", "bad value 'nan'");
    refused("garbage_collection_threshold:0x0.8p0", "bad value");
    refused("roundup_power2_divisions:3", "must be a power of two");
    refused("roundup_power2_divisions:0", "must be a power of two");
    refused("roundup_power2_divisions:[256:3]", "0 or a power of two");
    refused("roundup_power2_divisions:[300:2]", "intervals must be powers of two");
    refused("roundup_power2_divisions:[256:2", "no closing ']'");
    refused("roundup_power2_divisions:[256:2;512:4]", "bad value");
    refused("roundup_power2_divisions:[256,2]", "expected ':' after an interval");
    refused("expandable_segments:yes", "True or False");
    refused("expandable_segments:true", "True or False");
    refused("backend:cudaMallocAsync", "different allocator");
    refused("backend:magic", "native or cudaMallocAsync");
    refused("pinned_num_register_threads:3", "power of two");
    refused("max_split_size_mb:64;expandable_segments:True", "bad value");
    refused("max_split_size_mb:64,,expandable_segments:True", "expected a key, found ','");
    refused("max_split_size_mb:64 expandable_segments:True", "bad value"); /* spaces vanish: 64expandable... */
    refused("max_split_size_mb:64\texpandable", "unexpected character 0x09");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_key),
        cmocka_unit_test(roundup_forms),
        cmocka_unit_test(format_round_trips),
        cmocka_unit_test(every_setting_round_trips),
        cmocka_unit_test(the_table_is_consistent),
        cmocka_unit_test(bad_keys_and_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
