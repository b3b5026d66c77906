/* whatif: replays a PyTorch memory snapshot through the allocator model
 * under each allocator setting and card size, and answers which card it
 * fits and which setting helps (make whatif SNAPSHOT=run.pickle
 * [CONTEXT=BYTES]; scripts/whatif runs it too).
 *
 *   build/whatif [--context BYTES] [--cards 8,12,...] [--jobs N]
 *                [--build DIR] [--results DIR] SNAPSHOT
 *
 * The snapshot is converted once (scripts/snapshot2trace, after gzip -dc if
 * it is gzipped) and the trace parsed once; then every (setting, card) pair
 * is replayed by ca_replay, exactly as build/replay --summary --conf CONF
 * --capacity BYTES [--limit BYTES] would, N threads at a time. The settings
 * are ca_conf_presets (alloc_presets.h). The outputs are those --help lists;
 * charts are drawn by gnuplot with plots/whatif_*.gp. Exit 0; 1 a replay,
 * a chart's data or a write failed; 2 bad input; 130 interrupted (SIGINT,
 * SIGTERM; nothing is left behind). */
#define _GNU_SOURCE /* fopencookie, sched_getaffinity, vasprintf */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "results/csv_read.h"
#include "alloc/alloc_presets.h"
#include "trace/replay.h"
#include "trace/trace.h"

extern char **environ;

#define GiB 1073741824.0
#define MiB (1ULL << 20)
/* No card: a device larger than any run (1 TiB), so the figures are the run's own. */
#define NO_CARD_BYTES (1ULL << 40)
#define DEFAULT_CARDS "8,12,16,24,32,40,48,80,96,141"
#define LARGEST_CARD_GIB 141 /* a context at least this large leaves no card any room */
#define TIMELINE_POINTS 2000 /* points per timeline, about */
#define FAILED_LISTED 5      /* refused requests WHATIF.md names per setting */
#define MESSAGE_BYTES 300    /* of a tool's log, quoted in a message */

static const char help_text[] =
    "whatif: replay a PyTorch memory snapshot through the allocator model under\n"
    "each allocator setting and card size, and answer which card it fits and\n"
    "which setting helps (make whatif SNAPSHOT=run.pickle [CONTEXT=BYTES]).\n"
    "\n"
    "  build/whatif [--context BYTES] [--cards 8,12,...] [--jobs N]\n"
    "               [--build DIR] [--results DIR] SNAPSHOT\n"
    "\n"
    "SNAPSHOT is what torch.cuda.memory._dump_snapshot() wrote (gzipped or not).\n"
    "It is converted once (scripts/snapshot2trace) and parsed once, then replayed\n"
    "as build/replay --summary would for each setting (default, expandable\n"
    "segments, max_split_size_mb, roundup_power2_divisions,\n"
    "garbage_collection_threshold) without a size limit and on each card\n"
    "(capacity = card GiB minus the CUDA context), N threads at a time (default:\n"
    "every core). Writes RESULTS/whatif-<UTC time>-<name>/: WHATIF.md (the\n"
    "answer, one page), whatif.csv (one row per setting and card), answer.csv\n"
    "(one row per setting: peaks with no card, smallest card that fits, largest\n"
    "that does not), failed.csv (the first refused requests, at most 10 per\n"
    "replay), timeline_<setting>.csv for the default and the best setting, PNG\n"
    "charts, logs/; then points RESULTS/whatif-latest at it. The folder appears\n"
    "whole or not at all; earlier ones are never touched. Context: --context,\n"
    "else the C11 figure of the latest run (RESULTS/latest/context_cost.csv),\n"
    "else the committed H100 reference's. --build DIR is for scripts/whatif (it\n"
    "runs DIR/whatif); the program ignores it. Progress on stderr. Exit 0; 1 a\n"
    "tool failed; 2 bad input; 130 interrupted (nothing written).\n";

/* ================================================================ messages */

static char *g_work;        /* the temporary folder while it exists */
static atomic_int g_signal; /* SIGINT or SIGTERM once one came, else 0 */

static void remove_tree(const char *path);

/* Exit with code, the temporary folder removed (after a message of its own). */
static void leave(int code) __attribute__((noreturn));
static void leave(int code)
{
    if (g_work) remove_tree(g_work);
    exit(code);
}

static void vsay(const char *fmt, va_list ap)
{
    char line[8192];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "whatif: %s\n", line); /* one write: threads print too */
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

/* One line, the temporary folder removed, exit code (2: bad input, 1: a tool failed). */
static void die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    leave(code);
}

static void stop_if_interrupted(void)
{
    if (!atomic_load(&g_signal)) return;
    fprintf(stderr, "whatif: interrupted; nothing written\n");
    leave(130);
}

/* Memory that lives until exit (paths, names, the job table) is kept
 * reachable here, so that an exit on bad input leaks nothing and the code
 * needs no free for it; release_kept frees it at the end of a run. */
static pthread_mutex_t g_kept_lock = PTHREAD_MUTEX_INITIALIZER;
static void **g_kept;
static size_t g_n_kept, g_kept_cap;

static void *keep(void *p)
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

static void release_kept(void)
{
    for (size_t i = 0; i < g_n_kept; i++) free(g_kept[i]);
    free(g_kept);
    g_kept = NULL;
    g_n_kept = g_kept_cap = 0;
}

static void *kept_calloc(size_t n, size_t size) { return keep(calloc(n ? n : 1, size)); }

/* A kept string, printf-style. */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s;
    if (vasprintf(&s, f, ap) < 0) s = NULL;
    va_end(ap);
    return keep(s);
}

