/* wl_profile.cu: --profile's event pool (wl_profile.h). Operation i has
 * events 2i (begin) and 2i+1 (end), both recorded on the one stream; its
 * time is cudaEventElapsedTime between them, read once the step is over. */
#include "wl_profile.h"

#include <cuda_runtime_api.h>

#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "check_cuda.h"

struct mc_wl_prof {
    cudaStream_t stream;
    cudaEvent_t *ev;     /* [2 cap] */
    uint8_t *kind;       /* [cap]: mc_prof_kind of each operation */
    long n, cap;         /* operations recorded; event pairs made */
    long made_first;     /* pairs made by mc_prof_create */
    int depth;           /* open scopes: only the outermost records */
};

static void make_pairs(mc_wl_prof *p, long cap)
{
    cudaEvent_t *ev = (cudaEvent_t *)realloc(p->ev, (size_t)cap * 2 * sizeof *ev);
    uint8_t *kind = (uint8_t *)realloc(p->kind, (size_t)cap);
    CHECK(ev != NULL && kind != NULL, "out of host memory");
    p->ev = ev;
    p->kind = kind;
    for (long i = 2 * p->cap; i < 2 * cap; i++) CHECK_CUDA(cudaEventCreate(&p->ev[i]));
    p->cap = cap;
}

extern "C" mc_wl_prof *mc_prof_create(struct CUstream_st *stream, long ops)
{
    mc_wl_prof *p = (mc_wl_prof *)calloc(1, sizeof *p);
    CHECK(p != NULL, "out of host memory");
    p->stream = stream;
    make_pairs(p, ops > 0 ? ops : 1);
    p->made_first = p->cap;
    return p;
}

extern "C" void mc_prof_destroy(mc_wl_prof *p)
{
    if (!p) return;
    for (long i = 0; i < 2 * p->cap; i++) CHECK_CUDA(cudaEventDestroy(p->ev[i]));
    free(p->ev);
    free(p->kind);
    free(p);
}

extern "C" void mc_prof_begin(mc_wl_prof *p, mc_prof_kind kind)
{
    if (!p || !mc_prof_enter(&p->depth)) return;
    if (p->n == p->cap) make_pairs(p, 2 * p->cap);
    p->kind[p->n] = (uint8_t)kind;
    CHECK_CUDA(cudaEventRecord(p->ev[2 * p->n], p->stream));
}

extern "C" void mc_prof_end(mc_wl_prof *p)
{
    if (!p || !mc_prof_leave(&p->depth)) return;
    CHECK_CUDA(cudaEventRecord(p->ev[2 * p->n + 1], p->stream));
    p->n++;
}

extern "C" void mc_prof_sum(mc_wl_prof *p, mc_prof_table *t)
{
    CHECK(p->depth == 0, "profile: %d operations still open", p->depth);
    CHECK_CUDA(cudaStreamSynchronize(p->stream));
    for (long i = 0; i < p->n; i++) {
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, p->ev[2 * i], p->ev[2 * i + 1]));
        mc_prof_table_add(t, (mc_prof_kind)p->kind[i], (double)ms);
    }
}

extern "C" long mc_prof_grown(const mc_wl_prof *p) { return p->cap - p->made_first; }
