/* c26_mmap_dataset: C26. Does a memory-mapped dataset cut the memory a
 * program takes at start? A generated file of fixed-size records (512 MiB,
 * --quick 64 MiB, in $TMPDIR, removed on every exit path) is loaded by a
 * child process per figure (this program re-executed, common/child.h), so
 * that each one's resident memory starts clean:
 *
 *   read      malloc a buffer of the file's size and read() the whole file
 *             into it, then checksum every record
 *   mmap      mmap the file (PROT_READ, MAP_PRIVATE), then touch a fraction
 *             of its records, chosen at random (seeded)
 *   mmap_rand the same with madvise(MADV_RANDOM) (no read-around)
 *   pread     pread() only the chosen records into one record's buffer
 *
 * Each child reads VmRSS, VmHWM, RssAnon and RssFile from /proc/self/status
 * at its start, when the dataset is ready (read: after the read; mmap: after
 * mmap) and after the records are touched, and times both phases with the
 * monotonic clock. Every touched record is checked against the generator.
 * No GPU is needed: the run is the same with or without one. */
#define _GNU_SOURCE /* MADV_RANDOM, posix_fadvise, mkstemp */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "clock.h"
#include "support/dataset_file.h"
#include "experiment.h"

static uint64_t size_opt = 0;          /* 0: 512 MiB, --quick 64 MiB */
static const char *g_child = NULL;     /* child: "MODE:K" */
static const char *g_child_file = NULL;

