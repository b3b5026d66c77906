#define _POSIX_C_SOURCE 200809L
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "nvml_lazy.h"

int mc_gpu_open(int device, char *reason, size_t len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(reason, len, "no CUDA device: %s", cudaGetErrorString(e));
        return 0;
    }
    if (count == 0) {
        snprintf(reason, len, "no CUDA device");
        return 0;
    }
    if (device >= count) {
        snprintf(reason, len, "no CUDA device %d (this machine has %d)", device, count);
        return 0;
    }
    e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaFree(NULL); /* create the context now */
    if (e != cudaSuccess) {
        snprintf(reason, len, "CUDA device %d unusable: %s", device, cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

static int run_first_line(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char buf[512] = "";
    char *got = fgets(buf, sizeof buf, p);
    /* Drain the rest so the child never blocks on a full pipe. */
    char sink[256];
    while (fgets(sink, sizeof sink, p)) { }
    int status = pclose(p);
    if (!got || status != 0) return -1;
    buf[strcspn(buf, "\r\n")] = '\0';
    if (buf[0] == '\0' || buf[0] == '[') return -1;
    snprintf(out, len, "%s", buf);
    return 0;
}

int mc_nvsmi_query_gpu(int device, const char *field, char *out, size_t len)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "nvidia-smi --query-gpu=%s --format=csv,noheader,nounits -i %d 2>/dev/null",
             field, device);
    return run_first_line(cmd, out, len);
}

long long mc_nvsmi_process_used_bytes(int pid)
{
    long long bytes = -1;
    if (mc_nvml_process_used_bytes(pid, &bytes) == 0) return bytes; /* NVML answered */
    FILE *p = popen("nvidia-smi --query-compute-apps=pid,used_memory "
                    "--format=csv,noheader,nounits 2>/dev/null", "r");
    if (!p) return -1;
    long long found = -1;
    char line[256];
    while (fgets(line, sizeof line, p)) {
        int qpid = 0;
        long long mib = 0;
        /* one line per GPU the process has a context on, summed as NVML's are */
        if (sscanf(line, "%d, %lld", &qpid, &mib) == 2 && qpid == pid)
            found = (found < 0 ? 0 : found) + mib * 1024 * 1024;
    }
    pclose(p);
    return found;
}

double mc_gpu_used_mib(int nvsmi_index)
{
    double mib = -1.0;
    char buf[64];
    if (nvsmi_index < 0) return -1.0;
    if (mc_nvml_used_mib(nvsmi_index, &mib) == 0) return mib;
    if (mc_nvsmi_query_gpu(nvsmi_index, "memory.used", buf, sizeof buf) != 0) return -1.0;
    return atof(buf);
}

double mc_pcie_rate_Bps(int device, int *gen, int *width)
{
    char g[64], w[64];
    *gen = *width = 0;
    if (mc_nvsmi_query_gpu(device, "pcie.link.gen.max", g, sizeof g) != 0 ||
        mc_nvsmi_query_gpu(device, "pcie.link.width.max", w, sizeof w) != 0)
        return 0.0;
    *gen = atoi(g);
    *width = atoi(w);
    /* Per-lane transfer rate (GT/s) and encoding efficiency by generation. */
    static const double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    if (*gen < 1 || *gen > 6 || *width < 1) return 0.0;
    double eff = *gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
    if (*gen == 6) eff = 242.0 / 256.0; /* FLIT mode with FEC */
    return gts[*gen] * 1e9 * eff / 8.0 * (double)*width;
}
