/* sharded_procs.h: the ranks of a sharded GPU run as processes on this
 * machine, one per GPU, started and watched as torchrun --standalone starts
 * and watches its workers: build/sharded_model --gpu (and C24 through it)
 * starts itself N times with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * MASTER_ADDR=127.0.0.1 and MASTER_PORT (a free port) set, so that each
 * process runs one rank (sharded_gpu.h mc_sh_gpu_run_rank), and merges
 * their figures.
 *
 * Each rank writes its rows (sharded_model's --gpu CSV, MC_SH_ROWS_HEADER)
 * to stdout and its lines to stderr, both into files of a private folder;
 * they are read back when every rank has ended. The first rank to end
 * badly (a signal, an exit status other than 0 and 1, or a row that says
 * it ran out of memory) is the cause: every rank still running is sent
 * SIGUSR1, on which it aborts its communicator at its next wait and exits
 * naming where it was (sharded_gpu_fail.cu), and any still running grace_s
 * seconds later is killed (SIGKILL). Plain C (POSIX), no CUDA. */
#ifndef MC_SHARDED_PROCS_H
#define MC_SHARDED_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "sharded_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The header of a rank's rows (sharded_model --gpu's stdout). */
#define MC_SH_ROWS_HEADER "rank,step,peak_allocated,allocated_end,model_peak,model_end,step_time_s,loss,status"

/* How long the others may take to stop once one rank ended badly, seconds. */
#define MC_SH_PROCS_GRACE_S 10.0

/* Rank q's rows of res: the steps it finished, then its out-of-memory row. */
void mc_sh_rows_write(FILE *fp, const mc_sh_gpu_result *res, int q);

/* Reads rows (a header, then rows of any ranks) from the text at `text`
 * into res (res->ranks and res->steps set by the caller; done[], oom_rank
 * updated). Returns 0, or -1 with one line in err naming the line. */
int mc_sh_rows_read(const char *text, mc_sh_gpu_result *res, char *err, size_t len);

/* The check's line, as sharded_model prints it on stderr, and its reading
 * back (0, or -1 when `line` holds none). `every` says "on every rank". */
void mc_sh_check_format(const mc_sh_check *v, bool momentum, char *buf, size_t len);
int mc_sh_check_parse(const char *text, mc_sh_check *v);
/* Merges one rank's check (a) into the world's (acc), first: acc zeroed with verified and passed true. */
void mc_sh_check_merge(mc_sh_check *acc, const mc_sh_check *a, int rank);

/* sharded_model --ranks-out DIR, ranks a launcher started: rank's rows
 * into DIR/rankR.csv and, where check is not "", its check's line into
 * DIR/rankR.verify, each written whole (csv.h's mc_file); rank 0 then
 * waits up to wait_s seconds for every rank's and merges them into
 * DIR/ranks.csv (one header) and DIR/verify.txt. Returns 0, or -1 with one
 * line in err ("rank 0: rank 3's figures not in DIR after 300 s"). */
int mc_sh_ranks_out(const char *dir, int rank, int world, const mc_sh_gpu_result *res, const char *check,
                    double wait_s, char *err, size_t len);

/* Runs argv (argv[0] the program: build/sharded_model; NULL-terminated) as
 * `world` ranks on GPUs 0..world-1 (of those this process sees), waits for
 * all, and fills res (res->ranks, res->steps set here; steps is the
 * largest step a rank reported). limit_s > 0 bounds the whole run: past
 * it, every rank is stopped as after a failure. Progress lines (ranks
 * started, the first to end badly) go to `log` when not NULL. Returns 0
 * (an out-of-memory rank is a result: res->oom_rank), or -1 with one line
 * in err: the rank that ended first and how, how soon the others stopped,
 * and what they said ("rank 1: killed by signal 9 (Killed); the others
 * stopped within 1.2 s (grace 10 s): rank 0: stopped at the all-reduce of
 * step 3: another rank ended (the launcher's SIGUSR1)"). */
int mc_sh_procs_run(char *const argv[], int world, double limit_s, FILE *log, mc_sh_gpu_result *res, char *err,
                    size_t len);

#ifdef __cplusplus
}
#endif
#endif
