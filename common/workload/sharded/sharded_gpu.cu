/* sharded_gpu.cu: sharded_gpu.h's runner: a thread per rank, its streams and
 * events, the waits that give up when any rank fails, the one-GPU check,
 * ranks in one process or one a process (the collectives and copies of a
 * step: sharded_gpu_hooks.cu). Compiled with NCCL only when the Makefile
 * found nccl.h (-DMC_HAVE_NCCL); otherwise the entry points say why they
 * cannot run. */
#include "sharded_gpu.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "check.h"
#include "check_cuda.h"

#ifndef MC_HAVE_NCCL

extern "C" int mc_sh_gpu_available(int ranks, char *why, size_t len)
{
    (void)ranks;
    snprintf(why, len, "built without NCCL (set NCCL_HOME)");
    return 0;
}

extern "C" int mc_sh_gpu_run(const mc_sh_config *c, const mc_sh_gpu_opts *o, mc_sh_gpu_result *res,
                             char *err, size_t len)
{
    (void)c;
    (void)o;
    (void)res;
    snprintf(err, len, "built without NCCL (set NCCL_HOME)");
    return -1;
}

extern "C" int mc_sh_gpu_run_rank(const mc_sh_config *c, const mc_sh_gpu_opts *o, const mc_launch *l,
                                  mc_sh_gpu_result *res, char *err, size_t len)
{
    (void)c;
    (void)o;
    (void)l;
    (void)res;
    snprintf(err, len, "built without NCCL (set NCCL_HOME)");
    return -1;
}

#else /* MC_HAVE_NCCL */

#include <time.h>

#include "rendezvous.h"
#include "sharded_gpu_rank.h"
#include "sharded_internal.h"
#include "workload/core/wl_kernels.cuh"


/* ------------------------------------------------------------ the MLP */

/* sharded_seq.h's MLP as a runner's network (mc_sh_model). */
static int mlp_check(const mc_sh_config *c, char *err, size_t len) { return mc_sh_config_check(c, err, len); }
static void *mlp_create(const mc_sh_config *c, bool gpu, const mc_sh_hooks *h, char *err, size_t len)
{
    return gpu ? mc_sh_create_gpu(c, h, err, len) : mc_sh_create(c, NULL, h, err, len);
}
static mc_wl_status mlp_setup_status(const void *m) { return mc_sh_setup_status((const mc_sh_run *)m); }
static mc_wl_status mlp_step(void *m, mc_sh_step_result *out) { return mc_sh_step((mc_sh_run *)m, out); }
static int mlp_param_count(const void *m) { return mc_sh_param_count((const mc_sh_run *)m); }
static int64_t mlp_param_numel(const void *m, int i) { return mc_sh_param_numel((const mc_sh_run *)m, i); }
static int64_t mlp_param_row(const void *m, int i) /* a weight [out, in]'s row: in; a bias's: 1 */
{
    const mc_sh_run *r = (const mc_sh_run *)m;
    return i % 2 ? 1 : i == 0 ? r->c.wl.in : r->c.wl.width;
}
static int64_t mlp_read_param(void *m, int i, float *host, int64_t *first_row)
{
    return mc_sh_read_param((mc_sh_run *)m, i, host, first_row);
}
static mc_wl_gpu *mlp_gpu(void *m) { return ((mc_sh_run *)m)->ctx.gpu; }
static void mlp_destroy(void *m) { mc_sh_destroy((mc_sh_run *)m); }

static const mc_sh_model MLP = {NULL,          mlp_check,     mlp_create,     mlp_setup_status, mlp_step,
                                mlp_param_count, mlp_param_numel, mlp_param_row, mlp_read_param,   mlp_gpu,
                                mlp_destroy,   NULL,          NULL};

static const mc_sh_model *model_of(const mc_sh_config *c) { return c->model ? c->model : &MLP; }

/* ------------------------------------------------------------ a rank */

