/* sharded_gpu_fail.cu: how the ranks stop together: the first failure of
 * any rank, and the waits that give up on it, on an NCCL error or at the
 * deadline (sharded_gpu_rank.h). The runner (sharded_gpu.cu) and the hooks
 * (sharded_gpu_hooks.cu) both call down into this file. Built only with
 * NCCL. */
#ifdef MC_HAVE_NCCL

#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "check_cuda.h"
#include "sharded_gpu_rank.h"

#define FAIL_GRACE_S 1.0 /* after another rank failed, how long a step may still take to finish */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The first failure wins: "rank R: " and msg. */
void sh_gpu_fail(rank_ctx *k, int fatal, const char *msg)
{
    pthread_mutex_lock(&k->sh->mu);
    if (!k->sh->failed) {
        snprintf(k->sh->why, sizeof k->sh->why, "rank %d: %s", k->rank, msg);
        k->sh->fatal = fatal;
        k->sh->failed = 1;
    }
    pthread_mutex_unlock(&k->sh->mu);
}

/* Ranks as processes (mc_sh_gpu_run_rank): the launcher that started them
 * (sharded_procs.h) sends SIGUSR1 when another rank ended badly, which no
 * wait of this process could see otherwise (a killed peer's NVLink
 * transfers just never come). */
static volatile sig_atomic_t peer_ended;

static void on_peer_ended(int sig)
{
    (void)sig;
    peer_ended = 1;
}

void sh_gpu_catch_peer_end(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_peer_ended;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t usr1; /* sharded_procs.h starts a rank with it blocked: one already sent is taken now */
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
}

bool sh_gpu_failed(rank_ctx *k)
{
    if (peer_ended && !__atomic_load_n(&k->sh->failed, __ATOMIC_ACQUIRE)) {
        char m[200];
        snprintf(m, sizeof m, "stopped at %s of step %d: another rank ended (the launcher's SIGUSR1)",
                 (const char *)k->at, k->step);
        sh_gpu_fail(k, 1, m);
    }
    return __atomic_load_n(&k->sh->failed, __ATOMIC_ACQUIRE) != 0;
}

/* Stops this rank's collectives: its kernels that wait for a peer return. */
void sh_gpu_abort(rank_ctx *k)
{
    if (k->id && !k->aborted) ncclCommAbort(k->comm);
    k->aborted = true;
}

/* Waits for e while no rank has failed (or for FAIL_GRACE_S after one
 * did), NCCL reports no error and the deadline has not passed; otherwise
 * aborts this rank's communicator. */
bool sh_gpu_wait(rank_ctx *k, cudaEvent_t e, const char *what)
{
    const double t0 = now_s(), limit = sh_gpu_deadline_s(k->o);
    double t_fail = 0;
    for (;;) {
        cudaError_t q = cudaEventQuery(e);
        if (q == cudaSuccess) return true;
        if (q != cudaErrorNotReady) CHECK_CUDA(q);
        if (k->id) {
            ncclResult_t a = ncclSuccess;
            if (ncclCommGetAsyncError(k->comm, &a) == ncclSuccess && a != ncclSuccess && a != ncclInProgress) {
                char m[160];
                snprintf(m, sizeof m, "%s: NCCL: %s", what, ncclGetErrorString(a));
                sh_gpu_fail(k, 1, m);
            }
        }
        if (now_s() - t0 > limit) {
            char m[256];
            int n = snprintf(m, sizeof m, "%s not done after %.0f s", what, limit);
            for (int q = 0; q < k->sh->nranks && n < (int)sizeof m; q++) { /* who is behind */
                const rank_ctx *o = &k->sh->ranks[q];
                if (o->step < k->step || strcmp((const char *)o->at, "the step's end") != 0)
                    n += snprintf(m + n, sizeof m - (size_t)n, " (rank %d stopped queueing at %s of step %d)",
                                  o->rank, (const char *)o->at, o->step);
            }
            sh_gpu_fail(k, 1, m);
        }
        if (sh_gpu_failed(k)) { /* this step's collectives may still all have been matched: a grace */
            if (t_fail == 0) t_fail = now_s();
            if (now_s() - t_fail > FAIL_GRACE_S) {
                sh_gpu_abort(k);
                return false;
            }
        }
        sched_yield();
    }
}

double sh_gpu_deadline_s(const mc_sh_gpu_opts *o)
{
    return o->deadline_s > 0 ? o->deadline_s : MC_SH_DEFAULT_DEADLINE_S;
}

#endif /* MC_HAVE_NCCL */
