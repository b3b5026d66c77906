#define _POSIX_C_SOURCE 200809L
#include "clock.h"

#include <time.h>

double mc_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
