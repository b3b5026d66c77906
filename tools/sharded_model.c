/* sharded_model: one rank's allocator figures, step by step, when the
 * training workload runs data-parallel (common/workload/sharded/sharded_seq.h), with
 * no GPU: the model tests/scripts/test_sharded_fixtures.sh compares with
 * PyTorch's own figures (tests/torch/fsdp_reference.py).
 *
 *   build/sharded_model --mode plain|ddp|zero2|fsdp --world N --rank R
 *                       --layers L --in D --width H --out O --batch B
 *                       [--optimizer sgd|momentum|adam] [--steps S] [--sms N]
 *                       [--trace FILE]
 *
 * The network flags are build/workload's (fp32, accum 1, no checkpointing
 * only). Output: CSV, `step,peak_allocated,allocated_end,peak_reserved,status`,
 * one row per step; --trace FILE also writes the rank's requests of set-up
 * and every step (memclaims-trace v1, as build/workload --trace), to set
 * beside a PyTorch memory snapshot (tests/torch/fsdp_reference.py --trace).
 *
 * --gpu runs the same step for real on GPUs 0..N-1 (sharded_gpu.h: the
 * workload's kernels, NCCL's collectives on their own streams), a thread
 * per GPU, or, started by torchrun or mpirun (their RANK, WORLD_SIZE,
 * LOCAL_RANK, MASTER_ADDR, MASTER_PORT), as one rank per process on GPU
 * LOCAL_RANK, and prints every rank's (or this rank's) figures beside its
 * host model's:
 * `rank,step,peak_allocated,allocated_end,model_peak,model_end,step_time_s,loss,status`;
 * --verify also trains the one-GPU reference and checks every rank's
 * parameters against it, and the loss's fall (a line on stderr says how close).
 * Exit: 0; 1 when a GPU figure differs from the model or the check fails;
 * 2 for bad input (one line on stderr); 3 a CUDA or NCCL error (a rank past
 * its deadline included); 77 fewer GPUs than N, or built without NCCL. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "check_cuda.h"
#include "options.h"
#include "workload/sharded/sharded_gpu.h"
#include "workload/sharded/sharded_seq.h"
#include "workload/workload_args.h"

/* --gpu: every rank on its GPU, its figures beside its model's. */
static int run_gpu(mc_sh_config *c, mc_sh_gpu_opts o, bool sms_given)
{
    const int steps = o.steps;
    const bool verify = o.verify;
    char err[256];
    if (c->trace) {
        fprintf(stderr, "sharded_model: --gpu writes no --trace\n");
        return MC_EXIT_USAGE;
    }
    if (steps > MC_SH_MAX_STEPS || c->world > MC_SH_MAX_GPUS) {
        fprintf(stderr, "sharded_model: --gpu runs at most %d steps on %d GPUs\n", MC_SH_MAX_STEPS,
                MC_SH_MAX_GPUS);
        return MC_EXIT_USAGE;
    }
    if (o.fault != MC_SH_FAULT_NONE && (o.fault_rank >= c->world || o.fault_step > steps)) {
        fprintf(stderr, "sharded_model: --inject names rank %d and step %d: past --world %d or --steps %d\n",
                o.fault_rank, o.fault_step, c->world, steps);
        return MC_EXIT_USAGE;
    }
    /* Under torchrun or mpirun this process is one rank (launcher.h). */
    mc_launch l;
    if (mc_launch_from_env(&l, err, sizeof err) != 0) {
        fprintf(stderr, "sharded_model: %s\n", err);
        return MC_EXIT_USAGE;
    }
    if (l.kind != MC_LAUNCH_NONE && l.world != c->world) {
        fprintf(stderr, "sharded_model: %s started %d ranks, --world is %d\n", mc_launch_kind_name(l.kind), l.world,
                c->world);
        return MC_EXIT_USAGE;
    }
    const int device = l.kind != MC_LAUNCH_NONE ? l.local_rank : 0;
    if (!mc_sh_gpu_available(l.kind != MC_LAUNCH_NONE ? l.local_rank + 1 : c->world, err, sizeof err)) {
        fprintf(stderr, "sharded_model: %s\n", err);
        return MC_EXIT_WAIVED;
    }
    if (!sms_given) /* the reduction scratch is sized for this GPU's SMs, as PyTorch's */
        CHECK_CUDA(cudaDeviceGetAttribute(&c->wl.sm_count, cudaDevAttrMultiProcessorCount, device));
    static mc_sh_gpu_result res;
    int ran = l.kind != MC_LAUNCH_NONE ? mc_sh_gpu_run_rank(c, &o, &l, &res, err, sizeof err)
                                       : mc_sh_gpu_run(c, &o, &res, err, sizeof err);
    if (ran != 0) {
        fprintf(stderr, "sharded_model: %s\n", err);
        return MC_EXIT_CUDA;
    }
    int rc = MC_EXIT_OK;
    const int q0 = l.kind != MC_LAUNCH_NONE ? l.rank : 0, q1 = l.kind != MC_LAUNCH_NONE ? l.rank + 1 : c->world;
    printf("rank,step,peak_allocated,allocated_end,model_peak,model_end,step_time_s,loss,status\n");
    for (int q = q0; q < q1; q++)
        for (int s = 0; s < steps; s++) {
            bool oom = q == res.oom_rank && s + 1 == res.oom_step;
            if (s >= res.done[q] && !oom) break; /* stopped: a rank ran out of memory */
            printf("%d,%d,%llu,%llu,%llu,%llu,%.9f,%.9g,%s\n", q, s + 1, (unsigned long long)res.peak[q][s],
                   (unsigned long long)res.end[q][s], (unsigned long long)res.model_peak[q][s],
                   (unsigned long long)res.model_end[q][s], oom ? 0.0 : res.time_s[q][s],
                   oom ? 0.0 : res.loss[q][s], oom ? "oom" : "ok");
            if (oom) break;
            if (res.peak[q][s] != res.model_peak[q][s] || res.end[q][s] != res.model_end[q][s]) rc = MC_EXIT_VERIFY;
        }
    if (rc != MC_EXIT_OK) fprintf(stderr, "sharded_model: a GPU figure differs from the model's\n");
    if (verify) {
        const mc_sh_check *v = &res.check;
        bool ok = v->verified && v->passed;
        fprintf(stderr, "sharded_model: --verify %s: parameters within %.2e of one GPU's (relative; "
                "worst: rank %d, parameter %d; %llu of %llu elements beyond %.0e, largest difference "
                "%.2e); loss %s on every rank%s\n", ok ? "passed" : "FAILED", v->max_rel, v->worst_rank,
                v->worst_param, (unsigned long long)v->elems_off, (unsigned long long)v->elems,
                MC_SH_VERIFY_TOL, v->max_abs, v->loss_falls ? "falls" : "does NOT fall",
                c->wl.optimizer == MC_WL_ADAM ? " (the check trains with momentum in Adam's place)" : "");
        if (!ok) rc = MC_EXIT_VERIFY;
    }
    return rc;
}

