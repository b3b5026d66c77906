/* rendezvous.c: rendezvous.h over plain TCP sockets, every one
 * non-blocking and every wait a poll() bounded by the call's deadline.
 *
 * Wire format, big-endian 32-bit words:
 *   rank r -> rank 0:  MAGIC, r, world, n          (hello)
 *   rank 0 -> rank r:  MAGIC, status, then n bytes of blob when status is 0 */
#define _GNU_SOURCE /* accept4, SOCK_CLOEXEC, SOCK_NONBLOCK */
#include "rendezvous.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x4D435256u   /* "MCRV" */
#define RETRY_S 0.05        /* seconds between connection attempts while rank 0 is not yet listening */

enum { ST_OK = 0, ST_RANK, ST_DUP, ST_WORLD, ST_SIZE, ST_N };
static const char *const ST_WHY[ST_N] = {
    "ok", "rank outside 1..world-1", "this rank already connected", "a different world size",
    "a different blob size",
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Milliseconds left until deadline (seconds, now_s's clock), rounded up. */
static int left_ms(double deadline)
{
    double s = deadline - now_s();
    return s <= 0 ? 0 : (int)(s * 1e3) + 1;
}

/* 1 when fd is ready for events, 0 at the deadline, -1 on error (errno). */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, left_ms(deadline));
        if (r > 0) return 1;
        if (r == 0) return 0;
        if (errno != EINTR) return -1;
    }
}

/* Moves n bytes (send when out, else receive). 0 done, 1 deadline,
 * 2 peer closed, -1 error (errno). */
static int io_all(int fd, void *buf, size_t n, int out, double deadline)
{
    char *p = buf;
    while (n) {
        int w = wait_fd(fd, out ? POLLOUT : POLLIN, deadline);
        if (w <= 0) return w == 0 ? 1 : -1;
        ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return -1;
        }
        if (k == 0) return 2;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void put_words(unsigned char *b, const uint32_t *w, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t v = htonl(w[i]);
        memcpy(b + 4 * i, &v, 4);
    }
}

static void get_words(const unsigned char *b, uint32_t *w, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t v;
        memcpy(&v, b + 4 * i, 4);
        w[i] = ntohl(v);
    }
}

/* Says what io_all's code r meant, for the error line. */
static const char *io_why(int r, double timeout_s, char *buf, size_t len)
{
    if (r == 1) snprintf(buf, len, "timed out after %g s", timeout_s);
    else if (r == 2) snprintf(buf, len, "connection closed");
    else snprintf(buf, len, "%s", strerror(errno));
    return buf;
}

/* ------------------------------------------------------------ rank 0 */

static int serve(const struct addrinfo *ai, int port, int world, const void *blob, size_t n,
                 double timeout_s, double deadline, char *err, size_t len)
{
    int rc = -1, lfd = -1, connected = 0;
    int *fds = malloc((size_t)world * sizeof *fds);
    char why[128];
    if (!fds) {
        snprintf(err, len, "rank 0: out of host memory");
        return -1;
    }
    for (int r = 0; r < world; r++) fds[r] = -1;

    struct sockaddr_storage any; /* every interface of the address's family, on the port */
    memset(&any, 0, sizeof any);
    socklen_t alen;
    if (ai->ai_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&any;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        a->sin6_port = htons((uint16_t)port);
        alen = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&any;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        a->sin_port = htons((uint16_t)port);
        alen = sizeof *a;
    }
    int one = 1;
    lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(lfd, (struct sockaddr *)&any, alen) != 0 || listen(lfd, world) != 0) {
        snprintf(err, len, "rank 0: listen on port %d: %s", port, strerror(errno));
        goto out;
    }
    while (connected < world - 1) {
        int w = wait_fd(lfd, POLLIN, deadline);
        if (w < 0) {
            snprintf(err, len, "rank 0: wait for ranks on port %d: %s", port, strerror(errno));
            goto out;
        }
        if (w == 0) goto timeout;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0) continue; /* the peer went away before accept: it will retry or time out */
        unsigned char b[16];
        uint32_t h[4];
        int r = io_all(c, b, sizeof b, 0, deadline);
        if (r == 1) {
            close(c);
            goto timeout;
        }
        get_words(b, h, 4);
        if (r != 0 || h[0] != MAGIC) { /* not one of ours (a port scan, a stray client) */
            close(c);
            continue;
        }
        uint32_t st = h[2] != (uint32_t)world                ? ST_WORLD
                      : h[1] < 1 || h[1] >= (uint32_t)world ? ST_RANK
                      : fds[h[1]] >= 0                      ? ST_DUP
                      : h[3] != (uint32_t)n                 ? ST_SIZE
                                                            : ST_OK;
        if (st != ST_OK) {
            uint32_t reply[2] = {MAGIC, st};
            put_words(b, reply, 2);
            (void)io_all(c, b, 8, 1, deadline); /* best effort: the refused rank reports it */
            close(c);
            continue;
        }
        fds[h[1]] = c;
        connected++;
    }
    for (int r = 1; r < world; r++) { /* everyone is here: the blob to each */
        unsigned char b[8];
        uint32_t reply[2] = {MAGIC, ST_OK};
        put_words(b, reply, 2);
        int e = io_all(fds[r], b, sizeof b, 1, deadline);
        if (e == 0) e = io_all(fds[r], (void *)blob, n, 1, deadline);
        if (e != 0) {
            snprintf(err, len, "rank 0: send to rank %d: %s", r, io_why(e, timeout_s, why, sizeof why));
            goto out;
        }
    }
    rc = 0;
    goto out;
