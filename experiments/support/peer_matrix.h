/* peer_matrix.h: C22's bandwidth matrix over every ordered pair of the
 * visible GPUs (src -> dst, src != dst), measured as NVIDIA's nvbandwidth
 * measures its device_to_device tests, and the "combine without copying"
 * check on every pair.
 *
 * Methods (MC_PM_*), each a matrix of cells [src][dst]:
 *   PEER_OFF     cudaMemcpyPeerAsync on src's stream, peer access disabled
 *                (the driver stages the copy)
 *   PEER_ON      the same with peer access enabled both ways
 *                (nvbandwidth's device_to_device_memcpy_write_ce)
 *   KERNEL_READ  a kernel on dst loads src's memory in place into dst's own
 *                buffer, 16-byte loads (device_to_device_memcpy_read_sm)
 *   COMBINE      a kernel on dst computes c = a + b (float) where a and c are
 *                on dst and b on src: the remote operand is read in place,
 *                never copied. Its rate is b's bytes per second; c is checked
 *                on the device after every sample and element by element on
 *                the host after the last.
 *
 * Timing (peer_matrix.cu): CUDA events on the initiating GPU's stream (src's
 * for the copies, dst's for the kernels), around MC_PM_LOOPS back-to-back
 * operations queued behind a spin kernel that the host releases once all of
 * them are queued (common/gate.h), after --warmup untimed ones in the same
 * batch. Figures in B/s (bytes moved / event seconds). Pure host code
 * (names, rows, the verdict's words, the host check) is in
 * peer_matrix_rows.c, so that tests run it without a GPU. */
#ifndef MC_PEER_MATRIX_H
#define MC_PEER_MATRIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "experiment.h"
#include "pattern.h"
#include "stats.h"
#include "verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_PM_MAX_GPUS 16       /* GPUs the matrix covers; more are left out (a finding says so) */
#define MC_PM_LOOPS 4           /* timed operations per sample (nvbandwidth: 16 of 512 MiB) */
#define MC_PM_MAX_SAMPLES 5     /* samples per cell, at most (nvbandwidth: 3) */
#define MC_PM_COMBINE_MAX_BYTES (32ull << 20) /* a + b runs on at most this much: its host
                                                 check reads every element, 5 ns each */

typedef enum { MC_PM_PEER_OFF, MC_PM_PEER_ON, MC_PM_KERNEL_READ, MC_PM_COMBINE, MC_PM_NMETH } mc_pm_method;

/* The CSV variant of each method: "matrix_peer_off", ... */
extern const char *const MC_PM_VARIANT[MC_PM_NMETH];

typedef enum {
    MC_PM_NOT_RUN = 0,  /* not measured (no matrix) */
    MC_PM_OK,           /* measured and verified */
    MC_PM_WRONG,        /* measured; some destination word or element wrong */
    MC_PM_NO_PEER       /* cudaDeviceCanAccessPeer is 0 one way or the other: not measurable */
} mc_pm_state;

typedef struct {
    mc_pm_state state;
    mc_stats bw;            /* B/s over the samples */
    uint64_t bad;           /* wrong words (copies) or elements (combine), device checks */
    uint64_t host_bad;      /* COMBINE only: wrong elements in the host's element-by-element check */
} mc_pm_cell;

typedef struct {
    int n;                  /* GPUs in the matrix (0: none measured) */
    int visible;            /* GPUs the runtime reports (n < visible past MC_PM_MAX_GPUS) */
    uint64_t bytes;         /* copy and kernel-read size */
    uint64_t combine_bytes; /* a + b size: min(bytes, MC_PM_COMBINE_MAX_BYTES) */
    int samples, loops;
    bool can[MC_PM_MAX_GPUS][MC_PM_MAX_GPUS]; /* cudaDeviceCanAccessPeer(i, j) */
    mc_pm_cell cell[MC_PM_NMETH][MC_PM_MAX_GPUS][MC_PM_MAX_GPUS]; /* [method][src][dst] */
} mc_pm_result;