/* The first MESSAGE_BYTES of a log, newlines as spaces (for a one-line message). */
static char *log_head(const char *path)
{
    char *s = kept_calloc(MESSAGE_BYTES + 1, 1);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(s, 1, MESSAGE_BYTES, f) : 0;
    if (f) fclose(f);
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' || s[i] == '\0') s[i] = ' ';
    return s;
}

/* ================================================================ files */

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *path) { nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

/* mkdir -p: 0, or -1 if path is not a folder after. */
static int mkdir_p(const char *path)
{
    char *p = fmt("%s", path);
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

/* A file of the temporary folder, opened for writing; exits 1 if it cannot be. */
static FILE *out_open(const char *name)
{
    char *path = fmt("%s/%s", g_work, name);
    FILE *f = fopen(path, "w");
    if (!f) die(1, "cannot write %s", path);
    return f;
}

static void out_close(FILE *f, const char *name)
{
    if (ferror(f) | (fclose(f) != 0)) die(1, "cannot write %s/%s", g_work, name);
}

/* ================================================================ children */

#define MAX_CHILDREN 8
static pthread_mutex_t g_children_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t g_children[MAX_CHILDREN]; /* running, for the signal thread to stop */

static void children_track(pid_t pid, bool on)
{
    pthread_mutex_lock(&g_children_lock);
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (on && g_children[i] == 0) {
            g_children[i] = pid;
            break;
        }
        if (!on && g_children[i] == pid) g_children[i] = 0;
    }
    pthread_mutex_unlock(&g_children_lock);
    if (on && atomic_load(&g_signal)) kill(pid, SIGTERM);
}

/* SIGINT and SIGTERM are blocked in every thread and taken here: the run
 * stops between steps (stop_if_interrupted) and running children are asked
 * to end, so the temporary folder is removed whole. */
static void *signal_thread(void *arg)
{
    sigset_t *set = arg;
    int sig;
    while (sigwait(set, &sig) == 0) {
        atomic_store(&g_signal, sig);
        pthread_mutex_lock(&g_children_lock);
        for (int i = 0; i < MAX_CHILDREN; i++)
            if (g_children[i]) kill(g_children[i], SIGTERM);
        pthread_mutex_unlock(&g_children_lock);
    }
    return NULL;
}

/* Starts argv[0] (searched in PATH), stdout to out (NULL: ours), stderr to
 * err (NULL: ours). Returns the pid, or -1 if it cannot start. */
static pid_t child_start(char *const argv[], const char *out, const char *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    posix_spawn_file_actions_init(&fa);
    if (out) posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err) posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) return -1;
    children_track(pid, true);
    return pid;
}

/* Its exit status; 128 + N if signal N ended it; -1 for pid -1. */
static int child_wait(pid_t pid)
{
    if (pid < 0) return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    children_track(pid, false);
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    /* Interrupted with us (a terminal's ^C reaches the whole group): we stop too. */
    if (WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM) atomic_store(&g_signal, WTERMSIG(st));
    return 128 + WTERMSIG(st);
}

static int child_run(char *const argv[], const char *out, const char *err)
{
    return child_wait(child_start(argv, out, err));
}

/* ================================================================ options */

typedef struct {
    bool have_context;
    double context_given; /* --context, bytes */
    uint64_t context;     /* bytes */
    char *cards;          /* GiB, comma-separated, as given */
    int jobs;
    const char *results;
    const char *snapshot;
} options;

/* BYTES: digits with an optional fraction, and a K/M/G suffix (KiB/MiB/GiB;
 * also written KB or KiB), rounded to whole bytes; a fraction needs a suffix.
 * Returns the value, or -1 for anything else. */
static double parse_bytes(const char *s)
{
    const char *p = s;
    size_t d = strspn(p, "0123456789");
    if (d == 0) return -1;
    p += d;
    bool frac = *p == '.';
    if (frac) {
        size_t f = strspn(p + 1, "0123456789");
        if (f == 0) return -1;
        p += 1 + f;
    }
    double unit = 1;
    if (*p == 'K' || *p == 'M' || *p == 'G') {
        unit = *p == 'K' ? 1024.0 : *p == 'M' ? 1048576.0 : GiB;
        p++;
        if (!strcmp(p, "B") || !strcmp(p, "iB")) p += strlen(p);
    } else if (frac) {
        return -1;
    }
    if (*p) return -1;
    return rint(strtod(s, NULL) * unit);
}

/* GiB, comma-separated: "16,24,80" or "12.5,16". */
static bool cards_valid(const char *s)
{
    for (;;) {
        size_t d = strspn(s, "0123456789");
        if (d == 0) return false;
        s += d;
        if (*s == '.') {
            d = strspn(s + 1, "0123456789");
            if (d == 0) return false;
            s += 1 + d;
        }
        if (*s == '\0') return true;
        if (*s++ != ',') return false;
    }
}

static int core_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 2;
}

static void parse_args(int argc, char **argv, options *o)
{
    *o = (options){.cards = fmt("%s", DEFAULT_CARDS), .jobs = core_count()};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--context")) {
            if (!v) die(2, "--context needs a number of bytes (K/M/G suffixes allowed)");
            double b = parse_bytes(v);
            if (b < 0) die(2, "bad --context '%s' (bytes, e.g. 549453824 or 524M)", v);
            o->have_context = true;
            o->context_given = b;
            i++;
        } else if (!strcmp(a, "--cards")) {
            if (!v) die(2, "--cards needs a list of GiB like 16,24,80");
            if (!cards_valid(v)) die(2, "bad --cards '%s' (GiB, comma-separated, like 16,24,80)", v);
            o->cards = fmt("%s", v);
            i++;
        } else if (!strcmp(a, "--jobs")) {
            bool ok = v && v[0] >= '1' && v[0] <= '9' &&
                      (v[1] == '\0' || (v[1] >= '0' && v[1] <= '9' && v[2] == '\0'));
            if (!ok) die(2, "--jobs needs 1..99");
            o->jobs = atoi(v);
            i++;
        } else if (!strcmp(a, "--build")) {
            if (!v) die(2, "--build needs a folder");
            i++;
        } else if (!strcmp(a, "--results")) {
            if (!v) die(2, "--results needs a folder");
            o->results = v;
            i++;
        } else if (!strcmp(a, "--help")) {
            fputs(help_text, stdout);
            exit(MC_EXIT_OK);
        } else if (a[0] == '-') {
            die(2, "unknown option '%s' (see --help)", a);
        } else {
            if (o->snapshot && *o->snapshot) die(2, "more than one snapshot given ('%s')", a);
            o->snapshot = a;
        }
    }
}

