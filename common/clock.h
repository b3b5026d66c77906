/* clock.h: the host clock. Monotonic, in seconds, for host-API latency and
 * whole-step wall time. Device time comes from event_timer.h, never from here;
 * a row says which clock it used in its variant or metric. */
#ifndef MC_CLOCK_H
#define MC_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC); ns resolution. */
double mc_now_s(void);

#ifdef __cplusplus
}
#endif
#endif
