/* Tests of the PYTORCH_CUDA_ALLOC_CONF parser (common/alloc/alloc_conf.c,
 * after AllocatorConfig::parseArgs in c10/core/AllocatorConfig.cpp): every
 * key, both forms of roundup_power2_divisions, the keys that are checked and
 * ignored, and bad keys and values with their one-line messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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
        cmocka_unit_test(bad_keys_and_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
