/* batch_fit.h: a program's request sequence as a function of its batch,
 * fitted from traces of the same program at two or more batches, and the
 * largest batch whose replay fits a memory limit (scripts/whatif
 * --max-batch, C06).
 *
 * The traces must be one program: the same settings, no state from before
 * the recording (a snapshot recorded from the program's start), and their
 * operations nearly the same. The run at the largest batch is the
 * template; each other run is aligned to it operation by operation (a
 * longest common subsequence of the operations' kinds and streams, Myers'
 * difference), so that a few requests one batch makes and another does
 * not (cuDNN trying a workspace, a reduction's buffer once the rows are
 * many) pair the rest all the same. More than 15% of the operations
 * differing is another program. Each request's size is fitted as
 * bytes = a + s * batch with integers a, s (what a tensor's numel times its
 * element size gives), before the allocator's rounding, through the
 * smallest and the largest batch that make it. A request that follows no
 * such rule (a slope that is not whole, points off the line: a workspace
 * chosen by an algorithm that changes with the shape) is named and sized
 * by that line, rounded up; one that only the largest batch makes is held
 * at its size there. A request that only a batch larger than every run
 * makes cannot be known. */
#ifndef MC_BATCH_FIT_H
#define MC_BATCH_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CA_BATCH_MAX_POINTS 16
#define CA_BATCH_MAX_NAMED 10 /* non-affine requests named in messages */

typedef struct {
    ca_trace tmpl;          /* the largest batch's operations, addresses dropped */
    int64_t *lo_batch;      /* per op of tmpl: the smallest batch that makes it
                               (0: only the largest, held at its size) */
    int64_t *lo_bytes;      /* per op: bytes at lo_batch (allocs; else 0) */
    int64_t *hi_bytes;      /* per op: bytes at batch hi */
    size_t n_only_top;      /* allocs only the largest batch makes */
    size_t n_dropped;       /* operations of the other runs the largest does not make */
    int64_t lo, hi;         /* the smallest and largest batch given */
    size_t n_grow;          /* allocs whose size grows with the batch */
    size_t n_nonaffine;     /* allocs that follow no integer affine rule */
    struct { uint64_t line; int64_t bytes[CA_BATCH_MAX_POINTS]; } named[CA_BATCH_MAX_NAMED]; /* -1: not made */
    size_t n_points;
    int64_t batches[CA_BATCH_MAX_POINTS];
    int64_t max_batch;      /* the largest batch whose every request stays a size
                               the allocator takes (< 1 EiB, no overflow) */
} ca_batch_fit;

/* Fits n traces (2 <= n <= CA_BATCH_MAX_POINTS) of one program at distinct
 * batches >= 1 (names: the user's files, for messages). 0, or -1 with one
 * line in err naming the files and why they cannot be fitted. The traces are not kept; free f with ca_batch_fit_free. */
int ca_batch_fit_build(ca_batch_fit *f, const ca_trace *const *traces, const int64_t *batches,
                       const char *const *names, size_t n, char *err, size_t errlen);
void ca_batch_fit_free(ca_batch_fit *f);

/* A trace to rewrite for one batch after another (one per thread): a copy
 * of f's operations; free it with ca_trace_free. */
void ca_batch_work(const ca_batch_fit *f, ca_trace *work);
/* Rewrites work's request sizes for batch b (1 <= b <= f->max_batch). */
void ca_batch_at(const ca_batch_fit *f, ca_trace *work, int64_t b);

typedef struct {
    int64_t max_batch;          /* 0: not even batch 1 fits */
    bool unbounded;             /* every batch up to f->max_batch fits */
    int64_t peak_allocated[2];  /* at max_batch and max_batch + 1 (whole run) */
    int64_t peak_reserved[2];
    bool fits_next;             /* (false: max_batch + 1 was refused) */
    int replays;
} ca_max_batch_result;

/* The largest batch b whose replay under cfg (its limit: PyTorch's memory
 * fraction, reserved bytes under the cap) on a device of capacity bytes
 * refuses no request the traces did not mark oom: b = 1, 2, 4, ... until one
 * is refused, then bisection (the footprint is taken to grow with the
 * batch). 0, or -1 with the replay's reason in err. */
int ca_max_batch(const ca_batch_fit *f, ca_trace *work, const ca_config *cfg, uint64_t capacity,
                 ca_max_batch_result *r, char *err, size_t errlen);
/* The same, given a batch known to fit (0: none): the search goes up from
 * it (known + 1, + 2, + 4, ...), then bisects; for a series of larger
 * cards, each from the last one's answer. */
int ca_max_batch_from(const ca_batch_fit *f, ca_trace *work, const ca_config *cfg, uint64_t capacity, int64_t known,
                      ca_max_batch_result *r, char *err, size_t errlen);

/* One replay of f at batch b (in work): fits (no unexpected refusal), and
 * the whole run's peaks. */
int ca_batch_replay(const ca_batch_fit *f, ca_trace *work, int64_t b, const ca_config *cfg, uint64_t capacity,
                    bool *fits, int64_t *peak_allocated, int64_t *peak_reserved, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