static void ctx_open(rank_ctx *k)
{
    CHECK_CUDA(cudaSetDevice(k->device));
    cudaStream_t *s[3] = {&k->s_ag, &k->s_rs, &k->s_ar};
    for (int i = 0; i < 3; i++) CHECK_CUDA(cudaStreamCreateWithFlags(s[i], cudaStreamNonBlocking));
    cudaEvent_t *e[8] = {&k->ev_start, &k->ev_stop, &k->ev_dep, &k->ev_ag_dep, &k->ev_rs,
                         &k->ev_side[0], &k->ev_side[1], &k->ev_side[2]};
    for (int i = 0; i < 8; i++) CHECK_CUDA(cudaEventCreateWithFlags(e[i], i < 2 ? 0 : cudaEventDisableTiming));
    k->ev_ag = (cudaEvent_t *)calloc((size_t)k->c.wl.layers, sizeof *k->ev_ag);
    CHECK(k->ev_ag != NULL, "out of host memory");
    for (int l = 0; l < k->c.wl.layers; l++)
        CHECK_CUDA(cudaEventCreateWithFlags(&k->ev_ag[l], cudaEventDisableTiming));
}

static void ctx_close(rank_ctx *k)
{
    for (int l = 0; l < k->c.wl.layers; l++) cudaEventDestroy(k->ev_ag[l]);
    free(k->ev_ag);
    cudaEvent_t e[8] = {k->ev_start, k->ev_stop, k->ev_dep, k->ev_ag_dep, k->ev_rs,
                        k->ev_side[0], k->ev_side[1], k->ev_side[2]};
    for (int i = 0; i < 8; i++) cudaEventDestroy(e[i]);
    cudaStream_t s[3] = {k->s_ag, k->s_rs, k->s_ar};
    for (int i = 0; i < 3; i++) cudaStreamDestroy(s[i]);
}

/* This rank's parameters against the reference's (its rows of them). */
static void compare(rank_ctx *k, const mc_sh_model *M, void *r)
{
    k->max_rel = k->max_abs = 0;
    k->worst_param = 0;
    k->elems = k->elems_off = 0;
    for (int i = 0; i < M->param_count(r); i++) {
        const int64_t whole = M->param_numel(r, i);
        const int64_t row = M->param_row(r, i); /* elements of a row */
        float *mine = (float *)malloc((size_t)whole * sizeof(float));
        CHECK(mine != NULL, "out of host memory");
        int64_t first_row = 0;
        const int64_t n = M->read_param(r, i, mine, &first_row);
        const float *ref = k->ref[i] + first_row * row;
        double diff = 0, scale = 0;
        for (int64_t j = 0; j < whole; j++) scale = fmax(scale, fabs((double)k->ref[i][j]));
        for (int64_t j = 0; j < n; j++) {
            const double d = fabs((double)mine[j] - (double)ref[j]);
            if (!(d <= MC_SH_VERIFY_TOL * scale)) k->elems_off++;
            diff = d > diff || d != d ? d : diff;
        }
        k->elems += (uint64_t)n;
        k->max_abs = fmax(k->max_abs, diff);
        const double rel = scale > 0 ? diff / scale : diff;
        if (rel > k->max_rel || !(rel == rel)) {
            k->max_rel = rel;
            k->worst_param = i;
        }
        free(mine);
    }
}

