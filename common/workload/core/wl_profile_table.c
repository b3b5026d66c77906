/* wl_profile_table.c: --profile's sums, table and CSV (wl_profile_table.h). */
#define _POSIX_C_SOURCE 200809L
#include "wl_profile_table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static const char *const kind_names[MC_PROF_NKINDS] = {
#define MC_PROF_NAME(id, name) name,
    MC_PROF_KINDS(MC_PROF_NAME)
#undef MC_PROF_NAME
};

const char *mc_prof_kind_name(int kind)
{
    return kind >= 0 && kind < MC_PROF_NKINDS ? kind_names[kind] : NULL;
}

void mc_prof_table_init(mc_prof_table *t) { memset(t, 0, sizeof *t); }

void mc_prof_table_add(mc_prof_table *t, mc_prof_kind kind, double ms)
{
    CHECK((int)kind >= 0 && kind < MC_PROF_NKINDS, "profile: kind %d", (int)kind);
    t->ms[kind] += ms > 0 ? ms : 0;
    t->ops++;
}

void mc_prof_table_finish(mc_prof_table *t, double total_ms)
{
    t->busy_ms = 0;
    for (int k = 0; k < MC_PROF_NKINDS; k++) t->busy_ms += t->ms[k];
    t->total_ms = total_ms;
    t->idle_ms = total_ms > t->busy_ms ? total_ms - t->busy_ms : 0;
}

double mc_prof_share(const mc_prof_table *t, double ms)
{
    return t->total_ms > 0 ? 100.0 * ms / t->total_ms : 0;
}

/* ------------------------------------------------------------ output */

/* Row i of the table: the kinds, then idle, then total. */
#define N_ROWS (MC_PROF_NKINDS + 2)
static const char *row_name(int i)
{
    return i < MC_PROF_NKINDS ? kind_names[i] : i == MC_PROF_NKINDS ? "idle" : "total";
}
static double row_ms(const mc_prof_table *t, int i)
{
    return i < MC_PROF_NKINDS ? t->ms[i] : i == MC_PROF_NKINDS ? t->idle_ms : t->total_ms;
}

void mc_prof_table_print(FILE *fp, const mc_prof_table *t)
{
    fprintf(fp, "%-11s %9s %8s\n", "kind", "ms", "share");
    for (int i = 0; i < N_ROWS; i++)
        fprintf(fp, "%-11s %9.3f %7.1f%%\n", row_name(i), row_ms(t, i), mc_prof_share(t, row_ms(t, i)));
}

void mc_prof_table_csv(FILE *fp, const mc_prof_table *t)
{
    fprintf(fp, "%s\n", MC_PROF_CSV_HEADER);
    for (int i = 0; i < N_ROWS; i++)
        fprintf(fp, "%s,%.4f,%.2f\n", row_name(i), row_ms(t, i), mc_prof_share(t, row_ms(t, i)));
}

int mc_prof_table_write_csv(const char *path, const mc_prof_table *t, char *err, size_t len)
{
    size_t n = strlen(path) + 32;
    char *tmp = mc_xmalloc(n);
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    errno = 0;
    FILE *fp = fopen(tmp, "w");
    int rc = -1;
    if (fp) {
        mc_prof_table_csv(fp, t);
        int bad = ferror(fp);
        bad |= fclose(fp) != 0;
        if (!bad && rename(tmp, path) == 0) rc = 0;
    }
    if (rc != 0) {
        snprintf(err, len, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

/* ------------------------------------------------------------ nesting */

char *mc_prof_table_compare(char *buf, size_t len, const char *a_name, const mc_prof_table *a,
                            const char *b_name, const mc_prof_table *b, double min_ms)
{
    enum { NROWS = MC_PROF_NKINDS + 1 }; /* the kinds, then idle */
    int order[NROWS], n = 0;
    for (int i = 0; i < NROWS; i++)
        if (fabs(row_ms(b, i) - row_ms(a, i)) >= min_ms) order[n++] = i;
    for (int i = 1; i < n; i++) /* largest difference first (insertion sort: 7 rows) */
        for (int j = i; j > 0; j--) {
            const double dj = fabs(row_ms(b, order[j]) - row_ms(a, order[j]));
            const double dp = fabs(row_ms(b, order[j - 1]) - row_ms(a, order[j - 1]));
            if (dj <= dp) break;
            const int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    size_t u = 0;
    int w = snprintf(buf, len, "%s %.2f ms, %s %.2f ms a step", a_name, a->total_ms, b_name, b->total_ms);
    u = w < 0 ? 0 : (size_t)w;
    for (int k = 0; k < n && u < len; k++) {
        const int i = order[k];
        w = snprintf(buf + u, len - u, "%s %s %.2f -> %.2f ms (%+.2f)", k ? "," : ";", row_name(i),
                     row_ms(a, i), row_ms(b, i), row_ms(b, i) - row_ms(a, i));
        u += w < 0 ? 0 : (size_t)w;
    }
    if (n == 0 && u < len) snprintf(buf + u, len - u, "; no kind differs by %.2f ms or more", min_ms);
    return buf;
}

bool mc_prof_enter(int *depth) { return (*depth)++ == 0; }

bool mc_prof_leave(int *depth)
{
    CHECK(*depth > 0, "profile: an end without a begin");
    return --(*depth) == 0;
}