/* The checkout: the first folder above this program's with scripts/snapshot2trace
 * (build/whatif, build/san/whatif). */
static char *find_root(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) die(2, "cannot tell where this program is (/proc/self/exe)");
    exe[n] = '\0';
    for (char *slash; (slash = strrchr(exe, '/')) != NULL && slash != exe;) {
        *slash = '\0';
        if (access(fmt("%s/scripts/snapshot2trace", exe), F_OK) == 0) return fmt("%s", exe);
    }
    die(2, "no scripts/snapshot2trace in any folder above this program: run the whatif of a memclaims checkout");
}

/* build/replay beside this program (the same build), which snapshot2trace
 * asks for the allocator settings' names (replay --settings). */
static char *replay_beside(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) die(2, "cannot tell where this program is (/proc/self/exe)");
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    return fmt("%s/replay", exe);
}

/* ================================================================ context */

/* C11's context figure (nvidia-smi's memory.used after cudaFree(0) minus
 * before) in a run's context_cost.csv: its text, or NULL. */
static char *c11_context(const char *csv)
{
    FILE *f = fopen(csv, "r");
    if (!f) return NULL;
    char *line = NULL, *found = NULL;
    size_t cap = 0;
    ssize_t len;
    while (!found && (len = getline(&line, &cap, f)) >= 0) {
        if (len > 0 && line[len - 1] == '\n') line[len - 1] = '\0';
        char *c[64];
        int n = mc_csv_split(line, c, 64);
        if (n >= 14 && !strcmp(c[0], "C11") && !strcmp(c[2], "lazy") && !strcmp(c[3], "stage") &&
            !strcmp(c[4], "1") && !strcmp(c[5], "device_used_delta_nvsmi") && !strcmp(c[13], "ok") &&
            c[8][0] && strspn(c[8], "0123456789") == strlen(c[8]))
            found = fmt("%s", c[8]);
    }
    free(line);
    fclose(f);
    return found;
}

/* Sets o->context; returns where it came from. */
static char *find_context(options *o, const char *root)
{
    if (o->have_context) {
        if (o->context_given >= LARGEST_CARD_GIB * GiB)
            die(2, "context %.0f bytes is larger than any card", o->context_given);
        o->context = (uint64_t)o->context_given;
        return fmt("given with --context");
    }
    char *csvs[2] = {fmt("%s/latest/context_cost.csv", o->results),
                     fmt("%s/results/reference-h100/context_cost.csv", root)};
    char *from = NULL, *text = NULL;
    for (int i = 0; i < 2 && !text; i++) {
        if ((text = c11_context(csvs[i])) == NULL) continue;
        size_t r = strlen(root);
        const char *shown = !strncmp(csvs[i], root, r) && csvs[i][r] == '/' ? csvs[i] + r + 1 : csvs[i];
        from = fmt("C11's measured CUDA context (%s)", shown);
    }
    if (!text)
        die(2, "no context figure: no C11 result in %s/latest or results/reference-h100; give --context BYTES",
            o->results);
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno || (double)v >= LARGEST_CARD_GIB * GiB) die(2, "context %s bytes is larger than any card", text);
    o->context = v;
    return from;
}

/* ================================================================ sweep */

typedef struct {
    const ca_conf_preset *set;
    const char *card;  /* GiB as given, or "none" */
    double room;       /* bytes: the card less the context, or NO_CARD_BYTES */
    uint64_t capacity; /* room as a whole number of bytes */
    bool limit;        /* the limit_bytes column: capacity (garbage collection), else empty */
    bool ok;           /* replayed */
    ca_replay_result res;
} job;

typedef struct {
    const ca_trace *t;
    bool trace_limit;  /* the run had a limit: each replay uses its room as one instead */
    FILE *null;        /* where summaries go: the figures are read from res */
    job *jobs;
    size_t n;
} sweep;

/* One replay, as build/replay --conf CONF --capacity ROOM [--limit LIMIT]
 * [--summary] TRACE runs it, with build/replay's messages in log. out gets
 * the CSV (summary false) or the JSON line. Returns 0 or -1. */
static int replay_as_tool(const ca_trace *t, const char *conf, const job *j, uint64_t limit, bool summary,
                          FILE *out, FILE *log, ca_replay_result *res)
{
    ca_config cfg = ca_config_default();
    cfg.limit_bytes = t->cfg.limit_bytes; /* --conf replaces the trace's settings, not its limit */
    char err[512];
    memset(res, 0, sizeof *res);
    if (ca_conf_parse(conf, &cfg, err, sizeof err) != 0) {
        fprintf(log, "replay: --%s\n", err);
        return -1;
    }
    if (limit) cfg.limit_bytes = limit;
    if (!(j->room >= 1 && j->room <= (double)(1ULL << 62))) {
        fprintf(log, "replay: bad --capacity '%.0f' (bytes >= 1, at most 2^62)\n", j->room);
        return -1;
    }
    if (cfg.expandable_segments && j->capacity > (1ULL << 61)) {
        fprintf(log, "replay: --capacity above 2^61 leaves no address space for expandable segments\n");
        return -1;
    }
    ca_replay_opts o = ca_replay_defaults();
    o.warn = log;
    o.debug = ca_debug_default();
    o.summary = summary;
    o.what_if = true;
    o.cfg = &cfg;
    o.capacity = j->capacity;
    int rc = ca_replay(t, &o, out, res, err, sizeof err);
    if (rc != 0) fprintf(log, "%s\n", err);
    if (res->addr_mismatches > 0 && ca_config_equal(&cfg, &t->cfg))
        fprintf(log, "replay: %llu of the trace's addresses differ from the model's\n",
                (unsigned long long)res->addr_mismatches);
    if (res->hint_conflicts > 0)
        fprintf(log, "replay: %llu addresses overlapped live segments and were not used\n",
                (unsigned long long)res->hint_conflicts);
    return rc;
}

