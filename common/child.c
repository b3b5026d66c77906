#define _POSIX_C_SOURCE 200809L
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "gpu.h"

extern char **environ;

int mc_self_exe(char *buf, size_t len)
{
    if (len < 2) return -1;
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0 || (size_t)n >= len - 1) return -1;
    buf[n] = '\0';
    return 0;
}

int mc_find_on_path(const char *name, char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !*path) return -1;
    const char *p = path;
    while (*p) {
        size_t dlen = strcspn(p, ":");
        if (dlen > 0) {
            int w = snprintf(buf, len, "%.*s/%s", (int)dlen, p, name);
            if (w > 0 && (size_t)w < len && access(buf, X_OK) == 0) return 0;
        }
        p += dlen;
        if (*p == ':') p++;
    }
    return -1;
}

/* This process's environment with env_set's "NAME=VALUE" entries added or
 * replacing NAME. Built before the spawn: nothing may allocate after a fork. */
static char **merged_env(const char *const env_set[])
{
    size_t n_env = 0, n_set = 0;
    while (environ && environ[n_env]) n_env++;
    while (env_set && env_set[n_set]) n_set++;
    char **env = malloc((n_env + n_set + 1) * sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        int replaced = 0;
        for (size_t j = 0; j < n_set && !replaced; j++) {
            size_t nl = strcspn(env_set[j], "=");
            replaced = strncmp(environ[i], env_set[j], nl) == 0 && environ[i][nl] == '=';
        }
        if (!replaced) env[k++] = environ[i];
    }
    for (size_t j = 0; j < n_set; j++) env[k++] = (char *)env_set[j];
    env[k] = NULL;
    return env;
}

static void sleep_s(double s)
{
    struct timespec ts = {0, (long)(s * 1e9)};
    nanosleep(&ts, NULL);
}

int mc_child_run(const char *path, char *const argv[], const char *const env_set[],
                 double timeout_s, char *out, size_t cap, mc_child_result *r)
{
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    if (cap) out[0] = '\0';
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    char **env = merged_env(env_set);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO); /* clears FD_CLOEXEC on 1 */
    posix_spawnattr_init(&at);
    /* Own process group, so a timeout kills whatever the child started too. */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    pid_t pid = -1;
    r->spawn_at_s = mc_now_s();
    int rc = env ? posix_spawn(&pid, path, &fa, &at, argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(env);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        errno = rc;
        return -1;
    }

    double deadline = r->spawn_at_s + timeout_s;
    size_t used = 0;
    int eof = 0, status = 0;
    for (;;) {
        double now = mc_now_s();
        if (now >= deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) { }
            r->wall_s = mc_now_s() - r->spawn_at_s;
            r->timed_out = 1;
            break;
        }
        if (!eof) {
            /* Wait for output or EOF (the child's exit closes the pipe), at
             * most 50 ms so a child whose descendants hold the pipe is still
             * reaped. */
            double left_ms = (deadline - now) * 1e3;
            struct pollfd p = {fds[0], POLLIN, 0};
            int k = poll(&p, 1, left_ms < 50.0 ? (int)left_ms + 1 : 50);
            if (k > 0) {
                char tmp[4096];
                ssize_t got = read(fds[0], tmp, sizeof tmp);
                if (got > 0) {
                    size_t keep = cap > used + 1 ? cap - used - 1 : 0;
                    if (keep > (size_t)got) keep = (size_t)got;
                    memcpy(out + used, tmp, keep);
                    used += keep;
                    if (cap) out[used] = '\0';
                    continue;
                }
                if (got == 0 || errno != EINTR) eof = 1;
            }
        }
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            r->wall_s = mc_now_s() - r->spawn_at_s;
            break;
        }
        if (w < 0 && errno != EINTR) {
            close(fds[0]);
            return -1;
        }
        if (eof) sleep_s(100e-6); /* exited, not yet reaped: 0.1 ms resolution */
    }
    close(fds[0]);
    if (!r->timed_out && WIFEXITED(status)) r->exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r->signal = WTERMSIG(status);
    return 0;
}

int mc_child_get(const char *out, const char *key, double *value)
{
    size_t klen = strlen(key);
    for (const char *line = out; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (strncmp(line, key, klen) != 0 || line[klen] != ' ') continue;
        char *end = NULL;
        double v = strtod(line + klen + 1, &end);
        if (end == line + klen + 1) return -1;
        *value = v;
        return 0;
    }
    return -1;
}

/* ------------------------------------------------------- whole process */

/* hyperfine's CSV: command,mean,stddev,median,user,system,min,max. The
 * command may hold commas, the rest are numbers: read those from the right. */
