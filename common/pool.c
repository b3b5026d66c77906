/* pool.c: threads that take the next index until none is left (pool.h). */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"

typedef struct {
    void (*fn)(void *ctx, size_t i);
    void *ctx;
    size_t n;
    int (*stop)(void);
    atomic_size_t next; /* the next index to hand out */
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    for (size_t i; !(p->stop && p->stop()) && (i = atomic_fetch_add(&p->next, 1)) < p->n;) p->fn(p->ctx, i);
    return NULL;
}

void mc_pool_run(void (*fn)(void *ctx, size_t i), void *ctx, size_t n, int threads, int (*stop)(void))
{
    pool p = {fn, ctx, n, stop, 0};
    size_t k = threads < 1 ? 0 : (size_t)threads < n ? (size_t)threads : n;
    pthread_t *tid = calloc(k ? k : 1, sizeof *tid);
    CHECK(tid != NULL, "out of host memory");
    size_t started = 0;
    while (started < k && pthread_create(&tid[started], NULL, worker, &p) == 0) started++;
    if (started == 0) worker(&p);
    for (size_t i = 0; i < started; i++) pthread_join(tid[i], NULL);
    free(tid);
}