static void *rank_main(void *arg)
{
    rank_ctx *k = (rank_ctx *)arg;
    ctx_open(k);
    if (k->id) CHECK_NCCL(ncclCommInitRank(&k->comm, k->world, *k->id, k->rank));
    mc_sh_config c = k->c;
    c.rank = k->id ? k->rank : 0;
    mc_sh_hooks hooks = {k, sh_gpu_on_comm};
    char err[256];
    const mc_sh_model *M = model_of(&c);
    void *r = M->create(&c, true, &hooks, err, sizeof err);
    CHECK(r != NULL, "sharded GPU run: %s", err); /* the configuration was checked */
    k->def = mc_gpu_stream(M->gpu(r)); /* the step's own stream (core/wl_kernels.cuh) */
    mc_sh_gpu_result *res = k->res;
    if (M->setup_status(r) != MC_WL_OK) {
        res->oom_rank = k->rank;
        res->oom_step = 0;
        sh_gpu_fail(k, 0, "out of memory in set-up");
    }
    for (int s = 0; s < k->o->steps && !sh_gpu_failed(k); s++) {
        mc_sh_step_result sr;
        k->step = s + 1;
        k->at = "the start";
        if (k->id && k->o->fault != MC_SH_FAULT_NONE && k->o->fault_rank == k->rank && k->o->fault_step == s + 1) {
            if (k->o->fault == MC_SH_FAULT_KILL) /* a process only (sharded_model refuses it for threads) */
                raise(SIGKILL);
            if (k->o->fault == MC_SH_FAULT_HANG) { /* silent: the others' deadline finds it */
                while (!sh_gpu_failed(k)) sched_yield();
                break;
            }
            pthread_mutex_lock(&k->sh->mu);
            if (res->oom_rank < 0) {
                res->oom_rank = k->rank;
                res->oom_step = s + 1;
            }
            pthread_mutex_unlock(&k->sh->mu);
            sh_gpu_fail(k, 0, "out of memory (injected)");
            break;
        }
        mc_wl_status st = M->step(r, &sr);
        if (st == MC_WL_OOM) {
            pthread_mutex_lock(&k->sh->mu);
            if (res->oom_rank < 0) {
                res->oom_rank = k->rank;
                res->oom_step = s + 1;
            }
            pthread_mutex_unlock(&k->sh->mu);
            char m[64];
            snprintf(m, sizeof m, "out of memory at step %d", s + 1);
            sh_gpu_fail(k, 0, m);
            break;
        }
        if (!k->step_ok) break;
        if (k->o->pause_s > 0) { /* as the reference pauses, the GPU idle as long */
            struct timespec ts = {(time_t)k->o->pause_s, (long)((k->o->pause_s - (double)(time_t)k->o->pause_s) * 1e9)};
            nanosleep(&ts, NULL);
        }
        if (k->id) {
            res->done[k->rank] = s + 1;
            res->peak[k->rank][s] = sr.peak_allocated;
            res->end[k->rank][s] = sr.allocated_end;
            res->time_s[k->rank][s] = k->time_s;
            res->loss[k->rank][s] = sr.loss;
        }
    }
    if (sh_gpu_failed(k)) sh_gpu_abort(k);
    if (k->id && M->segments) { /* where the driver put them, for the model held to this run */
        const uint64_t *a, *b;
        k->nseg = M->segments(r, &a, &b);
        k->seg_addr = (uint64_t *)malloc((size_t)(k->nseg + 1) * sizeof(uint64_t));
        k->seg_bytes = (uint64_t *)malloc((size_t)(k->nseg + 1) * sizeof(uint64_t));
        CHECK(k->seg_addr && k->seg_bytes, "out of host memory");
        if (k->nseg) {
            memcpy(k->seg_addr, a, (size_t)k->nseg * sizeof(uint64_t));
            memcpy(k->seg_bytes, b, (size_t)k->nseg * sizeof(uint64_t));
        }
    }
    if (k->id && k->ref && !sh_gpu_failed(k)) compare(k, M, r);
    if (!k->id && !sh_gpu_failed(k)) /* the reference: its parameters, whole */
        for (int i = 0; i < M->param_count(r); i++) {
            int64_t first_row;
            M->read_param(r, i, k->ref[i], &first_row);
        }
    M->destroy(r);
    if (k->id && !k->aborted) CHECK_NCCL(ncclCommDestroy(k->comm));
    ctx_close(k);
    return NULL;
}

extern "C" int mc_sh_gpu_available(int ranks, char *why, size_t len)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    if (n < ranks) {
        snprintf(why, len, "needs %d GPUs, found %d", ranks, n);
        return 0;
    }
    return 1;
}

/* The one-GPU reference of verify: plain, the N ranks' batches as one
 * (data_chunks N: the MLP's in one step, the Transformer's as N
 * micro-steps), on device 0, its parameters into ref (whole). */
static int reference(const mc_sh_config *c, const mc_sh_gpu_opts *o, int device, float **ref, char *err,
                     size_t len)
{
    shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    static mc_sh_gpu_result scratch;
    memset(&scratch, 0, sizeof scratch);
    scratch.oom_rank = -1;
    rank_ctx k;
    memset(&k, 0, sizeof k);
    k.world = 1;
    k.c = *c;
    k.c.mode = MC_SH_PLAIN;
    k.c.world = 1;
    k.c.wl.batch = c->wl.batch * c->world;
    k.c.data_chunks = c->world;
    k.o = o;
    k.sh = &sh;
    k.res = &scratch;
    k.ref = ref;
    k.rank = 0;
    k.device = device;
    rank_main(&k);
    pthread_mutex_destroy(&sh.mu);
    if (sh.failed) {
        snprintf(err, len, "the one-GPU reference: %s", sh.why);
        return -1;
    }
    return 0;
}

