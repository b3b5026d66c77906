/* sharded_model: one rank's allocator figures, step by step, when the
 * training workload runs data-parallel (common/workload/sharded/sharded_seq.h), with
 * no GPU: the model tests/scripts/test_sharded_fixtures.sh compares with
 * PyTorch's own figures (tests/torch/fsdp_reference.py).
 *
 *   build/sharded_model --mode plain|ddp|zero2|fsdp --world N --rank R
 *                       --layers L --in D --width H --out O --batch B
 *                       [--optimizer sgd|momentum|adam] [--steps S] [--sms N]
 *                       [--trace FILE]
 *   build/sharded_model --model transformer --mode plain|zero2|fsdp --world N --rank R
 *                       --seq L --batch B [build/workload's Transformer flags]
 *
 * --model transformer (issue 30 item 7): nn.TransformerEncoder under FSDP2,
 * fully_shard on each layer then the whole (common/workload/sharded_tfm.h),
 * with build/workload --arch encoder's flags (--d-model, --heads,
 * --enc-layers, --ff, --dropout, --activation, --norm-first, --batch-first,
 * --optimizer sgd|momentum|adam; fp32, one micro-step); with --gpu, dropout 0
 * (tests/torch/fsdp_transformer_reference.py is PyTorch's run).
 *
 * The network flags are build/workload's (fp32, accum 1, no checkpointing
 * only). Output: CSV, `step,peak_allocated,allocated_end,peak_reserved,status`,
 * one row per step; --trace FILE also writes the rank's requests of set-up
 * and every step (memclaims-trace v1, as build/workload --trace), to set
 * beside a PyTorch memory snapshot (tests/torch/fsdp_reference.py --trace).
 *
 * --gpu runs the same step for real on GPUs 0..N-1 (sharded_gpu.h: the
 * workload's kernels, NCCL's collectives on their own streams), one
 * process per GPU that this program starts and watches (sharded_procs.h),
 * or a thread per GPU (--threads), or, started by torchrun or mpirun (their
 * RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), as one rank on
 * GPU LOCAL_RANK (--ranks-out DIR: every rank's figures merged there), and
 * prints every rank's (or this rank's) figures beside its host model's:
 * `rank,step,peak_allocated,allocated_end,model_peak,model_end,step_time_s,loss,status`;
 * --verify also trains the one-GPU reference and checks every rank's
 * parameters against it, and the loss's fall (a line on stderr says how close).
 * Exit: 0; 1 when a GPU figure differs from the model or the check fails;
 * 2 for bad input (one line on stderr); 3 a CUDA or NCCL error (a rank past
 * its deadline included); 77 fewer GPUs than N, or built without NCCL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "check_cuda.h"
#include "child.h"
#include "options.h"
#include "workload/sharded/sharded_gpu.h"
#include "workload/sharded/sharded_procs.h"
#include "workload/sharded/sharded_seq.h"
#include "workload/sharded_tfm.h"
#include "workload/workload_args.h"

static double sh_deadline(const mc_sh_gpu_opts *o) { return o->deadline_s > 0 ? o->deadline_s : MC_SH_DEFAULT_DEADLINE_S; }

/* How a --gpu run is laid out over processes. */
typedef enum {
    GPU_PROCS,   /* this process starts one process a rank (sharded_procs.h) and merges them */
    GPU_THREADS, /* --threads: one process, a thread a rank */
    GPU_RANK     /* started by a launcher (torchrun, mpirun, or GPU_PROCS): this process is one rank */
} gpu_layout;

