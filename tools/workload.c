/* workload: the suite's training workload from the command line (DESIGN.md
 * "The training workload, build/workload"; flags in common/workload_args.h).
 * One CSV row per step on stdout (MC_WORKLOAD_CSV_HEADER), diagnostics on
 * stderr. On a GPU it trains for real, every tensor from the caching-
 * allocator model over cudaMalloc; --model-only runs the same requests over
 * the host backend. --verify runs the GPU arithmetic check (make test-gpu).
 * --profile: after the CSV's steps one more, its GPU time by kind on stderr
 * (and in --profile-csv FILE), from CUDA events around each GPU operation.
 * --program seed000-c07: seed 000's C07 program, one row per function.
 *
 * Exit: 0 ran (an out-of-memory step is a row with status oom), 1 --verify
 * failed, 2 usage or an unwritable trace or profile CSV, 3 CUDA error, 77
 * no CUDA device. */
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "check_cuda.h"
#include "gpu.h"
#include "workload/mlp/mlp_verify.h"
#include "workload/transformer/tfm_verify.h"
#include "workload/transformer/tfm.h"
#include "workload/mlp/mlp.h"
#include "workload/workload_args.h"

/* --profile's output after the steps: a line naming the configuration (the
 * command line) and the step, the table (stderr), and --profile-csv's
 * file. Returns the exit code. */
static int report_profile(const mc_workload_cli *cli, int argc, char **argv,
                          const mc_workload_step_result *r, const mc_prof_table *t)
{
    fprintf(stderr, "profile:");
    for (int i = 1; i < argc; i++) fprintf(stderr, " %s", argv[i]);
    fprintf(stderr, ": step %d (after the CSV's %d), %ld GPU operations timed\n", r->step,
            cli->steps, t->ops);
    if (t->total_ms <= 0) {
        fprintf(stderr, "profile: no step ran (the parameters do not fit): no table\n");
        return MC_EXIT_OK;
    }
    if (r->status != MC_WL_OK)
        fprintf(stderr, "profile: the step ran out of memory: the table is of the part that ran\n");
    if (t->grown)
        fprintf(stderr, "profile: %ld event pairs were made during the step (host time, in idle)\n",
                t->grown);
    mc_prof_table_print(stderr, t);
    char err[512];
    if (cli->profile_csv && mc_prof_table_write_csv(cli->profile_csv, t, err, sizeof err) != 0) {
        fprintf(stderr, "workload: %s\n", err);
        return MC_EXIT_USAGE;
    }
    return MC_EXIT_OK;
}

/* --arch transformer|encoder: trains on the GPU, or the model-only
 * sequence; --verify: the Transformer kernels, then whole training steps,
 * against the float64 host reference on the GPU. */
