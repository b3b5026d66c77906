/* timeline.h: a replay's CSV (replay.h, one row per operation, millions of
 * them) cut to a chart's worth of points as ca_replay writes it, with no copy
 * of the rows kept: each point is the largest allocated and reserved bytes
 * within its stretch of steps, at the stretch's last step (build/whatif's
 * timeline_<setting>.csv). */
#ifndef MC_TIMELINE_H
#define MC_TIMELINE_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CA_TIMELINE_HEADER "step,allocated,reserved"

/* Writes the header line CA_TIMELINE_HEADER to out and returns a FILE to
 * give to ca_replay as its out: it drops ca_replay's header and writes one
 * row "STEP,ALLOCATED,RESERVED" (bytes) to out for every per_point (>= 1)
 * rows it gets, and at fclose one for the rows left over, if any. Writes may
 * cut rows anywhere; a row longer than 1 KiB (none of ca_replay's) fails the
 * write. out stays open: the caller checks and closes it after this FILE.
 * NULL if out of memory. */
FILE *ca_timeline_open(FILE *out, uint64_t per_point);

#ifdef __cplusplus
}
#endif
#endif
