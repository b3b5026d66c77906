/* gate.h: hold a stream behind a spinning kernel until the host releases it,
 * so work queued behind the gate starts together and queueing cost is not
 * timed (nvbandwidth's method). Also a kernel that runs for a fixed time. */
#ifndef MC_GATE_H
#define MC_GATE_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    volatile int *flag_host;  /* mapped pinned memory the host writes */
    int *flag_device;         /* device view of the same word */
} mc_gate;

void mc_gate_init(mc_gate *g);
/* Launches the spin kernel on stream; it waits until mc_gate_release(). */
void mc_gate_close(mc_gate *g, cudaStream_t stream);
void mc_gate_release(mc_gate *g);
void mc_gate_destroy(mc_gate *g);

/* Launches one block that spins for about `seconds` of device clock
 * (clock64 at the device's current SM clock, read once per call). */
void mc_launch_busy_kernel(double seconds, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