static int run_transformer(mc_workload_cli *cli, int argc, char **argv)
{
    char err[256];
    if (!cli->model_only || cli->verify) {
        char reason[256];
        if (!mc_gpu_open(cli->device, reason, sizeof reason)) {
            fprintf(stderr, "workload: %s: waived (--model-only runs without one)\n", reason);
            return MC_EXIT_WAIVED;
        }
        if (!cli->sms_given)
            CHECK_CUDA(cudaDeviceGetAttribute(&cli->tfm.sm_count, cudaDevAttrMultiProcessorCount,
                                              cli->device));
    }
    if (cli->verify) {
        int fails = mc_tfm_verify(stderr);
        fails += mc_tfm_verify_steps(stderr);
        return fails ? MC_EXIT_VERIFY : MC_EXIT_OK;
    }
    FILE *trace = NULL;
    if (cli->trace_path && !(trace = fopen(cli->trace_path, "w"))) {
        fprintf(stderr, "workload: cannot write %s\n", cli->trace_path);
        return MC_EXIT_USAGE;
    }
    mc_tfm *t = mc_tfm_create(&cli->tfm, !cli->model_only, trace, err, sizeof err);
    if (!t) {
        fprintf(stderr, "workload: %s\n", err);
        if (trace) fclose(trace);
        return MC_EXIT_USAGE;
    }
    if (mc_tfm_setup_status(t) != MC_WL_OK)
        fprintf(stderr, "workload: the parameters do not fit: every step is out of memory\n");
    printf("%s\n", MC_WORKLOAD_CSV_HEADER);
    if (cli->program) { /* --program seed000-c07: one row per function */
        mc_workload_step_result r[2];
        mc_tfm_seed000_c07(t, r);
        mc_workload_csv_row(stdout, &r[0]);
        mc_workload_csv_row(stdout, &r[1]);
    }
    for (int s = 0; s < cli->steps && !cli->program; s++) {
        mc_workload_step_result r;
        mc_tfm_step(t, &r);
        mc_workload_csv_row(stdout, &r);
    }
    int rc = MC_EXIT_OK;
    if (fflush(stdout) != 0) rc = MC_EXIT_USAGE;
    if (cli->profile && rc == MC_EXIT_OK) {
        mc_workload_step_result r;
        mc_prof_table tab;
        mc_tfm_profile_step(t, &r, &tab);
        rc = report_profile(cli, argc, argv, &r, &tab);
    }
    mc_tfm_destroy(t);
    if (trace && fclose(trace) != 0) {
        fprintf(stderr, "workload: error writing %s\n", cli->trace_path);
        return MC_EXIT_USAGE;
    }
    return rc;
}

int main(int argc, char **argv)
{
    mc_workload_cli cli;
    char err[256];
    int rc = mc_workload_parse_args(&cli, argc, argv, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "workload: %s\n", err);
        return rc;
    }
    if (cli.help) {
        mc_workload_usage(stdout);
        return MC_EXIT_OK;
    }
    if (cli.arch != MC_WL_ARCH_MLP) return run_transformer(&cli, argc, argv);
    if (!cli.model_only || cli.verify) {
        char reason[256];
        if (!mc_gpu_open(cli.device, reason, sizeof reason)) {
            fprintf(stderr, "workload: %s: waived (--model-only runs without one)\n", reason);
            return MC_EXIT_WAIVED;
        }
        if (!cli.sms_given)
            CHECK_CUDA(cudaDeviceGetAttribute(&cli.cfg.sm_count, cudaDevAttrMultiProcessorCount,
                                              cli.device));
    }
    if (cli.verify) return mc_workload_verify(stderr) ? MC_EXIT_VERIFY : MC_EXIT_OK;

    FILE *trace = NULL;
    if (cli.trace_path && !(trace = fopen(cli.trace_path, "w"))) {
        fprintf(stderr, "workload: cannot write %s\n", cli.trace_path);
        return MC_EXIT_USAGE;
    }
    mc_workload *w = mc_workload_create(&cli.cfg, !cli.model_only, trace, err, sizeof err);
    if (!w) {
        fprintf(stderr, "workload: %s\n", err);
        if (trace) fclose(trace);
        return MC_EXIT_USAGE;
    }
    if (mc_workload_setup_status(w) != MC_WL_OK)
        fprintf(stderr, "workload: the parameters do not fit: every step is out of memory\n");
    printf("%s\n", MC_WORKLOAD_CSV_HEADER);
    for (int s = 0; s < cli.steps; s++) {
        mc_workload_step_result r;
        mc_workload_step(w, &r);
        mc_workload_csv_row(stdout, &r);
    }
    rc = MC_EXIT_OK;
    if (fflush(stdout) != 0) rc = MC_EXIT_USAGE;
    if (cli.profile && rc == MC_EXIT_OK) {
        mc_workload_step_result r;
        mc_prof_table tab;
        mc_workload_profile_step(w, &r, &tab);
        rc = report_profile(&cli, argc, argv, &r, &tab);
    }
    mc_workload_destroy(w);
    if (trace && fclose(trace) != 0) {
        fprintf(stderr, "workload: error writing %s\n", cli.trace_path);
        return MC_EXIT_USAGE;
    }
    return rc;
}
