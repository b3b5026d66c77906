/* sharded_procs.c: sharded_procs.h, the ranks as processes on one machine. */
#define _GNU_SOURCE /* mkdtemp, strsignal */
#include "sharded_procs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "csv.h"

extern char **environ;

/* ------------------------------------------------------------ rows */

void mc_sh_rows_write(FILE *fp, const mc_sh_gpu_result *res, int q)
{
    for (int s = 0; s < res->steps; s++) {
        const bool oom = q == res->oom_rank && s + 1 == res->oom_step;
        if (s >= res->done[q] && !oom) break; /* stopped: a rank failed */
        fprintf(fp, "%d,%d,%llu,%llu,%llu,%llu,%.9f,%.9g,%s\n", q, s + 1, (unsigned long long)res->peak[q][s],
                (unsigned long long)res->end[q][s], (unsigned long long)res->model_peak[q][s],
                (unsigned long long)res->model_end[q][s], oom ? 0.0 : res->time_s[q][s],
                oom ? 0.0 : res->loss[q][s], oom ? "oom" : "ok");
        if (oom) break;
    }
}

int mc_sh_rows_read(const char *text, mc_sh_gpu_result *res, char *err, size_t len)
{
    const char *p = text;
    const size_t hl = strlen(MC_SH_ROWS_HEADER);
    if (strncmp(p, MC_SH_ROWS_HEADER, hl) != 0 || p[hl] != '\n') {
        snprintf(err, len, "line 1: not the rows' header '%s'", MC_SH_ROWS_HEADER);
        return -1;
    }
    p += hl + 1;
    for (int line = 2; *p; line++) {
        const char *nl = strchr(p, '\n');
        if (!nl) {
            snprintf(err, len, "line %d: not ended (a rank stopped while writing it)", line);
            return -1;
        }
        int q = 0, s = 0, used = 0;
        unsigned long long pk = 0, en = 0, mp = 0, me = 0;
        double t = 0, loss = 0;
        char status[8] = "";
        if (sscanf(p, "%d,%d,%llu,%llu,%llu,%llu,%lf,%lf,%7[a-z]%n", &q, &s, &pk, &en, &mp, &me, &t, &loss, status,
                   &used) != 9 ||
            p + used != nl || q < 0 || q >= res->ranks || q >= MC_SH_MAX_GPUS || s < 1 || s > MC_SH_MAX_STEPS ||
            (strcmp(status, "ok") && strcmp(status, "oom"))) {
            snprintf(err, len, "line %d: not a row of ranks 0..%d: %.*s", line, res->ranks - 1,
                     (int)(nl - p > 80 ? 80 : nl - p), p);
            return -1;
        }
        res->peak[q][s - 1] = pk;
        res->end[q][s - 1] = en;
        res->model_peak[q][s - 1] = mp;
        res->model_end[q][s - 1] = me;
        res->time_s[q][s - 1] = t;
        res->loss[q][s - 1] = loss;
        if (!strcmp(status, "oom")) {
            if (res->oom_rank < 0) {
                res->oom_rank = q;
                res->oom_step = s;
            }
        } else if (s > res->done[q]) {
            res->done[q] = s;
        }
        if (s > res->steps) res->steps = s;
        p = nl + 1;
    }
    return 0;
}

/* ------------------------------------------------------------ the check's line */

#define CHECK_FMT_HEAD "--verify "

void mc_sh_check_format(const mc_sh_check *v, bool momentum, char *buf, size_t len)
{
    const bool ok = v->verified && v->passed;
    snprintf(buf, len, CHECK_FMT_HEAD "%s: parameters within %.3e of one GPU's (relative; worst: rank %d, "
             "parameter %d; %llu of %llu elements beyond %.0e, largest difference %.3e); loss %s on every rank%s",
             ok ? "passed" : "FAILED", v->max_rel, v->worst_rank, v->worst_param, (unsigned long long)v->elems_off,
             (unsigned long long)v->elems, MC_SH_VERIFY_TOL, v->max_abs, v->loss_falls ? "falls" : "does NOT fall",
             momentum ? " (the check trains with momentum in Adam's place)" : "");
}

