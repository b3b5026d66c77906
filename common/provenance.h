/* provenance.h: where a run came from, as key,value rows of meta.csv: GPU
 * name, bus id, memory, compute capability, driver and runtime versions (each
 * its own field), clocks, ECC, host, git SHA, command line, UTC time. */
#ifndef MC_PROVENANCE_H
#define MC_PROVENANCE_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes "key,value" then one row per fact to fp. device < 0, or no usable
 * GPU, writes the host facts and gpu_status=<reason>. git_sha may be NULL
 * (then "unknown"). Returns the number of rows. */
int mc_provenance_write(FILE *fp, int device, int argc, char **argv, const char *git_sha);

/* One more "key,value" row (CSV-quoted), for facts the harness cannot know
 * (tools/meta.c: the kernels of the Transformer's attention). Returns 1. */
int mc_provenance_put(FILE *fp, const char *key, const char *value);

/* "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"; "no-gpu" without one. */
void mc_gpu_slug(int device, char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
