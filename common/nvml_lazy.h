/* nvml_lazy.h: the two device-memory figures the suite asks nvidia-smi for,
 * from NVML (the library nvidia-smi itself reads them from), loaded at the
 * first call with dlopen("libnvidia-ml.so.1"). It ships with the driver, not
 * the toolkit, so no program is linked with it and a machine without a driver
 * gets -1 and the reason, never a failed start. One NVML call costs
 * microseconds where one nvidia-smi run costs 50-100 ms; callers fall back to
 * nvidia-smi (gpu.h) where these return -1. Thread-safe. Plain C, no CUDA.
 *
 * (Named nvml_lazy, not nvml: common/ is on the include path, and a
 * common/nvml.h would stand in for NVIDIA's own <nvml.h>.) */
#ifndef MC_NVML_LAZY_H
#define MC_NVML_LAZY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Loads and initialises NVML once per process (nvmlInit_v2; never shut down:
 * the process's exit ends it). 1 when it can be asked; 0 with the reason in
 * err[0..len) ("cannot load libnvidia-ml.so.1: ...", "nvmlInit failed:
 * Driver Not Loaded"); err may be NULL. */
int mc_nvml_available(char *err, size_t len);

/* Memory used on the GPU of NVML index `index` (whole device, every process),
 * in MiB, the figure nvidia-smi prints as memory.used: NVML's index is
 * nvidia-smi's (PCI bus order, CUDA_VISIBLE_DEVICES not applied), and the
 * figure is nvmlDeviceGetMemoryInfo_v2's used (which excludes the memory the
 * driver reserves) where the driver has that function, else
 * nvmlDeviceGetMemoryInfo's, as nvidia-smi does on that driver.
 * *mib = used bytes / 1048576, NOT rounded: nvidia-smi prints whole MiB.
 * 0 and *mib, or -1 (NVML missing or failing, no such index). */
int mc_nvml_used_mib(int index, double *mib);

/* Device memory NVML charges to process pid (the compute processes of every
 * device, summed; nvmlDeviceGetComputeRunningProcesses_v3, else _v2, else the
 * unversioned one), in bytes, where nvidia-smi --query-compute-apps reports
 * whole MiB. 0 when NVML answered: *bytes the figure, or -1 where the pid is
 * not listed (no context, or a container whose pids are not the host's) or
 * its figure is not available. -1 when NVML cannot be asked or a call failed
 * (then ask nvidia-smi). */
int mc_nvml_process_used_bytes(int pid, long long *bytes);

#ifdef __cplusplus
}
#endif
#endif