/* One run of o->steps steps of ranks [first, first + count) of c0->world,
 * a thread each, rank first on device device0 and the next ones on the
 * devices after it, over the NCCL id `id` (NULL: made here, every rank
 * being in this process); the one-GPU reference first, on device0, where
 * o->verify. */
static int run_once(const mc_sh_config *c0, const mc_sh_gpu_opts *o, int first, int count, int device0,
                    const ncclUniqueId *id_in, mc_sh_gpu_result *res, char *err, size_t len)
{
    mc_sh_config c = *c0;
    const int world = c.world;
    c.rank = 0;
    c.trace = NULL;
    c.data_chunks = 1;
    c.wl.fixed_data = o->verify;
    if (world < 1 || world > MC_SH_MAX_GPUS || o->steps < 1 || o->steps > MC_SH_MAX_STEPS) {
        snprintf(err, len, "ranks 1..%d and steps 1..%d", MC_SH_MAX_GPUS, MC_SH_MAX_STEPS);
        return -1;
    }
    const mc_sh_model *M = model_of(&c);
    if (M->check(&c, err, len) != 0) return -1;
    if (!mc_sh_gpu_available(device0 + count, err, len)) return -1;
    memset(res, 0, sizeof *res);
    res->ranks = world;
    res->steps = o->steps;
    res->oom_rank = -1;
    int nparams = 0;
    float **ref = NULL;
    const bool placed = M->segments && M->create_placed; /* its models come after the GPU run */
    for (int q = first; q < first + count; q++) { /* the host model of each rank */
        if (placed && (!o->verify || ref)) break;
        mc_sh_config m = c;
        m.rank = q;
        void *r = M->create(&m, false, NULL, err, len);
        if (!r) return -1;
        for (int s = 0; s < o->steps && !placed; s++) {
            mc_sh_step_result sr;
            M->step(r, &sr);
            res->model_peak[q][s] = sr.peak_allocated;
            res->model_end[q][s] = sr.allocated_end;
        }
        if (o->verify && !ref) { /* room for the reference's parameters, whole */
            nparams = M->param_count(r);
            ref = (float **)calloc((size_t)nparams, sizeof *ref);
            CHECK(ref != NULL, "out of host memory");
            for (int i = 0; i < nparams; i++) {
                ref[i] = (float *)malloc((size_t)M->param_numel(r, i) * sizeof(float));
                CHECK(ref[i] != NULL, "out of host memory");
            }
        }
        M->destroy(r);
    }
    if (ref && reference(&c, o, device0, ref, err, len) != 0) return -1;
    setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast off, whatever was set: it can take shared GPUs out of service */
    ncclUniqueId id;
    if (id_in) id = *id_in;
    else CHECK_NCCL(ncclGetUniqueId(&id));
    shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    rank_ctx *k = (rank_ctx *)calloc((size_t)count, sizeof *k);
    pthread_t *t = (pthread_t *)calloc((size_t)count, sizeof *t);
    CHECK(k && t, "out of host memory");
    sh.ranks = k;
    sh.nranks = count;
    for (int q = 0; q < count; q++) k[q].at = "set-up";
    for (int q = 0; q < count; q++) {
        k[q].rank = first + q;
        k[q].device = device0 + q;
        k[q].world = world;
        k[q].c = c;
        k[q].o = o;
        k[q].id = &id;
        k[q].sh = &sh;
        k[q].res = res;
        k[q].ref = ref;
        CHECK(pthread_create(&t[q], NULL, rank_main, &k[q]) == 0, "pthread_create");
    }
    for (int q = 0; q < count; q++) pthread_join(t[q], NULL);
    for (int q = 0; q < count; q++) { /* each rank's model again, its segments where the GPU's went */
        if (placed && k[q].seg_addr) {
            mc_sh_config m = c;
            m.rank = k[q].rank;
            void *r = M->create_placed(&m, k[q].seg_addr, k[q].seg_bytes, k[q].nseg, err, len);
            CHECK(r != NULL, "sharded GPU run: the placed model: %s", err); /* the configuration was checked */
            for (int s = 0; s < o->steps; s++) {
                mc_sh_step_result sr;
                M->step(r, &sr);
                res->model_peak[k[q].rank][s] = sr.peak_allocated;
                res->model_end[k[q].rank][s] = sr.allocated_end;
            }
            M->destroy(r);
        }
        free(k[q].seg_addr);
        free(k[q].seg_bytes);
    }
    int rc = 0;
    if (sh.failed && sh.fatal) {
        snprintf(err, len, "%s", sh.why);
        rc = -1;
    }
    mc_sh_check *v = &res->check;
    v->verified = o->verify && !sh.failed;
    v->loss_falls = v->verified;
    for (int q = 0; q < count; q++) {
        res->collectives += k[q].ncoll;
        if (!v->verified) continue;
        if (k[q].max_rel > v->max_rel || q == 0 || k[q].max_rel != k[q].max_rel) {
            v->max_rel = k[q].max_rel;
            v->worst_rank = k[q].rank;
            v->worst_param = k[q].worst_param;
        }
        v->max_abs = fmax(v->max_abs, k[q].max_abs);
        v->elems += k[q].elems;
        v->elems_off += k[q].elems_off;
        if (!(res->loss[k[q].rank][o->steps - 1] < res->loss[k[q].rank][0])) v->loss_falls = false;
    }
    v->passed = v->verified && v->max_rel <= MC_SH_VERIFY_TOL && v->loss_falls;
    for (int i = 0; ref && i < nparams; i++) free(ref[i]);
    free(ref);
    free(k);
    free(t);
    pthread_mutex_destroy(&sh.mu);
    return rc;
}

