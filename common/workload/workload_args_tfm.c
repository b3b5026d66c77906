/* workload_args_tfm.c: build/workload's flags for --arch transformer|encoder
 * (workload_args.h), parsed as strictly as the MLP's. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "options.h"
#include "workload_args.h"

static int bad(char *err, size_t len, const char *flag, const char *what, const char *val)
{
    snprintf(err, len, "%s needs %s, not '%s'", flag, what, val ? val : "");
    return MC_EXIT_USAGE;
}

static int whole(const char *s, long long lo, long long hi, int64_t *out)
{
    if (!s || *s < '0' || *s > '9') return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int mc_workload_parse_arch(const char *v, mc_wl_arch *arch)
{
    if (!v) return -1;
    if (!strcmp(v, "mlp")) *arch = MC_WL_ARCH_MLP;
    else if (!strcmp(v, "transformer")) *arch = MC_WL_ARCH_TRANSFORMER;
    else if (!strcmp(v, "encoder")) *arch = MC_WL_ARCH_ENCODER;
    else return -1;
    return 0;
}

int mc_tfm_parse_flag(mc_workload_cli *cli, const char *a, const char *v, bool *took_value,
                      char *err, size_t len)
{
    mc_tfm_config *c = &cli->tfm;
    *took_value = false;
    static const char *const mlp_only[] = {"--layers", "--in", "--width", "--out", "--inject-overflow", NULL};
    for (int k = 0; mlp_only[k]; k++)
        if (!strcmp(a, mlp_only[k])) {
            snprintf(err, len, "%s is for --arch mlp", a);
            return MC_EXIT_USAGE;
        }
    if (!strcmp(a, "--norm-first")) { c->norm_first = true; return 0; }
    if (!strcmp(a, "--batch-first")) { c->batch_first = true; return 0; }
    if (!strcmp(a, "--causal")) { c->causal = true; return 0; }
    if (!strcmp(a, "--fused")) { c->fused = true; return 0; }
    if (!strcmp(a, "--offload")) { c->offload = true; return 0; }
    static const char *const valued[] = {"--arch", "--d-model", "--heads", "--enc-layers", "--dec-layers",
                                         "--ff", "--dropout", "--activation", "--seq", "--batch",
                                         "--optimizer", "--build", NULL};
    int k = 0;
    while (valued[k] && strcmp(valued[k], a)) k++;
    if (!valued[k]) return 1; /* not a Transformer flag */
    if (!v) {
        snprintf(err, len, "%s needs a value", a);
        return MC_EXIT_USAGE;
    }
    *took_value = true;
    int64_t n = 0;
    if (!strcmp(a, "--arch")) return 0; /* read before the loop */
    if (!strcmp(a, "--d-model") || !strcmp(a, "--ff")) {
        if (whole(v, 1, 1 << 16, &n)) return bad(err, len, a, "a whole number from 1 to 65536", v);
        if (a[2] == 'd') c->d_model = n;
        else c->ff = n;
    } else if (!strcmp(a, "--heads")) {
        if (whole(v, 1, 1 << 16, &n)) return bad(err, len, a, "a whole number from 1 to 65536", v);
        c->heads = n;
    } else if (!strcmp(a, "--enc-layers") || !strcmp(a, "--dec-layers")) {
        if (whole(v, 1, 1024, &n)) return bad(err, len, a, "a whole number from 1 to 1024", v);
        if (a[2] == 'e') c->enc_layers = n;
        else c->dec_layers = n;
    } else if (!strcmp(a, "--dropout")) {
        char *end = NULL;
        errno = 0;
        double x = strtod(v, &end);
        if (errno || *end || !*v || !(x >= 0 && x < 1)) return bad(err, len, a, "a probability in [0, 1)", v);
        c->dropout = x;
    } else if (!strcmp(a, "--activation")) {
        if (!strcmp(v, "relu")) c->activation = MC_TFM_RELU;
        else if (!strcmp(v, "gelu")) c->activation = MC_TFM_GELU;
        else return bad(err, len, a, "relu or gelu", v);
    } else if (!strcmp(a, "--seq")) {
        if (whole(v, 0, 1 << 20, &n) || n == 0) return bad(err, len, a, "a sequence length from 1 to 1048576", v);
        c->seq = n;
        cli->seq_given = true;
    } else if (!strcmp(a, "--batch")) {
        if (whole(v, 1, 1 << 24, &n)) return bad(err, len, a, "a whole number from 1 to 16777216", v);
        c->batch = n;
        cli->batch_given = true;
    } else if (!strcmp(a, "--build")) {
        if (!strcmp(v, "host")) c->build_host = true;
        else if (!strcmp(v, "device")) c->build_host = false;
        else return bad(err, len, a, "host or device", v);
    } else { /* --optimizer */
        if (mc_wl_optimizer_parse(v, MC_WL_ADAMW, &c->optimizer) != 0)
            return bad(err, len, a, mc_wl_optimizer_words(MC_WL_ADAMW), v);
    }
    return 0;
}

int mc_tfm_finish_args(mc_workload_cli *cli, char *err, size_t len)
{
    mc_tfm_config *c = &cli->tfm;
    if (!cli->seq_given || !cli->batch_given) {
        snprintf(err, len, "%s is required with --arch %s (see --help)", cli->seq_given ? "--batch" : "--seq",
                 cli->arch == MC_WL_ARCH_ENCODER ? "encoder" : "transformer");
        return MC_EXIT_USAGE;
    }
    c->arch = cli->arch == MC_WL_ARCH_ENCODER ? MC_TFM_ENCODER : MC_TFM_TRANSFORMER;
    c->accum = cli->cfg.accum;
    c->precision = cli->cfg.precision;
    c->checkpoint = cli->cfg.checkpoint;
    c->alloc = cli->cfg.alloc;
    c->sm_count = cli->cfg.sm_count;
    c->seed = cli->cfg.seed;
    c->lr = cli->cfg.lr;
    if (mc_tfm_config_check(c, err, len)) return MC_EXIT_USAGE;
    if (c->offload && c->checkpoint) { /* tfm_offload.c says why */
        snprintf(err, len, "--offload does not combine with --checkpoint");
        return MC_EXIT_USAGE;
    }
    return !cli->model_only && mc_tfm_gpu_check(c, err, len) ? MC_EXIT_USAGE : 0;
}