static const mc_extra_opt EXTRA[] = {
    {"file-size", MC_OPT_BYTES, &size_opt,
     "dataset file size, a multiple of 4 KiB, >= 1 MiB (default 512 MiB, --quick 64 MiB)"},
    {"child", MC_OPT_STRING, &g_child, "internal: run as the measured child (MODE:K); not for users"},
    {"child-file", MC_OPT_STRING, &g_child_file, "internal: the child's dataset file"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

#define SEED 0x6d656d636c61696dULL
#define MIN_SIZE (1ULL << 20)
#define MAX_SIZE (64ULL << 30)

static const char *validate(const mc_options *o)
{
    (void)o;
    if (size_opt && (size_opt % MC_DS_RECORD_BYTES || size_opt < MIN_SIZE || size_opt > MAX_SIZE))
        return "--file-size must be a multiple of 4 KiB from 1 MiB to 64 GiB";
    return NULL;
}

static const mc_experiment EXP = {
    .claim = "C26",
    .key = "mmap_dataset",
    .title = "Resident memory and time of read() of a whole dataset file vs mmap touching a fraction of its records",
    .seed_claim = "A memory-mapped dataset loads records on demand, cutting the memory a program "
                  "takes at start.",
    .method = "A generated file of 4 KiB records (512 MiB, --file-size; --quick 64 MiB; seeded pattern) "
              "in $TMPDIR (default /tmp), removed on every exit path. One child process per figure "
              "(so each starts with a clean RSS): read (malloc + read() of the whole file, then a "
              "checksum of every record), mmap (PROT_READ, MAP_PRIVATE; then touch a fraction "
              "0, 0.1%, 1%, 10%, 50%, 100% of the records chosen at random, seeded), mmap_rand (the "
              "same with MADV_RANDOM; 0.1-10%), pread (only the chosen records, into one record's "
              "buffer; 0.1-10%). "
              "Per child, from /proc/self/status: VmRSS, RssAnon, RssFile and VmHWM growth over the "
              "child's own start, when the dataset is ready (after read / after mmap) and after "
              "the records are touched; ready and access times (monotonic clock). Every touched "
              "record is checked against the generator. Page-cache conditions: cached (evicted, "
              "then read() through once, so the cache is filled the same way each time; --repeats "
              "runs, --quick 1), once evicted (posix_fadvise DONTNEED after fdatasync; no root "
              "needed; context, not in the rule) and once, before the rest, written (the cache as "
              "the generator's writes left it; mmap up to 10% only); the resident share is "
              "measured with mincore before each child. Cached figures are medians of the runs. "
              "Needs no GPU.",
    .verdict_rule = "On the cached condition, medians: r0 = mmap's VmRSS growth when ready (mmap "
                    "only) / read's; r(f) = mmap's VmRSS growth after touching a fraction f / read's. "
                    "inconclusive if a record failed its check or read's growth is below half the "
                    "file; does-not-hold if r0 > 0.25 (the start is not cut); holds if r0 <= 0.05, "
                    "r(1%) <= 0.25 and mmap's growth does not fall as f grows (1 MiB tolerance); "
                    "otherwise holds-partly (the start is cut, but a few records touched at random "
                    "bring much more of the file into memory).",
    .flags = MC_EXP_NO_GPU | MC_EXP_RULE_MEMORY, /* the rule reads resident memory only */
    .default_repeats = 3,
    .default_warmup = 0,
    .extra = EXTRA,
    .validate = validate,
};

/* ------------------------------------------------------------ child */

static void print_mem(const char *when, mc_proc_mem m)
{
    printf("%s_rss %.0f\n%s_anon %.0f\n%s_file %.0f\n%s_hwm %.0f\n", when, m.rss, when, m.anon, when,
           m.file, when, m.hwm);
}

/* K distinct record numbers of N in random order (seeded partial Fisher-Yates). */
static uint32_t *choose(uint64_t N, uint64_t K)
{
    uint32_t *idx = mc_xmalloc(N * sizeof *idx);
    for (uint64_t i = 0; i < N; i++) idx[i] = (uint32_t)i;
    uint64_t s = SEED ^ K;
    for (uint64_t i = 0; i < K; i++) {
        s = mc_ds_splitmix64(s);
        uint64_t j = i + s % (N - i);
        uint32_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    return idx;
}

static int child_main(const char *spec, const char *path)
{
    char mode[16];
    unsigned long long K = 0;
    if (!path || sscanf(spec, "%15[a-z_]:%llu", mode, &K) != 2) {
        fprintf(stderr, "--child: expected MODE:K and --child-file\n");
        return MC_EXIT_USAGE;
    }
    int fd = open(path, O_RDONLY);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0, "open %s: %s", path, strerror(errno));
    const uint64_t size = (uint64_t)st.st_size, N = size / MC_DS_RECORD_BYTES;
    CHECK(K <= N, "K %llu > %llu records", K, (unsigned long long)N);
    const bool is_read = strcmp(mode, "read") == 0, is_pread = strcmp(mode, "pread") == 0;
    const bool is_rand = strcmp(mode, "mmap_rand") == 0;
    CHECK(is_read || is_pread || is_rand || strcmp(mode, "mmap") == 0, "mode %s", mode);
    uint32_t *idx = is_read ? NULL : choose(N, K);
    const uint64_t n_touch = is_read ? N : K; /* read's program uses every record */
    /* The checksums and the pread buffer are written now, so that they are
     * resident before the baseline and only the dataset's pages grow RSS. */
    uint64_t *sums = mc_xmalloc((n_touch ? n_touch : 1) * sizeof *sums);
    uint64_t *rec = mc_xmalloc(MC_DS_RECORD_BYTES);
    memset(sums, 0, (n_touch ? n_touch : 1) * sizeof *sums);
    memset(rec, 0, MC_DS_RECORD_BYTES);
    print_mem("base", mc_proc_mem_self());

    /* ready: the dataset can be indexed */
    double t0 = mc_now_s();
    const unsigned char *data = NULL;
    void *map = MAP_FAILED;
    unsigned char *buf = NULL;
    if (is_read) {
        buf = mc_xmalloc(size);
        for (uint64_t off = 0; off < size;) {
            ssize_t n = read(fd, buf + off, size - off > (1u << 30) ? (1u << 30) : size - off);
            CHECK(n > 0, "read: %s", n < 0 ? strerror(errno) : "end of file");
            off += (uint64_t)n;
        }
        data = buf;
    } else if (!is_pread) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        CHECK(map != MAP_FAILED, "mmap: %s", strerror(errno));
        if (is_rand) CHECK(madvise(map, size, MADV_RANDOM) == 0, "madvise: %s", strerror(errno));
        data = map;
    }
    double t1 = mc_now_s();
    print_mem("ready", mc_proc_mem_self()); /* outside both timed phases */
    double t1b = mc_now_s();

    /* access: the records, in the chosen order */
    for (uint64_t k = 0; k < n_touch; k++) {
        uint64_t i = is_read ? k : idx[k];
        const uint64_t *w = rec;
        if (!is_pread) w = (const uint64_t *)(data + i * MC_DS_RECORD_BYTES);
        else {
            CHECK(pread(fd, rec, MC_DS_RECORD_BYTES, (off_t)(i * MC_DS_RECORD_BYTES)) == (ssize_t)MC_DS_RECORD_BYTES,
                  "pread: %s", strerror(errno));
        }
        sums[k] = mc_ds_checksum(w);
    }
    double t2 = mc_now_s();
    print_mem("after", mc_proc_mem_self());

    uint64_t bad = 0; /* verification against the generator, untimed */
    for (uint64_t k = 0; k < n_touch; k++) bad += sums[k] != mc_ds_expected_checksum(SEED, is_read ? k : idx[k]);
    printf("ready_s %.9f\naccess_s %.9f\ntouched %llu\nbad_records %llu\n", t1 - t0, t2 - t1b,
           (unsigned long long)n_touch, (unsigned long long)bad);
    if (map != MAP_FAILED) munmap(map, size);
    free(buf);
    free(rec);
    free(sums);
    free(idx);
    close(fd);
    return 0;
}

/* ------------------------------------------------------------ the file */

/* The dataset's path, "" when there is none: the atexit and signal handlers
 * remove it, so no exit path leaves it behind. */
static char g_path[4096];

static void remove_dataset(void)
{
    if (g_path[0]) unlink(g_path);
    g_path[0] = '\0';
}

static void on_signal(int sig)
{
    if (g_path[0]) unlink(g_path); /* async-signal-safe */
    mc_file_abort_from_signal();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* A new file of size bytes of records in dir, synced to disk (so that its
 * pages are clean and can be evicted). 0, or -1 with errno set. */
static int make_dataset(const char *dir, uint64_t size)
{
    snprintf(g_path, sizeof g_path, "%s/memclaims-c26-dataset.XXXXXX", dir);
    int fd = mkstemp(g_path); /* fills g_path in place: the handlers see the name at once */
    if (fd < 0) {
        g_path[0] = '\0';
        return -1;
    }
    int rc = mc_ds_write(fd, SEED, size), e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* How the file's pages stand before a child. The folios a page fault maps
 * depend on how the pages entered the page cache, so "cached" is made the
 * same way every time: evicted, then read() through once, as a reader would
 * bring it in. "written" is the cache as the generator's writes left it, seen
 * once, right after writing, by the mmap children of WRITTEN_MAX_F and below. */
enum { C_CACHED, C_EVICTED, C_WRITTEN, NCOND };
static const char *const COND[NCOND] = {"cached", "evicted", "written"};
#define WRITTEN_MAX_F 0.1

/* cached: drops the file's pages (clean pages, POSIX_FADV_DONTNEED; no root
 * needed) and reads it through a 1 MiB buffer; evicted: drops them; written:
 * leaves them as they are. */
static void set_condition(int cond, uint64_t size)
{
    int fd = open(g_path, O_RDONLY);
    CHECK(fd >= 0, "open %s: %s", g_path, strerror(errno));
    (void)size;
    if (cond != C_WRITTEN)
        CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0, "posix_fadvise");
    if (cond == C_CACHED) {
        static char buf[1 << 20];
        while (read(fd, buf, sizeof buf) > 0) {
        }
    }
    close(fd);
}

/* ------------------------------------------------------------ the sweep */

typedef struct {
    const char *mode;
    double fraction;  /* of the records touched; read touches all */
} variant;

/* MADV_RANDOM and pread stop at 10%: touching every record of an evicted
 * 1 GiB file at random, one 4 KiB read each without read-around, takes
 * minutes. */
static const variant VARS[] = {
    {"read", 1},          {"mmap", 0},          {"mmap", 0.001}, {"mmap", 0.01},
    {"mmap", 0.1},        {"mmap", 0.5},        {"mmap", 1},     {"mmap_rand", 0.001},
    {"mmap_rand", 0.01},  {"mmap_rand", 0.1},   {"pread", 0.001}, {"pread", 0.01},
    {"pread", 0.1},
};
#define NVAR ((int)(sizeof VARS / sizeof *VARS))

/* The figures of one child, bytes and seconds. */
enum { F_RSS_READY, F_RSS, F_ANON, F_FILE, F_HWM, F_READY_S, F_ACCESS_S, F_RESIDENT, NFIG };
static const char *const FIG_NAME[NFIG] = {"rss_growth_ready", "rss_growth", "rss_anon_growth",
                                           "rss_file_growth", "hwm_growth", "ready_time",
                                           "access_time", "page_cache_resident"};
static const char *const FIG_UNIT[NFIG] = {"bytes", "bytes", "bytes", "bytes", "bytes", "s", "s",
                                           "fraction"};
static const char *const FIG_NOTE[NFIG] = {
    "VmRSS growth when the dataset is ready (read: after read(); mmap: after mmap())",
    "VmRSS growth after the records are touched",
    "RssAnon growth after the records are touched (private memory: read's buffer)",
    "RssFile growth after the records are touched (page-cache pages mapped in)",
    "VmHWM growth over the child's start",
    "monotonic clock: read() of the whole file, or the mmap() call",
    "monotonic clock: touching (checksumming) the records",
    "share of the file's pages in the page cache before the child (mincore)"};

static uint64_t records_of(const variant *v, uint64_t N)
{
    if (v->fraction <= 0) return 0;
    uint64_t k = (uint64_t)llround(v->fraction * (double)N);
    return k ? k : 1;
}

/* One child; fills fig[NFIG]. false (and a verification failure) when it
 * failed or a record did not match the generator. */
static bool run_child(mc_run *run, const char *self, const variant *v, uint64_t N, double resident,
                      double *fig)
{
    char spec[64], out[4096], what[64];
    snprintf(spec, sizeof spec, "%s:%llu", v->mode, (unsigned long long)records_of(v, N));
    snprintf(what, sizeof what, "%s f=%g", v->mode, v->fraction);
    char *argv[] = {(char *)self, "--child", spec, "--child-file", g_path, NULL};
    mc_child_result r;
    memset(&r, 0, sizeof r);
    int rc = mc_child_run(self, argv, NULL, MC_CHILD_TIMEOUT_S, out, sizeof out, &r);
    double m[12], bad = -1;
    static const char *const KEY[12] = {"base_rss",  "ready_rss", "after_rss", "base_anon",
                                        "after_anon", "base_file", "after_file", "base_hwm",
                                        "after_hwm", "ready_s",   "access_s",  "touched"};
    bool ok = rc == 0 && r.exit_code == 0 && mc_child_get(out, "bad_records", &bad) == 0;
    for (int i = 0; i < 12 && ok; i++) ok = mc_child_get(out, KEY[i], &m[i]) == 0 && m[i] >= 0;
    if (!ok) {
        mc_verify_failed(run, what, "the child failed (spawn %d, exit %d, signal %d, timed out %d)",
                         rc, r.exit_code, r.signal, r.timed_out);
        return false;
    }
    if (bad != 0) {
        mc_verify_failed(run, what, "%.0f of %.0f touched records differ from the generator", bad,
                         m[11]);
        return false;
    }
    fig[F_RSS_READY] = m[1] - m[0];
    fig[F_RSS] = m[2] - m[0];
    fig[F_ANON] = m[4] - m[3];
    fig[F_FILE] = m[6] - m[5];
    fig[F_HWM] = m[8] - m[7];
    fig[F_READY_S] = m[9];
    fig[F_ACCESS_S] = m[10];
    fig[F_RESIDENT] = resident;
    return true;
}

/* ------------------------------------------------------------ main */

static int var_index(const char *mode, double f)
{
    for (int i = 0; i < NVAR; i++)
        if (strcmp(VARS[i].mode, mode) == 0 && VARS[i].fraction == f) return i;
    return -1;
}

int main(int argc, char **argv)
{
    mc_options pre;
    char err[256];
    if (mc_options_parse(&pre, argc, argv, EXP.default_repeats, EXP.default_warmup, false, EXTRA,
                         err, sizeof err) == 0 && g_child && !pre.help && !pre.list)
        return child_main(g_child, g_child_file);

    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    const uint64_t size = size_opt ? size_opt : run.opt.quick ? 64ULL << 20 : 512ULL << 20;
    const uint64_t N = size / MC_DS_RECORD_BYTES;
    const int R = run.opt.quick ? 1 : run.opt.repeats;
    char self[1024];
    CHECK(mc_self_exe(self, sizeof self) == 0, "cannot read /proc/self/exe");
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0]) dir = "/tmp";
    struct statvfs vfs;
    if (statvfs(dir, &vfs) != 0)
        mc_run_waive(&run, "cannot use the temporary directory %s: %s", dir, strerror(errno));
    if ((double)vfs.f_bavail * (double)vfs.f_frsize < (double)size + (64 << 20))
        mc_run_waive(&run, "%s has %.0f MiB free, the dataset needs %.0f MiB", dir,
                     (double)vfs.f_bavail * (double)vfs.f_frsize / 1048576.0, (double)size / 1048576.0);

    atexit(remove_dataset);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    mc_log(&run, "writing a %.0f MiB dataset of %llu records in %s", (double)size / 1048576.0,
           (unsigned long long)N, dir);
    if (make_dataset(dir, size) != 0)
        mc_run_waive(&run, "cannot write the %.0f MiB dataset in %s: %s", (double)size / 1048576.0,
                     dir, strerror(errno));

    /* fig[c][v][r][k]: condition, variant, repeat, figure */
    double *all = mc_xmalloc((size_t)NCOND * NVAR * (size_t)R * NFIG * sizeof *all);
#define FIG(c, v, r, k) all[(((size_t)(c) * NVAR + (size_t)(v)) * (size_t)R + (size_t)(r)) * NFIG + (k)]
    bool failed = false;
    bool ran[NCOND][NVAR];
    int n_of[NCOND];
    for (int c = 0; c < NCOND; c++) {
        n_of[c] = c == C_CACHED ? R : 1; /* the rule's condition is repeated; the others are context */
        for (int v = 0; v < NVAR; v++)
            ran[c][v] = c != C_WRITTEN ||
                        (strcmp(VARS[v].mode, "mmap") == 0 && VARS[v].fraction <= WRITTEN_MAX_F);
    }
    /* written first (the cache as the generator left it), then cached in every run and evicted
     * in the first: reading the file from disk a dozen times is most of the time this takes */
    static const int ORDER[NCOND] = {C_WRITTEN, C_CACHED, C_EVICTED};
    for (int r = 0; r < R; r++)
        for (int i = 0; i < NCOND; i++) {
            const int c = ORDER[i];
            if (r >= n_of[c]) continue;
            mc_log(&run, "run %d of %d, %s", r + 1, n_of[c], COND[c]);
            if (c == C_CACHED) set_condition(c, size); /* the children leave it as it is */
            for (int v = 0; v < NVAR; v++) {
                if (!ran[c][v]) continue;
                if (c == C_EVICTED || (c == C_CACHED && mc_ds_resident_share(g_path, size) < 1.0))
                    set_condition(c, size);
                double resident = mc_ds_resident_share(g_path, size);
                if (!run_child(&run, self, &VARS[v], N, resident, &FIG(c, v, r, 0))) failed = true;
            }
        }
    const long ra_kb = mc_ds_read_ahead_kb(g_path);
    remove_dataset();

    mc_stats st[NCOND][NVAR][NFIG];
    double *tmp = mc_xmalloc((size_t)R * sizeof *tmp);
    for (int c = 0; c < NCOND && !failed; c++)
        for (int v = 0; v < NVAR; v++) {
            if (!ran[c][v]) continue;
            char name[48];
            snprintf(name, sizeof name, "%s/%s", VARS[v].mode, COND[c]);
            for (int k = 0; k < NFIG; k++) {
                for (int r = 0; r < n_of[c]; r++) tmp[r] = FIG(c, v, r, k);
                st[c][v][k] = mc_stats_of(tmp, (size_t)n_of[c]);
                mc_emit(&run, name, "fraction", VARS[v].fraction, FIG_NAME[k], FIG_UNIT[k],
                        st[c][v][k], "ok", FIG_NOTE[k]);
            }
            mc_emit_value(&run, name, "fraction", VARS[v].fraction, "touched_bytes", "bytes",
                          (double)(records_of(&VARS[v], N) * MC_DS_RECORD_BYTES),
                          "records touched x 4 KiB");
        }
    free(tmp);
    free(all);
    if (failed) {
        mc_emit_verdict(&run, MC_INCONCLUSIVE, "a child failed or a record did not match the generator");
        return mc_run_end(&run);
    }

    const int vr = var_index("read", 1), m0 = var_index("mmap", 0), m1 = var_index("mmap", 0.01),
              m01 = var_index("mmap", 0.001), mall = var_index("mmap", 1),
              q1 = var_index("mmap_rand", 0.01), p1 = var_index("pread", 0.01);
    const double read_g = st[C_CACHED][vr][F_RSS].median;
    const double MiB = 1048576.0;
    mc_emit_finding(&run,
        "At start (%s%.0f MiB file, %s): read() has grown VmRSS by %.1f MiB when the dataset is "
        "ready (%.3f s); mmap by %.2f MiB (%.6f s). read's growth is private memory (RssAnon "
        "%.1f MiB); the page cache holding the file is memory too, counted in no process's RSS "
        "until a mapping touches it.", run.opt.quick ? "--quick: " : "", (double)size / MiB,
        COND[C_CACHED], st[C_CACHED][vr][F_RSS_READY].median / MiB,
        st[C_CACHED][vr][F_READY_S].median, st[C_CACHED][m0][F_RSS_READY].median / MiB,
        st[C_CACHED][m0][F_READY_S].median, st[C_CACHED][vr][F_ANON].median / MiB);
    for (int i = 0; i < 2; i++) {
        int mv = i ? m1 : m01;
        double touched = (double)(records_of(&VARS[mv], N) * MC_DS_RECORD_BYTES);
        int qv = var_index("mmap_rand", VARS[mv].fraction), pv = var_index("pread", VARS[mv].fraction);
        mc_emit_finding(&run,
            "Touching %.1f%% of the records at random (%.2f MiB of records, %s): mmap grew VmRSS by "
            "%.2f MiB (%.1fx the touched bytes; RssFile %.2f MiB), with MADV_RANDOM %.2f MiB "
            "(%.1fx), pread into one buffer %.2f MiB. More than the touched bytes: on a page fault "
            "the kernel maps the cached pages around the faulting one (fault-around; large "
            "page-cache folios are mapped whole) and, from disk, reads around it (read_ahead_kb "
            "of this disk: %ld); pread copies only the record.",
            100 * VARS[mv].fraction, touched / MiB, COND[C_CACHED],
            st[C_CACHED][mv][F_RSS].median / MiB, st[C_CACHED][mv][F_RSS].median / touched,
            st[C_CACHED][mv][F_FILE].median / MiB, st[C_CACHED][qv][F_RSS].median / MiB,
            st[C_CACHED][qv][F_RSS].median / touched, st[C_CACHED][pv][F_RSS].median / MiB, ra_kb);
    }
    for (int c = 0; c < C_WRITTEN; c++)
        mc_emit_finding(&run,
            "Time, %s (page cache held %.0f%% of the file before read, %.0f%% before mmap 100%%): "
            "read() of the whole file %.3f s (%.2f GB/s) + checksums %.3f s; mmap touching every "
            "record %.3f s, 1%% of them %.4f s (MADV_RANDOM %.4f s, pread %.4f s).",
            COND[c], 100 * st[c][vr][F_RESIDENT].median, 100 * st[c][mall][F_RESIDENT].median,
            st[c][vr][F_READY_S].median, (double)size / st[c][vr][F_READY_S].median / 1e9,
            st[c][vr][F_ACCESS_S].median, st[c][mall][F_ACCESS_S].median,
            st[c][m1][F_ACCESS_S].median, st[c][q1][F_ACCESS_S].median,
            st[c][p1][F_ACCESS_S].median);
    mc_emit_finding(&run,
        "How the pages entered the page cache matters: touching 0.1%% / 1%% of the records grew "
        "mmap's VmRSS by %.2f / %.2f MiB with the cache as the generator's writes left it "
        "(written, one run), %.2f / %.2f MiB after the file was evicted and read() through once "
        "(cached), %.2f / %.2f MiB from disk (evicted): a fault maps the whole page-cache folio "
        "(and fault-around its neighbours), and folio sizes depend on the path that made them.",
        st[C_WRITTEN][m01][F_RSS].median / MiB, st[C_WRITTEN][m1][F_RSS].median / MiB,
        st[C_CACHED][m01][F_RSS].median / MiB, st[C_CACHED][m1][F_RSS].median / MiB,
        st[C_EVICTED][m01][F_RSS].median / MiB, st[C_EVICTED][m1][F_RSS].median / MiB);
    if (st[C_EVICTED][vr][F_RESIDENT].median > 0.5)
        mc_emit_finding(&run, "posix_fadvise(DONTNEED) did not evict the file here (%.0f%% still "
                        "resident): the evicted rows are not cold reads.",
                        100 * st[C_EVICTED][vr][F_RESIDENT].median);

    /* The rule: r(f) over mmap's fractions, cached condition. */
    char per_f[512] = "";
    size_t used = 0;
    bool grows = true;
    double prev = -INFINITY;
    for (int v = 0; v < NVAR; v++) {
        if (strcmp(VARS[v].mode, "mmap") != 0) continue;
        double g = st[C_CACHED][v][F_RSS].median;
        if (g < prev - MiB) grows = false;
        prev = g;
        used += (size_t)snprintf(per_f + used, used < sizeof per_f ? sizeof per_f - used : 0,
                                 "%s%g%% %.3f", used ? ", " : "", 100 * VARS[v].fraction, g / read_g);
    }
    const double r1 = st[C_CACHED][m1][F_RSS].median / read_g;
    const double r0 = st[C_CACHED][m0][F_RSS_READY].median / st[C_CACHED][vr][F_RSS_READY].median;
    mc_verdict verdict;
    if (!(read_g >= 0.5 * (double)size)) verdict = MC_INCONCLUSIVE;
    else if (r0 > 0.25) verdict = MC_DOES_NOT_HOLD;
    else if (r0 <= 0.05 && r1 <= 0.25 && grows) verdict = MC_HOLDS;
    else verdict = MC_HOLDS_PARTLY;
    mc_emit_verdict(&run, verdict,
        "At start mmap grows VmRSS by %.2f MiB against read()'s %.1f MiB for a %.0f MiB file: "
        "r0 = %.4f (rule: <= 0.05). After touching a fraction of the records at random, mmap's "
        "growth over read's (cached): %s; r(1%%) = %.3f (rule: <= 0.25), %s with the fraction. "
        "From disk (evicted) r(1%%) = %.3f.",
        st[C_CACHED][m0][F_RSS_READY].median / MiB, st[C_CACHED][vr][F_RSS_READY].median / MiB,
        (double)size / MiB, r0, per_f, r1, grows ? "grows" : "does not grow",
        st[C_EVICTED][m1][F_RSS].median / st[C_EVICTED][vr][F_RSS].median);
    return mc_run_end(&run);
}
