/* Tests of common/cublas_lazy.c: every cuBLAS and cuBLASLt function the
 * suite calls resolves in the toolkit's libraries (no GPU needed to load
 * them), a call goes through to the library, and a missing symbol is
 * reported, not called. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <cublas_v2.h>

#include "cublas_lazy.h"

static void every_wrapped_function_resolves(void **state)
{
    (void)state;
    int n = 0;
    for (const mc_cublas_symbol *s = mc_cublas_symbols; s->name; s++, n++) {
        char err[640] = "";
        void *p = mc_cublas_try_symbol(s->lib, s->name, err, sizeof err);
        if (!p) fail_msg("%s: %s", s->name, err);
    }
    assert_int_equal(n, 19);
}

static void a_call_reaches_the_library(void **state)
{
    (void)state;
    /* cublasGetStatusName needs no handle and no GPU. */
    assert_string_equal(cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED),
                        "CUBLAS_STATUS_NOT_INITIALIZED");
    assert_string_equal(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
}

static void a_missing_symbol_is_an_error(void **state)
{
    (void)state;
    char err[640] = "";
    assert_null(mc_cublas_try_symbol(MC_CUBLASLT_LIB, "cublasLtNoSuchFunction", err, sizeof err));
    assert_non_null(strstr(err, "has no cublasLtNoSuchFunction"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_wrapped_function_resolves),
        cmocka_unit_test(a_call_reaches_the_library),
        cmocka_unit_test(a_missing_symbol_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