/* The check's run, then the timed run (sharded_gpu.h), over ids[0] and ids[1]
 * (NULL: made here). */
static int run(const mc_sh_config *c, const mc_sh_gpu_opts *o, int first, int count, int device0,
               const ncclUniqueId *ids, mc_sh_gpu_result *res, char *err, size_t len)
{
    if (!o->verify) return run_once(c, o, first, count, device0, ids, res, err, len);
    mc_sh_config cc = *c;
    if (cc.wl.optimizer == MC_WL_ADAM) {
        cc.wl.optimizer = MC_WL_MOMENTUM;
        cc.wl.lr = 0; /* momentum's default */
    }
    mc_sh_gpu_opts untimed = *o; /* the check's steps are not timed: no pause between them */
    untimed.pause_s = 0;
    static mc_sh_gpu_result check;
    if (run_once(&cc, &untimed, first, count, device0, ids, &check, err, len) != 0) return -1;
    mc_sh_gpu_opts timed = *o;
    timed.verify = false;
    if (run_once(c, &timed, first, count, device0, ids ? ids + 1 : NULL, res, err, len) != 0) return -1;
    res->check = check.check;
    res->check.oom = check.oom_rank >= 0;
    return 0;
}

extern "C" int mc_sh_gpu_run(const mc_sh_config *c, const mc_sh_gpu_opts *o, mc_sh_gpu_result *res,
                             char *err, size_t len)
{
    return run(c, o, 0, c->world, 0, NULL, res, err, len);
}

extern "C" int mc_sh_gpu_run_rank(const mc_sh_config *c, const mc_sh_gpu_opts *o, const mc_launch *l,
                                  mc_sh_gpu_result *res, char *err, size_t len)
{
    if (l->world != c->world) {
        snprintf(err, len, "the launcher's world is %d ranks, --world %d", l->world, c->world);
        return -1;
    }
    if (!mc_sh_gpu_available(l->local_rank + 1, err, len)) return -1;
    ncclUniqueId ids[2]; /* the check's run's and the timed run's */
    if (l->rank == 0) {
        CHECK_NCCL(ncclGetUniqueId(&ids[0]));
        CHECK_NCCL(ncclGetUniqueId(&ids[1]));
    }
    sh_gpu_catch_peer_end();
    const double limit = sh_gpu_deadline_s(o);
    if (mc_rdv_exchange(l->addr, l->port, l->rank, l->world, ids, sizeof ids, limit, err, len) != 0) return -1;
    return run(c, o, l->rank, 1, l->local_rank, ids, res, err, len);
}

#endif /* MC_HAVE_NCCL */
