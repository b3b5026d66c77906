/* nvml_lazy.c: NVML over dlopen (nvml_lazy.h).
 *
 * The few NVML types used are declared here, after nvml.h, so that the suite
 * builds where the toolkit has no nvml.h (it is the separate nvml-dev
 * component); where it has one, the declarations are checked against it at
 * compile time. Every layout below has been stable across driver versions:
 * each change of a struct came with a new, suffixed function (_v2, _v3), and
 * the library keeps exporting the old ones. Each function is looked up by
 * name, the newest first, and called with the struct of that version. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_lazy.h"

#define LIB_NAME "libnvidia-ml.so.1"

typedef int nvret;                         /* nvmlReturn_t (an enum) */
typedef struct mc_nvml_device_st *nvdev;   /* nvmlDevice_t (an opaque pointer) */
typedef struct {                           /* nvmlMemory_t */
    unsigned long long total, free, used;
} mem_v1;
typedef struct {                           /* nvmlMemory_v2_t */
    unsigned int version;                  /* MEM_V2 */
    unsigned long long total, reserved, free, used;
} mem_v2;
typedef struct {                           /* nvmlProcessInfo_v1_t: the unversioned function's */
    unsigned int pid;
    unsigned long long usedGpuMemory;
} proc_v1;
typedef struct {                           /* nvmlProcessInfo_v2_t (_v2) and nvmlProcessInfo_t (_v3) */
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} proc_v2;

enum { NV_SUCCESS = 0, NV_ERROR_INSUFFICIENT_SIZE = 7 };
#define NV_VALUE_NOT_AVAILABLE (~0ull)     /* usedGpuMemory unknown (nvml.h: (-1)) */
#define MEM_V2 ((unsigned int)(sizeof(mem_v2) | (2u << 24))) /* NVML_STRUCT_VERSION(Memory, 2) */

