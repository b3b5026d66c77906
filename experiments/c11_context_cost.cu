/* c11_context_cost.cu: C11, what the CUDA context costs in device memory and
 * time before any tensor, stage by stage, with lazy and eager module loading.
 *
 * The context of the measuring process must not exist when the "before"
 * figure is taken, so every measurement runs in a child: this program
 * re-executes itself (/proc/self/exe) with the internal --child-stage option;
 * the child prints one "stage" line per step (common/child.h), the parent
 * writes the rows. The parent holds a context of its own (mc_run_begin opens
 * the GPU); it is constant while a child runs, so deltas remove it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cublas_v2.h>
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
     "internal: run as the measured child (staged|context); not for users"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const mc_experiment EXP = {
    .claim = "C11",
    .key = "context_cost",
    .title = "device memory and time the CUDA context, a cuBLAS handle and the first kernels cost",
    .seed_claim = "The CUDA context costs about 1000 MiB of device memory before any tensor.",
    .method = "Child processes (self re-exec, CUDA_MODULE_LOADING=LAZY and =EAGER) step through "
              "context creation (cudaSetDevice+cudaFree(0)), cublasCreate (its time includes loading "
              "libcublas, which the suite opens at the first cuBLAS call), a first empty kernel, "
              "three 64x64 fp32 buffers (48 KiB) and a first cublasSgemm; after each step "
              "nvidia-smi's memory.used (whole device, minus its value just before the child "
              "started) and the child's compute-apps entry, both read from NVML (nvidia-smi's "
              "source; nvidia-smi itself where NVML cannot be loaded); in-process cudaMemGetInfo deltas "
              "from the context step; each step's call time and main-entry-to-context time on "
              "the monotonic clock. Staged children, LAZY and EAGER interleaved, one of each a "
              "repeat: at least 2 repeats, then stop as soon as every stage's memory.used delta of "
              "both modes is identical to the byte across the repeats so far (the figures are the "
              "driver's allocation granularity: identical or not), else up to --repeats. "
              "Whole-process start-up (context only; not in the rule), --repeats runs per mode after "
              "--warmup runs shared by both modes, with hyperfine, or fork+exec+wait on the "
              "monotonic clock where hyperfine is missing or in --quick (1 run, no warm-up).",
    .verdict_rule = "M = median nvidia-smi memory.used added by context creation (LAZY, the "
                    "default). inconclusive if nvidia-smi cannot say or 1.4826*MAD/median of M > 0.5; "
                    "holds if 700 MiB <= M <= 1300 MiB; holds-partly if M >= 100 MiB and LAZY "
                    "after the first SGEMM, EAGER after context or EAGER after the first SGEMM "
                    "lands in 700-1300 MiB; does-not-hold otherwise.",
    .flags = 0,
    .default_repeats = 3, /* the memory figures repeat to the byte, so the stopping rule
                             (MIN_REPEATS) usually ends at 2; EAGER children take ~2 s each */
    .default_warmup = 1,
    .extra = EXTRA,
};

#define MIB 1048576.0
enum { S_BEFORE, S_CONTEXT, S_CUBLAS, S_KERNEL, S_BUFFERS, S_SGEMM, N_STAGES };
static const char *STAGE_NAME[N_STAGES] = {"before", "context", "cublas_handle",
                                            "first_kernel", "buffers_48KiB", "first_sgemm"};
/* The stopping rule for the staged children: at least MIN_REPEATS of each
 * mode, then stop before --repeats once every memory figure the verdict reads
 * (memory.used minus its value before the child, every stage, both modes) is
 * identical across the repeats so far. Why 2 is enough: those figures are sums
 * of the driver's allocations, which come in its granularity (2 MiB pages and
 * up), not a measurement with a continuous scatter; a figure either repeats to
 * the byte or moves by whole granules. Two children that agree to the byte
 * give noise exactly 0, as any number of agreeing children would; one that
 * differs sends the run on to --repeats, where the noise test judges it. */
#define MIN_REPEATS 2
static const char *MODE[2] = {"LAZY", "EAGER"};
static const char *MODE_VARIANT[2] = {"lazy", "eager"};

/* ================================================================ child */

static __global__ void c11_empty_kernel(void) { }

