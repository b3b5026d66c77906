#include "gate.h"

#include "check_cuda.h"

/* Spins until the host writes 1; the timeout (in clock64 ticks, about 10 s at
 * 2 GHz) keeps a host that died from leaving the GPU spinning forever. */
static __global__ void gate_kernel(volatile int *flag)
{
    long long start = clock64();
    while (*flag == 0) {
        if (clock64() - start > 20000000000LL) break;
    }
}

static __global__ void busy_kernel(long long ticks)
{
    long long start = clock64();
    while (clock64() - start < ticks) { }
}

extern "C" void mc_gate_init(mc_gate *g)
{
    int *h = NULL;
    CHECK_CUDA(cudaHostAlloc((void **)&h, sizeof(int), cudaHostAllocMapped));
    *h = 0;
    g->flag_host = h;
    CHECK_CUDA(cudaHostGetDevicePointer((void **)&g->flag_device, h, 0));
}

extern "C" void mc_gate_close(mc_gate *g, cudaStream_t stream)
{
    *g->flag_host = 0;
    __sync_synchronize();
    gate_kernel<<<1, 1, 0, stream>>>(g->flag_device);
    CHECK_LAUNCH();
}

extern "C" void mc_gate_release(mc_gate *g)
{
    __sync_synchronize();
    *g->flag_host = 1;
    __sync_synchronize();
}

extern "C" void mc_gate_destroy(mc_gate *g)
{
    CHECK_CUDA(cudaFreeHost((void *)g->flag_host));
    g->flag_host = NULL;
    g->flag_device = NULL;
}

extern "C" void mc_launch_busy_kernel(double seconds, cudaStream_t stream)
{
    /* cudaDevAttrClockRate is the SM clock in kHz (the boost clock). Asking
     * for it took about 0.5 ms on an H100 with CUDA 13, as long as a short
     * kernel, so it is read once per device and kept. */
    static int khz_of[64];
    int dev = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    int khz = dev < 64 ? khz_of[dev] : 0;
    if (khz == 0) {
        CHECK_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
        if (dev < 64) khz_of[dev] = khz;
    }
    long long ticks = (long long)(seconds * (double)khz * 1e3);
    busy_kernel<<<1, 1, 0, stream>>>(ticks);
    CHECK_LAUNCH();
}
