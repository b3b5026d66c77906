/* timeline.c: ca_replay's rows cut to stretches through a FILE of
 * fopencookie (timeline.h). */
#define _GNU_SOURCE /* fopencookie */
#include "timeline.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct {
    FILE *out;
    uint64_t per_point; /* rows per stretch */
    uint64_t in_point;  /* rows in the current one */
    double allocated, reserved;
    char last[32];      /* the step of the last row */
    bool header_seen;
    size_t len;
    char line[1024];    /* a row cut between two writes */
} timeline;

static void point(timeline *tl)
{
    fprintf(tl->out, "%s,%.0f,%.0f\n", tl->last, tl->allocated, tl->reserved);
}

static void row(timeline *tl, const char *row, size_t len)
{
    if (!tl->header_seen) {
        tl->header_seen = true;
        return;
    }
    const char *f[8] = {row};
    const char *end = row + len;
    int n = 1;
    for (const char *p = row; n < 8 && (p = memchr(p, ',', (size_t)(end - p))) != NULL; p++) f[n++] = p + 1;
    if (n < 8) return; /* fewer than 7 columns: never, from ca_replay */
    size_t steplen = (size_t)(f[1] - 1 - row);
    if (steplen >= sizeof tl->last) steplen = sizeof tl->last - 1;
    memcpy(tl->last, row, steplen);
    tl->last[steplen] = '\0';
    double a = strtod(f[5], NULL), r = strtod(f[6], NULL); /* the allocated and reserved columns */
    if (a > tl->allocated) tl->allocated = a;
    if (r > tl->reserved) tl->reserved = r;
    if (++tl->in_point == tl->per_point) {
        point(tl);
        tl->allocated = tl->reserved = 0;
        tl->in_point = 0;
    }
}

static ssize_t timeline_write(void *cookie, const char *buf, size_t n)
{
    timeline *tl = cookie;
    const char *p = buf, *end = buf + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t k = (size_t)((nl ? nl : end) - p);
        if (tl->len + k > sizeof tl->line) return -1; /* a row longer than any ca_replay writes */
        if (nl && tl->len == 0) {
            row(tl, p, k);
        } else {
            memcpy(tl->line + tl->len, p, k);
            tl->len += k;
            if (nl) {
                row(tl, tl->line, tl->len);
                tl->len = 0;
            }
        }
        p += k + (nl != NULL);
    }
    return (ssize_t)n;
}

static int timeline_close(void *cookie)
{
    timeline *tl = cookie;
    if (tl->in_point > 0) point(tl);
    free(tl);
    return 0;
}

FILE *ca_timeline_open(FILE *out, uint64_t per_point)
{
    fputs(CA_TIMELINE_HEADER "\n", out);
    timeline *tl = calloc(1, sizeof *tl);
    if (!tl) return NULL;
    tl->out = out;
    tl->per_point = per_point ? per_point : 1;
    FILE *f = fopencookie(tl, "w", (cookie_io_functions_t){.write = timeline_write, .close = timeline_close});
    if (!f) free(tl);
    return f;
}