/* --gpu: every rank on its GPU, its figures beside its model's. */
static int run_gpu(mc_sh_config *c, mc_sh_gpu_opts o, bool sms_given, bool threads, const char *out_dir,
                   char **argv)
{
    const int steps = o.steps;
    const bool verify = o.verify;
    char err[1024];
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
    /* Under torchrun or mpirun (or our own GPU_PROCS) this process is one rank (launcher.h). */
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
    const gpu_layout lay = l.kind != MC_LAUNCH_NONE ? GPU_RANK : threads ? GPU_THREADS : GPU_PROCS;
    if (lay == GPU_RANK && threads) {
        fprintf(stderr, "sharded_model: --threads: %s started this process as one rank\n", mc_launch_kind_name(l.kind));
        return MC_EXIT_USAGE;
    }
    if (lay == GPU_THREADS && o.fault == MC_SH_FAULT_KILL) {
        fprintf(stderr, "sharded_model: --inject kill needs ranks that are processes (not --threads)\n");
        return MC_EXIT_USAGE;
    }
    if (out_dir && lay != GPU_RANK) {
        fprintf(stderr, "sharded_model: --ranks-out DIR is for ranks a launcher started (torchrun, mpirun)\n");
        return MC_EXIT_USAGE;
    }
    if (out_dir) { /* a run never overwrites another's figures */
        char path[1100];
        struct stat st;
        snprintf(path, sizeof path, "%s/rank%d.csv", out_dir, l.rank);
        if (strlen(out_dir) > 1000) {
            fprintf(stderr, "sharded_model: --ranks-out: a folder name of at most 1000 bytes\n");
            return MC_EXIT_USAGE;
        }
        if (stat(out_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "sharded_model: --ranks-out '%s' is not a folder\n", out_dir);
            return MC_EXIT_USAGE;
        }
        if (stat(path, &st) == 0) {
            fprintf(stderr, "sharded_model: --ranks-out '%s' already holds rank %d's figures (a run's figures are never overwritten)\n",
                    out_dir, l.rank);
            return MC_EXIT_USAGE;
        }
    }
    const int device = lay == GPU_RANK ? l.local_rank : 0;
    if (!mc_sh_gpu_available(lay == GPU_RANK ? l.local_rank + 1 : c->world, err, sizeof err)) {
        fprintf(stderr, "sharded_model: %s\n", err);
        return MC_EXIT_WAIVED;
    }
    static mc_sh_gpu_result res;
    int ran;
    if (lay == GPU_PROCS) {
        char self[1024];
        if (mc_self_exe(self, sizeof self) != 0) {
            fprintf(stderr, "sharded_model: cannot find this program's path (/proc/self/exe)\n");
            return MC_EXIT_CUDA;
        }
        argv[0] = self; /* the ranks run this program with the same flags */
        const double limit = (steps + 4) * sh_deadline(&o) * 2; /* every rank also has its own deadline */
        ran = mc_sh_procs_run(argv, c->world, limit, stderr, &res, err, sizeof err);
        res.steps = steps;
    } else {
        if (!sms_given) /* the reduction scratch is sized for this GPU's SMs, as PyTorch's */
            CHECK_CUDA(cudaDeviceGetAttribute(&c->wl.sm_count, cudaDevAttrMultiProcessorCount, device));
        ran = lay == GPU_RANK ? mc_sh_gpu_run_rank(c, &o, &l, &res, err, sizeof err)
                              : mc_sh_gpu_run(c, &o, &res, err, sizeof err);
    }
    int rc = MC_EXIT_OK;
    const int q0 = lay == GPU_RANK ? l.rank : 0, q1 = lay == GPU_RANK ? l.rank + 1 : c->world;
    printf("%s\n", MC_SH_ROWS_HEADER);
    for (int q = q0; q < q1; q++) {
        mc_sh_rows_write(stdout, &res, q);
        for (int s = 0; s < res.done[q] && s < steps; s++)
            if (res.peak[q][s] != res.model_peak[q][s] || res.end[q][s] != res.model_end[q][s]) rc = MC_EXIT_VERIFY;
    }
    fflush(stdout);
    if (ran != 0) {
        fprintf(stderr, "sharded_model: %s\n", err);
        return MC_EXIT_CUDA;
    }
    if (rc != MC_EXIT_OK) fprintf(stderr, "sharded_model: a GPU figure differs from the model's\n");
    char check[600] = "";
    if (verify && res.oom_rank < 0) {
        mc_sh_check_format(&res.check, c->wl.optimizer == MC_WL_ADAM, check, sizeof check);
        fprintf(stderr, "sharded_model: %s\n", check);
        if (!(res.check.verified && res.check.passed)) rc = MC_EXIT_VERIFY;
    }
    if (out_dir) {
        if (mc_sh_ranks_out(out_dir, l.rank, c->world, &res, check, sh_deadline(&o), err, sizeof err) != 0) {
            fprintf(stderr, "sharded_model: %s\n", err);
            return MC_EXIT_CUDA;
        }
        if (l.rank == 0) fprintf(stderr, "sharded_model: rank 0: every rank's figures merged into %s/ranks.csv\n", out_dir);
    }
    return rc;
}

