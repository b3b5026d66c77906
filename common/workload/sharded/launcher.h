/* launcher.h: the environment an existing launcher gives each process, read
 * strictly, so that C24's ranks can be processes on several nodes instead of
 * one process with a thread per GPU (the default on one machine).
 * build/sharded_model --gpu reads it (sharded_gpu.h mc_sh_gpu_run_rank:
 * this process is one rank), whether torchrun, mpirun or sharded_procs.h
 * (C24, sharded_model on one machine) started it.
 *
 *   torchrun:  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
 *   mpirun:    OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
 *              OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), plus MASTER_ADDR and
 *              MASTER_PORT, which the user exports (mpirun -x) since Open MPI
 *              sets no rendezvous address of its own.
 *
 * MASTER_ADDR:MASTER_PORT is where rank 0 listens to hand out NCCL's unique
 * id (rendezvous.h); under torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE
 * =True, torchrun's default), which holds MASTER_PORT itself, the port after it. A launcher's variables come as a set: one set alone, or
 * none at all, is accepted; a partial set, a value that is not a plain
 * decimal number, a rank outside the world, a port outside 1..65535, or two
 * sets that disagree are refused with one line saying which variable. */
#ifndef MC_LAUNCHER_H
#define MC_LAUNCHER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MC_LAUNCH_NONE = 0, /* no launcher variable set: one process, a thread per GPU */
    MC_LAUNCH_TORCHRUN,
    MC_LAUNCH_MPIRUN
} mc_launch_kind;

#define MC_LAUNCH_ADDR_MAX 256 /* bytes of MASTER_ADDR, NUL included (a host name is <= 253) */

typedef struct {
    mc_launch_kind kind;
    int rank, world, local_rank; /* 0 <= rank, local_rank < world */
    char addr[MC_LAUNCH_ADDR_MAX]; /* MASTER_ADDR: a host name or address */
    int port;                      /* rank 0's port: MASTER_PORT, or the one after under torchrun's agent store */
} mc_launch;

/* "none", "torchrun" or "mpirun". */
const char *mc_launch_kind_name(mc_launch_kind k);

/* Fills *l from the process environment. Returns 0 (l->kind NONE when no
 * launcher variable is set, every other field then 0 or empty), or -1 with
 * one line in err naming the variable and what is wrong with it. */
int mc_launch_from_env(mc_launch *l, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
