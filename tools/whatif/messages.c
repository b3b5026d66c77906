/* messages.c: build/whatif's messages, the memory it keeps until exit, and
 * the files of its temporary folder (whatif.h). */
#define _GNU_SOURCE /* vasprintf */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "subprocess.h"
#include "whatif.h"

#define MESSAGE_BYTES 300 /* of a tool's log, quoted in a message */

char *wi_work;

void wi_leave(int code)
{
    if (wi_work) wi_remove_tree(wi_work);
    exit(code);
}

static void vsay(const char *fmt, va_list ap)
{
    char line[8192];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "whatif: %s\n", line); /* one write: threads print too */
}

void wi_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void wi_die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    wi_leave(code);
}

void wi_stop_if_interrupted(void)
{
    if (!mc_spawn_stop_signal()) return;
    fprintf(stderr, "whatif: interrupted; nothing written\n");
    wi_leave(130);
}

/* ------------------------------------------------------------ kept memory */

static pthread_mutex_t g_kept_lock = PTHREAD_MUTEX_INITIALIZER;
static void **g_kept;
static size_t g_n_kept, g_kept_cap;

void *wi_keep(void *p)
{
    CHECK(p != NULL, "out of host memory");
    pthread_mutex_lock(&g_kept_lock);
    if (g_n_kept == g_kept_cap) {
        g_kept_cap = g_kept_cap ? 2 * g_kept_cap : 64;
        void **k = realloc(g_kept, g_kept_cap * sizeof *k);
        CHECK(k != NULL, "out of host memory");
        g_kept = k;
    }
    g_kept[g_n_kept++] = p;
    pthread_mutex_unlock(&g_kept_lock);
    return p;
}

void wi_release_kept(void)
{
    for (size_t i = 0; i < g_n_kept; i++) free(g_kept[i]);
    free(g_kept);
    g_kept = NULL;
    g_n_kept = g_kept_cap = 0;
}

void *wi_kept_calloc(size_t n, size_t size) { return wi_keep(calloc(n ? n : 1, size)); }

char *wi_fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s;
    if (vasprintf(&s, f, ap) < 0) s = NULL;
    va_end(ap);
    return wi_keep(s);
}

char *wi_log_head(const char *path)
{
    char *s = wi_kept_calloc(MESSAGE_BYTES + 1, 1);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(s, 1, MESSAGE_BYTES, f) : 0;
    if (f) fclose(f);
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' || s[i] == '\0') s[i] = ' ';
    return s;
}

/* ------------------------------------------------------------ files */

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0;
}

void wi_remove_tree(const char *path) { nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

int wi_mkdir_p(const char *path)
{
    char *p = wi_fmt("%s", path);
    for (char *s = p; *s; s++) {
        if (s == p || *s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) break;
        *s = '/';
    }
    int rc = mkdir(p, 0777) == 0 || errno == EEXIST ? 0 : -1;
    struct stat st;
    if (rc == 0 && (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))) rc = -1;
    return rc;
}

FILE *wi_out_open(const char *name)
{
    char *path = wi_fmt("%s/%s", wi_work, name);
    FILE *f = fopen(path, "w");
    if (!f) wi_die(1, "cannot write %s", path);
    return f;
}

void wi_out_close(FILE *f, const char *name)
{
    if (ferror(f) | (fclose(f) != 0)) wi_die(1, "cannot write %s/%s", wi_work, name);
}
