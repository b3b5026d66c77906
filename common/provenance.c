#define _POSIX_C_SOURCE 200809L
#include "provenance.h"

#include <ctype.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "csv.h"
#include "gpu.h"

int mc_provenance_put(FILE *fp, const char *key, const char *value)
{
    mc_csv_write_field(fp, key);
    fputc(',', fp);
    mc_csv_write_field(fp, value);
    fputc('\n', fp);
    return 1;
}

static int putf(FILE *fp, const char *key, const char *fmt, long long v)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    return mc_provenance_put(fp, key, buf);
}

/* CUDA encodes versions as 1000 * major + 10 * minor. */
static void cuda_version_text(int v, char *out, size_t len)
{
    snprintf(out, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

static int put_nvsmi(FILE *fp, int device, const char *key, const char *field)
{
    char buf[256];
    if (mc_nvsmi_query_gpu(device, field, buf, sizeof buf) != 0) snprintf(buf, sizeof buf, "unknown");
    return mc_provenance_put(fp, key, buf);
}

/* The host's CPU: PyTorch's launch-bound steps run at its pace, so two
 * runs on the same GPU can differ by it. "model name" of /proc/cpuinfo
 * (x86; "unknown" elsewhere) and the CPUs online. */
static int put_cpu(FILE *fp)
{
    char line[512], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        for (v++; *v == ' ' || *v == '\t'; v++) {}
        snprintf(model, sizeof model, "%s", v);
        model[strcspn(model, "\r\n")] = '\0';
        break;
    }
    if (f) fclose(f);
    if (!*model) snprintf(model, sizeof model, "unknown");
    return mc_provenance_put(fp, "cpu_model", model) + putf(fp, "cpu_count", "%lld", sysconf(_SC_NPROCESSORS_ONLN));
}

int mc_provenance_write(FILE *fp, int device, int argc, char **argv, const char *git_sha)
{
    int rows = mc_provenance_put(fp, "key", "value") - 1;
    char buf[1024];

    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    rows += mc_provenance_put(fp, "utc_time", buf);
    if (gethostname(buf, sizeof buf) != 0) snprintf(buf, sizeof buf, "unknown");
    buf[sizeof buf - 1] = '\0';
    rows += mc_provenance_put(fp, "host", buf);
    rows += put_cpu(fp);
    rows += mc_provenance_put(fp, "git_sha", git_sha && *git_sha ? git_sha : "unknown");
    buf[0] = '\0';
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, "%s%s", i ? " " : "", argv[i]);
    }
    rows += mc_provenance_put(fp, "command_line", buf);

    int v = 0;
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) {
        cuda_version_text(v, buf, sizeof buf);
        rows += mc_provenance_put(fp, "cuda_runtime_version", buf);
    }
    v = 0;
    cudaDriverGetVersion(&v); /* 0 when no driver is installed */
    cuda_version_text(v, buf, sizeof buf);
    rows += mc_provenance_put(fp, "cuda_driver_api_version", v ? buf : "none");

    char reason[512];
    if (device < 0 || !mc_gpu_open(device, reason, sizeof reason)) {
        rows += mc_provenance_put(fp, "gpu_status", device < 0 ? "not asked" : reason);
        return rows;
    }
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
        rows += mc_provenance_put(fp, "gpu_status", "cudaGetDeviceProperties failed");
        return rows;
    }
    rows += mc_provenance_put(fp, "gpu_status", "ok");
    rows += putf(fp, "gpu_index", "%lld", device);
    rows += mc_provenance_put(fp, "gpu_name", p.name);
    snprintf(buf, sizeof buf, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    rows += mc_provenance_put(fp, "gpu_bus_id", buf);
    rows += putf(fp, "gpu_memory_bytes", "%lld", (long long)p.totalGlobalMem);
    snprintf(buf, sizeof buf, "%d.%d", p.major, p.minor);
    rows += mc_provenance_put(fp, "compute_capability", buf);
    rows += putf(fp, "multiprocessors", "%lld", p.multiProcessorCount);
    rows += putf(fp, "l2_cache_bytes", "%lld", p.l2CacheSize);
    rows += putf(fp, "memory_bus_width_bits", "%lld", p.memoryBusWidth);
    rows += put_nvsmi(fp, device, "driver_version", "driver_version");
    rows += put_nvsmi(fp, device, "vbios_version", "vbios_version");
    rows += put_nvsmi(fp, device, "sm_clock_max_mhz", "clocks.max.sm");
    rows += put_nvsmi(fp, device, "memory_clock_max_mhz", "clocks.max.memory");
    rows += put_nvsmi(fp, device, "sm_clock_now_mhz", "clocks.sm");
    rows += put_nvsmi(fp, device, "ecc_mode", "ecc.mode.current");
    rows += put_nvsmi(fp, device, "power_limit_w", "power.limit");
    rows += put_nvsmi(fp, device, "pcie_link_gen_max", "pcie.link.gen.max");
    rows += put_nvsmi(fp, device, "pcie_link_width_max", "pcie.link.width.max");
    return rows;
}

void mc_gpu_slug(int device, char *out, size_t len)
{
    char reason[256];
    struct cudaDeviceProp p;
    if (len == 0) return;
    if (!mc_gpu_open(device, reason, sizeof reason) ||
        cudaGetDeviceProperties(&p, device) != cudaSuccess) {
        snprintf(out, len, "no-gpu");
        return;
    }
    size_t j = 0;
    int dash = 1;
    for (const char *s = p.name; *s && j + 1 < len; s++) {
        if (isalnum((unsigned char)*s)) {
            out[j++] = (char)tolower((unsigned char)*s);
            dash = 0;
        } else if (!dash) {
            out[j++] = '-';
            dash = 1;
        }
    }
    while (j > 0 && out[j - 1] == '-') j--;
    out[j] = '\0';
}
