/* workload_args.c: build/workload's strict command line (workload_args.h). */
#include "workload_args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "options.h"

void mc_workload_usage(FILE *fp)
{
    fprintf(fp,
        "usage: workload --layers L --in D --width H --out O --batch B [options]\n"
        "Trains Sequential(Linear(D,H), ReLU, [Linear(H,H), ReLU] x (L-2), Linear(H,O)) on MSE\n"
        "with every tensor from the caching-allocator model, in PyTorch 2.11's request order,\n"
        "and writes one CSV row per step:\n  %s\n"
        "  --optimizer sgd|momentum|adam   (sgd)      --precision fp32|fp16|bf16   (fp32)\n"
        "  --accum K          micro-steps of B/K rows (1)\n"
        "  --checkpoint       non-reentrant checkpoint of each Linear+ReLU pair\n"
        "  --checkpoint-segments S   checkpoint_sequential(model, S, x, use_reentrant=False)\n"
        "                     over the 2L-1 modules (1..2L-1; fp32; not with --checkpoint)\n"
        "  --steps S          (10)\n"
        "  --model-only       the same requests through the host backend: no GPU, no arithmetic\n"
        "  --limit BYTES      cap reserved memory (set_per_process_memory_fraction); K/M/G\n"
        "  --max-split-size BYTES   PYTORCH_CUDA_ALLOC_CONF max_split_size_mb, in bytes\n"
        "  --conf STRING      PYTORCH_CUDA_ALLOC_CONF settings for the allocator model (as build/replay)\n"
        "  --lr X             learning rate (sgd, momentum 0.01; adam 0.001)\n"
        "  --inject-overflow STEP   fp16: make that step's gradients infinite\n"
        "  --seed N  --sms N (SMs, for reduction scratch; 132)  --device N\n"
        "  --trace FILE       write the request sequence (memclaims-trace v1: set-up, 2 steps)\n"
        "  --verify           check the arithmetic on the GPU against a float64 reference\n"
        "  --profile          after the last step, one more step (not a CSV row, not traced) with each\n"
        "                     GPU operation timed by CUDA events; its GPU time by kind on stderr:\n"
        "                     gemm, attention, layernorm, elementwise, optimizer, copy, idle (the GPU\n"
        "                     waiting on the host), total (the step's elapsed time). The CSV's steps\n"
        "                     are not timed so. Not with --model-only or --verify\n"
        "  --profile-csv FILE --profile, and the table as CSV in FILE: kind,ms,share (share in %%)\n"
        "\n"
        "usage: workload --arch transformer|encoder --seq L --batch B [options]\n"
        "PyTorch's nn.Transformer (src and tgt of the same shape, loss mse_loss(out, tgt)) or\n"
        "nn.TransformerEncoder(layer, N, enable_nested_tensor=False) (loss against a second random\n"
        "tensor), in training mode, on the GPU (fused attention kernels; head size 16, 32, 64 or 128)\n"
        "or with --model-only (any head size PyTorch's backends take); --verify checks the kernels\n"
        "and whole training steps against a float64 reference on the GPU:\n"
        "  --d-model E (512)  --heads H (8)  --enc-layers N (6)  --dec-layers M (6)  --ff F (2048)\n"
        "  --dropout P (0.1)  --activation relu|gelu (relu)  --norm-first  --batch-first\n"
        "  --causal           encoder: generate_square_subsequent_mask, passed with is_causal=True\n"
        "  --build host|device  made on the host and moved (model.cuda(): Module._apply's order, each\n"
        "                     layer's out_proj before its in_proj), as the seeds build it; or made on\n"
        "                     the device (device=\"cuda\": template layers, deep copies) (device)\n"
        "  --fused            the elementwise chains (activation+dropout, dropout+residual add) in one\n"
        "                     kernel each, as a compiler fuses them (not PyTorch eager: C25)\n"
        "  --offload          saved activations copied to pinned host memory in the forward and back\n"
        "                     in the backward, as torch.autograd.graph.save_on_cpu(pin_memory=True)\n"
        "                     (parameters and autocast's weight casts stay; not with --checkpoint: C23)\n"
        "  --seq L --batch B  the whole batch; --accum K makes micro-batches of B/K\n"
        "  --optimizer sgd|momentum|adam|adamw   --precision, --accum, --checkpoint (each layer),\n"
        "  --steps, --limit, --max-split-size, --lr (sgd, momentum 0.01; adam, adamw 0.001), --seed,\n"
        "  --sms, --device, --trace, --profile, --profile-csv as above\n"
        "Attention in fp16 and bf16 runs cuDNN's fused flash kernels, as PyTorch does, where the\n"
        "build found cuDNN 9 (else, with MEMCLAIMS_CUDNN=0, or where cuDNN takes no graph for the\n"
        "shape, the suite's own kernels, said in one line on stderr); fp32 the suite's own on the\n"
        "tensor cores as 3xTF32, PyTorch's memory-efficient kernel's arithmetic (before sm_80:\n"
        "general fp32 kernels).\n"
        "\n"
        "usage: workload --program seed000-c07 [--model-only] [--sms N] [--device N] [--trace FILE]\n"
        "Seed 000's gradient-accumulation program as written: nn.Transformer(d_model=256).cuda(),\n"
        "Adam; large_batch() (sequence 64 x batch 100, loss not divided, no zero_grad), then\n"
        "gradient_accumulation() (zero_grad, 4 micro-steps of sequence 16 x batch 100, loss / 4),\n"
        "each function's variables alive until rebound: two CSV rows, one per function (its peak\n"
        "is what the function returns).\n"
        "Exit: 0 ran, 1 --verify failed, 2 usage, 3 CUDA error, 77 no CUDA device.\n"
        "An out-of-memory step is a row with status oom, not an error.\n",
        MC_WORKLOAD_CSV_HEADER);
}