int mc_sh_check_parse(const char *text, mc_sh_check *v)
{
    const char *p = strstr(text, CHECK_FMT_HEAD);
    if (!p) return -1;
    char verdict[8] = "", falls[8] = "";
    unsigned long long off = 0, n = 0;
    mc_sh_check c;
    memset(&c, 0, sizeof c);
    if (sscanf(p, CHECK_FMT_HEAD "%7[a-zA-Z]: parameters within %lg of one GPU's (relative; worst: rank %d, "
               "parameter %d; %llu of %llu elements beyond %*g, largest difference %lg); loss %7s",
               verdict, &c.max_rel, &c.worst_rank, &c.worst_param, &off, &n, &c.max_abs, falls) != 8)
        return -1;
    c.elems_off = off;
    c.elems = n;
    c.verified = true;
    c.passed = !strcmp(verdict, "passed");
    c.loss_falls = !strcmp(falls, "falls");
    *v = c;
    return 0;
}

void mc_sh_check_merge(mc_sh_check *acc, const mc_sh_check *a, int rank)
{
    if (!(a->max_rel <= acc->max_rel) || rank == 0 || acc->elems == 0) { /* NaN is the worst */
        acc->max_rel = a->max_rel;
        acc->worst_rank = a->worst_rank;
        acc->worst_param = a->worst_param;
    }
    if (a->max_abs > acc->max_abs || a->max_abs != a->max_abs) acc->max_abs = a->max_abs;
    acc->elems += a->elems;
    acc->elems_off += a->elems_off;
    acc->verified = acc->verified && a->verified;
    acc->passed = acc->passed && a->passed;
    acc->loss_falls = acc->loss_falls && a->loss_falls;
    acc->oom = acc->oom || a->oom;
}

/* ------------------------------------------------------------ the ranks */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A port free now on 127.0.0.1 (the kernel's pick), as torchrun --standalone
 * picks its own; 0 if none. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &n) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* The whole text of path (NUL-ended; "" when absent); free it. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    CHECK(b != NULL, "out of host memory");
    if (f) {
        size_t got;
        while ((got = fread(b + n, 1, cap - n - 1, f)) > 0) {
            n += got;
            if (cap - n - 1 == 0) {
                cap *= 2;
                b = realloc(b, cap);
                CHECK(b != NULL, "out of host memory");
            }
        }
        fclose(f);
    }
    b[n] = '\0';
    return b;
}

/* ------------------------------------------------------------ --ranks-out */

/* name in dir, written whole: the rows of rank (rows != NULL) or text. */
static int write_whole(const char *dir, const char *name, const mc_sh_gpu_result *rows, int rank, const char *text)
{
    mc_file f;
    if (mc_file_open(&f, dir, name) != 0) return -1;
    if (rows) {
        fprintf(f.fp, "%s\n", MC_SH_ROWS_HEADER);
        mc_sh_rows_write(f.fp, rows, rank);
    } else if (text) {
        fputs(text, f.fp);
    }
    return mc_file_commit(&f);
}