static void sweep_one(void *ctx, size_t i)
{
    sweep *s = ctx;
    job *j = &s->jobs[i];
    char *name = fmt("%s/logs/replay-%s-%s.log", g_work, j->set->name, j->card);
    FILE *log = fopen(name, "w");
    uint64_t limit = j->limit ? j->capacity : s->trace_limit ? j->capacity : 0;
    j->ok = log && replay_as_tool(s->t, j->set->conf, j, limit, true, s->null, log, &j->res) == 0;
    if (log && fclose(log) != 0) j->ok = false;
    if (j->ok)
        note("[%zu/%zu] %s, card %s: done", i + 1, s->n, j->set->name, j->card);
    else
        note("[%zu/%zu] %s, card %s: replay failed (logs/replay-%s-%s.log)", i + 1, s->n, j->set->name,
             j->card, j->set->name, j->card);
}

typedef struct {
    void (*fn)(void *ctx, size_t i);
    void *ctx;
    size_t n;
    atomic_size_t next;
} pool;

static void *pool_worker(void *arg)
{
    pool *p = arg;
    for (size_t i; !atomic_load(&g_signal) && (i = atomic_fetch_add(&p->next, 1)) < p->n;) p->fn(p->ctx, i);
    return NULL;
}

/* fn(ctx, 0 .. n-1), threads at a time. */
static void pool_run(void (*fn)(void *, size_t), void *ctx, size_t n, int threads)
{
    pool p = {fn, ctx, n, 0};
    size_t k = (size_t)threads < n ? (size_t)threads : n;
    pthread_t *tid = calloc(k ? k : 1, sizeof *tid);
    CHECK(tid != NULL, "out of host memory");
    size_t started = 0;
    while (started < k && pthread_create(&tid[started], NULL, pool_worker, &p) == 0) started++;
    if (started == 0) pool_worker(&p);
    for (size_t i = 0; i < started; i++) pthread_join(tid[i], NULL);
    free(tid);
}

/* ================================================================ timelines */

/* A replay's CSV cut to about TIMELINE_POINTS points: each point the
 * largest allocated and reserved within its stretch of steps, at the
 * stretch's last step. Rows arrive through a FILE (fopencookie) as
 * ca_replay writes them. */
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

static void timeline_row(timeline *tl, const char *row, size_t len)
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
    double a = strtod(f[5], NULL), r = strtod(f[6], NULL);
    if (a > tl->allocated) tl->allocated = a;
    if (r > tl->reserved) tl->reserved = r;
    if (++tl->in_point == tl->per_point) {
        fprintf(tl->out, "%s,%.0f,%.0f\n", tl->last, tl->allocated, tl->reserved);
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
            timeline_row(tl, p, k);
        } else {
            memcpy(tl->line + tl->len, p, k);
            tl->len += k;
            if (nl) {
                timeline_row(tl, tl->line, tl->len);
                tl->len = 0;
            }
        }
        p += k + (nl != NULL);
    }
    return (ssize_t)n;
}

typedef struct {
    const ca_trace *t;
    bool trace_limit;
    uint64_t per_point;
    const ca_conf_preset *set[2];
    bool ok[2];
} timelines;

static void timeline_one(void *ctx, size_t i)
{
    timelines *ts = ctx;
    const ca_conf_preset *set = ts->set[i];
    char *csv = fmt("timeline_%s.csv", set->name);
    char *logname = fmt("%s/logs/timeline-%s.log", g_work, set->name);
    timeline *tl = calloc(1, sizeof *tl);
    CHECK(tl != NULL, "out of host memory");
    tl->per_point = ts->per_point;
    tl->out = out_open(csv);
    fputs("step,allocated,reserved\n", tl->out);
    FILE *log = fopen(logname, "w");
    FILE *rows = fopencookie(tl, "w", (cookie_io_functions_t){.write = timeline_write});
    job none = {.set = set, .card = "none", .room = (double)NO_CARD_BYTES, .capacity = NO_CARD_BYTES};
    ca_replay_result res;
    bool ok = log && rows &&
              replay_as_tool(ts->t, set->conf, &none, ts->trace_limit ? NO_CARD_BYTES : 0, false, rows, log,
                             &res) == 0;
    if (rows && fclose(rows) != 0) ok = false;
    if (tl->in_point > 0) fprintf(tl->out, "%s,%.0f,%.0f\n", tl->last, tl->allocated, tl->reserved);
    if (ferror(tl->out) | (fclose(tl->out) != 0)) ok = false;
    if (log && fclose(log) != 0) ok = false;
    ts->ok[i] = ok;
    free(tl);
}

/* ================================================================ answer */

typedef struct {
    const ca_conf_preset *set;
    const job *none;             /* its replay with no card */
    const char *smallest;        /* the smallest card it fits, NULL: none */
    const char *largest_failing; /* the largest card it does not fit, NULL: none */
} answer;

