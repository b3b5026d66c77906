/* subprocess.c: children with output to files, stopped with this process on
 * SIGINT or SIGTERM (subprocess.h). */
#define _GNU_SOURCE /* posix_spawn_file_actions_addchdir_np (glibc 2.29) */
#include "subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

extern char **environ;

#define MAX_CHILDREN 8 /* tracked at once; a tool runs a few */

static atomic_int g_signal; /* SIGINT or SIGTERM once one came, else 0 */
static pthread_mutex_t g_children_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t g_children[MAX_CHILDREN]; /* running, for the signal thread to stop */

int mc_spawn_stop_signal(void) { return atomic_load(&g_signal); }

static void children_track(pid_t pid, int on)
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
    /* A signal that came while it started: it ends too. */
    if (on && atomic_load(&g_signal)) kill(pid, SIGTERM);
}

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

void mc_spawn_catch_stop(void)
{
    static sigset_t stop_set; /* the signal thread's, for good */
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, NULL);
    pthread_t tid;
    CHECK(pthread_create(&tid, NULL, signal_thread, &stop_set) == 0, "cannot start a thread");
    pthread_detach(tid);
}

pid_t mc_spawn(char *const argv[], const char *out, const char *err) { return mc_spawn_in(NULL, argv, out, err); }

pid_t mc_spawn_in(const char *dir, char *const argv[], const char *out, const char *err)
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
    if (dir) posix_spawn_file_actions_addchdir_np(&fa, dir);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) return -1;
    children_track(pid, 1);
    return pid;
}

int mc_spawn_wait(pid_t pid)
{
    if (pid < 0) return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    children_track(pid, 0);
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    /* Interrupted with us (a terminal's ^C reaches the whole group): we stop too. */
    if (WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM) atomic_store(&g_signal, WTERMSIG(st));
    return 128 + WTERMSIG(st);
}

int mc_spawn_run(char *const argv[], const char *out, const char *err)
{
    return mc_spawn_wait(mc_spawn(argv, out, err));
}

/* path, into buf, if it is an executable file and fits. */
static int runnable(const char *path, char *buf, size_t len)
{
    struct stat st;
    if (access(path, X_OK) != 0 || stat(path, &st) != 0 || S_ISDIR(st.st_mode) || strlen(path) >= len) return -1;
    memcpy(buf, path, strlen(path) + 1);
    return 0;
}

int mc_spawn_which(const char *name, char *buf, size_t len)
{
    if (strchr(name, '/')) return runnable(name, buf, len);
    const char *path = getenv("PATH");
    char *dirs = strdup(path ? path : "/usr/bin:/bin");
    if (!dirs) return -1;
    int found = -1;
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d && found != 0; d = strtok_r(NULL, ":", &save)) {
        size_t n = strlen(d) + 1 + strlen(name) + 1;
        char *p = malloc(n);
        if (p) {
            snprintf(p, n, "%s/%s", d, name);
            found = runnable(p, buf, len);
        }
        free(p);
    }
    free(dirs);
    return found;
}