int mc_sh_ranks_out(const char *dir, int rank, int world, const mc_sh_gpu_result *res, const char *check,
                    double wait_s, char *err, size_t len)
{
    char name[64], line[700];
    snprintf(name, sizeof name, "rank%d.csv", rank);
    int rc = write_whole(dir, name, res, rank, NULL);
    if (rc == 0 && check[0]) {
        snprintf(name, sizeof name, "rank%d.verify", rank);
        snprintf(line, sizeof line, "%s\n", check);
        rc = write_whole(dir, name, NULL, 0, line);
    }
    if (rc != 0) {
        snprintf(err, len, "rank %d: cannot write its figures into '%s'", rank, dir);
        return -1;
    }
    if (rank != 0) return 0;
    /* Rank 0 merges, once every rank's are there (each appears whole, by its rename). */
    char *merged = NULL, *verify = NULL;
    size_t mn = 0, vn = 0;
    FILE *mm = open_memstream(&merged, &mn), *vm = open_memstream(&verify, &vn);
    CHECK(mm && vm, "out of host memory");
    fprintf(mm, "%s\n", MC_SH_ROWS_HEADER);
    const size_t hl = strlen(MC_SH_ROWS_HEADER) + 1;
    const double t0 = now_s();
    for (int q = 0; q < world && rc == 0; q++) {
        char path[1100];
        snprintf(path, sizeof path, "%s/rank%d.csv", dir, q);
        while (access(path, F_OK) != 0 && now_s() - t0 < wait_s) {
            struct timespec nap = {0, 50 * 1000 * 1000}; /* 50 ms */
            nanosleep(&nap, NULL);
        }
        if (access(path, F_OK) != 0) {
            snprintf(err, len, "rank 0: rank %d's figures not in '%s' after %.0f s; nothing merged", q, dir, wait_s);
            rc = -1;
            break;
        }
        char *t = slurp(path);
        if (strlen(t) >= hl) fputs(t + hl, mm);
        free(t);
        snprintf(path, sizeof path, "%s/rank%d.verify", dir, q);
        if (check[0]) {
            t = slurp(path);
            fputs(t, vm);
            free(t);
        }
    }
    fclose(mm);
    fclose(vm);
    if (rc == 0 && (write_whole(dir, "ranks.csv", NULL, 0, merged) != 0 ||
                    (check[0] && write_whole(dir, "verify.txt", NULL, 0, verify) != 0))) {
        snprintf(err, len, "rank 0: cannot write the merged figures into '%s'", dir);
        rc = -1;
    }
    free(merged);
    free(verify);
    return rc;
}

/* The last line of text that says something (the rank's own last word),
 * into buf, without the program's name and the rank's number before it
 * ("sharded_model: rank 2: "), which the line that quotes it gives. */
static void last_line(const char *text, int q, char *buf, size_t len)
{
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == ' ')) end--;
    const char *start = end;
    while (start > text && start[-1] != '\n') start--;
    if (!strncmp(start, "sharded_model: ", 15)) start += 15;
    char me[24];
    const int n = snprintf(me, sizeof me, "rank %d: ", q);
    if (!strncmp(start, me, (size_t)n)) start += n;
    snprintf(buf, len, "%.*s", (int)(end - start), start);
}

/* The environment of rank q: this process's without any launcher's
 * variables, and torchrun's for rank q. Strings in mine[]; free them. */
static char **rank_env(int q, int world, int port, char *mine[6])
{
    static const char *const DROP[] = {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=",
                                       "MASTER_ADDR=", "MASTER_PORT=", "OMPI_COMM_WORLD_", "TORCHELASTIC_"};
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 7, sizeof *env);
    CHECK(env != NULL, "out of host memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool drop = false;
        for (size_t d = 0; d < sizeof DROP / sizeof DROP[0]; d++)
            drop = drop || !strncmp(environ[i], DROP[d], strlen(DROP[d]));
        if (!drop) env[k++] = environ[i];
    }
    const char *fmt[6] = {"RANK=%d", "WORLD_SIZE=%d", "LOCAL_RANK=%d", "LOCAL_WORLD_SIZE=%d",
                          "MASTER_ADDR=127.0.0.1", "MASTER_PORT=%d"};
    const int val[6] = {q, world, q, world, 0, port};
    for (int i = 0; i < 6; i++) {
        mine[i] = malloc(48);
        CHECK(mine[i] != NULL, "out of host memory");
        snprintf(mine[i], 48, fmt[i], val[i]);
        env[k++] = mine[i];
    }
    env[k] = NULL;
    return env;
}

typedef struct {
    pid_t pid;
    bool running;
    int status;      /* waitpid's */
    bool killed;     /* by us, after the grace */
    double ended_at; /* s */
} rank_proc;

/* Whether a rank that ended with status st (and these rows) ended badly. */
static bool ended_badly(int st, const char *rows)
{
    if (WIFSIGNALED(st)) return true;
    if (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1) return true;
    return strstr(rows, ",oom\n") != NULL;
}

