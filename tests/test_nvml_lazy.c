/* Tests of common/nvml_lazy.c and its fall-back in gpu.c. On a machine
 * without the driver (make test's, CI's) NVML cannot be loaded: every query
 * answers -1 with the reason, nothing crashes, and the callers fall back to
 * nvidia-smi, here a fake one on PATH. With a driver, NVML answers instead
 * and the figures are checked for sense. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu.h"
#include "nvml_lazy.h"

static void a_query_fails_cleanly_or_answers(void **state)
{
    (void)state;
    char err[512] = "";
    int ok = mc_nvml_available(err, sizeof err);
    double mib = -7.0;
    long long bytes = -7;
    if (!ok) {
        /* no driver: the reason names what failed, every query says -1 and leaves its output alone */
        assert_true(strstr(err, "libnvidia-ml.so.1") || strstr(err, "nvmlInit"));
        assert_int_equal(mc_nvml_used_mib(0, &mib), -1);
        assert_true(mib == -7.0);
        assert_int_equal(mc_nvml_process_used_bytes((int)getpid(), &bytes), -1);
        assert_int_equal(bytes, -7);
        /* a second call: the load is tried once, the answer is the same */
        assert_int_equal(mc_nvml_available(NULL, 0), 0);
        assert_int_equal(mc_nvml_used_mib(0, &mib), -1);
    } else {
        /* a driver: device 0 exists; this process has no CUDA context, so it is not listed */
        assert_int_equal(mc_nvml_used_mib(0, &mib), 0);
        assert_true(mib >= 0.0);
        assert_int_equal(mc_nvml_process_used_bytes((int)getpid(), &bytes), 0);
        assert_int_equal(bytes, -1);
        /* the figure nvidia-smi prints (whole MiB), where it holds still across the NVML reading */
        for (int i = 0; i < 3; i++) {
            char a[64], b[64];
            if (mc_nvsmi_query_gpu(0, "memory.used", a, sizeof a) != 0) break;
            assert_int_equal(mc_nvml_used_mib(0, &mib), 0);
            if (mc_nvsmi_query_gpu(0, "memory.used", b, sizeof b) != 0 || strcmp(a, b) != 0) continue;
            if (mib < atof(a) - 1.0 || mib > atof(a) + 1.0)
                fail_msg("NVML says %.3f MiB used, nvidia-smi %s MiB", mib, a);
            break;
        }
    }
    assert_int_equal(mc_nvml_used_mib(-1, &mib), -1);
    assert_int_equal(mc_nvml_used_mib(1 << 20, &mib), -1);
}

/* A fake nvidia-smi first on PATH: memory.used 1234 MiB; this process listed
 * with 500 MiB on one GPU and 12 on another. */
static char g_dir[256];
static char *g_old_path;

static int fake_nvsmi_up(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/mc_test_nvml_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    char path[320];
    snprintf(path, sizeof path, "%s/nvidia-smi", g_dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "#!/bin/sh\n"
               "case \"$*\" in\n"
               "  *--query-gpu=memory.used*) echo 1234 ;;\n"
               "  *--query-compute-apps*) echo '1, 7'; echo '%d, 500'; echo '%d, 12' ;;\n"
               "  *) exit 9 ;;\n"
               "esac\n", (int)getpid(), (int)getpid());
    fclose(f);
    chmod(path, 0755);
    const char *old = getenv("PATH");
    g_old_path = strdup(old ? old : "");
    char *np = malloc(strlen(g_dir) + strlen(g_old_path) + 2);
    if (!g_old_path || !np) return -1;
    sprintf(np, "%s:%s", g_dir, g_old_path);
    setenv("PATH", np, 1);
    free(np);
    return 0;
}

static int fake_nvsmi_down(void **state)
{
    (void)state;
    char path[320];
    snprintf(path, sizeof path, "%s/nvidia-smi", g_dir);
    unlink(path);
    rmdir(g_dir);
    if (g_old_path) setenv("PATH", g_old_path, 1);
    free(g_old_path);
    return 0;
}

static void without_nvml_the_figures_come_from_nvidia_smi(void **state)
{
    (void)state;
    if (mc_nvml_available(NULL, 0)) skip(); /* a driver here: NVML answers, the fake is not asked */
    assert_true(mc_gpu_used_mib(0) == 1234.0);
    assert_true(mc_gpu_used_mib(-1) == -1.0);
    /* one line a GPU, summed as NVML's figures are */
    assert_int_equal(mc_nvsmi_process_used_bytes((int)getpid()), 512LL * 1048576);
    assert_int_equal(mc_nvsmi_process_used_bytes(1), 7LL * 1048576);
    assert_int_equal(mc_nvsmi_process_used_bytes((int)getpid() + 1), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_query_fails_cleanly_or_answers),
        cmocka_unit_test_setup_teardown(without_nvml_the_figures_come_from_nvidia_smi, fake_nvsmi_up,
                                        fake_nvsmi_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