/* --segments FILE: `alloc ADDR BYTES STREAM` lines (and `free` lines,
 * skipped; '#' comments), the segments of a PyTorch run
 * (tests/torch/fsdp_transformer_reference.py's NAME.rankR.segments). 0, or
 * -1 after one line on stderr. */
static int read_segments(const char *path, uint64_t **addr, uint64_t **bytes, int *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "sharded_model: cannot read --segments '%s'\n", path);
        return -1;
    }
    char line[256];
    int cap = 0, lineno = 0;
    *n = 0;
    *addr = *bytes = NULL;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char op[8];
        unsigned long long a = 0, b = 0, st = 0;
        int used = 0;
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0') continue;
        if (sscanf(line, "%7s %llx %llu %llu %n", op, &a, &b, &st, &used) != 4 ||
            line[used] != '\0' || (strcmp(op, "alloc") && strcmp(op, "free")) || !a || !b) {
            fprintf(stderr, "sharded_model: %s:%d: not `alloc|free ADDR BYTES STREAM`\n", path, lineno);
            fclose(f);
            free(*addr);
            free(*bytes);
            return -1;
        }
        if (strcmp(op, "alloc")) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            *addr = realloc(*addr, (size_t)cap * sizeof **addr);
            *bytes = realloc(*bytes, (size_t)cap * sizeof **bytes);
            CHECK(*addr && *bytes, "out of host memory");
        }
        (*addr)[*n] = a;
        (*bytes)[*n] = b;
        (*n)++;
    }
    fclose(f);
    return 0;
}

/* --model transformer without --gpu: the encoder's figures per step, model-only. */
static int run_transformer(const mc_workload_cli *cli, const mc_sh_config *c, const char *trace_path,
                           const char *seg_path)
{
    mc_sh_tfm_config t = {.tfm = cli->tfm, .mode = c->mode, .world = c->world, .rank = c->rank};
    char err[256];
    if (mc_sh_tfm_check(&t, err, sizeof err) != 0) {
        fprintf(stderr, "sharded_model: %s\n", err);
        return MC_EXIT_USAGE;
    }
    uint64_t *seg_addr = NULL, *seg_bytes = NULL;
    if (seg_path && read_segments(seg_path, &seg_addr, &seg_bytes, &t.nseg) != 0) return MC_EXIT_USAGE;
    t.seg_addr = seg_addr;
    t.seg_bytes = seg_bytes;
    if (trace_path) {
        t.trace = fopen(trace_path, "w");
        if (!t.trace) {
            fprintf(stderr, "sharded_model: cannot write --trace '%s'\n", trace_path);
            free(seg_addr);
            free(seg_bytes);
            return MC_EXIT_USAGE;
        }
        t.trace_steps = cli->steps;
    }
    mc_sh_tfm *s = mc_sh_tfm_create(&t, err, sizeof err);
    CHECK(s != NULL, "sharded_model: %s", err); /* checked above */
    printf("step,peak_allocated,allocated_end,peak_reserved,status\n");
    for (int k = 0; k < cli->steps; k++) {
        mc_sh_step_result res;
        mc_sh_tfm_step(s, &res);
        printf("%d,%llu,%llu,%llu,%s\n", k + 1, (unsigned long long)res.peak_allocated,
               (unsigned long long)res.allocated_end, (unsigned long long)res.peak_reserved,
               res.status == MC_WL_OK ? "ok" : "oom");
    }
    if (seg_path) { /* the addresses are PyTorch's only where the model's segments are its own */
        int differ = 0;
        uint64_t conflicts = 0;
        mc_sh_tfm_segments(s, &differ, &conflicts);
        if (differ || conflicts)
            fprintf(stderr, "sharded_model: %d of the model's segments differ from --segments' (size or count), "
                    "%llu of its addresses were taken\n", differ, (unsigned long long)conflicts);
    }
    mc_sh_tfm_destroy(s);
    free(seg_addr);
    free(seg_bytes);
    if (t.trace && fclose(t.trace) != 0) {
        fprintf(stderr, "sharded_model: could not finish --trace '%s'\n", trace_path);
        return MC_EXIT_VERIFY;
    }
    return MC_EXIT_OK;
}

