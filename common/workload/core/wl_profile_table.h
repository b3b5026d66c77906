/* wl_profile_table.h: build/workload --profile's table, the host side (plain
 * C, tested without a GPU: tests/test_wl_profile.c): the kinds a step's GPU
 * time is split into, the sums, the table on stderr and its CSV.
 *
 * The kinds, and which GPU operations each takes. In the workloads every
 * launch wrapper names its kind (wl_profile.h's MC_PROF); PyTorch's split
 * (tests/torch/profile_reference.py) sorts the kernels by name into the same
 * kinds, the rules written there beside these:
 *   gemm         cuBLAS and cuBLASLt products (Linear forward, both backward
 *                products, matmul)
 *   attention    the fused attention kernels, forward and backward
 *   layernorm    LayerNorm forward and backward (gamma and beta gradients too)
 *   elementwise  everything else that computes: softmax, dropout, activations
 *                and their backward, residual and bias adds, the bias
 *                gradient's row sum, MSE loss and its backward, random data,
 *                the loss's scalar ops, gradient accumulation's adds
 *   optimizer    the optimizers' updates and GradScaler's (unscale and
 *                inf check, the scale's reciprocal)
 *   copy         casts, device copies, fills, memsets, host<->device copies
 * Then two rows that are not operations:
 *   idle         the step's elapsed time (its start and end events) less the
 *                sum of the kinds: where the GPU waited for the host (clamped
 *                at 0: event granularity can make the sum pass the total)
 *   total        the step's elapsed time, share 100%
 * Times in milliseconds; share in percent of total. */
#ifndef MC_WL_PROFILE_TABLE_H
#define MC_WL_PROFILE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds, in table order: X(ID, "name"). The one list (printer, CSV and
 * enum are made from it). */
#define MC_PROF_KINDS(X)            \
    X(GEMM, "gemm")                 \
    X(ATTENTION, "attention")       \
    X(LAYERNORM, "layernorm")       \
    X(ELEMENTWISE, "elementwise")   \
    X(OPTIMIZER, "optimizer")       \
    X(COPY, "copy")

typedef enum {
#define MC_PROF_ENUM(id, name) MC_PROF_##id,
    MC_PROF_KINDS(MC_PROF_ENUM)
#undef MC_PROF_ENUM
    MC_PROF_NKINDS
} mc_prof_kind;

#define MC_PROF_CSV_HEADER "kind,ms,share"

typedef struct {
    double ms[MC_PROF_NKINDS]; /* GPU time of each kind's operations, ms */
    double busy_ms;            /* their sum */
    double idle_ms;            /* total_ms - busy_ms, at least 0 */
    double total_ms;           /* the step's elapsed time, ms */
    long ops;                  /* operations timed */
    long grown;                /* event pairs the recorder made during the step (their host
                                * time is in idle); 0 normally */
} mc_prof_table;

/* "gemm", ...; NULL outside [0, MC_PROF_NKINDS). */
const char *mc_prof_kind_name(int kind);

void mc_prof_table_init(mc_prof_table *t);
/* One operation of `kind` that took ms (>= 0) milliseconds. */
void mc_prof_table_add(mc_prof_table *t, mc_prof_kind kind, double ms);
/* The step's elapsed time: busy_ms and idle_ms from the kinds. */
void mc_prof_table_finish(mc_prof_table *t, double total_ms);
/* Share of total in percent (0 when total is 0). */
double mc_prof_share(const mc_prof_table *t, double ms);

/* The table, a header line and one line a row (kinds, idle, total):
 *   kind               ms    share
 *   gemm            0.400    40.0%          */
void mc_prof_table_print(FILE *fp, const mc_prof_table *t);
/* MC_PROF_CSV_HEADER and the same rows (ms with 4 decimals, share in
 * percent with 2) into fp. */
void mc_prof_table_csv(FILE *fp, const mc_prof_table *t);
/* The CSV into path, written under a temporary name and renamed. 0, or -1
 * with one line in err. */
int mc_prof_table_write_csv(const char *path, const mc_prof_table *t, char *err, size_t len);

/* Where two profiled steps of one model differ (C05: fp32 against half
 * precision, C25: eager against fused), into buf (at most len bytes, cut
 * short if need be): "A 54.3 ms, B 40.1 ms a step; gemm 20.1 -> 9.8 ms
 * (-10.3), ..." with the rows (kinds and idle) that differ by at least
 * min_ms, largest difference first, or "no kind differs by X ms or more".
 * Returns buf. */
char *mc_prof_table_compare(char *buf, size_t len, const char *a_name, const mc_prof_table *a,
                            const char *b_name, const mc_prof_table *b, double min_ms);

/* Nesting of the hooks: a wrapper that calls another wrapper opens two
 * scopes; only the outermost is timed. enter: true when the scope opened is
 * the outermost (depth was 0); leave: true when the outermost closes. */
bool mc_prof_enter(int *depth);
bool mc_prof_leave(int *depth);

#ifdef __cplusplus
}
#endif
#endif
