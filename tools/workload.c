/* workload: the suite's training workload from the command line (DESIGN.md
 * "The training workload, build/workload"; flags in common/workload_args.h).
 * One CSV row per step on stdout (MC_WORKLOAD_CSV_HEADER), diagnostics on
 * stderr. On a GPU it trains for real, every tensor from the caching-
 * allocator model over cudaMalloc; --model-only runs the same requests over
 * the host backend. --verify runs the GPU arithmetic check (make test-gpu).
 *
 * Exit: 0 ran (an out-of-memory step is a row with status oom), 1 --verify
 * failed, 2 usage or an unwritable trace, 3 CUDA error, 77 no CUDA device. */
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

/* --arch transformer|encoder: trains on the GPU, or the model-only
 * sequence; --verify: the Transformer kernels, then whole training steps,
 * against the float64 host reference on the GPU. */
static int run_transformer(mc_workload_cli *cli)
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
    for (int s = 0; s < cli->steps; s++) {
        mc_workload_step_result r;
        mc_tfm_step(t, &r);
        mc_workload_csv_row(stdout, &r);
    }
    mc_tfm_destroy(t);
    if (fflush(stdout) != 0) return MC_EXIT_USAGE;
    if (trace && fclose(trace) != 0) {
        fprintf(stderr, "workload: error writing %s\n", cli->trace_path);
        return MC_EXIT_USAGE;
    }
    return MC_EXIT_OK;
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
    if (cli.arch != MC_WL_ARCH_MLP) return run_transformer(&cli);
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
    mc_workload_destroy(w);
    if (fflush(stdout) != 0) return MC_EXIT_USAGE;
    if (trace && fclose(trace) != 0) {
        fprintf(stderr, "workload: error writing %s\n", cli.trace_path);
        return MC_EXIT_USAGE;
    }
    return MC_EXIT_OK;
}
