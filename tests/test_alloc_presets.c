/* Tests of the settings build/whatif replays under (ca_conf_presets, at the
 * end of common/alloc/alloc_conf.c): each parses, the names are unique and
 * safe in a file name, the defaults come first (the report compares every
 * setting with them), and exactly the garbage-collection setting replays
 * under a limit (PyTorch collects only under a memory fraction). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "alloc/alloc_model.h"
#include "alloc/alloc_presets.h"

static void each_parses(void **state)
{
    (void)state;
    size_t n;
    const ca_conf_preset *p = ca_conf_presets(&n);
    assert_true(n >= 2);
    assert_string_equal(p[0].name, "default");
    assert_string_equal(p[0].conf, "");
    for (size_t i = 0; i < n; i++) {
        ca_config c = ca_config_default();
        char err[512] = "";
        if (ca_conf_parse(p[i].conf, &c, err, sizeof err) != 0) fail_msg("%s: '%s' refused: %s", p[i].name, p[i].conf, err);
        /* the limit goes with garbage collection and nothing else */
        assert_int_equal(p[i].limit_at_capacity, c.gc_threshold > 0.0);
        ca_config d = ca_config_default();
        assert_int_equal(i == 0, ca_config_equal(&c, &d));
    }
}

static void names_unique_and_safe(void **state)
{
    (void)state;
    size_t n;
    const ca_conf_preset *p = ca_conf_presets(&n);
    for (size_t i = 0; i < n; i++) {
        assert_true(strlen(p[i].name) > 0);
        assert_int_equal(strspn(p[i].name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"),
                         strlen(p[i].name));
        for (size_t k = 0; k < i; k++)
            if (!strcmp(p[i].name, p[k].name)) fail_msg("preset name '%s' twice", p[i].name);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_parses),
        cmocka_unit_test(names_unique_and_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
