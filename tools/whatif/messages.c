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
#include <unistd.h>

#include "check.h"
#include "subprocess.h"
#include "whatif.h"

#define MESSAGE_BYTES 400 /* of a tool's log line, quoted in a message */

char *wi_work;

/* The folders wi_mkdir_p made (the results folder and those above it), in
 * the order made: a run that leaves removes them again where still empty. */
static char *g_made[64];
static size_t g_n_made;

void wi_leave(int code)
{
    if (wi_work) wi_remove_tree(wi_work);
    while (g_n_made > 0) rmdir(g_made[--g_n_made]);
    exit(code);
}

static void vsay(const char *fmt, va_list ap)
{
    char line[8192];
    vsnprintf(line, sizeof line, fmt, ap);
    for (char *c = line; *c; c++) /* one line, whatever a path or a tool's message holds */
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
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

char *wi_log_line(const char *path, bool last)
{
    char *line = wi_kept_calloc(MESSAGE_BYTES + 1, 1);
    FILE *f = fopen(path, "r");
    if (!f) return line;
    char *buf = NULL;
    size_t cap = 0;
    while (getline(&buf, &cap, f) >= 0) {
        size_t n = strcspn(buf, "\n");
        if (n == 0) continue;
        if (n > MESSAGE_BYTES) n = MESSAGE_BYTES;
        for (size_t i = 0; i < n; i++) line[i] = (unsigned char)buf[i] < 0x20 || buf[i] == 0x7f ? '?' : buf[i];
        line[n] = '\0';
        if (!last) break;
    }
    free(buf);
    fclose(f);
    return line;
}

void wi_relay_log(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return;
    char *buf = NULL;
    size_t cap = 0;
    while (getline(&buf, &cap, f) >= 0) {
        buf[strcspn(buf, "\n")] = '\0';
        if (buf[0]) wi_note("%.*s", MESSAGE_BYTES, buf);
    }
    free(buf);
    fclose(f);
}

const char *wi_trace_reason(const char *msg, const char *trace)
{
    size_t n = strlen(trace), d;
    if (strncmp(msg, trace, n) != 0 || msg[n] != ':' || (d = strspn(msg + n + 1, "0123456789")) == 0 ||
        strncmp(msg + n + 1 + d, ": ", 2) != 0)
        return msg;
    return wi_fmt("line %.*s of its trace: %s", (int)d, msg + n + 1, msg + n + 1 + d + 2);
}

/* ------------------------------------------------------------ files */

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0;
}

void wi_remove_tree(const char *path) { nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

/* mkdir, remembering a folder it made (g_made). */
static int make_dir(const char *p)
{
    if (mkdir(p, 0777) != 0) return -1;
    if (g_n_made < sizeof g_made / sizeof *g_made) g_made[g_n_made++] = wi_fmt("%s", p);
    return 0;
}

int wi_mkdir_p(const char *path)
{
    char *p = wi_fmt("%s", path);
    for (char *s = p; *s; s++) {
        if (s == p || *s != '/') continue;
        *s = '\0';
        if (make_dir(p) != 0 && errno != EEXIST) break;
        *s = '/';
    }
    int rc = make_dir(p) == 0 || errno == EEXIST ? 0 : -1;
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
