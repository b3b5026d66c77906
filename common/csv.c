#define _POSIX_C_SOURCE 200809L
#include "csv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

/* The temporary path of the file being written, for the signal handler.
 * One atomic file at a time per process is all the suite needs. */
static char signal_tmp_path[4096];

static char *join_path(const char *dir, const char *prefix, const char *name, const char *suffix)
{
    size_t len = strlen(dir) + strlen(prefix) + strlen(name) + strlen(suffix) + 2;
    char *p = mc_xmalloc(len);
    snprintf(p, len, "%s/%s%s%s", dir, prefix, name, suffix);
    return p;
}

/* mkdir -p: creates dir and its missing parents (mode 0777 less umask).
 * Returns 0 when dir exists as a folder afterwards, else -1 with errno. */
static int make_dirs(const char *dir)
{
    size_t len = strlen(dir);
    char *p = mc_xmalloc(len + 1);
    memcpy(p, dir, len + 1);
    int rc = 0;
    for (size_t i = 1; i <= len && rc == 0; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) rc = -1;
        p[i] = c;
    }
    free(p);
    struct stat st;
    if (rc == 0 && stat(dir, &st) != 0) rc = -1;
    if (rc == 0 && !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        rc = -1;
    }
    return rc;
}

int mc_file_open(mc_file *f, const char *dir, const char *name)
{
    memset(f, 0, sizeof *f);
    if (!dir) {
        f->fp = stdout;
        return 0;
    }
    /* --out DIR is created when missing: options were checked before this. */
    if (make_dirs(dir) != 0) return -1;
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".tmp.%ld", (long)getpid());
    f->tmp_path = join_path(dir, ".", name, suffix);
    f->final_path = join_path(dir, "", name, "");
    f->fp = fopen(f->tmp_path, "w");
    if (!f->fp) {
        int e = errno;
        free(f->tmp_path);
        free(f->final_path);
        f->tmp_path = f->final_path = NULL;
        errno = e;
        return -1;
    }
    if (strlen(f->tmp_path) < sizeof signal_tmp_path)
        memcpy(signal_tmp_path, f->tmp_path, strlen(f->tmp_path) + 1);
    return 0;
}

static void file_release(mc_file *f)
{
    signal_tmp_path[0] = '\0';
    free(f->tmp_path);
    free(f->final_path);
    f->tmp_path = f->final_path = NULL;
    f->fp = NULL;
}

int mc_file_commit(mc_file *f)
{
    if (!f->fp) return -1;
    if (!f->tmp_path) {
        int rc = fflush(f->fp) == 0 ? 0 : -1;
        f->fp = NULL;
        return rc;
    }
    int ok = fflush(f->fp) == 0 && fsync(fileno(f->fp)) == 0;
    ok = (fclose(f->fp) == 0) && ok;
    f->fp = NULL;
    if (ok) ok = rename(f->tmp_path, f->final_path) == 0;
    if (!ok) unlink(f->tmp_path);
    file_release(f);
    return ok ? 0 : -1;
}

void mc_file_abort(mc_file *f)
{
    if (!f->fp) return;
    if (f->tmp_path) {
        fclose(f->fp);
        unlink(f->tmp_path);
    } else {
        fflush(f->fp);
    }
    file_release(f);
}

void mc_file_abort_from_signal(void)
{
    if (signal_tmp_path[0]) unlink(signal_tmp_path);
}

void mc_csv_write_field(FILE *fp, const char *s)
{
    if (!s) s = "";
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"') fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

void mc_csv_write_number(FILE *fp, double v)
{
    if (isnan(v)) return;
    if (isinf(v)) {
        fputs(v > 0 ? "inf" : "-inf", fp);
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        fprintf(fp, "%.0f", v);
    else
        fprintf(fp, "%.10g", v);
}

void mc_csv_write_header(FILE *fp)
{
    fputs(MC_CSV_HEADER "\n", fp);
}

void mc_csv_write_row(FILE *fp, const mc_row *r)
{
    mc_csv_write_field(fp, r->claim);
    fputc(',', fp);
    mc_csv_write_field(fp, r->experiment);
    fputc(',', fp);
    mc_csv_write_field(fp, r->variant);
    fputc(',', fp);
    mc_csv_write_field(fp, r->param);
    fputc(',', fp);
    if (r->param && r->param[0]) mc_csv_write_number(fp, r->param_value);
    fputc(',', fp);
    mc_csv_write_field(fp, r->metric);
    fputc(',', fp);
    mc_csv_write_field(fp, r->unit);
    fputc(',', fp);
    fprintf(fp, "%zu,", r->stats.n);
    const double figs[5] = {r->stats.median, r->stats.min, r->stats.max, r->stats.mean, r->stats.stdev};
    for (int i = 0; i < 5; i++) {
        if (r->stats.n > 0) mc_csv_write_number(fp, figs[i]);
        fputc(',', fp);
    }
    mc_csv_write_field(fp, r->status);
    fputc(',', fp);
    mc_csv_write_field(fp, r->note);
    fputc('\n', fp);
}