/* Both directions between i and j can be enabled. */
bool mc_pm_pair_peer(const mc_pm_result *m, int i, int j);

/* ---- the combine operands (host and device) ---- */

/* Element k of the operand with seed `seed`: an integer in [-32768, 32767]
 * as a float, so that a + b is exact and the host's sum equals the GPU's
 * bit for bit. The poison word (MC_PATTERN_POISON, -2.9e-16 as a float) is
 * no such sum. */
static inline MC_PATTERN_HD float mc_pm_value(uint64_t seed, uint64_t k)
{
    return (float)((int)(mc_pattern_word(seed, k) >> 16) - 32768);
}

/* Elements of c[0..n) that differ from mc_pm_value(seed_a, k) +
 * mc_pm_value(seed_b, k): the host's element-by-element check. */
uint64_t mc_pm_combine_check_host(const float *c, uint64_t n, uint64_t seed_a, uint64_t seed_b);

/* ---- names and rows ---- */

/* "gpu<src>_to_gpu<dst>_bandwidth" (the size sweep's metric names); for
 * mismatches, "gpu<src>_to_gpu<dst>_mismatches". Returns buf. */
const char *mc_pm_metric(char *buf, size_t len, int src, int dst, const char *what);

/* The matrix's rows: one "gpu_count" row, then, per method and ordered pair,
 * a bandwidth row (status ok, failed where a word was wrong, no_peer_access
 * where the pair cannot be measured) and, for COMBINE, a mismatches row
 * (the host's check). Then one finding per method: range over the pairs and
 * the slowest pair. Nothing where m->n == 0. */
void mc_pm_emit(mc_run *run, const mc_pm_result *m);

/* Wrong words or elements over the whole matrix (device and host checks). */
uint64_t mc_pm_bad_total(const mc_pm_result *m);

/* ---- the verdict ---- */

/* The size sweep between GPU 0 and GPU 1 (--device and the next), at its
 * largest size, B/s. */
typedef struct {
    bool peer;              /* the two can access each other's memory */
    uint64_t bad;           /* wrong words in the sweep */
    char size[32];          /* its largest size, "1 GiB" */
    double off01, on01, via_host01; /* GPU 0 -> 1: peer copy off, on, through pinned host memory */
    double read_by0;        /* a kernel on GPU 0 reading GPU 1's memory */
} mc_pm_sweep;

/* C22's verdict from the sweep and the matrix (m may be NULL or have n == 0:
 * the sweep's rule alone). Writes the figures behind it into note.
 *   inconclusive  a word or element wrong anywhere
 *   holds         no pair of GPUs can access each other's memory: data
 *                 reaches another GPU only by a copy
 *   holds-partly  some pair can: there a kernel reads the other GPU's memory
 *                 in place and computes a + b with b remote (every element
 *                 checked); the note names the pairs that cannot */
mc_verdict mc_pm_verdict(const mc_pm_sweep *sw, const mc_pm_result *m, char *note, size_t len);

/* ---- measuring (peer_matrix.cu; needs the GPUs) ---- */

/* Queues a kernel on `stream` (of the current device) that copies bytes
 * (a multiple of 16) from src to dst by 16-byte loads and stores; src may be
 * another GPU's memory once peer access is on. */
void mc_pm_launch_read(void *dst, const void *src, uint64_t bytes, cudaStream_t stream);

typedef struct {
    uint64_t bytes;         /* per copy; a multiple of 16; halved on out-of-memory to 1 MiB */
    int samples;            /* per cell */
    int warmup;             /* untimed operations before the timed ones in each sample */
} mc_pm_options;

/* Measures every method over every ordered pair of the first min(visible,
 * MC_PM_MAX_GPUS) GPUs, leaving peer access disabled between all of them
 * as it found it. Out-of-memory sizes get an "oom" row; m->n = 0 when even
 * 1 MiB does not fit. Wrong words are counted in the cells, not reported. */
void mc_pm_measure(mc_run *run, const mc_pm_options *opt, mc_pm_result *m);

#ifdef __cplusplus
}
#endif
#endif
