/* gpu.h: is there a GPU, pick it, and ask nvidia-smi what the runtime does
 * not say (link generation, per-process memory). */
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

/* Device memory (bytes) nvidia-smi charges to process pid, or -1 when it
 * cannot say (no nvidia-smi, no such process, or a container that hides pids). */
long long mc_nvsmi_process_used_bytes(int pid);

/* Theoretical one-way PCIe rate in bytes/s from the link's maximum generation
 * and width (the link drops to a lower generation when idle) (after 128b/130b or 8b/10b encoding), or 0 if unknown. */
double mc_pcie_rate_Bps(int device, int *gen, int *width);

#ifdef __cplusplus
}
#endif
#endif