static bool fits(const job *j) { return j->res.ooms == 0; }

/* Cards compare as numbers where both are ("none" is not). */
static bool same_card(const char *a, const char *b)
{
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (ea != a && !*ea && eb != b && !*eb) return x == y;
    return !strcmp(a, b);
}

static double gib(int64_t bytes) { return (double)bytes / GiB; }

/* ================================================================ charts */

static const struct {
    const char *key, *alt;
} charts[] = {
    {"peak_reserved", "Peak reserved per setting"},
    {"cards", "Fits or OOMs per card and setting"},
    {"timeline", "Allocated and reserved over the run"},
};
#define N_CHARTS (sizeof charts / sizeof charts[0])

/* Where PATH (or a path) has an executable name, or NULL (command -v). */
static char *find_program(const char *name)
{
    struct stat st;
    if (strchr(name, '/'))
        return access(name, X_OK) == 0 && stat(name, &st) == 0 && !S_ISDIR(st.st_mode) ? fmt("%s", name) : NULL;
    const char *path = getenv("PATH");
    char *dirs = fmt("%s", path ? path : "/usr/bin:/bin");
    char *found = NULL, *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *p = fmt("%s/%s", *d ? d : ".", name);
        if (access(p, X_OK) == 0 && stat(p, &st) == 0 && !S_ISDIR(st.st_mode)) found = p;
    }
    return found;
}

/* Draws the charts with plots/whatif_<key>.gp, all at once; drawn[k] says
 * which made a PNG. A chart gnuplot cannot draw is noted and left out. */
static void draw_charts(const char *root, const answer *ans, size_t n_ans, const job *jobs, size_t n_jobs,
                        const char *best, bool drawn[N_CHARTS])
{
    const char *env = getenv("GNUPLOT");
    const char *gnuplot = env && *env ? env : "gnuplot";
    char *found = find_program(gnuplot);
    if (!found) {
        note("gnuplot not found: charts skipped (make deps); the CSV and WHATIF.md are written");
        return;
    }
    FILE *f = out_open(".answer_plot.tsv");
    for (size_t i = 0; i < n_ans; i++)
        fprintf(f, "%zu\t%s\t%lld\t%lld\t%s\n", i, ans[i].set->name, (long long)ans[i].none->res.peak_allocated,
                (long long)ans[i].none->res.peak_reserved, ans[i].smallest ? ans[i].smallest : "none");
    out_close(f, ".answer_plot.tsv");
    f = out_open(".cards_plot.tsv");
    for (size_t i = 0; i < n_jobs; i++)
        if (strcmp(jobs[i].card, "none"))
            fprintf(f, "%s\t%s\t%s\n", jobs[i].set->name, jobs[i].card, fits(&jobs[i]) ? "yes" : "no");
    out_close(f, ".cards_plot.tsv");
    const char *w = g_work;
    char *vars[N_CHARTS] = {
        fmt("data='%s/.answer_plot.tsv'", w),
        fmt("data='%s/.cards_plot.tsv'; settings='%s/.answer_plot.tsv'", w, w),
        fmt("default='%s/timeline_default.csv'; best='%s/timeline_%s.csv'; bestname='%s'", w, w, best, best),
    };
    pid_t pid[N_CHARTS];
    char *tmp[N_CHARTS], *log[N_CHARTS];
    for (size_t k = 0; k < N_CHARTS; k++) {
        tmp[k] = fmt("%s/.%s.png.tmp", w, charts[k].key);
        log[k] = fmt("%s/logs/plot-%s.log", w, charts[k].key);
        char *e = fmt("%s; out='%s'", vars[k], tmp[k]);
        char *gp = fmt("%s/plots/whatif_%s.gp", root, charts[k].key);
        char *argv[] = {(char *)gnuplot, "-e", e, gp, NULL};
        pid[k] = child_start(argv, NULL, log[k]);
    }
    for (size_t k = 0; k < N_CHARTS; k++) {
        int rc = child_wait(pid[k]);
        struct stat st;
        char *png = fmt("%s/%s.png", w, charts[k].key);
        drawn[k] = rc == 0 && stat(tmp[k], &st) == 0 && st.st_size > 0 && rename(tmp[k], png) == 0;
        if (!drawn[k]) {
            char *head = log_head(log[k]);
            note("gnuplot failed for %s: %s", charts[k].key, head);
            unlink(tmp[k]);
        }
    }
    unlink(fmt("%s/.answer_plot.tsv", w));
    unlink(fmt("%s/.cards_plot.tsv", w));
}

/* ================================================================ report */

static void write_sweep_csvs(const job *jobs, size_t n)
{
    FILE *f = out_open("whatif.csv");
    fputs("setting,conf,card_gib,capacity_bytes,limit_bytes,fits,steps,peak_allocated,peak_reserved,"
          "alloc_retries,ooms,first_oom_step,first_oom_bytes,segments_peak,largest_free_at_peak_reserved,"
          "free_at_peak_reserved\n", f);
    for (size_t i = 0; i < n; i++) {
        const job *j = &jobs[i];
        const ca_replay_result *r = &j->res;
        char limit[24] = "", step[24] = "", bytes[24] = "";
        if (j->limit) snprintf(limit, sizeof limit, "%llu", (unsigned long long)j->capacity);
        if (r->refused) {
            snprintf(step, sizeof step, "%llu", (unsigned long long)r->first_oom_step);
            snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)r->first_oom_bytes);
        }
        fprintf(f, "%s,\"%s\",%s,%llu,%s,%s,%llu,%lld,%lld,%lld,%lld,%s,%s,%lld,%llu,%llu\n", j->set->name,
                j->set->conf, j->card, (unsigned long long)j->capacity, limit, fits(j) ? "yes" : "no",
                (unsigned long long)r->steps, (long long)r->peak_allocated, (long long)r->peak_reserved,
                (long long)r->alloc_retries, (long long)r->ooms, step, bytes, (long long)r->segments_peak,
                (unsigned long long)r->largest_free_at_peak_reserved,
                (unsigned long long)r->free_at_peak_reserved);
    }
    out_close(f, "whatif.csv");
    f = out_open("failed.csv");
    fputs("setting,card_gib,step,id,bytes\n", f);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < jobs[i].res.n_failed; k++)
            fprintf(f, "%s,%s,%llu,%llu,%llu\n", jobs[i].set->name, jobs[i].card,
                    (unsigned long long)jobs[i].res.failed[k].step, (unsigned long long)jobs[i].res.failed[k].id,
                    (unsigned long long)jobs[i].res.failed[k].bytes);
    out_close(f, "failed.csv");
}

