/* launcher.c: launcher.h's strict reading of torchrun's and mpirun's
 * variables. */
#define _POSIX_C_SOURCE 200809L
#include "launcher.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One launcher's three variables, in the order rank, world, local rank. */
typedef struct {
    mc_launch_kind kind;
    const char *var[3];
} var_set;

static const var_set SETS[] = {
    {MC_LAUNCH_TORCHRUN, {"RANK", "WORLD_SIZE", "LOCAL_RANK"}},
    {MC_LAUNCH_MPIRUN, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}},
};
#define NSETS ((int)(sizeof SETS / sizeof SETS[0]))

const char *mc_launch_kind_name(mc_launch_kind k)
{
    switch (k) {
    case MC_LAUNCH_TORCHRUN: return "torchrun";
    case MC_LAUNCH_MPIRUN: return "mpirun";
    default: return "none";
    }
}

/* A plain decimal number in 0..max: digits only, no sign, no blanks. */
static int parse_num(const char *name, const char *s, long max, long *out, char *err, size_t len)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (s[i] < '0' || s[i] > '9') break;
    if (i == 0 || s[i]) {
        snprintf(err, len, "%s=\"%s\": not a non-negative decimal number", name, s);
        return -1;
    }
    errno = 0;
    long v = strtol(s, NULL, 10);
    if (errno == ERANGE || v > max) {
        snprintf(err, len, "%s=%s: larger than %ld", name, s, max);
        return -1;
    }
    *out = v;
    return 0;
}

/* Reads set k: 0 none of its variables set, 1 all read into v, -1 error. */
static int read_set(const var_set *k, long v[3], char *err, size_t len)
{
    const char *s[3];
    int n = 0;
    for (int i = 0; i < 3; i++) n += (s[i] = getenv(k->var[i])) != NULL;
    if (n == 0) return 0;
    if (n < 3) {
        char have[128] = "", miss[128] = "";
        for (int i = 0; i < 3; i++) {
            char *b = s[i] ? have : miss;
            size_t u = strlen(b);
            snprintf(b + u, sizeof have - u, "%s%s", u ? " " : "", k->var[i]);
        }
        snprintf(err, len, "%s set but not %s: %s sets all three", have, miss, mc_launch_kind_name(k->kind));
        return -1;
    }
    for (int i = 0; i < 3; i++)
        if (parse_num(k->var[i], s[i], INT_MAX, &v[i], err, len) != 0) return -1;
    if (v[1] < 1) {
        snprintf(err, len, "%s=%ld: the world needs at least 1 rank", k->var[1], v[1]);
        return -1;
    }
    for (int i = 0; i < 3; i += 2)
        if (v[i] >= v[1]) {
            snprintf(err, len, "%s=%ld: not below %s=%ld", k->var[i], v[i], k->var[1], v[1]);
            return -1;
        }
    return 1;
}

int mc_launch_from_env(mc_launch *l, char *err, size_t len)
{
    memset(l, 0, sizeof *l);
    long v[NSETS][3];
    int found = -1;
    for (int k = 0; k < NSETS; k++) {
        int r = read_set(&SETS[k], v[k], err, len);
        if (r < 0) return -1;
        if (r == 0) continue;
        if (found >= 0) { /* both launchers' variables (torchrun under mpirun): they must agree */
            for (int i = 0; i < 3; i++)
                if (v[k][i] != v[found][i]) {
                    snprintf(err, len, "%s=%ld but %s=%ld: two launchers disagree", SETS[found].var[i],
                             v[found][i], SETS[k].var[i], v[k][i]);
                    return -1;
                }
            continue;
        }
        found = k;
    }
    const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
    if (found < 0) {
        if (addr || port) {
            snprintf(err, len, "%s set but no rank: set RANK, WORLD_SIZE and LOCAL_RANK (torchrun) or "
                     "OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK (mpirun)", addr ? "MASTER_ADDR" : "MASTER_PORT");
            return -1;
        }
        return 0;
    }
    if (!addr || !port) {
        snprintf(err, len, "%s not set: rank 0's address for the NCCL id is MASTER_ADDR:MASTER_PORT",
                 !addr ? "MASTER_ADDR" : "MASTER_PORT");
        return -1;
    }
    if (!addr[0] || strlen(addr) >= sizeof l->addr) {
        snprintf(err, len, "MASTER_ADDR: %s", addr[0] ? "longer than a host name" : "empty");
        return -1;
    }
    long p;
    if (parse_num("MASTER_PORT", port, 65535, &p, err, len) != 0) return -1;
    if (p < 1 || p > 65535) {
        snprintf(err, len, "MASTER_PORT=%s: not in 1..65535", port);
        return -1;
    }
    /* torchrun's agent itself listens on MASTER_PORT (its TCPStore, which
     * PyTorch's workers join as clients: TORCHELASTIC_USE_AGENT_STORE=True),
     * so rank 0 listens on the port after it. */
    const char *agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
    if (SETS[found].kind == MC_LAUNCH_TORCHRUN && agent && !strcmp(agent, "True")) {
        if (p == 65535) {
            snprintf(err, len, "MASTER_PORT=%s: torchrun's store holds it and no port follows it", port);
            return -1;
        }
        p++;
    }
    l->kind = SETS[found].kind;
    l->rank = (int)v[found][0];
    l->world = (int)v[found][1];
    l->local_rank = (int)v[found][2];
    memcpy(l->addr, addr, strlen(addr) + 1);
    l->port = (int)p;
    return 0;
}
