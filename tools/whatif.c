/* whatif: replays a PyTorch memory snapshot through the allocator model
 * under each allocator setting and card size, and answers which card it
 * fits and which setting helps (make whatif SNAPSHOT=run.pickle
 * [CONTEXT=BYTES]; scripts/whatif runs it too).
 *
 *   build/whatif [--context BYTES] [--cards 8,12,...] [--device N] [--jobs N]
 *                [--results DIR] SNAPSHOT
 *
 * The snapshot is converted once (scripts/snapshot2trace, which also reads
 * it gzipped) and the trace parsed once; then every (setting, card) pair
 * is replayed by ca_replay, exactly as build/replay --summary --conf CONF
 * --capacity BYTES [--limit BYTES] would, N threads at a time
 * (common/trace/whatif_sweep.h), the first alone (preflight). The settings
 * are ca_conf_presets (alloc_presets.h). The outputs are those --help lists;
 * charts are drawn by gnuplot with plots/whatif_*.gp. Exit 0; 1 a replay, a
 * chart's data or a write failed; 2 bad input (options, or a snapshot that
 * snapshot2trace, the parser or the first replay refuses: one line naming
 * the snapshot and why); 130 interrupted (SIGINT, SIGTERM). On any exit but
 * 0 nothing is left behind: no temporary folder, no results folder made.
 *
 * This file is main and its steps; the program's other modules are in
 * tools/whatif/ (whatif.h): messages.c, options.c, convert.c, max_batch.c,
 * charts.c, report.c. */
#define _DEFAULT_SOURCE /* strtok_r, symlink */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "pool.h"
#include "subprocess.h"
#include "whatif/whatif.h"

#define TIMELINE_POINTS 2000 /* points per timeline, about */

/* The folder's name from the snapshot's: no .gz/.pickle/.pkl, [A-Za-z0-9_.-]
 * only, at most 60 bytes. */
static char *folder_name(const char *snapshot)
{
    const char *base = strrchr(snapshot, '/');
    char *name = wi_fmt("%s", base ? base + 1 : snapshot);
    static const char *const suffixes[] = {".gz", ".pickle", ".pkl"};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(name), s = strlen(suffixes[i]);
        if (n >= s && !strcmp(name + n - s, suffixes[i])) name[n - s] = '\0';
    }
    for (char *p = name; *p; p++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-", *p)) *p = '_';
    if (strlen(name) > 60) name[60] = '\0';
    return name;
}

/* Why replay j failed: the first line of its log, the trace (a temporary
 * file) named as "its trace" where the message is about it. */
static const char *replay_reason(const ca_whatif_job *j, const char *trace_path)
{
    char *log = wi_fmt("%s/logs/replay-%s-%s.log", wi_work, j->set->name, j->card);
    return wi_trace_reason(wi_log_line(log, false), trace_path);
}

/* RESULTS/whatif-<UTC time>-<name>[-N], not there yet (returned), and the
 * temporary folder beside it with logs/ (wi_work). */
static char *make_folders(const wi_options *o)
{
    char *name = folder_name(o->snapshot);
    if (wi_mkdir_p(o->results) != 0) wi_die(2, "cannot create %s", o->results);
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
    char *final = wi_fmt("%s/whatif-%s-%s", o->results, stamp, name);
    struct stat st;
    for (int n = 1; stat(final, &st) == 0; n++) final = wi_fmt("%s/whatif-%s-%s-%d", o->results, stamp, name, n);
    char *work = wi_fmt("%s/.whatif.tmp.XXXXXX", o->results);
    if (!mkdtemp(work)) wi_die(2, "cannot write in %s", o->results);
    wi_work = work;
    if (mkdir(wi_fmt("%s/logs", work), 0777) != 0) wi_die(1, "cannot write in %s", work);
    return final;
}

/* The sweep's progress: one line as each replay ends; the first replay ran
 * alone before the others (preflight), so i counts from skip. */