typedef struct {
    const char *snapshot, *cards_top, *context_from;
    uint64_t context, ops;
    size_t n_jobs;
    double seconds;
} report_info;

static void write_whatif_md(const report_info *ri, const answer *ans, size_t n_ans, size_t best,
                            const job *jobs, size_t n_jobs, const bool drawn[N_CHARTS])
{
    FILE *f = out_open("WHATIF.md");
    const char *base = strrchr(ri->snapshot, '/');
    fprintf(f, "# What if: %s\n\n", base ? base + 1 : ri->snapshot);
    const answer *d = &ans[0], *b = &ans[best];
    if (!d->smallest)
        fprintf(f, "**Under the default settings the run fits none of the cards tried (up to %s GiB).**",
                ri->cards_top);
    else
        fprintf(f, "**Under the default settings the run fits the %s GiB card** (peak reserved %.2f GiB).",
                d->smallest, gib(d->none->res.peak_reserved));
    if (best == 0)
        fprintf(f, " No other setting fits a smaller card or reserves less.\n");
    else if (!b->smallest)
        fprintf(f, " No setting fits any card tried; the least reserved is `%s` (%.2f GiB).\n", b->set->name,
                gib(b->none->res.peak_reserved));
    else
        fprintf(f, " The best setting is `%s`: it fits the %s GiB card (peak reserved %.2f GiB).\n", b->set->name,
                b->smallest, gib(b->none->res.peak_reserved));
    fprintf(f, "\nA card's room = its nominal size in GiB minus the CUDA context: %llu MiB, %s.\n\n",
            (unsigned long long)(ri->context / MiB), ri->context_from);
    fprintf(f, "| Setting | PYTORCH_CUDA_ALLOC_CONF | Peak allocated | Peak reserved | Smallest card that fits |\n"
               "|---|---|---:|---:|---:|\n");
    for (size_t i = 0; i < n_ans; i++) {
        const answer *a = &ans[i];
        fprintf(f, "| %s | `%s` | %.2f GiB | %.2f GiB | ", a->set->name, a->set->conf[0] ? a->set->conf : "(none)",
                gib(a->none->res.peak_allocated), gib(a->none->res.peak_reserved));
        if (a->smallest) fprintf(f, "%s GiB |\n", a->smallest); else fprintf(f, "none |\n");
    }
    fprintf(f, "\n## The allocations that fail first\n\n"
               "On the largest card each setting does not fit (step = operation number in the replayed trace):\n\n"
               "| Setting | Card | First refused requests (step: size) |\n"
               "|---|---:|---|\n");
    bool any = false;
    for (size_t i = 0; i < n_ans; i++) {
        const answer *a = &ans[i];
        if (!a->largest_failing) continue;
        any = true;
        fprintf(f, "| %s | %s GiB | ", a->set->name, a->largest_failing);
        int listed = 0;
        for (size_t k = 0; k < n_jobs; k++) {
            const job *j = &jobs[k];
            if (j->set != a->set || !same_card(j->card, a->largest_failing)) continue;
            for (size_t e = 0; e < j->res.n_failed && listed < FAILED_LISTED; e++, listed++)
                fprintf(f, "%s%llu: %.1f MiB", listed ? ", " : "", (unsigned long long)j->res.failed[e].step,
                        (double)j->res.failed[e].bytes / (double)MiB);
        }
        fprintf(f, "%s |\n", listed ? "" : "(none listed)");
    }
    if (!any) fprintf(f, "| (every setting fits every card tried) | | |\n");
    fprintf(f, "\n");
    for (size_t k = 0; k < N_CHARTS; k++)
        if (drawn[k]) fprintf(f, "![%s](%s.png)\n", charts[k].alt, charts[k].key);
    fprintf(f, "\nHow: `scripts/snapshot2trace` turned the snapshot's %llu operations into a trace;\n"
               "`build/replay --summary` replayed it through the allocator model under each setting,\n"
               "with no card (1 TiB) and on each card (`--capacity`; garbage collection also with `--limit`\n"
               "at the card's capacity, since PyTorch applies it only under a memory fraction). Figures:\n"
               "`whatif.csv`; per setting: `answer.csv`; refused requests: `failed.csv`; timelines: `timeline_*.csv`.\n"
               "%zu replays in %.1f s.\n",
            (unsigned long long)ri->ops, ri->n_jobs, ri->seconds);
    out_close(f, "WHATIF.md");
}

static void write_answer_csv(const answer *ans, size_t n)
{
    FILE *f = out_open("answer.csv");
    fputs("setting,peak_allocated,peak_reserved,smallest_card_gib,largest_failing_card_gib\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s,%lld,%lld,%s,%s\n", ans[i].set->name, (long long)ans[i].none->res.peak_allocated,
                (long long)ans[i].none->res.peak_reserved, ans[i].smallest ? ans[i].smallest : "",
                ans[i].largest_failing ? ans[i].largest_failing : "");
    out_close(f, "answer.csv");
}