/* Ends a stage: nvidia-smi figures, cudaMemGetInfo used (total - free), one line. */
static void child_stage_done(const char *name, double call_s)
{
    mc_child_stage st;
    memset(&st, 0, sizeof st);
    snprintf(st.name, sizeof st.name, "%s", name);
    st.call_s = call_s;
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    st.aux = (double)(total_b - free_b);
    mc_child_probe(&st);
    mc_child_print_stage(stdout, &st);
}

static int child_main(const char *mode, int device, double t_entry)
{
    int staged = strcmp(mode, "staged") == 0;
    if (!staged && strcmp(mode, "context") != 0) {
        fprintf(stderr, "--child-stage: unknown mode '%s'\n", mode);
        return MC_EXIT_USAGE;
    }
    double t0 = mc_now_s();
    CHECK_CUDA(cudaSetDevice(device));
    CHECK_CUDA(cudaFree(NULL)); /* the context exists after this */
    double t1 = mc_now_s();
    printf("entry_to_context_s %.9g\n", t1 - t_entry);
    if (!staged) return MC_EXIT_OK;
    child_stage_done(STAGE_NAME[S_CONTEXT], t1 - t0);

    cublasHandle_t h;
    t0 = mc_now_s();
    CHECK_CUBLAS(cublasCreate(&h));
    child_stage_done(STAGE_NAME[S_CUBLAS], mc_now_s() - t0);

    t0 = mc_now_s();
    c11_empty_kernel<<<1, 1>>>();
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    child_stage_done(STAGE_NAME[S_KERNEL], mc_now_s() - t0);

    enum { N = 64 };
    static float ha[N * N], hb[N * N], hc[N * N];
    for (int i = 0; i < N * N; i++) { ha[i] = 1.0f; hb[i] = 2.0f; hc[i] = -1.0f; }
    float *a, *b, *c;
    t0 = mc_now_s();
    CHECK_CUDA(cudaMalloc((void **)&a, sizeof ha));
    CHECK_CUDA(cudaMalloc((void **)&b, sizeof hb));
    CHECK_CUDA(cudaMalloc((void **)&c, sizeof hc));
    CHECK_CUDA(cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, hb, sizeof hb, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(c, hc, sizeof hc, cudaMemcpyHostToDevice)); /* poison */
    child_stage_done(STAGE_NAME[S_BUFFERS], mc_now_s() - t0);

    const float one = 1.0f, zero = 0.0f;
    t0 = mc_now_s();
    CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, N, b, N, &zero, c, N));
    CHECK_CUDA(cudaDeviceSynchronize());
    child_stage_done(STAGE_NAME[S_SGEMM], mc_now_s() - t0);

    /* Every element is the sum of N products 1 * 2: exact in fp32. */
    CHECK_CUDA(cudaMemcpy(hc, c, sizeof hc, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N * N; i++) bad += hc[i] != 2.0f * N;
    printf("verify_bad %d\n", bad);
    CHECK_CUBLAS(cublasDestroy(h));
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(c));
    return MC_EXIT_OK;
}

/* =============================================================== parent */

typedef struct {
    int n;                          /* successful child runs */
    double *dev[N_STAGES];          /* nvidia-smi memory.used minus before, bytes; NAN unknown */
    double *proc[N_STAGES];         /* the child's compute-apps entry, bytes; NAN not listed */
    double *mgi[N_STAGES];          /* cudaMemGetInfo used minus at context, bytes */
    double *call[N_STAGES];         /* the stage's call, seconds */
    double *entry_ctx;              /* main entry to context ready, seconds */
} series;

static void series_init(series *s, int reps)
{
    memset(s, 0, sizeof *s);
    for (int k = 0; k < N_STAGES; k++) {
        s->dev[k] = (double *)mc_xmalloc(sizeof(double) * (size_t)reps);
        s->proc[k] = (double *)mc_xmalloc(sizeof(double) * (size_t)reps);
        s->mgi[k] = (double *)mc_xmalloc(sizeof(double) * (size_t)reps);
        s->call[k] = (double *)mc_xmalloc(sizeof(double) * (size_t)reps);
    }
    s->entry_ctx = (double *)mc_xmalloc(sizeof(double) * (size_t)reps);
}

static void series_free(series *s)
{
    for (int k = 0; k < N_STAGES; k++) {
        free(s->dev[k]);
        free(s->proc[k]);
        free(s->mgi[k]);
        free(s->call[k]);
    }
    free(s->entry_ctx);
}

