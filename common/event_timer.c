#include "event_timer.h"

#include "check_cuda.h"

void mc_event_timer_init(mc_event_timer *t, cudaStream_t stream)
{
    t->stream = stream;
    CHECK_CUDA(cudaEventCreate(&t->start));
    CHECK_CUDA(cudaEventCreate(&t->stop));
}

void mc_event_timer_start(mc_event_timer *t)
{
    CHECK_CUDA(cudaEventRecord(t->start, t->stream));
}

void mc_event_timer_stop(mc_event_timer *t)
{
    CHECK_CUDA(cudaEventRecord(t->stop, t->stream));
}

double mc_event_timer_elapsed_s(mc_event_timer *t)
{
    float ms = 0.0f;
    CHECK_CUDA(cudaEventSynchronize(t->stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, t->start, t->stop));
    return (double)ms * 1e-3;
}

void mc_event_timer_destroy(mc_event_timer *t)
{
    CHECK_CUDA(cudaEventDestroy(t->start));
    CHECK_CUDA(cudaEventDestroy(t->stop));
}