/* ================================================================ main */

/* The folder's name from the snapshot's: no .gz/.pickle/.pkl, [A-Za-z0-9_.-]
 * only, at most 60 bytes. */
static char *folder_name(const char *snapshot)
{
    const char *base = strrchr(snapshot, '/');
    char *name = fmt("%s", base ? base + 1 : snapshot);
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

/* The snapshot as a trace in WORK/run.trace (gunzipped first if need be). */
static void convert(const char *snapshot, const char *convert_path)
{
    const char *snap = snapshot;
    char *unzipped = fmt("%s/snapshot.pickle", g_work);
    char *test[] = {"gzip", "-t", (char *)snapshot, NULL};
    if (child_run(test, NULL, "/dev/null") == 0) {
        char *dc[] = {"gzip", "-dc", (char *)snapshot, NULL};
        if (child_run(dc, unzipped, NULL) != 0) {
            stop_if_interrupted();
            die(2, "cannot decompress '%s'", snapshot);
        }
        snap = unzipped;
    }
    stop_if_interrupted();
    char *trace = fmt("%s/run.trace", g_work), *log = fmt("%s/logs/snapshot2trace.log", g_work);
    char *argv[] = {(char *)convert_path, "--replay", replay_beside(), (char *)snap, NULL};
    if (child_run(argv, trace, log) != 0) {
        stop_if_interrupted();
        char *head = log_head(log);
        die(2, "'%s' is not a memory snapshot snapshot2trace can read: %s", snapshot, head);
    }
    unlink(unzipped);
}

/* RESULTS/whatif-<UTC time>-<name>[-N], not there yet (returned), and the
 * temporary folder beside it with logs/ (g_work). */
static char *make_folders(const options *o)
{
    char *name = folder_name(o->snapshot);
    if (mkdir_p(o->results) != 0) die(2, "cannot create %s", o->results);
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
    char *final = fmt("%s/whatif-%s-%s", o->results, stamp, name);
    struct stat st;
    for (int n = 1; stat(final, &st) == 0; n++) final = fmt("%s/whatif-%s-%s-%d", o->results, stamp, name, n);
    char *work = fmt("%s/.whatif.tmp.XXXXXX", o->results);
    if (!mkdtemp(work)) die(2, "cannot write in %s", o->results);
    g_work = work;
    if (mkdir(fmt("%s/logs", work), 0777) != 0) die(1, "cannot write in %s", work);
    return final;
}

/* Every setting with no card, then on each card with room (card GiB less
 * the context, at least 1 MiB), in the settings' order. */
static job *make_jobs(const options *o, char **cards, size_t n_cards, size_t *n_jobs)
{
    size_t n_sets;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    job *jobs = kept_calloc(n_sets * (n_cards + 1), sizeof *jobs);
    size_t n = 0;
    for (size_t s = 0; s < n_sets; s++) {
        jobs[n++] = (job){.set = &sets[s], .card = "none", .room = (double)NO_CARD_BYTES, .capacity = NO_CARD_BYTES};
        for (size_t c = 0; c < n_cards; c++) {
            double room = strtod(cards[c], NULL) * GiB - (double)o->context;
            if (room < (double)MiB) continue; /* no room at all on this card */
            room = rint(room);                /* whole bytes, as printf("%.0f") rounds */
            jobs[n++] = (job){.set = &sets[s], .card = cards[c], .room = room,
                              .capacity = room <= (double)(1ULL << 62) ? (uint64_t)room : 0,
                              .limit = sets[s].limit_at_capacity};
        }
    }
    *n_jobs = n;
    return jobs;
}

/* Per setting: its replay with no card, the smallest card it fits and the
 * largest it does not; *best: the setting that fits the smallest card, ties
 * to the lower peak reserved with no card, then to the earlier one. */
static answer *find_answers(const job *jobs, size_t n_jobs, size_t *best)
{
    size_t n_sets;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    answer *ans = kept_calloc(n_sets, sizeof *ans);
    for (size_t i = 0, s = 0; i < n_jobs; i++) {
        const job *j = &jobs[i];
        while (&sets[s] != j->set) s++; /* jobs come in the settings' order */
        answer *a = &ans[s];
        a->set = j->set;
        double card = strtod(j->card, NULL);
        if (!strcmp(j->card, "none"))
            a->none = j;
        else if (fits(j) && (!a->smallest || card < strtod(a->smallest, NULL)))
            a->smallest = j->card;
        else if (!fits(j) && (!a->largest_failing || card > strtod(a->largest_failing, NULL)))
            a->largest_failing = j->card;
    }
    double best_card = 0, best_reserved = 0;
    for (size_t i = 0; i < n_sets; i++) {
        double card = ans[i].smallest ? strtod(ans[i].smallest, NULL) : 1e18;
        double reserved = (double)ans[i].none->res.peak_reserved;
        if (i == 0 || card < best_card || (card == best_card && reserved < best_reserved)) {
            *best = i;
            best_card = card;
            best_reserved = reserved;
        }
    }
    return ans;
}

/* timeline_default.csv and timeline_<best>.csv, both at once where there are
 * two; exits 1 if one fails. */
static void run_timelines(const ca_trace *t, bool trace_limit, uint64_t ops, const ca_conf_preset *best, int threads)
{
    size_t n_sets;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    timelines tls = {.t = t, .trace_limit = trace_limit, .set = {&sets[0], best}};
    tls.per_point = (ops + TIMELINE_POINTS - 1) / TIMELINE_POINTS;
    if (tls.per_point < 1) tls.per_point = 1;
    size_t n = best == &sets[0] ? 1 : 2;
    pool_run(timeline_one, &tls, n, threads);
    stop_if_interrupted();
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        if (tls.ok[i]) continue;
        note("the timeline replay of %s failed (logs/timeline-%s.log)", tls.set[i]->name, tls.set[i]->name);
        ok = false;
    }
    if (!ok) leave(1);
}

