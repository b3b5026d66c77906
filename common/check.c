#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void mc_die(int code, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

void mc_die_check(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: CHECK(%s) failed: ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(MC_EXIT_VERIFY);
}

void *mc_xmalloc(unsigned long long bytes)
{
    void *p = malloc(bytes ? (size_t)bytes : 1);
    if (!p) mc_die(MC_EXIT_VERIFY, __FILE__, __LINE__, "out of host memory (%llu bytes)", bytes);
    return p;
}