#if defined(__has_include)
#if __has_include(<nvml.h>)
#include <nvml.h>
#define SAME_LAYOUT(ours, theirs, last)                                                  \
    _Static_assert(sizeof(ours) == sizeof(theirs) &&                                     \
                   offsetof(ours, last) == offsetof(theirs, last), #ours " != " #theirs)
SAME_LAYOUT(mem_v1, nvmlMemory_t, used);
SAME_LAYOUT(mem_v2, nvmlMemory_v2_t, used);
SAME_LAYOUT(proc_v1, nvmlProcessInfo_v1_t, usedGpuMemory);
SAME_LAYOUT(proc_v2, nvmlProcessInfo_v2_t, computeInstanceId);
SAME_LAYOUT(proc_v2, nvmlProcessInfo_t, computeInstanceId);
_Static_assert(MEM_V2 == nvmlMemory_v2, "nvmlMemory_v2");
_Static_assert((int)NV_SUCCESS == (int)NVML_SUCCESS &&
                   (int)NV_ERROR_INSUFFICIENT_SIZE == (int)NVML_ERROR_INSUFFICIENT_SIZE,
               "nvmlReturn_t");
_Static_assert(NV_VALUE_NOT_AVAILABLE == (unsigned long long)NVML_VALUE_NOT_AVAILABLE,
               "NVML_VALUE_NOT_AVAILABLE");
_Static_assert(sizeof(nvdev) == sizeof(nvmlDevice_t) && sizeof(nvret) == sizeof(nvmlReturn_t),
               "nvmlDevice_t, nvmlReturn_t");
#endif
#endif

/* The process-list functions, newest first, and the struct each one fills. */
enum { PROCS_V3, PROCS_V2, PROCS_V1, N_PROCS };
static const char *const PROCS_NAME[N_PROCS] = {
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetComputeRunningProcesses",
};
static const size_t PROCS_SIZE[N_PROCS] = {sizeof(proc_v2), sizeof(proc_v2), sizeof(proc_v1)};

static struct {
    int ok;                                        /* loaded and initialised */
    char err[512];                                 /* why not */
    const char *(*error_string)(nvret);            /* may be NULL */
    nvret (*count)(unsigned int *);
    nvret (*handle)(unsigned int, nvdev *);
    nvret (*mem_v1)(nvdev, mem_v1 *);
    nvret (*mem_v2)(nvdev, mem_v2 *);              /* NULL before driver R510 */
    nvret (*procs)(nvdev, unsigned int *, void *); /* the newest there is; NULL none */
    size_t proc_size;                              /* the struct it fills */
} g;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The first of names[0..n) the library has (a function pointer's bits), or NULL. */
static void *first_symbol(void *lib, const char *const *names, int n, int *which)
{
    for (int i = 0; i < n; i++) {
        void *p = dlsym(lib, names[i]);
        if (p) {
            if (which) *which = i;
            return p;
        }
    }
    return NULL;
}

/* dlsym's address as the type of the pointer it is stored in (POSIX allows the cast). */
#define AS_FN(dst, p) ((dst) = (__typeof__(dst))(p))

static void load(void)
{
    void *lib = dlopen(LIB_NAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(g.err, sizeof g.err, "cannot load " LIB_NAME ": %s", e ? e : "not found");
        return;
    }
    static const char *const INIT[] = {"nvmlInit_v2", "nvmlInit"};
    static const char *const COUNT[] = {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"};
    static const char *const HANDLE[] = {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"};
    static const char *const MEM1[] = {"nvmlDeviceGetMemoryInfo"};
    static const char *const MEM2[] = {"nvmlDeviceGetMemoryInfo_v2"};
    static const char *const ERRSTR[] = {"nvmlErrorString"};
    nvret (*init)(void) = NULL;
    int which = 0;
    AS_FN(init, first_symbol(lib, INIT, 2, NULL));
    AS_FN(g.count, first_symbol(lib, COUNT, 2, NULL));
    AS_FN(g.handle, first_symbol(lib, HANDLE, 2, NULL));
    AS_FN(g.mem_v1, first_symbol(lib, MEM1, 1, NULL));
    AS_FN(g.mem_v2, first_symbol(lib, MEM2, 1, NULL));
    AS_FN(g.error_string, first_symbol(lib, ERRSTR, 1, NULL));
    AS_FN(g.procs, first_symbol(lib, PROCS_NAME, N_PROCS, &which));
    g.proc_size = PROCS_SIZE[which];
    if (!init || !g.count || !g.handle || !g.mem_v1) {
        snprintf(g.err, sizeof g.err, LIB_NAME " lacks nvmlInit, nvmlDeviceGetCount, "
                 "nvmlDeviceGetHandleByIndex or nvmlDeviceGetMemoryInfo");
        dlclose(lib);
        return;
    }
    nvret rc = init();
    if (rc != NV_SUCCESS) {
        const char *s = g.error_string ? g.error_string(rc) : NULL;
        snprintf(g.err, sizeof g.err, "nvmlInit failed: %s (%d)", s ? s : "error", rc);
        dlclose(lib);
        return;
    }
    g.ok = 1; /* the library stays loaded and initialised until the process exits */
}

int mc_nvml_available(char *err, size_t len)
{
    pthread_once(&g_once, load);
    if (!g.ok && err && len) snprintf(err, len, "%s", g.err);
    return g.ok;
}

int mc_nvml_used_mib(int index, double *mib)
{
    nvdev dev;
    if (!mc_nvml_available(NULL, 0) || index < 0 || g.handle((unsigned int)index, &dev) != NV_SUCCESS)
        return -1;
    unsigned long long used;
    if (g.mem_v2) {
        /* This driver's nvidia-smi reports v2's used; should the call fail,
         * v1's (which counts the driver's reserve too) is no stand-in. */
        mem_v2 m = {.version = MEM_V2};
        if (g.mem_v2(dev, &m) != NV_SUCCESS) return -1;
        used = m.used;
    } else {
        mem_v1 m;
        if (g.mem_v1(dev, &m) != NV_SUCCESS) return -1;
        used = m.used;
    }
    *mib = (double)used / 1048576.0; /* not rounded, unlike nvidia-smi's whole MiB */
    return 0;
}

/* Adds pid's figure on dev to *sum (-1: none yet; -2: one not available).
 * 0, or -1 when the call failed. */
static int scan_device(nvdev dev, unsigned int pid, long long *sum)
{
    enum { ON_STACK = 64 };
    proc_v2 stack[ON_STACK]; /* proc_v2 is the larger struct */
    unsigned char *buf = (unsigned char *)stack;
    unsigned int cap = ON_STACK, n = cap;
    nvret rc = g.procs(dev, &n, buf);
    /* More processes than fit: n says how many there are now; a few more may start. */
    for (int tries = 0; rc == NV_ERROR_INSUFFICIENT_SIZE && tries < 4; tries++) {
        if (buf != (unsigned char *)stack) free(buf);
        cap = n + 16;
        buf = malloc((size_t)cap * g.proc_size);
        if (!buf) return -1;
        n = cap;
        rc = g.procs(dev, &n, buf);
    }
    if (rc == NV_SUCCESS) {
        for (unsigned int i = 0; i < n && i < cap; i++) {
            proc_v1 p; /* pid and usedGpuMemory lead both versions, at the same offsets */
            memcpy(&p, buf + (size_t)i * g.proc_size, sizeof p);
            if (p.pid != pid || *sum == -2) continue;
            if (p.usedGpuMemory == NV_VALUE_NOT_AVAILABLE) *sum = -2;
            else *sum = (*sum < 0 ? 0 : *sum) + (long long)p.usedGpuMemory;
        }
    }
    if (buf != (unsigned char *)stack) free(buf);
    return rc == NV_SUCCESS ? 0 : -1;
}

int mc_nvml_process_used_bytes(int pid, long long *bytes)
{
    unsigned int n = 0;
    if (!mc_nvml_available(NULL, 0) || !g.procs || g.count(&n) != NV_SUCCESS) return -1;
    long long sum = -1;
    for (unsigned int i = 0; i < n; i++) {
        nvdev dev;
        if (g.handle(i, &dev) != NV_SUCCESS || scan_device(dev, (unsigned int)pid, &sum) != 0)
            return -1;
    }
    *bytes = sum >= 0 ? sum : -1;
    return 0;
}
