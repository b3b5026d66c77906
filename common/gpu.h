/* gpu.h: is there a GPU, pick it, and ask the driver what the runtime does
 * not say (link generation through nvidia-smi; device and per-process memory
 * through NVML, nvml_lazy.h, or nvidia-smi where NVML cannot be loaded). */
#ifndef MC_GPU_H
#define MC_GPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 1 if CUDA device `device` exists and can be used, after making it
 * current (this creates the context). Otherwise 0, with the reason in
 * reason[0..len) ("no CUDA device: CUDA driver version is insufficient ..."). */
int mc_gpu_open(int device, char *reason, size_t len);

/* Runs `nvidia-smi --query-gpu=FIELD --format=csv,noheader,nounits -i device`
 * and copies the first line to out. Returns 0, or -1 where nvidia-smi is
 * missing, fails, or reports "[N/A]" / "[Not Supported]". */
int mc_nvsmi_query_gpu(int device, const char *field, char *out, size_t len);

/* Device memory (bytes) the driver charges to process pid, summed over the
 * GPUs: NVML's figure (bytes; mc_nvml_process_used_bytes) where NVML can be
 * loaded, else nvidia-smi --query-compute-apps used_memory (whole MiB). -1
 * when it cannot say (neither answers, pid not listed, its figure not
 * available, or a container that hides pids). The name says nvidia-smi: the
 * figure is the one it shows, NVML being its source. */
long long mc_nvsmi_process_used_bytes(int pid);

/* memory.used of the GPU nvidia-smi numbers nvsmi_index (whole device, every
 * process), MiB: NVML's (mc_nvml_used_mib: bytes / 2^20, not rounded) where
 * NVML can be loaded and answers, else nvidia-smi's (whole MiB). -1 when
 * neither can say or nvsmi_index < 0. A difference of two readings is exact
 * only when both came from the same source: take both through this. */
double mc_gpu_used_mib(int nvsmi_index);

/* Theoretical one-way PCIe rate in bytes/s from the link's maximum generation
 * and width (the link drops to a lower generation when idle) (after 128b/130b or 8b/10b encoding), or 0 if unknown. */
double mc_pcie_rate_Bps(int device, int *gen, int *width);

#ifdef __cplusplus
}
#endif
#endif
