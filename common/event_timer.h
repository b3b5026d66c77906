/* event_timer.h: device time from a pair of CUDA events on one stream.
 * Resolution about 0.5 us; the result is in seconds. */
#ifndef MC_EVENT_TIMER_H
#define MC_EVENT_TIMER_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    cudaEvent_t start, stop;
    cudaStream_t stream;
} mc_event_timer;

void mc_event_timer_init(mc_event_timer *t, cudaStream_t stream);
void mc_event_timer_start(mc_event_timer *t);   /* records start on the stream */
void mc_event_timer_stop(mc_event_timer *t);    /* records stop on the stream */
/* Waits for the stop event; returns stop - start in seconds. */
double mc_event_timer_elapsed_s(mc_event_timer *t);
void mc_event_timer_destroy(mc_event_timer *t);

#ifdef __cplusplus
}
#endif
#endif