/* One staged child; appends to s. Returns 0, or -1 (a failed row was written). */
static int run_staged(mc_run *run, const char *self, char *const argv[], const char *const env[],
                      int nvsmi_index, int mode, series *s)
{
    static char out[16384];
    mc_child_result r;
    /* right before the child starts, from the source the child's probe reads (NVML, else nvidia-smi) */
    double before = mc_gpu_used_mib(nvsmi_index);
    int rc = mc_child_run(self, argv, env, MC_CHILD_TIMEOUT_S, out, sizeof out, &r);
    mc_child_stage st[N_STAGES];
    int got = rc == 0 ? mc_child_parse_stages(out, st, N_STAGES - 1) : 0;
    double bad = -1.0, ectx = -1.0;
    if (rc != 0 || r.exit_code != 0 || got != N_STAGES - 1 ||
        mc_child_get(out, "verify_bad", &bad) != 0 || mc_child_get(out, "entry_to_context_s", &ectx) != 0) {
        mc_verify_failed(run, MODE_VARIANT[mode], "staged child: spawn rc %d, exit %d, signal %d, "
                         "timed out %d, %d of %d stage lines", rc, r.exit_code, r.signal,
                         r.timed_out, got, N_STAGES - 1);
        return -1;
    }
    if (bad != 0.0) {
        mc_verify_failed(run, MODE_VARIANT[mode], "first SGEMM (64x64, ones times twos): %g of "
                         "4096 elements differ from 128", bad);
        return -1;
    }
    int i = s->n++;
    s->entry_ctx[i] = ectx;
    s->dev[S_BEFORE][i] = before >= 0.0 ? 0.0 : NAN;
    s->proc[S_BEFORE][i] = NAN;
    s->mgi[S_BEFORE][i] = s->call[S_BEFORE][i] = 0.0;
    for (int k = S_CONTEXT; k < N_STAGES; k++) {
        const mc_child_stage *c = &st[k - 1];
        s->dev[k][i] = before >= 0.0 && c->used_mib >= 0.0 ? (c->used_mib - before) * MIB : NAN;
        s->proc[k][i] = c->proc_bytes >= 0.0 ? c->proc_bytes : NAN;
        s->mgi[k][i] = c->aux - st[0].aux;
        s->call[k][i] = c->call_s;
    }
    return 0;
}

