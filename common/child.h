/* child.h: run this program again as a bounded child process and read back
 * what it printed. C11 (context cost) and C12 (lazy initialisation) measure
 * CUDA start-up, which only a process that has not touched CUDA yet can
 * show: the experiment re-executes itself (/proc/self/exe) with an internal
 * option, the child prints "key value" lines and "stage" lines on stdout, the
 * parent parses them and writes the CSV rows.
 *
 * Child protocol (one record a line, numbers in base units or as named):
 *   KEY VALUE                                   e.g. "entry_to_context_s 0.143"
 *   stage NAME CALL_S USED_MIB PROC_BYTES AUX   see mc_child_stage
 * Unknown figures are written as -1. Plain C (POSIX), no CUDA. Other
 * programs, with their output in files: subprocess.h. */
#ifndef MC_CHILD_H
#define MC_CHILD_H

#include <stddef.h>
#include <stdio.h>

#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The environment variable through which the parent tells the child which
 * nvidia-smi index its CUDA device has (nvidia-smi counts in PCI order, CUDA
 * by default fastest first, so the two can differ; NVML's index is
 * nvidia-smi's). */
#define MC_CHILD_NVSMI_ENV "MC_NVSMI_INDEX"

/* Children that run longer than this are killed (seconds). */
#define MC_CHILD_TIMEOUT_S 60.0

typedef struct {
    int exit_code;      /* the child's exit status; -1 when a signal or the timeout ended it */
    int signal;         /* the signal that ended it, 0 if none */
    int timed_out;      /* 1 when it was killed after timeout_s */
    double spawn_at_s;  /* mc_now_s() just before the spawn: CLOCK_MONOTONIC is system-wide,
                           so a child's own mc_now_s() readings compare with it */
    double wall_s;      /* spawn to reap, monotonic clock, seconds */
} mc_child_result;

/* Path of the running executable (readlink /proc/self/exe). 0 or -1. */
int mc_self_exe(char *buf, size_t len);

/* Full path of an executable `name` found on PATH, into buf. 0 or -1. */
int mc_find_on_path(const char *name, char *buf, size_t len);

/* Runs path with argv (argv[0] included, NULL-terminated) in its own process
 * group, environment = this process's environment with each "NAME=VALUE" of
 * env_set (NULL-terminated; may be NULL) added or replacing NAME. The child's
 * stdout is captured into out[0..cap) (NUL-terminated; the rest is read and
 * dropped); its stderr is this process's. After timeout_s the whole group is
 * killed (SIGKILL). Returns 0 when the child was started and reaped (see r
 * for how it ended), -1 when it could not be started (errno set). */
int mc_child_run(const char *path, char *const argv[], const char *const env_set[],
                 double timeout_s, char *out, size_t cap, mc_child_result *r);

/* Whole-process wall time of argv (argv[0] a path) with hyperfine at hf_path:
 * --warmup warm --runs runs, no shell (-N), so no argument may hold
 * whitespace or quotes. 0 and *st (n = runs; hyperfine's median, min, max,
 * mean, stddev), or -1 (an argument cannot be passed, hyperfine failed or is
 * too old for -N, its CSV unreadable). Bounded by MC_CHILD_TIMEOUT_S. */
int mc_time_hyperfine(const char *hf_path, char *const argv[], const char *const env_set[], int warm,
                      int runs, mc_stats *st);

/* Whole-process wall time of argv, spawn to reap on the monotonic clock, after
 * warm untimed runs. 0 and *st, or -1 when a run failed or exited non-zero. */
int mc_time_fork_exec(char *const argv[], const char *const env_set[], int warm, int runs,
                      mc_stats *st);

/* Finds the line "KEY VALUE" in out; 0 and *value, or -1 if absent. */
int mc_child_get(const char *out, const char *key, double *value);

/* One stage of a child's start-up, measured right after the stage's call. */
typedef struct {
    char name[48];      /* the call, e.g. "cudaFree(0)"; no spaces */
    double call_s;      /* duration of the call, monotonic clock, seconds; -1 none */
    double used_mib;    /* memory.used (whole device, every process), MiB, from NVML
                           (not rounded) or nvidia-smi (whole MiB): mc_gpu_used_mib; -1 unknown */
    double proc_bytes;  /* the child's compute-apps used memory, bytes, from NVML or nvidia-smi
                           (whole MiB): mc_nvsmi_process_used_bytes; -1 when not listed or unknown */
    double aux;         /* experiment-specific (C11: cudaMemGetInfo total - free, bytes); -1 none */
} mc_child_stage;

/* Child side: fills used_mib and proc_bytes (the device given by
 * MC_CHILD_NVSMI_ENV, this process's pid) from NVML, loaded at the first
 * probe (microseconds a probe after that), or from nvidia-smi where NVML
 * cannot be loaded or fails (two nvidia-smi runs, 50-100 ms each). The
 * parent's "before" figure must come from mc_gpu_used_mib too, so that both
 * ends of a delta have the same source. */
void mc_child_probe(mc_child_stage *st);
/* Child side: writes st as one "stage" line and flushes. */
void mc_child_print_stage(FILE *fp, const mc_child_stage *st);
/* Parent side: parses up to max "stage" lines of out, in order. Returns how many. */
int mc_child_parse_stages(const char *out, mc_child_stage *st, int max);

/* nvidia-smi's index of the GPU at PCI bus id `bus_id` (as cudaDeviceGetPCIBusId
 * writes it, "0000:19:00.0"), or -1 where nvidia-smi cannot say. */
int mc_nvsmi_index_of_bus(const char *bus_id);

#ifdef __cplusplus
}
#endif
#endif
