/* charts.c: build/whatif's PNG charts, drawn by gnuplot with
 * plots/whatif_<key>.gp from files of the temporary folder (whatif.h).
 * gnuplot runs in that folder and is given fixed file names only: its -e
 * text is code, and the .gp scripts put file names into shell commands, so a
 * user's folder (--results) must never appear in either. */
#define _DEFAULT_SOURCE /* PATH_MAX */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "subprocess.h"
#include "whatif.h"

static const struct {
    const char *key, *alt;
} charts[] = {
    {"peak_reserved", "Peak reserved per setting"},
    {"cards", "Fits or OOMs per card and setting"},
    {"timeline", "Allocated and reserved over the run"},
};
_Static_assert(sizeof charts / sizeof charts[0] == WI_N_CHARTS, "WI_N_CHARTS counts the charts");

/* s as a gnuplot single-quoted string, where '' is the only escape. */
static char *gp_quoted(const char *s)
{
    char *q = wi_keep(malloc(2 * strlen(s) + 3)), *p = q;
    *p++ = '\'';
    for (; *s; s++) {
        if (*s == '\'') *p++ = '\'';
        *p++ = *s;
    }
    *p++ = '\'';
    *p = '\0';
    return q;
}

void wi_draw_charts(const char *root, const ca_whatif_answer *ans, size_t n_ans, const ca_whatif_job *jobs,
                    size_t n_jobs, const char *best, bool drawn[WI_N_CHARTS])
{
    const char *env = getenv("GNUPLOT");
    const char *gnuplot = env && *env ? env : "gnuplot";
    char found[PATH_MAX];
    if (mc_spawn_which(gnuplot, found, sizeof found) != 0) {
        wi_note("gnuplot not found: charts skipped (make deps); the CSV and WHATIF.md are written");
        return;
    }
    /* It starts in the temporary folder: a relative GNUPLOT from here. */
    char cwd[PATH_MAX];
    char *prog = found[0] == '/' || !getcwd(cwd, sizeof cwd) ? found : wi_fmt("%s/%s", cwd, found);
    FILE *f = wi_out_open(".answer_plot.tsv");
    for (size_t i = 0; i < n_ans; i++)
        fprintf(f, "%zu\t%s\t%lld\t%lld\t%s\n", i, ans[i].set->name, (long long)ans[i].none->res.peak_allocated,
                (long long)ans[i].none->res.peak_reserved, ans[i].smallest ? ans[i].smallest : "none");
    wi_out_close(f, ".answer_plot.tsv");
    f = wi_out_open(".cards_plot.tsv");
    for (size_t i = 0; i < n_jobs; i++)
        if (strcmp(jobs[i].card, "none"))
            fprintf(f, "%s\t%s\t%s\n", jobs[i].set->name, jobs[i].card, ca_whatif_fits(&jobs[i]) ? "yes" : "no");
    wi_out_close(f, ".cards_plot.tsv");
    const char *w = wi_work;
    /* Names in w, where gnuplot runs. */
    const char *vars[WI_N_CHARTS] = {
        "data='.answer_plot.tsv'",
        "data='.cards_plot.tsv'; settings='.answer_plot.tsv'",
        wi_fmt("default='timeline_default.csv'; best=%s; bestname=%s", gp_quoted(wi_fmt("timeline_%s.csv", best)),
               gp_quoted(best)),
    };
    pid_t pid[WI_N_CHARTS];
    char *tmp[WI_N_CHARTS], *log[WI_N_CHARTS];
    for (size_t k = 0; k < WI_N_CHARTS; k++) {
        tmp[k] = wi_fmt("%s/.%s.png.tmp", w, charts[k].key);
        log[k] = wi_fmt("%s/logs/plot-%s.log", w, charts[k].key);
        char *e = wi_fmt("%s; out='.%s.png.tmp'", vars[k], charts[k].key);
        char *gp = wi_fmt("%s/plots/whatif_%s.gp", root, charts[k].key);
        char *argv[] = {prog, "-e", e, gp, NULL};
        pid[k] = mc_spawn_in(w, argv, NULL, log[k]);
    }
    for (size_t k = 0; k < WI_N_CHARTS; k++) {
        int rc = mc_spawn_wait(pid[k]);
        struct stat st;
        char *png = wi_fmt("%s/%s.png", w, charts[k].key);
        drawn[k] = rc == 0 && stat(tmp[k], &st) == 0 && st.st_size > 0 && rename(tmp[k], png) == 0;
        if (!drawn[k]) {
            char *head = wi_log_head(log[k]);
            wi_note("gnuplot failed for %s: %s", charts[k].key, head);
            unlink(tmp[k]);
        }
    }
    unlink(wi_fmt("%s/.answer_plot.tsv", w));
    unlink(wi_fmt("%s/.cards_plot.tsv", w));
}

void wi_chart_links(FILE *f, const bool drawn[WI_N_CHARTS])
{
    for (size_t k = 0; k < WI_N_CHARTS; k++)
        if (drawn[k]) fprintf(f, "![%s](%s.png)\n", charts[k].alt, charts[k].key);
}

bool wi_draw_one(const char *root, const char *key, const char *vars)
{
    const char *env = getenv("GNUPLOT");
    const char *gnuplot = env && *env ? env : "gnuplot";
    char found[PATH_MAX], cwd[PATH_MAX];
    if (mc_spawn_which(gnuplot, found, sizeof found) != 0) return false; /* noted with the others */
    char *prog = found[0] == '/' || !getcwd(cwd, sizeof cwd) ? found : wi_fmt("%s/%s", cwd, found);
    const char *w = wi_work;
    char *tmp = wi_fmt("%s/.%s.png.tmp", w, key), *log = wi_fmt("%s/logs/plot-%s.log", w, key);
    char *e = wi_fmt("%s; out='.%s.png.tmp'", vars, key);
    char *gp = wi_fmt("%s/plots/whatif_%s.gp", root, key);
    char *argv[] = {prog, "-e", e, gp, NULL};
    int rc = mc_spawn_wait(mc_spawn_in(w, argv, NULL, log));
    struct stat st;
    bool drawn = rc == 0 && stat(tmp, &st) == 0 && st.st_size > 0 && rename(tmp, wi_fmt("%s/%s.png", w, key)) == 0;
    if (!drawn) {
        wi_note("gnuplot failed for %s: %s", key, wi_log_head(log));
        unlink(tmp);
    }
    return drawn;
}