typedef struct {
    size_t skip, total;
    const char *trace_path;
} progress;

static void replay_done(void *ctx, const ca_whatif_job *j, size_t i, size_t n)
{
    const progress *p = ctx;
    (void)n;
    if (j->ok)
        wi_note("[%zu/%zu] %s, card %s: done", p->skip + i + 1, p->total, j->set->name, j->card);
    else
        wi_note("[%zu/%zu] %s, card %s: replay failed: %s", p->skip + i + 1, p->total, j->set->name, j->card,
                replay_reason(j, p->trace_path));
}

/* The first replay (default setting, no card) alone, before any progress
 * is printed: a trace the replay refuses under it (a state it cannot
 * rebuild, more streams than it keeps) is refused whatever the setting, so
 * that is bad input, exit 2 with one line naming the snapshot and the
 * replay's reason. Any other failure there is the tool's, exit 1. */
static void preflight(const ca_trace *t, ca_whatif_job *first, const char *snapshot, const char *trace_path)
{
    ca_whatif_sweep_opts so = {.threads = 1, .log_dir = wi_fmt("%s/logs", wi_work), .stop = mc_spawn_stop_signal};
    long failed = ca_whatif_sweep(t, first, 1, &so);
    if (failed < 0) wi_die(1, "cannot open /dev/null");
    wi_stop_if_interrupted();
    if (failed == 0) return;
    char *log = wi_fmt("%s/logs/replay-%s-%s.log", wi_work, first->set->name, first->card);
    const char *line = wi_log_line(log, false), *why = wi_trace_reason(line, trace_path);
    if (why != line) wi_die(2, "'%s': the replay refuses the trace snapshot2trace made of it (%s)", snapshot, why);
    wi_die(1, "the replay of '%s' under the default setting failed: %s", snapshot, *why ? why : "no message");
}

typedef struct {
    const ca_trace *t;
    uint64_t per_point;
    const ca_conf_preset *set[2];
    bool ok[2];
} timelines;

static void timeline_one(void *ctx, size_t i)
{
    timelines *ts = ctx;
    const ca_conf_preset *set = ts->set[i];
    char *csv = wi_fmt("timeline_%s.csv", set->name);
    FILE *out = wi_out_open(csv);
    FILE *log = fopen(wi_fmt("%s/logs/timeline-%s.log", wi_work, set->name), "w");
    bool ok = log && ca_whatif_timeline(ts->t, set, ts->per_point, out, log) == 0;
    if (ferror(out) | (fclose(out) != 0)) ok = false;
    if (log && fclose(log) != 0) ok = false;
    ts->ok[i] = ok;
}

/* timeline_default.csv and timeline_<best>.csv, both at once where there are
 * two; exits 1 if one fails. */
static void run_timelines(const ca_trace *t, uint64_t ops, const ca_conf_preset *best, int threads,
                          const char *trace_path)
{
    size_t n_sets;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    timelines tls = {.t = t, .set = {&sets[0], best}};
    tls.per_point = (ops + TIMELINE_POINTS - 1) / TIMELINE_POINTS;
    if (tls.per_point < 1) tls.per_point = 1;
    size_t n = best == &sets[0] ? 1 : 2;
    mc_pool_run(timeline_one, &tls, n, threads, mc_spawn_stop_signal);
    wi_stop_if_interrupted();
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        if (tls.ok[i]) continue;
        const char *log = wi_fmt("%s/logs/timeline-%s.log", wi_work, tls.set[i]->name);
        wi_note("the timeline replay of %s failed: %s", tls.set[i]->name,
                wi_trace_reason(wi_log_line(log, false), trace_path));
        ok = false;
    }
    if (!ok) wi_leave(1);
}

/* The temporary folder becomes final whole (rename), and RESULTS/whatif-latest
 * points at it (a new link renamed over the old one). */
