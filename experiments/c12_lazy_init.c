/* c12_lazy_init.c: C12, does CUDA initialise lazily? A child process (this
 * program re-executed with the internal --child-stage option, common/child.h)
 * makes the CUDA calls one at a time, from calls that only ask something to
 * the calls that need a context, and after each one asks NVML (or nvidia-smi,
 * where NVML cannot be loaded) what the device and the child itself hold.
 * Nothing CUDA runs in the child before its first call: cudart is linked
 * statically and only registers itself at load. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "check_cuda.h"
#include "child.h"
#include "clock.h"
#include "experiment.h"
#include "gpu.h"
#include "stats.h"

static const char *g_child_stage = NULL; /* set only in a child */

static const mc_extra_opt EXTRA[] = {
    {"child-stage", MC_OPT_STRING, &g_child_stage,
     "internal: run as the measured child (calls); not for users"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const mc_experiment EXP = {
    .claim = "C12",
    .key = "lazy_init",
    .title = "device memory and context before and after each of the first CUDA calls of a process",
    .seed_claim = "CUDA initialises lazily: nothing is allocated on the device until the first CUDA call.",
    .method = "A child process (self re-exec) makes, in order: no call (main entry), "
              "cudaRuntimeGetVersion, cudaDriverGetVersion, cudaGetDeviceCount, cudaSetDevice, "
              "cudaFree(0), cudaMalloc(1 byte). After each: nvidia-smi's memory.used (whole device) "
              "minus its value just before the child started, and whether nvidia-smi's "
              "--query-compute-apps lists the child and with how much, both read from NVML "
              "(nvidia-smi's source; nvidia-smi itself where NVML cannot be loaded); each call's "
              "duration and spawn-to-main on the monotonic clock. One child a repeat: at least 2, "
              "then stop as soon as every stage's memory.used delta (to the byte) and whether "
              "compute-apps lists the child are the same in every child so far (the figures are "
              "the driver's allocation granularity: identical or not), else up to --repeats.",
    .verdict_rule = "A stage is charged if its median nvidia-smi memory.used delta exceeds 2 MiB, "
                    "or the child is listed in compute-apps in most runs (counted only where the "
                    "listing shows the child after cudaFree(0)). inconclusive if nvidia-smi "
                    "memory.used is unavailable or cudaFree(0) is not charged; does-not-hold if "
                    "main entry (no CUDA call yet) is charged; holds-partly if a query call "
                    "(cudaRuntimeGetVersion, cudaDriverGetVersion, cudaGetDeviceCount) is charged; "
                    "holds if none of those is and cudaFree(0) is.",
    .flags = 0,
    .default_repeats = 5, /* an upper bound: the stopping rule (MIN_REPEATS) usually ends at 2 */
    .default_warmup = 0,
    .extra = EXTRA,
};

#define MIB 1048576.0
#define NOISE_MIB 2.0 /* memory.used has 1 MiB resolution; other processes move it too */
enum { S_ENTRY, S_RTVER, S_DRVVER, S_COUNT, S_SETDEV, S_FREE0, S_MALLOC, N_STAGES };
static const char *STAGE_NAME[N_STAGES] = {"main_entry",         "cudaRuntimeGetVersion",
                                           "cudaDriverGetVersion", "cudaGetDeviceCount",
                                           "cudaSetDevice",       "cudaFree(0)",
                                           "cudaMalloc(1)"};
#define N_QUERY 4 /* stages 0..3 need no context */
/* The stopping rule: at least MIN_REPEATS children, then stop before
 * --repeats once every memory figure the verdict reads (each stage's
 * memory.used delta, and whether compute-apps lists the child) is the same in
 * every child so far. Why 2 is enough: the deltas are sums of the driver's
 * allocations, which come in its granularity (2 MiB pages and up), and the
 * listing is yes or no; neither scatters around a mean, a figure repeats to
 * the byte or moves by whole granules. Two agreeing children give the same
 * medians, the same worst run and listing shares of exactly 0 or 1, as any
 * number of agreeing children would; one that differs sends the run on to
 * --repeats, where "most runs" and the medians judge it. */
#define MIN_REPEATS 2

/* ================================================================ child */

static void child_stage_done(int k, double call_s)
{
    mc_child_stage st;
    memset(&st, 0, sizeof st);
    snprintf(st.name, sizeof st.name, "%s", STAGE_NAME[k]);
    st.call_s = call_s;
    st.aux = -1;
    mc_child_probe(&st);
    mc_child_print_stage(stdout, &st);
}

static int child_main(const char *mode, int device, double t_entry)
{
    if (strcmp(mode, "calls") != 0) {
        fprintf(stderr, "--child-stage: unknown mode '%s'\n", mode);
        return MC_EXIT_USAGE;
    }
    printf("entry_abs_s %.9f\n", t_entry);
    child_stage_done(S_ENTRY, -1);
    int v = 0, count = 0;
    void *p = NULL;
    double t0 = mc_now_s();
    CHECK_CUDA(cudaRuntimeGetVersion(&v));
    child_stage_done(S_RTVER, mc_now_s() - t0);
    t0 = mc_now_s();
    CHECK_CUDA(cudaDriverGetVersion(&v));
    child_stage_done(S_DRVVER, mc_now_s() - t0);
    t0 = mc_now_s();
    CHECK_CUDA(cudaGetDeviceCount(&count));
    child_stage_done(S_COUNT, mc_now_s() - t0);
    t0 = mc_now_s();
    CHECK_CUDA(cudaSetDevice(device));
    child_stage_done(S_SETDEV, mc_now_s() - t0);
    t0 = mc_now_s();
    CHECK_CUDA(cudaFree(NULL));
    child_stage_done(S_FREE0, mc_now_s() - t0);
    t0 = mc_now_s();
    CHECK_CUDA(cudaMalloc(&p, 1));
    child_stage_done(S_MALLOC, mc_now_s() - t0);
    CHECK_CUDA(cudaFree(p));
    return MC_EXIT_OK;
}

/* =============================================================== parent */

typedef struct {
    int n;                   /* successful children */
    double *dev[N_STAGES];   /* memory.used minus before, bytes; NAN unknown */
    double *proc[N_STAGES];  /* compute-apps entry of the child, bytes; -1 not listed */
    double *call[N_STAGES];  /* the call's duration, s (stage 0: spawn to main) */
} series;

static void run_child(mc_run *run, char *const argv[], const char *const env[], int nvsmi_index,
                      series *s)
{
    static char out[16384];
    mc_child_result r;
    /* right before the child starts, from the source the child's probe reads (NVML, else nvidia-smi) */
    double before = mc_gpu_used_mib(nvsmi_index);
    int rc = mc_child_run(argv[0], argv, env, MC_CHILD_TIMEOUT_S, out, sizeof out, &r);
    mc_child_stage st[N_STAGES];
    int got = rc == 0 ? mc_child_parse_stages(out, st, N_STAGES) : 0;
    double entry = 0;
    if (rc != 0 || r.exit_code != 0 || got != N_STAGES || mc_child_get(out, "entry_abs_s", &entry) != 0) {
        mc_verify_failed(run, "child", "spawn rc %d, exit %d, signal %d, timed out %d, %d of %d "
                         "stage lines", rc, r.exit_code, r.signal, r.timed_out, got, N_STAGES);
        return;
    }
    int i = s->n++;
    for (int k = 0; k < N_STAGES; k++) {
        s->dev[k][i] = before >= 0 && st[k].used_mib >= 0 ? (st[k].used_mib - before) * MIB : NAN;
        s->proc[k][i] = st[k].proc_bytes;
        s->call[k][i] = k == S_ENTRY ? entry - r.spawn_at_s : st[k].call_s;
    }
}

/* Two readings of one figure are the same: equal to the byte, or both unknown. */
static int same_figure(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* The stopping rule (MIN_REPEATS): 1 when at least MIN_REPEATS children ran
 * and each stage's memory.used delta and listing (listed or not) are the same
 * in all of them. */
static int memory_settled(const series *s)
{
    if (s->n < MIN_REPEATS) return 0;
    for (int k = 0; k < N_STAGES; k++)
        for (int i = 1; i < s->n; i++)
            if (!same_figure(s->dev[k][i], s->dev[k][0]) || (s->proc[k][i] >= 0) != (s->proc[k][0] >= 0))
                return 0;
    return 1;
}

/* Rows per stage, findings and the verdict. */
static void conclude(mc_run *run, const series *sp, int dev_known, const char *bus)
{
    const series s = *sp;
    if (s.n == 0) {
        mc_emit_verdict(run, MC_INCONCLUSIVE, "no child run succeeded");
        return;
    }

    /* ---- rows */
    for (int k = 0; k < N_STAGES; k++)
        for (int i = 0; i < s.n; i++) dev_known &= !isnan(s.dev[k][i]);
    double med[N_STAGES], listed[N_STAGES];
    double worst_pre = 0, med_pre = 0, listed_pre = 0; /* over the no-context stages */
    for (int k = 0; k < N_STAGES; k++) {
        char note[160];
        int n_listed = 0;
        double *lb = mc_xmalloc(sizeof(double) * (size_t)s.n);
        for (int i = 0; i < s.n; i++) {
            if (s.proc[k][i] >= 0) lb[n_listed++] = s.proc[k][i];
            if (k < N_QUERY && dev_known && fabs(s.dev[k][i]) / MIB > worst_pre)
                worst_pre = fabs(s.dev[k][i]) / MIB;
        }
        listed[k] = (double)n_listed / s.n;
        mc_stats d = mc_stats_of(s.dev[k], (size_t)s.n);
        med[k] = d.median / MIB;
        if (k < N_QUERY && med[k] > med_pre) med_pre = med[k];
        if (k < N_QUERY && listed[k] > listed_pre) listed_pre = listed[k];
        const char *sn = STAGE_NAME[k];
        snprintf(note, sizeof note, "after %s; nvidia-smi memory.used minus its value before the child", sn);
        if (dev_known) mc_emit(run, "child", "stage", k, "device_used_delta_nvsmi", "bytes", d, "ok", note);
        snprintf(note, sizeof note, "after %s; share of runs in which nvidia-smi --query-compute-apps "
                 "lists the child", sn);
        mc_emit_value(run, "child", "stage", k, "process_listed_share", "ratio", listed[k], note);
        snprintf(note, sizeof note, "after %s; the child's compute-apps used_memory, runs where listed", sn);
        if (n_listed)
            mc_emit(run, "child", "stage", k, "process_used_nvsmi", "bytes",
                    mc_stats_of(lb, (size_t)n_listed), "ok", note);
        if (k == S_ENTRY)
            snprintf(note, sizeof note, "spawn (parent) to main entry (child), monotonic clock");
        else
            snprintf(note, sizeof note, "%s alone, monotonic clock in the child", sn);
        mc_emit(run, "child", "stage", k, k == S_ENTRY ? "spawn_to_main" : "call_time", "s",
                mc_stats_of(s.call[k], (size_t)s.n), "ok", note);
        free(lb);
    }

    /* ---- which call creates the context, and the verdict */
    double call_med[N_STAGES];
    for (int k = 0; k < N_STAGES; k++) call_med[k] = mc_stats_of(s.call[k], (size_t)s.n).median;
    int listing_works = listed[S_FREE0] >= 0.5;
    int charged[N_STAGES], first = -1, first_listed = -1;
    for (int k = 0; k < N_STAGES; k++) {
        charged[k] = (dev_known && med[k] > NOISE_MIB) || (listing_works && listed[k] > 0.5);
        if (charged[k] && first < 0) first = k;
        if (listed[k] > 0.5 && first_listed < 0) first_listed = k;
    }
    mc_emit_finding(run, "Call times (medians of %d children): spawn to main %.1f ms, cudaRuntimeGetVersion "
                    "%.3f ms, cudaDriverGetVersion %.3f ms, cudaGetDeviceCount %.1f ms (driver start), "
                    "cudaSetDevice %.1f ms, cudaFree(0) %.1f ms, cudaMalloc(1) %.3f ms.", s.n,
                    call_med[0] * 1e3, call_med[1] * 1e3, call_med[2] * 1e3, call_med[3] * 1e3,
                    call_med[4] * 1e3, call_med[5] * 1e3, call_med[6] * 1e3);
    if (dev_known)
        mc_emit_finding(run, "First call that charged device memory: %s. memory.used deltas (MiB): entry "
                        "%.0f, after runtime version %.0f, driver version %.0f, device count %.0f, "
                        "cudaSetDevice %.0f, cudaFree(0) %.0f, cudaMalloc(1) %.0f. nvidia-smi lists the child "
                        "from %s on%s.", first >= 0 ? STAGE_NAME[first] : "no stage", med[0], med[1],
                        med[2], med[3], med[4], med[5], med[6],
                        first_listed >= 0 ? STAGE_NAME[first_listed] : "no stage",
                        listing_works ? "" : " (this nvidia-smi does not show the child's pid, e.g. in a "
                        "container: memory.used alone decides)");
    if (!dev_known) {
        mc_emit_verdict(run, MC_INCONCLUSIVE, "nvidia-smi memory.used unavailable (GPU %s): device memory "
                        "before a context cannot be seen from inside the process", bus);
        return;
    }
    int query_charged = charged[S_RTVER] || charged[S_DRVVER] || charged[S_COUNT];
    mc_verdict v = !charged[S_FREE0] ? MC_INCONCLUSIVE : charged[S_ENTRY] ? MC_DOES_NOT_HOLD
                 : query_charged ? MC_HOLDS_PARTLY : MC_HOLDS;
    mc_emit_verdict(run, v, "first charged stage: %s; median memory.used delta at entry %.0f MiB, at most "
                    "%.0f MiB up to cudaGetDeviceCount (worst single run |%.0f| MiB), after cudaSetDevice "
                    "%.0f MiB, after cudaFree(0) %.0f MiB; listed in compute-apps before cudaSetDevice in "
                    "%.0f%% of runs at most (listing %s); n=%d, noise limit %.0f MiB",
                    first >= 0 ? STAGE_NAME[first] : "none", med[0], med_pre, worst_pre, med[4], med[5],
                    100.0 * listed_pre, listing_works ? "works" : "does not show the child", s.n, NOISE_MIB);
}

int main(int argc, char **argv)
{
    double t_entry = mc_now_s();
    mc_options pre;
    char err[256];
    if (mc_options_parse(&pre, argc, argv, EXP.default_repeats, EXP.default_warmup, false, EXTRA,
                         err, sizeof err) == 0 && g_child_stage)
        return child_main(g_child_stage, pre.device, t_entry);

    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv); /* waives (exit 77) without a GPU */
    char self[1024], bus[32], dev_s[16], idx_env[64];
    CHECK(mc_self_exe(self, sizeof self) == 0, "cannot read /proc/self/exe");
    CHECK_CUDA(cudaDeviceGetPCIBusId(bus, (int)sizeof bus, run.opt.device));
    int nvsmi_index = mc_nvsmi_index_of_bus(bus);
    snprintf(dev_s, sizeof dev_s, "%d", run.opt.device);
    snprintf(idx_env, sizeof idx_env, MC_CHILD_NVSMI_ENV "=%d", nvsmi_index);
    const char *env[] = {idx_env, NULL};
    char *argv_child[] = {self, "--child-stage", "calls", "--device", dev_s, NULL};

    int reps = run.opt.quick ? 1 : run.opt.repeats;
    series s;
    memset(&s, 0, sizeof s);
    for (int k = 0; k < N_STAGES; k++) {
        s.dev[k] = mc_xmalloc(sizeof(double) * (size_t)reps);
        s.proc[k] = mc_xmalloc(sizeof(double) * (size_t)reps);
        s.call[k] = mc_xmalloc(sizeof(double) * (size_t)reps);
    }
    for (int r = 0; r < reps; r++) {
        run_child(&run, argv_child, env, nvsmi_index, &s);
        if (r + 1 < reps && memory_settled(&s)) {
            mc_log(&run, "memory.used deltas and listing identical over %d children: stopping after "
                   "%d of %d", s.n, r + 1, reps);
            break;
        }
    }
    conclude(&run, &s, nvsmi_index >= 0, bus);
    for (int k = 0; k < N_STAGES; k++) {
        free(s.dev[k]);
        free(s.proc[k]);
        free(s.call[k]);
    }
    return mc_run_end(&run);
}
