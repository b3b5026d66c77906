/* c21_leak_detection: C21. Does "memory past 1.5x a baseline" tell a leak
 * from a healthy loop? Three loops of the training workload (mlp.h, fp32
 * Adam, PyTorch 2.11's request order): clean, and two that keep something
 * alive every iteration. memory_allocated and memory_reserved after every
 * iteration; the 1.5x rule with three baselines, and a growth rule. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_probe.h"
#include "check.h"
#include "experiment.h"
#include "workload/mlp/mlp.h"

static int iters_opt = 0; /* 0: 50, or 20 with --quick */

static const mc_extra_opt EXTRA[] = {
    {"iterations", MC_OPT_COUNT, &iters_opt, "training iterations per loop (default 50, --quick 20)"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

#define FACTOR 1.5   /* the claim's threshold over the baseline */
#define SUSTAIN 5    /* growth rule: allocated rose in each of the last SUSTAIN iterations */

static const char *validate(const mc_options *o)
{
    int n = iters_opt ? iters_opt : o->quick ? 20 : 50;
    if (n > 100000) return "--iterations must be at most 100000";
    if (n <= o->warmup + 1 || n <= SUSTAIN)
        return "--iterations must exceed --warmup + 1 and 5 (the growth rule's window)";
    return NULL;
}

static const mc_experiment EXP = {
    .claim = "C21",
    .key = "leak_detection",
    .title = "The 1.5x-baseline leak rule on a clean loop and two leaking loops",
    .seed_claim = "Memory growing past 1.5x a baseline across iterations signals a leak.",
    .method = "Three loops of 50 iterations (--iterations; --quick 20) of the training workload "
              "(Linear+ReLU MLP, L=4, H=1024, batch 256, fp32 Adam: its state is created at "
              "iteration 1). clean: the training step alone. leak_graph: each iteration also keeps "
              "that iteration's saved activations alive (x, the 3 ReLU outputs, the output and y: "
              "6 x 1 MiB), as a loss kept with its graph after backward(retain_graph=True), or "
              "outputs kept from a forward run without no_grad. leak_scalar: each iteration keeps "
              "the 4-byte loss (a 512 B block), as losses.append(loss) without .item() (backward "
              "already freed the graph's saved tensors). The kept blocks come from a second "
              "instance of the allocator model on the same backend; allocated and reserved are "
              "the sums. After each iteration (and at iteration 0, after set-up): "
              "memory_allocated and memory_reserved. Rules: flag when allocated > 1.5 x baseline, "
              "baseline = allocated at iteration 0, after iteration 1, or after iteration 1 + "
              "--warmup (default 5); and a growth rule: flag when allocated rose in each of the "
              "last 5 iterations. CUDA backend on a GPU (checked against the model-only run), "
              "host backend with --model-only.",
    .verdict_rule = "On memory_allocated: holds if the 1.5x rule, with every baseline, flags "
                    "leak_graph and leak_scalar within the run and never flags clean; "
                    "does-not-hold if no baseline flags leak_graph, or clean is flagged with a "
                    "baseline taken after iteration 1 or later; otherwise holds-partly (it misses "
                    "a leak with some baseline, e.g. the slow scalar leak, and/or flags the "
                    "optimizer-state jump with the iteration-0 baseline); inconclusive if a loop "
                    "runs out of memory.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 1,
    .default_warmup = 5,
    .extra = EXTRA,
    .validate = validate,
};

enum { CLEAN, LEAK_GRAPH, LEAK_SCALAR, NLOOP };
static const char *const LOOP[NLOOP] = {"clean", "leak_graph", "leak_scalar"};
enum { R_BASE0, R_BASE1, R_BASEW, R_GROWTH, NRULE };
static const char *const RULE[NRULE] = {"base0", "base1", "basewarm", "growth"};
enum { M_ALLOC, M_RESV, NMEAS };
static const char *const MEAS[NMEAS] = {"allocated", "reserved"};

#define LAYERS 4
#define WIDTH 1024
#define BATCH 256
#define SCALAR_BYTES 4

typedef struct {
    bool oom;
    int n;                   /* iterations; arrays hold n + 1 values (index 0: after set-up) */
    double *v[NMEAS];
    int flag[NRULE][NMEAS];  /* first flagged iteration, 0: never */
    double base[3];          /* allocated baselines of R_BASE0..R_BASEW */
    uint64_t leak_per_iter;  /* bytes requested per iteration */
    double growth;           /* allocated bytes gained per iteration after iteration 1 */
} loop_fig;

/* The first iteration the rule flags, or 0. */
static int first_flag(const double *x, int n, int rule, int warm)
{
    if (rule == R_GROWTH) {
        for (int i = SUSTAIN; i <= n; i++) {
            bool rising = true;
            for (int j = i - SUSTAIN + 1; j <= i && rising; j++) rising = x[j] > x[j - 1];
            if (rising) return i;
        }
        return 0;
    }
    int b = rule == R_BASE0 ? 0 : rule == R_BASE1 ? 1 : 1 + warm;
    for (int i = b + 1; i <= n; i++)
        if (x[i] > FACTOR * x[b]) return i;
    return 0;
}

static loop_fig run_loop(mc_run *run, int loop, int n)
{
    loop_fig f;
    memset(&f, 0, sizeof f);
    f.n = n;
    for (int m = 0; m < NMEAS; m++) f.v[m] = mc_xmalloc((size_t)(n + 1) * sizeof(double));
    mc_workload_config c = mc_workload_config_default();
    c.layers = LAYERS;
    c.in = c.width = c.out = WIDTH;
    c.batch = BATCH;
    c.optimizer = MC_WL_ADAM;
    char err[256];
    mc_workload *w = mc_workload_create(&c, run->on_gpu, NULL, err, sizeof err);
    mc_workload *ref = run->on_gpu ? mc_workload_create(&c, false, NULL, err, sizeof err) : NULL;
    CHECK(w != NULL && (ref != NULL || !run->on_gpu), "workload: %s", err);
    mc_probe leak;              /* the kept blocks' pool */
    mc_probe_open(&leak, run->on_gpu, NULL);
    /* What a kept graph holds: x [B,in], the L-1 ReLU outputs [B,H], out and y [B,out]. */
    const int nblk = loop == LEAK_GRAPH ? LAYERS + 2 : loop == LEAK_SCALAR ? 1 : 0;
    const uint64_t blk = loop == LEAK_GRAPH ? (uint64_t)BATCH * WIDTH * 4 : SCALAR_BYTES;
    f.leak_per_iter = (uint64_t)nblk * blk;
    const ca_stats *ws = ca_get_stats(mc_workload_allocator(w));
    f.v[M_ALLOC][0] = (double)ws->allocated_bytes.current;
    f.v[M_RESV][0] = (double)ws->reserved_bytes.current;
    for (int i = 1; i <= n; i++) {
        mc_workload_step_result r, m;
        if (mc_workload_step(w, &r) != MC_WL_OK) {
            f.oom = true;
            f.n = i - 1;
            break;
        }
        if (ref && (mc_workload_step(ref, &m) != MC_WL_OK || m.allocated_end != r.allocated_end ||
                    m.peak_allocated != r.peak_allocated || !isfinite(r.loss)))
            mc_verify_failed(run, LOOP[loop], "iteration %d: GPU allocated %llu peak %llu loss "
                             "%g, model-only %llu peak %llu", i, (unsigned long long)r.allocated_end,
                             (unsigned long long)r.peak_allocated, r.loss,
                             (unsigned long long)m.allocated_end,
                             (unsigned long long)m.peak_allocated);
        for (int k = 0; k < nblk && !f.oom; k++) {
            uint64_t a; /* never freed: the reference the loop keeps */
            f.oom = ca_malloc(leak.a, blk, &a) != CA_OK;
        }
        if (f.oom) {
            f.n = i - 1;
            break;
        }
        mc_probe_snap s = mc_probe_snapshot(&leak);
        f.v[M_ALLOC][i] = (double)(r.allocated_end + s.allocated);
        f.v[M_RESV][i] = (double)(r.reserved_end + s.reserved);
    }
    const char *broken = mc_probe_check(&leak);
    if (broken) mc_verify_failed(run, LOOP[loop], "%s", broken);
    char e2[256];
    if (ca_check_invariants(mc_workload_allocator(w), e2, sizeof e2) != 0)
        mc_verify_failed(run, LOOP[loop], "workload allocator: %s", e2);
    mc_probe_close(&leak);
    mc_workload_destroy(w);
    mc_workload_destroy(ref);
    const int warm = run->opt.warmup;
    for (int r = 0; r < NRULE; r++)
        for (int m = 0; m < NMEAS; m++) f.flag[r][m] = f.oom ? 0 : first_flag(f.v[m], f.n, r, warm);
    f.base[0] = f.v[M_ALLOC][0];
    f.base[1] = f.v[M_ALLOC][1 <= f.n ? 1 : 0];
    f.base[2] = f.v[M_ALLOC][1 + warm <= f.n ? 1 + warm : 0];
    f.growth = f.n > 1 ? (f.v[M_ALLOC][f.n] - f.v[M_ALLOC][1]) / (f.n - 1) : 0.0;
    return f;
}

static void emit_loop(mc_run *run, int loop, const loop_fig *f, int warm)
{
    const char *v = LOOP[loop];
    for (int i = 0; i <= f->n; i++) {
        mc_emit_value(run, v, "iteration", i, "allocated", "bytes", f->v[M_ALLOC][i],
                      i ? "memory_allocated() after the iteration" : "after set-up (weights)");
        mc_emit_value(run, v, "iteration", i, "reserved", "bytes", f->v[M_RESV][i],
                      "memory_reserved()");
    }
    if (f->oom) {
        mc_emit(run, v, "", 0, "iterations", "count", mc_stats_one(f->n), "oom",
                "out of memory before the last iteration");
        return;
    }
    const int bi[3] = {0, 1, 1 + warm};
    for (int b = 0; b < 3; b++)
        mc_emit_value(run, v, "baseline_iteration", bi[b], "threshold_allocated", "bytes",
                      FACTOR * f->base[b], "1.5 x allocated at the baseline iteration");
    mc_emit_value(run, v, "", 0, "leak_per_iteration", "bytes", (double)f->leak_per_iter,
                  "bytes requested and kept per iteration");
    mc_emit_value(run, v, "", 0, "allocated_growth", "bytes/iteration", f->growth,
                  "(allocated after the last iteration - after iteration 1) / (iterations - 1)");
    for (int r = 0; r < NRULE; r++)
        for (int m = 0; m < NMEAS; m++) {
            char metric[48], note[160];
            snprintf(metric, sizeof metric, "flag_%s_%s", RULE[r], MEAS[m]);
            snprintf(note, sizeof note, "first iteration the %s rule flags on %s; 0: never in %d "
                     "iterations", RULE[r], MEAS[m], f->n);
            mc_emit_value(run, v, "", 0, metric, "iteration", f->flag[r][m], note);
        }
}

static void flags_text(const loop_fig *f, int m, char *buf, size_t len)
{
    size_t u = 0;
    for (int r = 0; r < NRULE && u < len; r++) {
        if (f->flag[r][m]) u += (size_t)snprintf(buf + u, len - u, "%s%s at %d", r ? ", " : "",
                                                 RULE[r], f->flag[r][m]);
        else u += (size_t)snprintf(buf + u, len - u, "%s%s never", r ? ", " : "", RULE[r]);
    }
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const int n = iters_opt ? iters_opt : run.opt.quick ? 20 : 50;
    const int warm = run.opt.warmup;
    loop_fig F[NLOOP];
    bool oom = false;
    for (int l = 0; l < NLOOP; l++) {
        mc_log(&run, "%s, %d iterations", LOOP[l], n);
        F[l] = run_loop(&run, l, n);
        emit_loop(&run, l, &F[l], warm);
        oom |= F[l].oom;
    }
    for (int l = 0; l < NLOOP && !oom; l++) {
        char fa[160], fr[160];
        flags_text(&F[l], M_ALLOC, fa, sizeof fa);
        flags_text(&F[l], M_RESV, fr, sizeof fr);
        const loop_fig *f = &F[l];
        mc_emit_finding(&run, "%s: allocated %.2f MiB at iteration 0, %.2f after iteration 1, "
                        "%.2f after iteration %d (+%.0f B/iteration, %.0f B requested); reserved "
                        "%.2f -> %.2f MiB. Flags on allocated: %s; on reserved: %s.", LOOP[l],
                        MC_MIB(f->v[M_ALLOC][0]), MC_MIB(f->v[M_ALLOC][1]), MC_MIB(f->v[M_ALLOC][n]),
                        n, f->growth, (double)f->leak_per_iter, MC_MIB(f->v[M_RESV][1]),
                        MC_MIB(f->v[M_RESV][n]), fa, fr);
    }
    if (oom) {
        mc_emit_verdict(&run, MC_INCONCLUSIVE, "a loop ran out of memory");
        for (int l = 0; l < NLOOP; l++)
            for (int m = 0; m < NMEAS; m++) free(F[l].v[m]);
        return mc_run_end(&run);
    }
    const loop_fig *cl = &F[CLEAN], *lg = &F[LEAK_GRAPH], *ls = &F[LEAK_SCALAR];
    if (!ls->flag[R_BASE1][M_ALLOC] && ls->growth > 0) {
        double need = (FACTOR - 1.0) * ls->base[1] / ls->growth;
        mc_emit_finding(&run, "leak_scalar keeps %.0f B per iteration (a 512 B block per 4 B "
                        "loss) against a baseline of %.2f MiB: the 1.5x rule would need about %.0f "
                        "iterations to see it; the growth rule saw it at iteration %d.", ls->growth,
                        MC_MIB(ls->base[1]), need, ls->flag[R_GROWTH][M_ALLOC]);
    }
    if (cl->flag[R_BASE0][M_ALLOC])
        mc_emit_finding(&run, "clean is flagged at iteration %d with the iteration-0 baseline: "
                        "Adam creates exp_avg and exp_avg_sq (2x the weights) and the first GEMMs "
                        "create cuBLAS workspaces in iteration 1, so allocated goes from %.2f to "
                        "%.2f MiB once, then stays flat.", cl->flag[R_BASE0][M_ALLOC],
                        MC_MIB(cl->v[M_ALLOC][0]), MC_MIB(cl->v[M_ALLOC][1]));

    bool all_base_exact = true, graph_any = false, clean_late = false;
    for (int b = R_BASE0; b <= R_BASEW; b++) {
        bool exact = lg->flag[b][M_ALLOC] && ls->flag[b][M_ALLOC] && !cl->flag[b][M_ALLOC];
        all_base_exact &= exact;
        graph_any |= lg->flag[b][M_ALLOC] != 0;
        if (b != R_BASE0) clean_late |= cl->flag[b][M_ALLOC] != 0;
    }
    mc_verdict v = all_base_exact             ? MC_HOLDS
                 : !graph_any || clean_late   ? MC_DOES_NOT_HOLD
                                              : MC_HOLDS_PARTLY;
    mc_emit_verdict(&run, v,
        "1.5x rule on allocated over %d iterations, first flag (0 = never) with baselines at "
        "iteration 0 / 1 / %d: clean %d/%d/%d, leak_graph %d/%d/%d, leak_scalar %d/%d/%d; the "
        "growth rule (rose in each of the last %d iterations): clean %d, leak_graph %d, "
        "leak_scalar %d.", n, 1 + warm, cl->flag[R_BASE0][M_ALLOC], cl->flag[R_BASE1][M_ALLOC],
        cl->flag[R_BASEW][M_ALLOC], lg->flag[R_BASE0][M_ALLOC], lg->flag[R_BASE1][M_ALLOC],
        lg->flag[R_BASEW][M_ALLOC], ls->flag[R_BASE0][M_ALLOC], ls->flag[R_BASE1][M_ALLOC],
        ls->flag[R_BASEW][M_ALLOC], SUSTAIN, cl->flag[R_GROWTH][M_ALLOC],
        lg->flag[R_GROWTH][M_ALLOC], ls->flag[R_GROWTH][M_ALLOC]);
    for (int l = 0; l < NLOOP; l++)
        for (int m = 0; m < NMEAS; m++) free(F[l].v[m]);
    return mc_run_end(&run);
}
