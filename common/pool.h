/* pool.h: the same call on n indices, a fixed number of threads at a time
 * (build/whatif's replays, each of one index). Plain C (POSIX threads). */
#ifndef MC_POOL_H
#define MC_POOL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Calls fn(ctx, i) for i = 0 .. n-1 on up to `threads` threads at once and
 * returns when every call has returned. Indices are handed out in order, one
 * at a time, to whichever thread is free; fn must be safe to run in parallel
 * on different indices. Once stop (NULL: never) returns nonzero, no further
 * index starts (those running finish). With threads < 1, or if no thread
 * can be started, the calling thread does the work alone. Exits (CHECK) out
 * of host memory. */
void mc_pool_run(void (*fn)(void *ctx, size_t i), void *ctx, size_t n, int threads, int (*stop)(void));

#ifdef __cplusplus
}
#endif
#endif