/* The temporary folder becomes final whole (rename), and RESULTS/whatif-latest
 * points at it (a new link renamed over the old one). */
static void publish(const char *results, const char *final)
{
    chmod(g_work, 0755);
    stop_if_interrupted();
    if (rename(g_work, final) != 0) die(1, "cannot create %s", final);
    g_work = NULL;
    const char *base = strrchr(final, '/') + 1;
    char *tmp = fmt("%s/.whatif-latest.tmp.%ld", results, (long)getpid());
    char *link = fmt("%s/whatif-latest", results);
    unlink(tmp);
    if (symlink(base, tmp) != 0 || rename(tmp, link) != 0) {
        unlink(tmp);
        note("cannot point %s at %s", link, base);
    }
}

int main(int argc, char **argv)
{
    /* Signals go to one thread from the start (children get them back). */
    static sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, NULL);
    pthread_t sig_tid;
    CHECK(pthread_create(&sig_tid, NULL, signal_thread, &stop_set) == 0, "cannot start a thread");
    pthread_detach(sig_tid);

    options o;
    parse_args(argc, argv, &o);
    if (!o.snapshot || !*o.snapshot) die(2, "no snapshot given (make whatif SNAPSHOT=run.pickle; see --help)");
    struct stat st;
    if (stat(o.snapshot, &st) != 0 || !S_ISREG(st.st_mode) || access(o.snapshot, R_OK) != 0)
        die(2, "cannot read snapshot '%s'", o.snapshot);
    if (st.st_size == 0) die(2, "snapshot '%s' is empty", o.snapshot);
    char *root = find_root();
    if (!o.results) o.results = fmt("%s/results", root);
    char *convert_path = fmt("%s/scripts/snapshot2trace", root);
    if (access(convert_path, X_OK) != 0) die(2, "%s is missing", convert_path);
    char *context_from = find_context(&o, root);
    char *final = make_folders(&o);

    double t0 = mc_now_s();
    convert(o.snapshot, convert_path);
    /* Progress starts only now: bad input above gets its one line and nothing else. */
    note("converted %s", o.snapshot);
    note("context: %llu MiB (%llu bytes), %s", (unsigned long long)(o.context / MiB),
         (unsigned long long)o.context, context_from);
    ca_trace t;
    char err[512];
    char *trace_path = fmt("%s/run.trace", g_work); /* its name is in the replays' messages */
    if (ca_trace_load(&t, trace_path, err, sizeof err) != 0) die(1, "the trace snapshot2trace wrote: %s", err);

    /* ------------------------------------------------------------ the sweep */
    size_t n_sets, n_cards = 1, n_jobs;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    for (const char *c = o.cards; *c; c++) n_cards += *c == ',';
    char **cards = kept_calloc(n_cards, sizeof *cards);
    char *save = NULL;
    for (size_t c = 0; c < n_cards; c++) cards[c] = strtok_r(c ? NULL : o.cards, ",", &save);
    job *jobs = make_jobs(&o, cards, n_cards, &n_jobs);
    note("%zu replays (%zu settings, each with no card and on %zu cards), %d at a time", n_jobs, n_sets, n_cards,
         o.jobs);
    /* A limit the run recorded (set_per_process_memory_fraction on its own card)
     * says nothing about other cards: each replay's limit is then its capacity. */
    bool trace_limit = t.cfg.limit_bytes != CA_UNLIMITED;
    if (trace_limit)
        note("the run had a memory limit of %llu bytes: each replay uses its card's room instead",
             (unsigned long long)t.cfg.limit_bytes);
    sweep sw = {.t = &t, .trace_limit = trace_limit, .null = fopen("/dev/null", "w"), .jobs = jobs, .n = n_jobs};
    if (!sw.null) die(1, "cannot open /dev/null");
    pool_run(sweep_one, &sw, n_jobs, o.jobs);
    fclose(sw.null);
    stop_if_interrupted();
    for (size_t i = 0; i < n_jobs; i++)
        if (!jobs[i].ok) die(1, "a replay failed: nothing written (see the message above)");
    write_sweep_csvs(jobs, n_jobs);

    /* ------------------------------------------------------------ answer, timelines */
    size_t best = 0;
    answer *ans = find_answers(jobs, n_jobs, &best);
    note("best setting: %s", sets[best].name);
    note("timelines: default and %s", sets[best].name);
    uint64_t ops = ans[0].none->res.steps; /* the operations in the trace */
    run_timelines(&t, trace_limit, ops, &sets[best], o.jobs);
    ca_trace_free(&t);
    unlink(trace_path);

    /* ------------------------------------------------------------ charts, report */
    bool drawn[N_CHARTS] = {false};
    draw_charts(root, ans, n_sets, jobs, n_jobs, sets[best].name, drawn);
    stop_if_interrupted();
    report_info ri = {.snapshot = o.snapshot, .cards_top = cards[n_cards - 1], .context_from = context_from,
                      .context = o.context, .ops = ops, .n_jobs = n_jobs, .seconds = mc_now_s() - t0};
    write_whatif_md(&ri, ans, n_sets, best, jobs, n_jobs, drawn);
    write_answer_csv(ans, n_sets);
    publish(o.results, final);
    note("done in %.1f s", ri.seconds);
    printf("whatif: %s/WHATIF.md (results/whatif-latest)\n", final);
    release_kept();
    return fflush(stdout) == 0 ? MC_EXIT_OK : MC_EXIT_VERIFY;
}