static int parse_hyperfine_csv(const char *path, int runs, mc_stats *st)
{
    char hdr[512] = "", row[4096] = "";
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    if (!fgets(hdr, sizeof hdr, f) || !fgets(row, sizeof row, f)) row[0] = '\0';
    fclose(f);
    if (!row[0]) return -1;
    hdr[strcspn(hdr, "\r\n")] = '\0';
    row[strcspn(row, "\r\n")] = '\0';
    char *names[16], *save = NULL;
    int h = 0;
    for (char *t = strtok_r(hdr, ",", &save); t && h < 16; t = strtok_r(NULL, ",", &save)) names[h++] = t;
    double v[16] = {0};
    for (int j = h - 1; j >= 1; j--) {
        char *c = strrchr(row, ',');
        if (!c) return -1;
        v[j] = atof(c + 1);
        *c = '\0';
    }
    mc_stats s = {(size_t)runs, -1, -1, -1, -1, 0, 0};
    for (int j = 1; j < h; j++) {
        if (!strcmp(names[j], "median")) s.median = v[j];
        else if (!strcmp(names[j], "min")) s.min = v[j];
        else if (!strcmp(names[j], "max")) s.max = v[j];
        else if (!strcmp(names[j], "mean")) s.mean = v[j];
        else if (!strcmp(names[j], "stddev")) s.stdev = v[j];
    }
    if (s.median < 0 || s.min < 0 || s.max < 0 || s.mean < 0) return -1;
    s.mad = s.stdev / MC_MAD_TO_SIGMA; /* hyperfine's CSV has no MAD: its stdev stands in */
    *st = s;
    return 0;
}

int mc_time_hyperfine(const char *hf_path, char *const argv[], const char *const env_set[], int warm,
                      int runs, mc_stats *st)
{
    char cmd[2048] = "", csv[512], runs_s[16], warm_s[16];
    for (int i = 0; argv[i]; i++) {
        size_t len = strlen(cmd);
        if (strpbrk(argv[i], " \t\n'\"\\") || !argv[i][0]) return -1;
        if (snprintf(cmd + len, sizeof cmd - len, "%s%s", i ? " " : "", argv[i]) >= (int)(sizeof cmd - len))
            return -1;
    }
    const char *tmpdir = getenv("TMPDIR");
    snprintf(csv, sizeof csv, "%s/memclaims_hyperfine_XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemp(csv);
    if (fd < 0) return -1;
    close(fd);
    snprintf(runs_s, sizeof runs_s, "%d", runs);
    snprintf(warm_s, sizeof warm_s, "%d", warm);
    char *hf_argv[] = {"hyperfine", "-N", "--style", "none", "--warmup", warm_s, "--runs", runs_s,
                       "--export-csv", csv, cmd, NULL};
    static char out[8192]; /* hyperfine's own report: dropped */
    mc_child_result r;
    int rc = mc_child_run(hf_path, hf_argv, env_set, MC_CHILD_TIMEOUT_S, out, sizeof out, &r);
    int ok = rc == 0 && r.exit_code == 0 ? parse_hyperfine_csv(csv, runs, st) : -1;
    unlink(csv);
    return ok;
}

int mc_time_fork_exec(char *const argv[], const char *const env_set[], int warm, int runs,
                      mc_stats *st)
{
    double *t = malloc(sizeof(double) * (size_t)(runs > 0 ? runs : 1));
    static char out[8192]; /* the child's stdout: dropped */
    int ok = 0;
    for (int i = 0; t && i < warm + runs; i++) {
        mc_child_result r;
        if (mc_child_run(argv[0], argv, env_set, MC_CHILD_TIMEOUT_S, out, sizeof out, &r) != 0 ||
            r.exit_code != 0)
            break;
        if (i >= warm) t[ok++] = r.wall_s;
    }
    int done = t && ok == runs;
    if (done) *st = mc_stats_of(t, (size_t)runs);
    free(t);
    return done ? 0 : -1;
}

/* ------------------------------------------------------------ stages */

void mc_child_probe(mc_child_stage *st)
{
    const char *idx = getenv(MC_CHILD_NVSMI_ENV);
    int device = idx && *idx ? atoi(idx) : -1;
    st->used_mib = mc_gpu_used_mib(device); /* NVML, else nvidia-smi memory.used */
    st->proc_bytes = (double)mc_nvsmi_process_used_bytes((int)getpid());
}

void mc_child_print_stage(FILE *fp, const mc_child_stage *st)
{
    fprintf(fp, "stage %s %.9g %.9g %.17g %.17g\n", st->name, st->call_s, st->used_mib,
            st->proc_bytes, st->aux);
    fflush(fp);
}

int mc_child_parse_stages(const char *out, mc_child_stage *st, int max)
{
    int n = 0;
    for (const char *line = out; line && *line && n < max;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        mc_child_stage s;
        memset(&s, 0, sizeof s);
        if (sscanf(line, "stage %47s %lf %lf %lf %lf", s.name, &s.call_s, &s.used_mib,
                   &s.proc_bytes, &s.aux) == 5)
            st[n++] = s;
    }
    return n;
}

/* ------------------------------------------------------------ nvidia-smi */

int mc_nvsmi_index_of_bus(const char *bus_id)
{
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    if (sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return -1;
    FILE *p = popen("nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader "
                    "2>/dev/null", "r");
    if (!p) return -1;
    int found = -1;
    char line[256];
    while (fgets(line, sizeof line, p)) {
        int index = -1;
        unsigned d2, b2, v2, f2;
        if (sscanf(line, "%d, %x:%x:%x.%x", &index, &d2, &b2, &v2, &f2) == 5 && d2 == dom &&
            b2 == bus && v2 == dev && f2 == fn)
            found = index;
    }
    if (pclose(p) != 0) return -1;
    return found;
}
