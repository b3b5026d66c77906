/* dataset_file.h: a generated dataset file of fixed-size records, and the
 * host memory figures C26 (mmap vs read of a dataset) reads around it.
 * Plain C (POSIX, Linux /proc and sysfs), no CUDA.
 *
 * Record i is MC_DS_RECORD_BYTES bytes: MC_DS_WORDS 64-bit words, word j =
 * splitmix64(seed ^ (i * MC_DS_WORDS + j)), so any record can be checked on
 * its own against the generator. */
#ifndef MC_DATASET_FILE_H
#define MC_DATASET_FILE_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_DS_RECORD_BYTES 4096ULL /* one record: one page on x86-64 */
#define MC_DS_WORDS (MC_DS_RECORD_BYTES / 8)

uint64_t mc_ds_splitmix64(uint64_t x);
/* Record i's MC_DS_WORDS words into w. */
void mc_ds_record(uint64_t seed, uint64_t i, uint64_t *w);
/* FNV-1a over a record's words: what a program computes over a record it reads. */
uint64_t mc_ds_checksum(const uint64_t *w);
/* mc_ds_checksum of record i as the generator makes it. */
uint64_t mc_ds_expected_checksum(uint64_t seed, uint64_t i);

/* Writes size / MC_DS_RECORD_BYTES records (size a multiple of it) to fd
 * from its current offset and fdatasyncs, so the pages are clean and can be
 * evicted. 0, or -1 with errno set. */
int mc_ds_write(int fd, uint64_t seed, uint64_t size);

/* The share of the first size bytes of path's pages in the page cache
 * (mincore on a shared mapping, which faults nothing in), or NaN. */
double mc_ds_resident_share(const char *path, uint64_t size);

/* read_ahead_kb of the block device holding path (a partition's disk), or
 * -1 where sysfs does not say. */
long mc_ds_read_ahead_kb(const char *path);

/* A process's memory from /proc/<pid>/status, bytes; -1 where absent. */
typedef struct {
    double rss;   /* VmRSS */
    double anon;  /* RssAnon: private memory */
    double file;  /* RssFile: mapped file pages */
    double hwm;   /* VmHWM: peak VmRSS */
} mc_proc_mem;

/* Parses a status file's lines ("VmRSS:   1234 kB"). */
mc_proc_mem mc_proc_mem_parse(FILE *fp);
/* This process's, from /proc/self/status (all -1 if it cannot be read). */
mc_proc_mem mc_proc_mem_self(void);

#ifdef __cplusplus
}
#endif
#endif
