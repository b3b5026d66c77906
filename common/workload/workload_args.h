/* workload_args.h: build/workload's command line (DESIGN.md "The training
 * workload, build/workload"), parsed strictly: an unknown flag, a missing,
 * non-numeric, zero or out-of-range value, an unknown optimizer or
 * precision, layers < 2, or a batch not divisible by accum gives one line
 * and MC_EXIT_USAGE.
 *
 *   --layers L --in D --width H --out O --batch B   the network (required)
 *   --optimizer sgd|momentum|adam                    default sgd
 *   --precision fp32|fp16|bf16                       default fp32
 *   --accum K                                        default 1
 *   --checkpoint                                     checkpoint each Linear+ReLU pair
 *   --checkpoint-segments S                          checkpoint_sequential with S segments
 *   --steps S                                        default 10
 *   --model-only                                     host backend, no GPU
 *   --limit BYTES                                    set_per_process_memory_fraction's cap
 *   --max-split-size BYTES                           PYTORCH_CUDA_ALLOC_CONF max_split_size_mb
 *   --lr X                                           default sgd/momentum 0.01, adam 0.001
 *   --inject-overflow STEP                           fp16: that step's gradients overflow
 *   --seed N, --sms N (SMs for reduction scratch, default 132), --device N
 *   --trace FILE                                     the request sequence (memclaims-trace v1)
 *   --verify                                         the GPU arithmetic check, then exit
 *   --profile                                        one more step, its GPU time by kind on stderr
 *   --profile-csv FILE                               the same, and as CSV in FILE (not with
 *                                                    --model-only or --verify)
 *   --help
 *
 *   --arch mlp|transformer|encoder                  default mlp; the Transformer's flags:
 *   --d-model --heads --enc-layers --dec-layers --ff --dropout --activation relu|gelu
 *   --norm-first --batch-first --causal --seq L --batch B --optimizer ...|adamw
 *   (workload_args_tfm.c) */
#ifndef MC_WORKLOAD_ARGS_H
#define MC_WORKLOAD_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "workload/transformer/tfm.h"
#include "workload/mlp/mlp.h"
#include "workload/sharded/sharded_seq.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MC_WL_ARCH_MLP, MC_WL_ARCH_TRANSFORMER, MC_WL_ARCH_ENCODER } mc_wl_arch;

typedef struct {
    mc_workload_config cfg;
    mc_wl_arch arch;          /* --arch (mlp) */
    mc_tfm_config tfm;        /* the Transformer's, when arch is not mlp */
    bool seq_given, batch_given;
    int steps;
    int device;
    bool model_only, verify, help;
    bool sms_given;           /* --sms given (else a GPU run asks the device) */
    const char *trace_path;   /* NULL: none */
    bool profile;             /* --profile or --profile-csv: one more step, timed by kind */
    const char *profile_csv;  /* --profile-csv FILE (NULL: the table on stderr only) */
    const char *program;      /* --program seed000-c07 (NULL: none): a seed's whole program */
} mc_workload_cli;

/* Returns 0, or MC_EXIT_USAGE with one line (no newline) in err. --help and
 * --verify need no shape. */
int mc_workload_parse_args(mc_workload_cli *cli, int argc, char **argv, char *err, size_t len);
void mc_workload_usage(FILE *fp);

/* workload_args_tfm.c: --arch's value (0, or -1 when unknown); one flag of the
 * Transformer (0 taken, 1 not its flag, MC_EXIT_USAGE with err; took_value:
 * it consumed the next argument); the checks once all flags are read. */
int mc_workload_parse_arch(const char *v, mc_wl_arch *arch);
int mc_tfm_parse_flag(mc_workload_cli *cli, const char *a, const char *v, bool *took_value,
                      char *err, size_t len);
int mc_tfm_finish_args(mc_workload_cli *cli, char *err, size_t len);

/* The sharded model's network from the MLP's configuration (build/sharded_model
 * takes build/workload's network flags): 0, or -1 with one line in err for
 * what mc_workload_config_check refuses and for what the sharded model does
 * not cover (fp16/bf16, accumulation, checkpointing). */
int mc_workload_sharded_net(const mc_workload_config *c, mc_sh_net *net, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