/* Two readings of one figure are the same: equal to the byte, or both unknown. */
static int same_figure(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* The stopping rule (MIN_REPEATS): 1 when both modes have at least
 * MIN_REPEATS children and each stage's memory.used delta is the same in all
 * of a mode's children so far. */
static int memory_settled(const series s[2])
{
    for (int m = 0; m < 2; m++) {
        if (s[m].n < MIN_REPEATS) return 0;
        for (int k = 0; k < N_STAGES; k++)
            for (int i = 1; i < s[m].n; i++)
                if (!same_figure(s[m].dev[k][i], s[m].dev[k][0])) return 0;
    }
    return 1;
}

/* Stats of x[0..n) when every value is known (not NAN), else n = 0. */
static mc_stats known_stats(const double *x, int n)
{
    for (int i = 0; i < n; i++)
        if (isnan(x[i])) return mc_stats_of(x, 0);
    return mc_stats_of(x, (size_t)n);
}

/* The rows of one loading mode; dev_st gets the memory.used stats per stage. */
static void emit_series(mc_run *run, int m, const series *x, mc_stats *dev_st)
{
    const char *v = MODE_VARIANT[m];
    char note[160];
    for (int k = 0; k < N_STAGES; k++) dev_st[k] = mc_stats_of(NULL, 0);
    if (x->n == 0) return;
    for (int k = 0; k < N_STAGES; k++) {
        const char *sn = STAGE_NAME[k];
        dev_st[k] = known_stats(x->dev[k], x->n);
        snprintf(note, sizeof note, "%s; nvidia-smi memory.used minus its value before the child", sn);
        if (dev_st[k].n)
            mc_emit(run, v, "stage", k, "device_used_delta_nvsmi", "bytes", dev_st[k], "ok", note);
        if (k == S_BEFORE) continue;
        mc_stats p = known_stats(x->proc[k], x->n);
        snprintf(note, sizeof note, "%s; nvidia-smi --query-compute-apps used_memory of the child", sn);
        if (p.n) mc_emit(run, v, "stage", k, "process_used_nvsmi", "bytes", p, "ok", note);
        snprintf(note, sizeof note, "%s; in-process cudaMemGetInfo (total-free) minus its value after "
                 "the context", sn);
        if (k > S_CONTEXT)
            mc_emit(run, v, "stage", k, "device_used_delta_memgetinfo", "bytes",
                    known_stats(x->mgi[k], x->n), "ok", note);
        snprintf(note, sizeof note, "%s; the call alone, monotonic clock in the child", sn);
        mc_emit(run, v, "stage", k, "stage_time", "s", known_stats(x->call[k], x->n), "ok", note);
    }
    mc_emit(run, v, "", 0, "entry_to_context", "s", known_stats(x->entry_ctx, x->n), "ok",
            "child's main() entry to cudaFree(0) returned, monotonic clock");
}

/* Findings and the verdict from the medians of both loading modes. */
static void conclude(mc_run *run, const series *s, mc_stats dev_st[2][N_STAGES],
                     const double *startup_med)
{
    if (s[0].n == 0 || s[1].n == 0) {
        mc_emit_verdict(run, MC_INCONCLUSIVE, "no staged child succeeded (LAZY %d, EAGER %d runs)",
                        s[0].n, s[1].n);
        return;
    }
    double med[2][N_STAGES], call[2][N_STAGES], mgi_tail[2];
    for (int m = 0; m < 2; m++) {
        for (int k = 0; k < N_STAGES; k++) {
            med[m][k] = dev_st[m][k].n ? dev_st[m][k].median / MIB : -1.0;
            call[m][k] = mc_stats_of(s[m].call[k], (size_t)s[m].n).median;
        }
        mgi_tail[m] = mc_stats_of(s[m].mgi[S_SGEMM], (size_t)s[m].n).median / MIB;
    }
    double M = med[0][S_CONTEXT];
    if (!dev_st[0][S_SGEMM].n || !dev_st[1][S_SGEMM].n) {
        mc_emit_finding(run, "context creation took %.3f s (LAZY) and %.3f s (EAGER); from context to first "
                        "SGEMM cudaMemGetInfo saw +%.0f MiB (LAZY) and +%.0f MiB (EAGER).", call[0][1],
                        call[1][1], mgi_tail[0], mgi_tail[1]);
        mc_emit_verdict(run, MC_INCONCLUSIVE, "nvidia-smi memory.used unavailable: the memory before a "
                        "context cannot be seen from inside a process (cudaMemGetInfo needs the context)");
        return;
    }
    for (int m = 0; m < 2; m++)
        mc_emit_finding(run, "%s: context +%.0f MiB (%.3f s), cuBLAS handle +%.0f MiB (%.3f s), first kernel "
                        "+%.0f MiB, 48 KiB of buffers +%.0f MiB, first SGEMM +%.0f MiB (%.3f s): %.0f MiB in all "
                        "before any real tensor (nvidia-smi memory.used, medians of %d children); cudaMemGetInfo "
                        "saw +%.0f MiB from context to first SGEMM.", MODE[m], med[m][1], call[m][1],
                        med[m][2] - med[m][1], call[m][2], med[m][3] - med[m][2], med[m][4] - med[m][3],
                        med[m][5] - med[m][4], call[m][5], med[m][5], s[m].n, mgi_tail[m]);
    mc_emit_finding(run, "EAGER loads every kernel of a module when the module is loaded (cuBLAS's own "
                    "kernels when cublasCreate first initialises it); LAZY loads each kernel at its first "
                    "launch. EAGER minus LAZY: %+.0f MiB after the context, %+.0f MiB after the first SGEMM; "
                    "whole-process start-up %.3f s (LAZY) vs %.3f s (EAGER).", med[1][1] - med[0][1],
                    med[1][5] - med[0][5], startup_med[0], startup_med[1]);
    double noise = mc_stats_noise(&dev_st[0][S_CONTEXT]);
    int in_range = M >= 700 && M <= 1300;
    int other = (med[0][5] >= 700 && med[0][5] <= 1300) || (med[1][1] >= 700 && med[1][1] <= 1300) ||
                (med[1][5] >= 700 && med[1][5] <= 1300);
    mc_verdict v = noise > MC_VERDICT_MAX_NOISE ? MC_INCONCLUSIVE : in_range ? MC_HOLDS
                 : (M >= 100 && other) ? MC_HOLDS_PARTLY : MC_DOES_NOT_HOLD;
    mc_emit_verdict(run, v, "claim ~1000 MiB; context (LAZY) +%.0f MiB (noise %.2f, n=%d); LAZY after "
                    "first SGEMM +%.0f MiB; EAGER after context +%.0f MiB, after first SGEMM +%.0f MiB; "
                    "range 700-1300 MiB", M, noise, s[0].n, med[0][5], med[1][1], med[1][5]);
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
    if (nvsmi_index < 0)
        mc_log(&run, "nvidia-smi cannot see GPU %s: memory rows from cudaMemGetInfo only", bus);
    snprintf(dev_s, sizeof dev_s, "%d", run.opt.device);
    snprintf(idx_env, sizeof idx_env, MC_CHILD_NVSMI_ENV "=%d", nvsmi_index);
    const char *env[2][3] = {{"CUDA_MODULE_LOADING=LAZY", idx_env, NULL},
                             {"CUDA_MODULE_LOADING=EAGER", idx_env, NULL}};
    char *staged_argv[] = {self, (char *)"--child-stage", (char *)"staged", (char *)"--device", dev_s,
                           NULL};
    char *ctx_argv[] = {self, (char *)"--child-stage", (char *)"context", (char *)"--device", dev_s,
                        NULL};

    /* ---- memory and call time, stage by stage; modes interleaved against drift;
     * at most reps repeats, fewer where the stopping rule (MIN_REPEATS) ends them */
    int reps = run.opt.quick ? 1 : run.opt.repeats;
    series s[2];
    series_init(&s[0], reps);
    series_init(&s[1], reps);
    for (int r = 0; r < reps; r++) {
        for (int m = 0; m < 2; m++)
            run_staged(&run, self, staged_argv, env[m], nvsmi_index, m, &s[m]);
        if (r + 1 < reps && memory_settled(s)) {
            mc_log(&run, "memory.used deltas identical over %d LAZY and %d EAGER children: stopping "
                   "after %d of %d repeats", s[0].n, s[1].n, r + 1, reps);
            break;
        }
    }

    mc_stats dev_st[2][N_STAGES];
    for (int m = 0; m < 2; m++) emit_series(&run, m, &s[m], dev_st[m]);

    /* ---- whole-process start-up: exec, context, exit */
    char hf[1024];
    int have_hf = mc_find_on_path("hyperfine", hf, sizeof hf) == 0;
    if (!have_hf)
        mc_log(&run, "hyperfine not found on PATH: timing whole processes with fork+exec+wait "
               "(monotonic clock) instead");
    else if (run.opt.quick)
        mc_log(&run, "--quick: timing whole processes with fork+exec+wait (monotonic clock), not hyperfine");
    /* Context only: conclude() names the medians in a finding, the verdict does
     * not read them. The --warmup runs are shared: they go before the first
     * mode's timed runs only, since both modes exec the same binary and
     * libraries (a context-only child loads no cuBLAS) and what a warm-up run
     * warms (page cache, the driver's first open) is the same for both; the
     * staged children of both modes have just run as well. */
    double startup_med[2] = {-1, -1};
    int warm = run.opt.quick ? 0 : run.opt.warmup;
    for (int m = 0; m < 2; m++) {
        mc_stats st;
        const char *method = "fork_exec_monotonic";
        int ok = -1;
        if (have_hf && !run.opt.quick) {
            ok = mc_time_hyperfine(hf, ctx_argv, env[m], warm, run.opt.repeats, &st);
            if (ok == 0) method = "hyperfine";
            else mc_log(&run, "hyperfine failed (%s): fork+exec+wait instead", MODE[m]);
        }
        if (ok != 0) ok = mc_time_fork_exec(ctx_argv, env[m], warm, run.opt.quick ? 1 : run.opt.repeats, &st);
        if (ok == 0) warm = 0; /* warmed: the other mode's runs are all timed */
        char metric[64];
        snprintf(metric, sizeof metric, "process_startup_context_%s", method);
        if (ok == 0) {
            mc_emit(&run, MODE_VARIANT[m], "", 0, metric, "s", st, "ok",
                    "whole process: exec, cudaSetDevice+cudaFree(0), exit");
            startup_med[m] = st.median;
        } else {
            mc_verify_failed(&run, MODE_VARIANT[m], "whole-process timing: a context-only child failed");
        }
    }

    conclude(&run, s, dev_st, startup_med);
    series_free(&s[0]);
    series_free(&s[1]);
    return mc_run_end(&run);
}