int main(int argc, char **argv)
{
    mc_sh_config c;
    memset(&c, 0, sizeof c);
    c.mode = MC_SH_NMODE;
    c.world = 0;
    c.rank = 0;
    const char *trace_path = NULL;
    bool gpu = false, verify = false;
    mc_sh_gpu_opts go = {.steps = 0, .verify = false, .deadline_s = 0, .fault = MC_SH_FAULT_NONE};
    /* Our flags out; the rest to build/workload's parser. */
    char *rest[argc + 2]; /* argc is small: a command line */
    int n = 0;
    rest[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--gpu") || !strcmp(a, "--verify")) {
            *(!strcmp(a, "--gpu") ? &gpu : &verify) = true;
            continue;
        }
        bool ours = !strcmp(a, "--mode") || !strcmp(a, "--world") || !strcmp(a, "--rank") ||
                    !strcmp(a, "--trace") || !strcmp(a, "--deadline") || !strcmp(a, "--inject") ||
                    !strcmp(a, "--pause-ms");
        if (!ours) {
            rest[n++] = argv[i];
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sharded_model: %s needs a value\n", a);
            return MC_EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--trace")) {
            trace_path = v;
            continue;
        }
        if (!strcmp(a, "--deadline") || !strcmp(a, "--pause-ms")) { /* whole seconds; milliseconds */
            const bool deadline = !strcmp(a, "--deadline");
            const int lo = deadline ? 1 : 0, hi = deadline ? 86400 : 60000;
            int x = 0;
            if (mc_parse_int(v, lo, hi, &x) != 0) {
                fprintf(stderr, "sharded_model: %s must be %d to %d, not '%s'\n", a, lo, hi, v);
                return MC_EXIT_USAGE;
            }
            *(deadline ? &go.deadline_s : &go.pause_s) = deadline ? x : x * 1e-3;
            continue;
        }
        if (!strcmp(a, "--inject")) {
            char kind[8] = "";
            int used = 0;
            if (sscanf(v, "%5[a-z]:%d:%d%n", kind, &go.fault_rank, &go.fault_step, &used) != 3 ||
                v[used] != '\0' || (strcmp(kind, "oom") && strcmp(kind, "hang")) || go.fault_rank < 0 ||
                go.fault_step < 1) {
                fprintf(stderr, "sharded_model: --inject must be oom:RANK:STEP or hang:RANK:STEP, not '%s'\n", v);
                return MC_EXIT_USAGE;
            }
            go.fault = strcmp(kind, "oom") ? MC_SH_FAULT_HANG : MC_SH_FAULT_OOM;
            continue;
        }
        if (!strcmp(a, "--mode") ? mc_sh_mode_parse(v, &c.mode) != 0
            : !strcmp(a, "--world") ? mc_parse_int(v, 1, 65536, &c.world) != 0
                                    : mc_parse_int(v, 0, 65535, &c.rank) != 0) {
            fprintf(stderr, "sharded_model: bad value for %s: '%s'\n", a, v);
            return MC_EXIT_USAGE;
        }
    }
    rest[n++] = (char *)"--model-only";
    mc_workload_cli cli;
    char err[256];
    if (mc_workload_parse_args(&cli, n, rest, err, sizeof err) != 0) {
        fprintf(stderr, "sharded_model: %s\n", err);
        return MC_EXIT_USAGE;
    }
    if (cli.help) {
        printf("usage: sharded_model --mode plain|ddp|zero2|fsdp --world N [--rank R] and build/workload's\n"
               "network flags (fp32, accum 1, no checkpointing) [--trace FILE: the requests]; one rank's\n"
               "figures per step, no GPU.\n"
               "Output: step,peak_allocated,allocated_end,peak_reserved,status\n"
               "  --gpu      run every rank on GPUs 0..N-1 (one thread each, NCCL; under torchrun or mpirun\n"
               "             this process is rank RANK on GPU LOCAL_RANK) and print each rank's\n"
               "             figures beside its model's: rank,step,peak_allocated,allocated_end,model_peak,\n"
               "             model_end,step_time_s,loss,status (at most %d GPUs and %d steps)\n"
               "  --verify   with --gpu: check every rank's parameters against one GPU trained on the\n"
               "             whole batch (relative %.0e) and that each rank's loss falls\n"
               "  --deadline S  with --gpu: a step not done within S seconds (default 300) stops every\n"
               "             rank (exit 3, one line naming the rank that stopped queueing and its call)\n"
               "  --pause-ms N  with --gpu: every rank idles N ms after each step (as\n"
               "             tests/torch/fsdp_reference.py pauses 300 ms), default 0\n"
               "  --inject oom:R:S | hang:R:S  with --gpu: rank R runs out of memory (a result: its row\n"
               "             says oom, the others stop) or hangs at the start of step S (the tests' fault)\n"
               "Exit: 0; 1 a GPU figure differs from the model or the check failed; 2 bad input;\n"
               "3 CUDA or NCCL error; 77 not enough GPUs or no NCCL.\n",
               MC_SH_MAX_GPUS, MC_SH_MAX_STEPS, MC_SH_VERIFY_TOL);
        return MC_EXIT_OK;
    }
    if (c.mode == MC_SH_NMODE || c.world == 0) {
        fprintf(stderr, "sharded_model: --mode and --world are required\n");
        return MC_EXIT_USAGE;
    }
    /* Bad input is refused before --trace's file is made. */
    if (mc_workload_sharded_net(&cli.cfg, &c.wl, err, sizeof err) != 0 ||
        mc_sh_config_check(&c, err, sizeof err) != 0) {
        fprintf(stderr, "sharded_model: %s\n", err);
        return MC_EXIT_USAGE;
    }
    if (gpu && trace_path) {
        fprintf(stderr, "sharded_model: --gpu writes no --trace\n");
        return MC_EXIT_USAGE;
    }
    go.steps = cli.steps;
    go.verify = verify;
    if (gpu) return run_gpu(&c, go, cli.sms_given);
    if (verify || go.deadline_s > 0 || go.fault != MC_SH_FAULT_NONE || go.pause_s > 0) {
        fprintf(stderr, "sharded_model: --verify, --deadline, --pause-ms and --inject need --gpu\n");
        return MC_EXIT_USAGE;
    }
    if (trace_path) {
        c.trace = fopen(trace_path, "w");
        if (!c.trace) {
            fprintf(stderr, "sharded_model: cannot write --trace '%s'\n", trace_path);
            return MC_EXIT_USAGE;
        }
        c.trace_steps = cli.steps;
    }
    mc_sh_run *r = mc_sh_create(&c, NULL, NULL, err, sizeof err);
    CHECK(r != NULL, "sharded_model: %s", err); /* checked above */
    printf("step,peak_allocated,allocated_end,peak_reserved,status\n");
    for (int s = 0; s < cli.steps; s++) {
        mc_sh_step_result res;
        mc_sh_step(r, &res);
        printf("%d,%llu,%llu,%llu,%s\n", res.step, (unsigned long long)res.peak_allocated,
               (unsigned long long)res.allocated_end, (unsigned long long)res.peak_reserved,
               res.status == MC_WL_OK ? "ok" : "oom");
    }
    mc_sh_destroy(r);
    if (c.trace && fclose(c.trace) != 0) {
        fprintf(stderr, "sharded_model: could not finish --trace '%s'\n", trace_path);
        return MC_EXIT_VERIFY;
    }
    return MC_EXIT_OK;
}