timeout: {
    char miss[96] = "";
    size_t u = 0;
    for (int r = 1; r < world && u + 16 < sizeof miss; r++)
        if (fds[r] < 0) u += (size_t)snprintf(miss + u, sizeof miss - u, "%s%d", u ? " " : "", r);
    snprintf(err, len, "rank 0: wait for ranks on port %d: timed out after %g s (%d of %d connected; missing %s)",
             port, timeout_s, connected, world - 1, miss);
}
out:
    for (int r = 0; r < world; r++)
        if (fds[r] >= 0) close(fds[r]);
    if (lfd >= 0) close(lfd);
    free(fds);
    return rc;
}

/* ------------------------------------------------------------ other ranks */

/* A connected socket to ai, retrying while refused, or -1 with err set. */
static int connect_until(const struct addrinfo *ai, const char *where, int rank, double timeout_s,
                         double deadline, char *err, size_t len)
{
    int last = 0;
    for (;;) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            snprintf(err, len, "rank %d: connect to %s: %s", rank, where, strerror(errno));
            return -1;
        }
        int e = 0;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            e = errno;
            if (e == EINPROGRESS) {
                int w = wait_fd(fd, POLLOUT, deadline);
                socklen_t sl = sizeof e;
                if (w > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl);
                else e = w == 0 ? ETIMEDOUT : errno;
            }
        }
        if (e == 0) return fd;
        close(fd);
        if (e != ETIMEDOUT) last = e;
        if (e != ECONNREFUSED && e != ETIMEDOUT && e != ECONNRESET && e != EHOSTUNREACH &&
            e != ENETUNREACH && e != EINTR) {
            snprintf(err, len, "rank %d: connect to %s: %s", rank, where, strerror(e));
            return -1;
        }
        int ms = left_ms(deadline);
        if (ms == 0) {
            snprintf(err, len, "rank %d: connect to %s: timed out after %g s%s%s%s", rank, where, timeout_s,
                     last ? " (" : "", last ? strerror(last) : "", last ? ")" : "");
            return -1;
        }
        struct timespec d = {0, (long)((ms < RETRY_S * 1e3 ? ms : RETRY_S * 1e3) * 1e6)};
        nanosleep(&d, NULL);
    }
}

static int join(const struct addrinfo *ai, const char *where, int rank, int world, void *blob, size_t n,
                double timeout_s, double deadline, char *err, size_t len)
{
    char why[128];
    int fd = connect_until(ai, where, rank, timeout_s, deadline, err, len);
    if (fd < 0) return -1;
    unsigned char b[16];
    uint32_t h[4] = {MAGIC, (uint32_t)rank, (uint32_t)world, (uint32_t)n};
    put_words(b, h, 4);
    int rc = -1, e = io_all(fd, b, sizeof b, 1, deadline);
    if (e != 0) {
        snprintf(err, len, "rank %d: say hello to rank 0 at %s: %s", rank, where, io_why(e, timeout_s, why, sizeof why));
        goto out;
    }
    e = io_all(fd, b, 8, 0, deadline);
    if (e == 0) {
        get_words(b, h, 2);
        if (h[0] != MAGIC) {
            snprintf(err, len, "rank %d: receive the blob from %s: not rank 0 of this program", rank, where);
            goto out;
        }
        if (h[1] != ST_OK) {
            snprintf(err, len, "rank %d: refused by rank 0 at %s: %s", rank, where,
                     h[1] < ST_N ? ST_WHY[h[1]] : "unknown reason");
            goto out;
        }
        e = io_all(fd, blob, n, 0, deadline);
    }
    if (e == 2) snprintf(err, len, "rank %d: receive the blob from %s: closed by rank 0 before the blob "
                         "(it gave up waiting for another rank)", rank, where);
    else if (e != 0)
        snprintf(err, len, "rank %d: receive the blob from %s: %s", rank, where, io_why(e, timeout_s, why, sizeof why));
    else rc = 0;
out:
    close(fd);
    return rc;
}

int mc_rdv_exchange(const char *addr, int port, int rank, int world, void *blob, size_t n,
                    double timeout_s, char *err, size_t len)
{
    if (world < 1 || rank < 0 || rank >= world) {
        snprintf(err, len, "rank %d: not in a world of %d", rank, world);
        return -1;
    }
    if (port < 1 || port > 65535) {
        snprintf(err, len, "rank %d: port %d not in 1..65535", rank, port);
        return -1;
    }
    if (n > MC_RDV_MAX_BLOB || !(timeout_s > 0)) {
        snprintf(err, len, "rank %d: blob of %zu bytes (at most %d) or timeout %g s (must be > 0)", rank, n,
                 MC_RDV_MAX_BLOB, timeout_s);
        return -1;
    }
    if (world == 1) return 0;
    double deadline = now_s() + timeout_s;
    char where[300], ps[8];
    snprintf(where, sizeof where, "%s:%d", addr, port);
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(addr, ps, &hints, &ai); /* a name lookup: not bounded by the deadline */
    if (g != 0) {
        snprintf(err, len, "rank %d: resolve %s: %s", rank, addr, gai_strerror(g));
        return -1;
    }
    int rc = rank == 0 ? serve(ai, port, world, blob, n, timeout_s, deadline, err, len)
                       : join(ai, where, rank, world, blob, n, timeout_s, deadline, err, len);
    freeaddrinfo(ai);
    return rc;
}