static int bad(char *err, size_t len, const char *flag, const char *what, const char *val)
{
    snprintf(err, len, "%s needs %s, not '%s'", flag, what, val ? val : "");
    return MC_EXIT_USAGE;
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || *s < '0' || *s > '9') return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int mc_workload_parse_args(mc_workload_cli *cli, int argc, char **argv, char *err, size_t len)
{
    memset(cli, 0, sizeof *cli);
    cli->cfg = mc_workload_config_default();
    cli->tfm = mc_tfm_config_default();
    cli->steps = 10;
    err[0] = '\0';
    for (int i = 1; i < argc; i++) /* --arch first: it decides which flags exist */
        if (!strcmp(argv[i], "--arch") && mc_workload_parse_arch(i + 1 < argc ? argv[i + 1] : NULL, &cli->arch))
            return bad(err, len, "--arch", "mlp, transformer or encoder", i + 1 < argc ? argv[i + 1] : NULL);
    bool have[5] = {false};
    static const char *const shape[5] = {"--layers", "--in", "--width", "--out", "--batch"};
    const char *foreign = NULL; /* a flag --program does not take */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) { cli->help = true; continue; }
        if (!strcmp(a, "--program")) {
            if (!v || strcmp(v, "seed000-c07")) return bad(err, len, a, "seed000-c07", v);
            cli->program = v;
            i++;
            continue;
        }
        if (strcmp(a, "--model-only") && strcmp(a, "--sms") && strcmp(a, "--device") && strcmp(a, "--trace"))
            foreign = a;
        if (!strcmp(a, "--model-only")) { cli->model_only = true; continue; }
        if (!strcmp(a, "--checkpoint")) { cli->cfg.checkpoint = true; continue; }
        if (!strcmp(a, "--verify")) { cli->verify = true; continue; }
        if (!strcmp(a, "--profile")) { cli->profile = true; continue; }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, len, "unexpected argument '%s' (see --help)", a);
            return MC_EXIT_USAGE;
        }
        if (!strcmp(a, "--arch")) { i++; continue; }
        if (cli->arch != MC_WL_ARCH_MLP) {
            bool took = false;
            int t = mc_tfm_parse_flag(cli, a, v, &took, err, len);
            if (t == MC_EXIT_USAGE) return t;
            if (t == 0) {
                i += took;
                continue;
            }
        }
        static const char *const valued[] = {
            "--layers", "--in", "--width", "--out", "--batch", "--optimizer", "--precision",
            "--accum", "--steps", "--limit", "--max-split-size", "--lr", "--inject-overflow",
            "--seed", "--sms", "--device", "--trace", "--conf", "--checkpoint-segments", "--profile-csv", NULL};
        int k = 0;
        while (valued[k] && strcmp(valued[k], a)) k++;
        if (!valued[k]) {
            snprintf(err, len, "unknown option '%s' (see --help)", a);
            return MC_EXIT_USAGE;
        }
        if (!v) {
            snprintf(err, len, "%s needs a value", a);
            return MC_EXIT_USAGE;
        }
        i++;
        int64_t n = 0;
        int iv = 0;
        for (int s = 0; s < 5; s++)
            if (!strcmp(a, shape[s])) {
                if (parse_i64(v, s == 0 ? 2 : 1, s == 0 ? 4096 : 1LL << 24, &n) != 0)
                    return bad(err, len, a, s == 0 ? "a whole number from 2 to 4096"
                                                   : "a whole number from 1 to 16777216", v);
                have[s] = true;
                if (s == 0) cli->cfg.layers = (int)n;
                else if (s == 1) cli->cfg.in = n;
                else if (s == 2) cli->cfg.width = n;
                else if (s == 3) cli->cfg.out = n;
                else cli->cfg.batch = n;
            }
        if (!strcmp(a, "--optimizer")) {
            if (mc_wl_optimizer_parse(v, MC_WL_ADAM, &cli->cfg.optimizer) != 0)
                return bad(err, len, a, mc_wl_optimizer_words(MC_WL_ADAM), v);
        } else if (!strcmp(a, "--precision")) {
            if (!strcmp(v, "fp32")) cli->cfg.precision = MC_WL_FP32;
            else if (!strcmp(v, "fp16")) cli->cfg.precision = MC_WL_FP16;
            else if (!strcmp(v, "bf16")) cli->cfg.precision = MC_WL_BF16;
            else return bad(err, len, a, "fp32, fp16 or bf16", v);
        } else if (!strcmp(a, "--accum")) {
            if (mc_parse_int(v, 1, 1024, &cli->cfg.accum) != 0) return bad(err, len, a, "a whole number from 1 to 1024", v);
        } else if (!strcmp(a, "--checkpoint-segments")) {
            if (mc_parse_int(v, 1, 8191, &cli->cfg.checkpoint_segments) != 0)
                return bad(err, len, a, "a whole number of segments >= 1", v);
        } else if (!strcmp(a, "--steps")) {
            if (mc_parse_int(v, 1, 1000000, &cli->steps) != 0) return bad(err, len, a, "a whole number from 1 to 1000000", v);
        } else if (!strcmp(a, "--limit")) {
            if (mc_parse_bytes(v, &cli->cfg.alloc.limit_bytes) != 0) return bad(err, len, a, "a byte count >= 1 (K, M, G allowed)", v);
        } else if (!strcmp(a, "--max-split-size")) {
            if (mc_parse_bytes(v, &cli->cfg.alloc.max_split_size) != 0) return bad(err, len, a, "a byte count (whole MiB, >= 20 MiB)", v);
        } else if (!strcmp(a, "--lr")) {
            char *end = NULL;
            errno = 0;
            double x = strtod(v, &end);
            if (errno || *end || !(x > 0) || !isfinite(x) || x > 1e6) return bad(err, len, a, "a number > 0", v);
            cli->cfg.lr = x;
        } else if (!strcmp(a, "--inject-overflow")) {
            if (mc_parse_int(v, 1, INT_MAX, &cli->cfg.inject_overflow_step) != 0) return bad(err, len, a, "a step number >= 1", v);
        } else if (!strcmp(a, "--seed")) {
            if (parse_i64(v, 0, INT64_MAX, &n) != 0) return bad(err, len, a, "a whole number >= 0", v);
            cli->cfg.seed = (uint64_t)n;
        } else if (!strcmp(a, "--sms")) {
            if (mc_parse_int(v, 1, 4096, &cli->cfg.sm_count) != 0) return bad(err, len, a, "a whole number from 1 to 4096", v);
            cli->sms_given = true;
        } else if (!strcmp(a, "--device")) {
            if (mc_parse_int(v, 0, 1023, &iv) != 0) return bad(err, len, a, "a device number >= 0", v);
            cli->device = iv;
        } else if (!strcmp(a, "--conf")) {
            char why[512];
            if (ca_conf_parse(v, &cli->cfg.alloc, why, sizeof why) != 0) {
                snprintf(err, len, "--%s", why);
                return MC_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--trace")) {
            if (!*v) return bad(err, len, a, "a file name", v);
            cli->trace_path = v;
        } else if (!strcmp(a, "--profile-csv")) {
            if (!*v) return bad(err, len, a, "a file name", v);
            cli->profile_csv = v;
            cli->profile = true;
        }
    }
    if (cli->help) return 0;
    if (cli->program) { /* the whole program fixes its model and steps */
        if (foreign) {
            snprintf(err, len, "--program takes --model-only, --sms, --device and --trace only, not %s", foreign);
            return MC_EXIT_USAGE;
        }
        const int sms = cli->cfg.sm_count;
        cli->arch = MC_WL_ARCH_TRANSFORMER;
        cli->tfm = mc_tfm_seed000_c07_config();
        cli->tfm.sm_count = sms;
        return 0;
    }
    if (cli->profile && (cli->model_only || cli->verify)) {
        snprintf(err, len, "--profile times a step's GPU operations: not with %s",
                 cli->verify ? "--verify" : "--model-only");
        return MC_EXIT_USAGE;
    }
    if (cli->verify) return 0;
    if (cli->arch != MC_WL_ARCH_MLP && cli->cfg.checkpoint_segments) {
        snprintf(err, len, "--checkpoint-segments is the MLP's (the Transformer has --checkpoint, per layer)");
        return MC_EXIT_USAGE;
    }
    if (cli->arch != MC_WL_ARCH_MLP) return mc_tfm_finish_args(cli, err, len);
    for (int s = 0; s < 5; s++)
        if (!have[s]) {
            snprintf(err, len, "%s is required (see --help)", shape[s]);
            return MC_EXIT_USAGE;
        }
    if (cli->cfg.inject_overflow_step && cli->cfg.precision != MC_WL_FP16) {
        snprintf(err, len, "--inject-overflow needs --precision fp16 (GradScaler)");
        return MC_EXIT_USAGE;
    }
    if (cli->cfg.alloc.expandable_segments && !cli->model_only) {
        snprintf(err, len, "--conf expandable_segments:True needs --model-only (the CUDA backend maps no pages)");
        return MC_EXIT_USAGE;
    }
    if (mc_workload_config_check(&cli->cfg, err, len) != 0) return MC_EXIT_USAGE;
    return 0;
}

int mc_workload_sharded_net(const mc_workload_config *c, mc_sh_net *net, char *err, size_t len)
{
    if (mc_workload_config_check(c, err, len) != 0) return -1;
    if (c->precision != MC_WL_FP32 || c->accum != 1 || c->checkpoint) {
        snprintf(err, len, "the sharded model covers fp32, accum 1, no checkpointing only");
        return -1;
    }
    *net = mc_sh_net_default();
    net->layers = c->layers;
    net->in = c->in;
    net->width = c->width;
    net->out = c->out;
    net->batch = c->batch;
    net->optimizer = c->optimizer;
    net->lr = c->lr;
    net->alloc = c->alloc;
    net->host_capacity = c->host_capacity;
    net->sm_count = c->sm_count;
    net->seed = c->seed;
    return 0;
}
