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
 * Exit: 0, or 2 for bad input (one line on stderr). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "options.h"
#include "workload/sharded/sharded_seq.h"
#include "workload/workload_args.h"

int main(int argc, char **argv)
{
    mc_sh_config c;
    memset(&c, 0, sizeof c);
    c.mode = MC_SH_NMODE;
    c.world = 0;
    c.rank = 0;
    const char *trace_path = NULL;
    /* Our three flags out; the rest to build/workload's parser. */
    char *rest[argc + 2]; /* argc is small: a command line */
    int n = 0;
    rest[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool ours = !strcmp(a, "--mode") || !strcmp(a, "--world") || !strcmp(a, "--rank") ||
                    !strcmp(a, "--trace");
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
               "Output: step,peak_allocated,allocated_end,peak_reserved,status\n");
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
