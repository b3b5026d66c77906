/* subprocess.h: run other programs from a tool (build/whatif: gzip,
 * scripts/snapshot2trace, gnuplot) with their output in files, several at
 * once, and end them with the tool on Ctrl-C or SIGTERM, so that a tool can
 * stop between its steps and remove what it had half written.
 *
 * Not child.h's mc_child_run, which re-runs this program for a measurement:
 * that one reads the child's stdout into a buffer (a trace is tens of MB),
 * waits for each child before the next starts, gives it a process group of
 * its own and kills it after MC_CHILD_TIMEOUT_S, and leaves the signal mask
 * as it is (here SIGINT and SIGTERM are blocked in every thread). Plain C
 * (POSIX). */
#ifndef MC_SUBPROCESS_H
#define MC_SUBPROCESS_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Blocks SIGINT and SIGTERM in the calling thread, and so in every thread it
 * starts after, and takes them in a thread of its own: the first one is
 * remembered (mc_spawn_stop_signal) and every running child of mc_spawn is
 * sent SIGTERM. Call at the start of main, before any other thread. Exits
 * (CHECK) if the thread cannot start. */
void mc_spawn_catch_stop(void);

/* SIGINT or SIGTERM once one came to this process or ended one of its
 * children (a terminal's Ctrl-C reaches the whole process group), else 0. */
int mc_spawn_stop_signal(void);

/* Starts argv[0] (searched in PATH as execvp does) with argv, this process's
 * environment, SIGINT and SIGTERM unblocked and at their default action;
 * stdout to the file out, stderr to the file err (each created or
 * truncated; NULL: this process's). The child stays in this process group.
 * Returns its pid, or -1 if it cannot start. */
pid_t mc_spawn(char *const argv[], const char *out, const char *err);

/* mc_spawn with the child in folder dir (NULL: this process's): out and err
 * are opened first, relative to this process's folder; argv[0], when it has
 * a slash, is found from dir. A program handed paths it may read as code
 * (gnuplot) is given fixed names in dir instead of the user's paths. */
pid_t mc_spawn_in(const char *dir, char *const argv[], const char *out, const char *err);

/* Waits for a child of mc_spawn: its exit status, 128 + N if signal N ended
 * it (SIGINT or SIGTERM also sets mc_spawn_stop_signal), -1 for pid -1. */
int mc_spawn_wait(pid_t pid);

/* mc_spawn then mc_spawn_wait. */
int mc_spawn_run(char *const argv[], const char *out, const char *err);

/* Where mc_spawn would find the program name, as `command -v` says: a name
 * with a slash as it is, else the first PATH folder (unset: /usr/bin:/bin)
 * with an executable file of that name. 0 and the path in buf, or -1. */
int mc_spawn_which(const char *name, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
