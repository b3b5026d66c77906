#define _GNU_SOURCE /* mincore */
#include "dataset_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

uint64_t mc_ds_splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void mc_ds_record(uint64_t seed, uint64_t i, uint64_t *w)
{
    for (uint64_t j = 0; j < MC_DS_WORDS; j++) w[j] = mc_ds_splitmix64(seed ^ (i * MC_DS_WORDS + j));
}

uint64_t mc_ds_checksum(const uint64_t *w)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint64_t j = 0; j < MC_DS_WORDS; j++) h = (h ^ w[j]) * 0x100000001b3ULL;
    return h;
}

uint64_t mc_ds_expected_checksum(uint64_t seed, uint64_t i)
{
    uint64_t w[MC_DS_WORDS];
    mc_ds_record(seed, i, w);
    return mc_ds_checksum(w);
}

int mc_ds_write(int fd, uint64_t seed, uint64_t size)
{
    if (size % MC_DS_RECORD_BYTES) {
        errno = EINVAL;
        return -1;
    }
    const uint64_t per_chunk = 256, n_rec = size / MC_DS_RECORD_BYTES; /* 1 MiB per write */
    uint64_t *chunk = malloc(per_chunk * MC_DS_RECORD_BYTES);
    if (!chunk) return -1;
    int rc = 0;
    for (uint64_t i = 0; i < n_rec && rc == 0; i += per_chunk) {
        uint64_t n = n_rec - i < per_chunk ? n_rec - i : per_chunk;
        for (uint64_t k = 0; k < n; k++) mc_ds_record(seed, i + k, chunk + k * MC_DS_WORDS);
        const unsigned char *p = (const unsigned char *)chunk;
        for (uint64_t left = n * MC_DS_RECORD_BYTES; left > 0 && rc == 0;) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                if (w == 0) errno = ENOSPC;
                rc = -1;
            } else {
                p += w;
                left -= (uint64_t)w;
            }
        }
    }
    int e = errno;
    free(chunk);
    if (rc == 0 && fdatasync(fd) != 0) return -1;
    errno = e;
    return rc;
}

double mc_ds_resident_share(const char *path, uint64_t size)
{
    if (size == 0) return NAN;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NAN;
    void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return NAN;
    const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), pages = (size + pg - 1) / pg;
    unsigned char *vec = malloc(pages);
    double share = NAN;
    if (vec && mincore(map, size, vec) == 0) {
        uint64_t n = 0;
        for (uint64_t i = 0; i < pages; i++) n += vec[i] & 1;
        share = (double)n / (double)pages;
    }
    free(vec);
    munmap(map, size);
    return share;
}

long mc_ds_read_ahead_kb(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    static const char *const FMT[2] = {"/sys/dev/block/%u:%u/queue/read_ahead_kb",
                                       "/sys/dev/block/%u:%u/../queue/read_ahead_kb"};
    long kb = -1;
    for (int i = 0; i < 2 && kb < 0; i++) {
        char p[128];
        snprintf(p, sizeof p, FMT[i], major(st.st_dev), minor(st.st_dev));
        FILE *fp = fopen(p, "r");
        if (!fp) continue;
        if (fscanf(fp, "%ld", &kb) != 1) kb = -1;
        fclose(fp);
    }
    return kb;
}

mc_proc_mem mc_proc_mem_parse(FILE *fp)
{
    mc_proc_mem m = {-1, -1, -1, -1};
    char line[256];
    while (fgets(line, sizeof line, fp)) {
        double kib;
        if (sscanf(line, "VmRSS: %lf kB", &kib) == 1) m.rss = kib * 1024;
        else if (sscanf(line, "RssAnon: %lf kB", &kib) == 1) m.anon = kib * 1024;
        else if (sscanf(line, "RssFile: %lf kB", &kib) == 1) m.file = kib * 1024;
        else if (sscanf(line, "VmHWM: %lf kB", &kib) == 1) m.hwm = kib * 1024;
    }
    return m;
}

mc_proc_mem mc_proc_mem_self(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    if (!fp) {
        mc_proc_mem none = {-1, -1, -1, -1};
        return none;
    }
    mc_proc_mem m = mc_proc_mem_parse(fp);
    fclose(fp);
    return m;
}