int main(int argc, char **argv)
{
    mc_sh_config c;
    memset(&c, 0, sizeof c);
    c.mode = MC_SH_NMODE;
    c.world = 0;
    c.rank = 0;
    const char *trace_path = NULL, *ranks_out = NULL, *seg_path = NULL;
    bool gpu = false, verify = false, threads = false;
    mc_sh_gpu_opts go = {.steps = 0, .verify = false, .deadline_s = 0, .fault = MC_SH_FAULT_NONE};
    /* Our flags out; the rest to build/workload's parser. */
    char *rest[argc + 4]; /* argc is small: a command line */
    int n = 0;
    bool transformer = false, arch_given = false;
    rest[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--model")) { /* mlp (the default) or transformer */
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (strcmp(v, "mlp") && strcmp(v, "transformer")) {
                fprintf(stderr, "sharded_model: --model needs mlp or transformer, not '%s'\n", v);
                return MC_EXIT_USAGE;
            }
            transformer = !strcmp(v, "transformer");
            continue;
        }
        if (!strcmp(a, "--arch")) arch_given = true;
        if (!strcmp(a, "--gpu") || !strcmp(a, "--verify") || !strcmp(a, "--threads")) {
            *(!strcmp(a, "--gpu") ? &gpu : !strcmp(a, "--verify") ? &verify : &threads) = true;
            continue;
        }
        bool ours = !strcmp(a, "--mode") || !strcmp(a, "--world") || !strcmp(a, "--rank") ||
                    !strcmp(a, "--trace") || !strcmp(a, "--deadline") || !strcmp(a, "--inject") ||
                    !strcmp(a, "--pause-ms") || !strcmp(a, "--ranks-out") || !strcmp(a, "--segments");
        if (!ours) {
            rest[n++] = argv[i];
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sharded_model: %s needs a value\n", a);
            return MC_EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--segments")) {
            seg_path = v;
            continue;
        }
        if (!strcmp(a, "--trace") || !strcmp(a, "--ranks-out")) {
            *(!strcmp(a, "--trace") ? &trace_path : &ranks_out) = v;
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
                v[used] != '\0' || (strcmp(kind, "oom") && strcmp(kind, "hang") && strcmp(kind, "kill")) ||
                go.fault_rank < 0 || go.fault_step < 1) {
                fprintf(stderr, "sharded_model: --inject must be oom:RANK:STEP, hang:RANK:STEP or kill:RANK:STEP, "
                        "not '%s'\n", v);
                return MC_EXIT_USAGE;
            }
            go.fault = !strcmp(kind, "oom") ? MC_SH_FAULT_OOM : !strcmp(kind, "hang") ? MC_SH_FAULT_HANG : MC_SH_FAULT_KILL;
            continue;
        }
        if (!strcmp(a, "--mode") ? mc_sh_mode_parse(v, &c.mode) != 0
            : !strcmp(a, "--world") ? mc_parse_int(v, 1, 65536, &c.world) != 0
                                    : mc_parse_int(v, 0, 65535, &c.rank) != 0) {
            fprintf(stderr, "sharded_model: bad value for %s: '%s'\n", a, v);
            return MC_EXIT_USAGE;
        }
    }
    if (transformer && arch_given) {
        fprintf(stderr, "sharded_model: --model transformer is nn.TransformerEncoder: give no --arch\n");
        return MC_EXIT_USAGE;
    }
    if (transformer) {
        rest[n++] = (char *)"--arch";
        rest[n++] = (char *)"encoder";
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
               "  --model transformer  nn.TransformerEncoder under FSDP2 (--mode plain|zero2|fsdp) with\n"
               "             build/workload --arch encoder's flags (--seq, --batch, --d-model, ...; fp32,\n"
               "             sgd, momentum or adam; with --gpu, dropout 0) (default --model mlp)\n"
               "  --segments FILE  with --model transformer: put the model's segments where a PyTorch\n"
               "             run's went (its NAME.rankR.segments: `alloc ADDR BYTES STREAM` lines)\n"
               "Output: step,peak_allocated,allocated_end,peak_reserved,status\n"
               "  --gpu      run every rank on GPUs 0..N-1, one process each (this program started N\n"
               "             times as torchrun starts its workers: RANK, WORLD_SIZE, LOCAL_RANK,\n"
               "             MASTER_ADDR=127.0.0.1, MASTER_PORT; NCCL), and print each rank's figures\n"
               "             beside its model's, merged: rank,step,peak_allocated,allocated_end,model_peak,\n"
               "             model_end,step_time_s,loss,status (at most %d GPUs and %d steps). Started by\n"
               "             torchrun or mpirun, this process is rank RANK on GPU LOCAL_RANK and prints\n"
               "             its own rows\n"
               "  --threads  with --gpu: one process, a thread a rank, instead\n"
               "  --ranks-out DIR  with --gpu under torchrun or mpirun: each rank also writes DIR/rankR.csv\n"
               "             (and DIR/rankR.verify), and rank 0 merges every rank's into DIR/ranks.csv\n"
               "             (and DIR/verify.txt); DIR must be a folder all ranks see, without a\n"
               "             rank's figures already in it\n"
               "  --verify   with --gpu: check every rank's parameters against one GPU trained on the\n"
               "             whole batch (relative %.0e) and that each rank's loss falls\n"
               "  --deadline S  with --gpu: a step not done within S seconds (default %.0f) stops every\n"
               "             rank (exit 3, one line naming the rank that stopped queueing and its call)\n"
               "  --pause-ms N  with --gpu: every rank idles N ms after each step (as\n"
               "             tests/torch/fsdp_reference.py pauses 300 ms), default 0\n"
               "  --inject oom:R:S | hang:R:S | kill:R:S  with --gpu: rank R runs out of memory (a result:\n"
               "             its row says oom, the others stop), hangs, or is killed by SIGKILL (processes\n"
               "             only) at the start of step S (the tests' faults). When a rank ends badly the\n"
               "             others are told (SIGUSR1) and stop at their next wait, naming it; any still\n"
               "             running %.0f s later is killed\n"
               "Exit: 0; 1 a GPU figure differs from the model or the check failed; 2 bad input;\n"
               "3 CUDA or NCCL error; 77 not enough GPUs or no NCCL.\n",
               MC_SH_MAX_GPUS, MC_SH_MAX_STEPS, MC_SH_VERIFY_TOL, MC_SH_DEFAULT_DEADLINE_S, MC_SH_PROCS_GRACE_S);
        return MC_EXIT_OK;
    }
    if (c.mode == MC_SH_NMODE || c.world == 0) {
        fprintf(stderr, "sharded_model: --mode and --world are required\n");
        return MC_EXIT_USAGE;
    }
    if (transformer && gpu) {
        if (trace_path || seg_path) {
            fprintf(stderr, "sharded_model: --gpu writes no --trace and takes no --segments\n");
            return MC_EXIT_USAGE;
        }
        /* the runner's network: the encoder, its knobs in c.wl (sharded_tfm.h mc_sh_tfm_model) */
        static mc_tfm_config net;
        static mc_sh_model model;
        net = cli.tfm;
        model = mc_sh_tfm_model(&net);
        c.model = &model;
        c.wl = mc_sh_net_default();
        c.wl.layers = (int)net.enc_layers; /* FSDP2's units */
        c.wl.batch = net.batch;
        c.wl.optimizer = net.optimizer;
        c.wl.lr = net.lr;
        c.wl.seed = net.seed;
        c.wl.sm_count = net.sm_count;
        if (model.check(&c, err, sizeof err) != 0) {
            fprintf(stderr, "sharded_model: %s\n", err);
            return MC_EXIT_USAGE;
        }
        go.steps = cli.steps;
        go.verify = verify;
        return run_gpu(&c, go, cli.sms_given, threads, ranks_out, argv);
    }
    if (transformer) {
        if (verify || go.deadline_s > 0 || go.fault != MC_SH_FAULT_NONE || go.pause_s > 0 || threads || ranks_out) {
            fprintf(stderr, "sharded_model: --verify, --deadline, --pause-ms, --inject, --threads and --ranks-out need --gpu\n");
            return MC_EXIT_USAGE;
        }
        return run_transformer(&cli, &c, trace_path, seg_path);
    }
    if (seg_path) {
        fprintf(stderr, "sharded_model: --segments is for --model transformer\n");
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
    if (gpu) return run_gpu(&c, go, cli.sms_given, threads, ranks_out, argv);
    if (verify || go.deadline_s > 0 || go.fault != MC_SH_FAULT_NONE || go.pause_s > 0 || threads || ranks_out) {
        fprintf(stderr, "sharded_model: --verify, --deadline, --pause-ms, --inject, --threads and --ranks-out need --gpu\n");
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
