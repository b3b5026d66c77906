/* rendezvous.h: rank 0 hands an opaque blob (NCCL's unique id, 128 bytes)
 * to every other rank over TCP at MASTER_ADDR:MASTER_PORT (launcher.h).
 *
 * Rank 0 listens on the port (every interface of MASTER_ADDR's address
 * family, as torchrun's store does) and waits for world - 1 ranks; each
 * connects, retrying until rank 0 listens, and says who it is (rank, world,
 * blob size). A rank outside 1..world-1, one already connected, or a
 * different world or size is refused at once. Only when all world - 1 have
 * connected does rank 0 send the blob to each: all ranks get it or none
 * does, so no rank goes on into a collective that would wait for a missing
 * one. Every step (connect, accept, send, receive) waits at most until one
 * deadline, timeout_s after the call; nothing blocks past it. */
#ifndef MC_RENDEZVOUS_H
#define MC_RENDEZVOUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_RDV_MAX_BLOB 4096 /* bytes: the largest blob (NCCL_UNIQUE_ID_BYTES is 128) */

/* Rank 0 sends blob[0..n) to ranks 1..world-1; any other rank receives it
 * into blob. timeout_s > 0 seconds bounds the whole call. Returns 0, or -1
 * with one line in err naming this rank and the step:
 *   "rank 1: connect to 127.0.0.1:29500: timed out after 10 s (connection refused)"
 * On failure rank 0 closes every connection, so the ranks that reached it
 * fail at once too ("... closed by rank 0 before the blob"). */
int mc_rdv_exchange(const char *addr, int port, int rank, int world, void *blob, size_t n,
                    double timeout_s, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
