/* run_file.c: run_file.h's readers: a file opened only if it is a plain
 * file (O_NONBLOCK, so a FIFO cannot hang the open), read a line or whole,
 * a NUL byte refused. */
#define _POSIX_C_SOURCE 200809L
#include "run_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) || S_ISBLK(m) ? "a device"
         : S_ISSOCK(m) ? "a socket" : "not a plain file";
}

FILE *mc_run_file_open(const char *path, bool *absent, char *err, size_t errlen)
{
    *absent = false;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if (e == ENOENT && lstat(path, &st) != 0) {
            *absent = true;
            return NULL;
        }
        set_err(err, errlen, "%s: cannot read: %s", path,
                e == ENOENT ? "a symbolic link to nothing" : strerror(e));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        set_err(err, errlen, "%s: cannot read: %s", path, kind_of(st.st_mode));
        close(fd);
        return NULL;
    }
    FILE *fp = fdopen(fd, "r");
    CHECK(fp != NULL, "fdopen of %s: %s", path, strerror(errno));
    return fp;
}

int mc_run_file_line(FILE *fp, char **line, size_t *cap, const char *path, long lineno, char *err,
                     size_t errlen)
{
    errno = 0;
    ssize_t got = getline(line, cap, fp);
    if (got < 0) {
        if (!ferror(fp)) return 0;
        set_err(err, errlen, "%s:%ld: cannot read: %s", path, lineno, strerror(errno ? errno : EIO));
        return -1;
    }
    if (strlen(*line) != (size_t)got) {
        set_err(err, errlen, "%s:%ld: a NUL byte: not a text file", path, lineno);
        return -1;
    }
    while (got > 0 && ((*line)[got - 1] == '\n' || (*line)[got - 1] == '\r')) (*line)[--got] = '\0';
    return 1;
}

char *mc_run_file_slurp(FILE *fp, const char *path, size_t *len, char *err, size_t errlen)
{
    size_t cap = 1 << 16, n = 0, got;
    char *buf = mc_xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, fp)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            cap *= 2;
            char *bigger = realloc(buf, cap);
            CHECK(bigger != NULL, "out of host memory reading %s", path);
            buf = bigger;
        }
    }
    if (ferror(fp)) {
        set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        set_err(err, errlen, "%s: a NUL byte: not a text file", path);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}