static void publish(const char *results, const char *final)
{
    chmod(wi_work, 0755);
    wi_stop_if_interrupted();
    if (rename(wi_work, final) != 0) wi_die(1, "cannot create %s", final);
    wi_work = NULL;
    const char *base = strrchr(final, '/') + 1;
    char *tmp = wi_fmt("%s/.whatif-latest.tmp.%ld", results, (long)getpid());
    char *link = wi_fmt("%s/whatif-latest", results);
    unlink(tmp);
    if (symlink(base, tmp) != 0 || rename(tmp, link) != 0) {
        unlink(tmp);
        wi_note("cannot point %s at %s", link, base);
    }
}

int main(int argc, char **argv)
{
    /* Signals go to one thread from the start (children get them back). */
    mc_spawn_catch_stop();

    wi_options o;
    wi_parse_args(argc, argv, &o);
    if (o.max_batch) {
        char *root = wi_find_root();
        char *convert_path = wi_fmt("%s/scripts/snapshot2trace", root);
        if (access(convert_path, X_OK) != 0) wi_die(2, "%s is missing", convert_path);
        int rc = wi_max_batch_main(&o, convert_path);
        wi_release_kept();
        return rc;
    }
    if (!o.snapshot || !*o.snapshot) wi_die(2, "no snapshot given (make whatif SNAPSHOT=run.pickle; see --help)");
    struct stat st;
    if (stat(o.snapshot, &st) != 0 || !S_ISREG(st.st_mode) || access(o.snapshot, R_OK) != 0)
        wi_die(2, "cannot read snapshot '%s'", o.snapshot);
    if (st.st_size == 0) wi_die(2, "snapshot '%s' is empty", o.snapshot);
    char *root = wi_find_root();
    if (!o.results) o.results = wi_fmt("%s/results", root);
    char *convert_path = wi_fmt("%s/scripts/snapshot2trace", root);
    if (access(convert_path, X_OK) != 0) wi_die(2, "%s is missing", convert_path);
    char *context_from = wi_find_context(&o, root);
    char *final = make_folders(&o);

    double t0 = mc_now_s();
    /* The snapshot; for the largest batch every snapshot of the program, all
     * converted at once, the sweep on the one at the largest batch. */
    size_t n_conv = o.n_snaps >= 2 ? o.n_snaps : 1, top = 0;
    const char *paths[CA_BATCH_MAX_POINTS] = {o.snapshot};
    for (size_t k = 0; k < o.n_snaps; k++) {
        paths[k] = o.snaps[k].path;
        if (paths[k] == o.snapshot) top = k;
    }
    ca_trace *convs = wi_kept_calloc(n_conv, sizeof *convs), *t = &convs[top];
    char *trace_paths[CA_BATCH_MAX_POINTS], *logs[CA_BATCH_MAX_POINTS];
    wi_convert(&o, convert_path, paths, n_conv, convs, trace_paths, logs);
    const char *trace_path = trace_paths[top];

    /* ------------------------------------------------------------ the sweep */
    size_t n_sets, n_cards = 1, n_jobs;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    for (const char *c = o.cards; *c; c++) n_cards += *c == ',';
    char **cards = wi_kept_calloc(n_cards, sizeof *cards);
    char *save = NULL;
    for (size_t c = 0; c < n_cards; c++) cards[c] = strtok_r(c ? NULL : o.cards, ",", &save);
    const char *cards_top = cards[0]; /* the largest, as given (the list need not be in order) */
    for (size_t c = 1; c < n_cards; c++)
        if (strtod(cards[c], NULL) > strtod(cards_top, NULL)) cards_top = cards[c];
    ca_whatif_job *jobs = wi_keep(ca_whatif_jobs(cards, n_cards, o.context, &n_jobs));
    preflight(t, &jobs[0], o.snapshot, trace_path);
    /* Progress starts only now: bad input above gets its one line and nothing else. */
    for (size_t k = 0; k < n_conv; k++) {
        wi_note("converted %s (device %d)", paths[k], o.device);
        wi_relay_log(logs[k]);
    }
    wi_note("context: %llu MiB (%llu bytes), %s", (unsigned long long)(o.context / MiB),
            (unsigned long long)o.context, context_from);
    wi_note("%zu replays (%zu settings, each with no card and on %zu cards), %d at a time", n_jobs, n_sets, n_cards,
            o.jobs);
    /* A limit the run recorded (set_per_process_memory_fraction on its own card)
     * says nothing about other cards: each replay's limit is then its capacity. */
    if (t->cfg.limit_bytes != CA_UNLIMITED)
        wi_note("the run had a memory limit of %llu bytes: each replay uses its card's room instead",
                (unsigned long long)t->cfg.limit_bytes);
    progress first = {.skip = 0, .total = n_jobs, .trace_path = trace_path};
    progress prog = {.skip = 1, .total = n_jobs, .trace_path = trace_path};
    replay_done(&first, &jobs[0], 0, n_jobs); /* the preflight's */
    ca_whatif_sweep_opts so = {.threads = o.jobs, .log_dir = wi_fmt("%s/logs", wi_work),
                               .stop = mc_spawn_stop_signal, .done = replay_done, .ctx = &prog};
    long failed = ca_whatif_sweep(t, jobs + 1, n_jobs - 1, &so);
    if (failed < 0) wi_die(1, "cannot open /dev/null");
    wi_stop_if_interrupted();
    if (failed > 0) wi_die(1, "a replay failed: nothing written (see the message above)");
    wi_write_sweep_csvs(jobs, n_jobs);

    /* ------------------------------------------------------------ answer, timelines */
    size_t best = 0;
    ca_whatif_answer *ans = wi_keep(ca_whatif_answers(jobs, n_jobs, &best));
    wi_note("best setting: %s", sets[best].name);
    wi_note("timelines: default and %s", sets[best].name);
    uint64_t ops = ans[0].none->res.steps; /* the operations in the trace */
    run_timelines(t, ops, &sets[best], o.jobs, trace_path);

    /* ------------------------------------------------------------ the largest batch */
    wi_batch_info bi = {.o = &o, .n_cards = n_cards, .cards = cards};
    if (o.n_snaps >= 2) {
        bi.room = wi_kept_calloc(n_cards, sizeof *bi.room);
        for (size_t c = 0; c < n_cards; c++) {
            double room = strtod(cards[c], NULL) * GiB - (double)o.context;
            bi.room[c] = room > 0 ? floor(room) : 0;
        }
        wi_batch_section(&bi, root, convs, o.jobs);
    }
    for (size_t k = 0; k < n_conv; k++) {
        ca_trace_free(&convs[k]);
        unlink(trace_paths[k]);
    }

    /* ------------------------------------------------------------ charts, report */
    bool drawn[WI_N_CHARTS] = {false};
    wi_draw_charts(root, ans, n_sets, jobs, n_jobs, sets[best].name, drawn);
    wi_stop_if_interrupted();
    wi_report_info ri = {.batch = o.n_snaps >= 2 ? &bi : NULL, .snapshot = o.snapshot, .device = o.device, .cards_top = cards_top, .context_from = context_from,
                         .context = o.context, .ops = ops, .n_jobs = n_jobs, .seconds = mc_now_s() - t0};
    wi_write_whatif_md(&ri, ans, n_sets, best, jobs, n_jobs, drawn);
    wi_write_answer_csv(ans, n_sets);
    if (o.n_snaps >= 2) ca_batch_fit_free(&bi.fit);
    publish(o.results, final);
    wi_note("done in %.1f s", ri.seconds);
    printf("whatif: %s/WHATIF.md (results/whatif-latest)\n", final);
    wi_release_kept();
    return fflush(stdout) == 0 ? MC_EXIT_OK : MC_EXIT_VERIFY;
}