static void how_it_ended(const rank_proc *r, const char *rows, const char *said, char *buf, size_t len)
{
    if (r->killed)
        snprintf(buf, len, "killed by the launcher %.0f s after the first failure", MC_SH_PROCS_GRACE_S);
    else if (WIFSIGNALED(r->status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
    else if (strstr(rows, ",oom\n"))
        snprintf(buf, len, "ran out of device memory");
    else
        snprintf(buf, len, "exit %d%s%s", WEXITSTATUS(r->status), said[0] ? ": " : "", said);
}

int mc_sh_procs_run(char *const argv[], int world, double limit_s, FILE *log, mc_sh_gpu_result *res, char *err,
                    size_t len)
{
    memset(res, 0, sizeof *res);
    res->ranks = world;
    res->oom_rank = -1;
    if (world < 1 || world > MC_SH_MAX_GPUS) {
        snprintf(err, len, "ranks 1..%d, not %d", MC_SH_MAX_GPUS, world);
        return -1;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/memclaims-ranks-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(err, len, "cannot make a folder for the ranks' output in %s: %s", tmp && tmp[0] ? tmp : "/tmp",
                 strerror(errno));
        return -1;
    }
    const int port = free_port();
    if (!port) {
        snprintf(err, len, "no free TCP port on 127.0.0.1 for the ranks' rendezvous");
        rmdir(dir);
        return -1;
    }
    rank_proc p[MC_SH_MAX_GPUS];
    memset(p, 0, sizeof p);
    char out[MC_SH_MAX_GPUS][600], errf[MC_SH_MAX_GPUS][600];
    int started = 0, rc = 0;
    for (int q = 0; q < world; q++) {
        snprintf(out[q], sizeof out[q], "%s/rank%d.csv", dir, q);
        snprintf(errf[q], sizeof errf[q], "%s/rank%d.log", dir, q);
        char *mine[6];
        char **env = rank_env(q, world, port, mine);
        /* Each rank starts with SIGUSR1 blocked: one sent before it has set
         * its handler waits until it has (sh_gpu_catch_peer_end unblocks it)
         * instead of ending it, under a load that delays its start. */
        posix_spawnattr_t at;
        sigset_t mask;
        posix_spawnattr_init(&at);
        sigprocmask(SIG_BLOCK, NULL, &mask);
        sigaddset(&mask, SIGUSR1);
        posix_spawnattr_setsigmask(&at, &mask);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out[q], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, errf[q], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = posix_spawn(&p[q].pid, argv[0], &fa, &at, argv, env);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        for (int i = 0; i < 6; i++) free(mine[i]);
        free(env);
        if (e != 0) {
            snprintf(err, len, "cannot start rank %d (%s): %s", q, argv[0], strerror(e));
            rc = -1;
            break;
        }
        p[q].running = true;
        started++;
    }
    if (log) fprintf(log, "sharded_procs: %d of %d ranks started (%s, rendezvous 127.0.0.1:%d)\n", started, world,
                     argv[0], port);
    /* Watch: the first to end badly stops the others. */
    const double t0 = now_s();
    double t_stop = 0; /* when the others were told to stop */
    int cause = -1, running = started;
    if (rc != 0 && running > 0) t_stop = t0;
    for (int q = 0; rc != 0 && q < world; q++)
        if (p[q].running) kill(p[q].pid, SIGUSR1);
    while (running > 0) {
        for (int q = 0; q < world; q++) { /* our ranks only: the caller may have other children */
            int st = 0;
            if (!p[q].running || waitpid(p[q].pid, &st, WNOHANG) != p[q].pid) continue;
            p[q].running = false;
            p[q].status = st;
            p[q].ended_at = now_s();
            running--;
            if (cause < 0 && t_stop == 0) {
                char *rows = slurp(out[q]);
                if (ended_badly(st, rows)) cause = q;
                free(rows);
            }
        }
        const double t = now_s();
        if (t_stop == 0 && (cause >= 0 || (limit_s > 0 && t - t0 > limit_s))) {
            t_stop = t;
            if (log)
                fprintf(log, "sharded_procs: %s; stopping the other ranks (SIGUSR1, then SIGKILL after %.0f s)\n",
                        cause >= 0 ? "a rank ended badly" : "past the run's limit", MC_SH_PROCS_GRACE_S);
            for (int q = 0; q < world; q++)
                if (p[q].running) kill(p[q].pid, SIGUSR1);
        }
        if (t_stop > 0 && t - t_stop > MC_SH_PROCS_GRACE_S)
            for (int q = 0; q < world; q++)
                if (p[q].running && !p[q].killed) {
                    kill(p[q].pid, SIGKILL);
                    p[q].killed = true;
                }
        struct timespec nap = {0, 10 * 1000 * 1000}; /* 10 ms */
        nanosleep(&nap, NULL);
    }
    /* Read back what every rank wrote. */
    mc_sh_check acc;
    memset(&acc, 0, sizeof acc);
    acc.verified = acc.passed = acc.loss_falls = true;
    bool any_check = false, all_check = true;
    char why[1024] = "", first[440] = "", rest[700] = "";
    size_t restn = 0;
    for (int q = 0; q < started; q++) {
        char *rows = slurp(out[q]), *said = slurp(errf[q]), line[300], how[400], rerr[200];
        if (rows[0] && mc_sh_rows_read(rows, res, rerr, sizeof rerr) != 0 && rc == 0 && cause < 0 &&
            !WIFSIGNALED(p[q].status)) {
            snprintf(why, sizeof why, "rank %d's rows: %s", q, rerr);
            rc = -1;
        }
        mc_sh_check c;
        if (mc_sh_check_parse(said, &c) == 0) {
            mc_sh_check_merge(&acc, &c, q);
            any_check = true;
        } else {
            all_check = false;
        }
        last_line(said, q, line, sizeof line);
        how_it_ended(&p[q], rows, line, how, sizeof how);
        if (q == cause)
            snprintf(first, sizeof first, "rank %d: %s", q, how);
        else if (cause >= 0 || t_stop > 0) {
            if ((p[q].killed || WIFSIGNALED(p[q].status) || WEXITSTATUS(p[q].status) > 1) && restn < sizeof rest)
                restn += (size_t)snprintf(rest + restn, sizeof rest - restn, "%srank %d: %s", restn ? "; " : "", q,
                                          p[q].killed || !line[0] ? how : line);
        }
        free(rows);
        free(said);
        unlink(out[q]);
        unlink(errf[q]);
    }
    rmdir(dir);
    if (any_check) {
        res->check = acc;
        res->check.verified = all_check && acc.verified;
        res->check.passed = res->check.verified && acc.passed;
    }
    if (rc != 0) {
        if (why[0]) snprintf(err, len, "%s", why);
        return -1;
    }
    if (cause >= 0 && cause == res->oom_rank) return 0; /* out of memory: a result */
    if (cause >= 0 || t_stop > 0) {
        if (restn >= sizeof rest) restn = sizeof rest - 1;
        double within = 0; /* how long the others took to stop, after the cause ended or the limit passed */
        const double t_first = cause >= 0 ? p[cause].ended_at : t_stop;
        for (int q = 0; q < started; q++)
            if (q != cause && p[q].ended_at - t_first > within) within = p[q].ended_at - t_first;
        snprintf(err, len, "%s; the others stopped within %.1f s (grace %.0f s)%s%s",
                 cause >= 0 ? first : "past the run's limit", within, MC_SH_PROCS_GRACE_S, restn ? ": " : "", rest);
        return -1;
    }
    for (int q = 0; q < started; q++)
        if (WEXITSTATUS(p[q].status) > 1) { /* cannot happen: a bad exit is a cause */
            snprintf(err, len, "rank %d: exit %d", q, WEXITSTATUS(p[q].status));
            return -1;
        }
    return 0;
}
