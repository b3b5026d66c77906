/* C22: must tensors on two GPUs be copied to one device before combining?
 *
 * Between GPU 0 and GPU 1, both ways, over sizes: cudaMemcpyPeerAsync with
 * peer access disabled, the same with it enabled, the copy through pinned
 * host memory (D2H then H2D), and a kernel on GPU 0 that reads GPU 1's
 * memory in place once peer access is on. Then, at one large size, the
 * matrix over every ordered pair of the visible GPUs, as nvbandwidth reports
 * it, with a + b computed on one GPU from an operand on the other
 * (experiments/support/peer_matrix.h). Each destination is poisoned before
 * and checked after every copy against a seeded pattern. The link for
 * context: nvidia-smi topo -m and the NVLink count and rate. With one GPU
 * the experiment waives. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_cuda.h"
#include "clock.h"
#include "experiment.h"
#include "gpu.h"
#include "pattern.h"
#include "support/peer_matrix.h"
#include "units.h"

static uint64_t max_bytes_opt = 0;    /* 0: 1 GiB, or 4 MiB with --quick */
static uint64_t matrix_bytes_opt = 0; /* 0: 256 MiB, or 4 MiB with --quick */

static const mc_extra_opt EXTRA[] = {
    {"max-bytes", MC_OPT_BYTES, &max_bytes_opt,
     "largest copy; sizes are 4 KiB x 4^k up to it (default 1 GiB, --quick 4 MiB)"},
    {"matrix-bytes", MC_OPT_BYTES, &matrix_bytes_opt,
     "copy size of the matrix over every pair of GPUs, a multiple of 4 KiB, at least 1 MiB "
     "(default 256 MiB, --quick 4 MiB)"},
    {NULL, MC_OPT_FLAG, NULL, NULL},
};

static const char *validate_options(const mc_options *opt)
{
    (void)opt;
    if (max_bytes_opt && max_bytes_opt < (4ull << 10)) return "--max-bytes must be at least 4 KiB";
    if (matrix_bytes_opt && (matrix_bytes_opt < (1ull << 20) || matrix_bytes_opt % (4ull << 10)))
        return "--matrix-bytes must be a multiple of 4 KiB and at least 1 MiB";
    return NULL;
}

static const mc_experiment EXP = {
    .claim = "C22",
    .key = "peer_copy",
    .title = "GPU-to-GPU copy bandwidth with and without peer access, through the host, and a kernel "
             "reading the other GPU's memory; the matrix over every pair of GPUs",
    .seed_claim = "Tensors on two GPUs must be copied to one device before combining.",
    .method = "GPU 0 <-> GPU 1 (--device is GPU 0; GPU 1 is the next device), 4 KiB to 1 GiB in x4 "
              "steps (--quick: to 4 MiB): cudaMemcpyPeerAsync with peer access disabled (the "
              "driver stages it), the same after cudaDeviceEnablePeerAccess both ways, a copy "
              "through pinned host memory (cudaMemcpyAsync D2H, then H2D), and a kernel on GPU 0 "
              "copying GPU 1's buffer into its own by direct loads (peer access on). Each timed by "
              "the host monotonic clock around the call and the synchronization of both GPUs (one "
              "clock for all four, since a copy through the host spans two devices' streams), "
              "median of --repeats. Destinations poisoned before and checked after every copy "
              "against a seeded pattern, on the device that holds them. 1 GiB copies use at most 3 "
              "repeats. Then the matrix over every ordered pair i -> j of the visible GPUs at 256 MiB "
              "(--quick: 4 MiB; --matrix-bytes), as nvbandwidth measures it: cudaMemcpyPeerAsync on "
              "GPU i's stream with peer access off and on (both ways, one pair at a time), a kernel on "
              "GPU j loading GPU i's memory in place, and a kernel on GPU j computing c = a + b (float) "
              "with b on GPU i (at most 32 MiB; B/s of b); each timed by CUDA events on the initiating "
              "GPU's stream around 4 back-to-back operations after --warmup untimed ones, queued behind "
              "a spin kernel the host releases (not the staged copy with peer access off, which may "
              "need the host), median of min(--repeats, 5) samples, B/s. Copy destinations poisoned and "
              "checked every sample; a + b checked on the device every sample and element by element "
              "on the host after the last. Pairs that cannot access each other's memory get rows with "
              "status no_peer_access. Context: nvidia-smi topo -m, and nvidia-smi nvlink -s (links and "
              "their rate).",
    .verdict_rule = "inconclusive if any copied word or a + b element was wrong. If no pair of GPUs "
                    "can access each other's memory (cudaDeviceCanAccessPeer 0, every pair of the "
                    "matrix, or GPU 0 and 1 where the matrix did not run): holds (a copy, through "
                    "the host, is the only way). If some pair can (its kernel reads and a + b then "
                    "verified): holds-partly (without peer access a copy is needed; with it a kernel "
                    "reads remote memory in place and combines it without a copy, at the rates in "
                    "the note, which names the pairs that cannot; PyTorch still refuses operands on "
                    "two devices: tests/torch/peer_reference.py).",
    .flags = 0,
    .default_repeats = 7,
    .default_warmup = 2,
    .extra = EXTRA,
    .validate = validate_options,
};

enum { PEER_OFF, PEER_ON, VIA_HOST, KERNEL_READ, NMETH };
static const char *const METH[NMETH] = {"peer_off", "peer_on", "via_host", "kernel_read"};
enum { D01, D10, NDIR };
static const char *const DIRN[NDIR] = {"gpu0_to_gpu1", "gpu1_to_gpu0"};

#define SEED0 0xC22000000000ull /* the source on GPU 0 */
#define SEED1 0xC22000000001ull /* the source on GPU 1 */
#define MIN_BYTES (4ull << 10)
#define GIB (1ull << 30)
#define GIB_REPEATS 3
#define MATRIX_BYTES (256ull << 20) /* the matrix's copies: 0.7 ms each at 400 GB/s */
#define MAX_SIZES 16

typedef struct {
    int dev[2];
    void *src[2], *dst[2];          /* per device, cap bytes */
    unsigned char *host;            /* pinned staging buffer */
    cudaStream_t s[2];
    unsigned long long *count[2];   /* mismatch counters, one per device */
    uint64_t cap;
} bench;

static void sync_both(const bench *b)
{
    for (int d = 0; d < 2; d++) {
        CHECK_CUDA(cudaSetDevice(b->dev[d]));
        CHECK_CUDA(cudaDeviceSynchronize());
    }
    CHECK_CUDA(cudaSetDevice(b->dev[0]));
}

/* Frees what is held. */
static void free_buffers(bench *b)
{
    for (int d = 0; d < 2; d++) {
        CHECK_CUDA(cudaSetDevice(b->dev[d]));
        if (b->src[d]) CHECK_CUDA(cudaFree(b->src[d]));
        if (b->dst[d]) CHECK_CUDA(cudaFree(b->dst[d]));
        b->src[d] = b->dst[d] = NULL;
    }
    CHECK_CUDA(cudaSetDevice(b->dev[0]));
    if (b->host) CHECK_CUDA(cudaFreeHost(b->host));
    b->host = NULL;
}

/* Every buffer at cap bytes; false when out of memory (nothing held). */
static bool alloc_buffers(bench *b, uint64_t cap)
{
    bool ok = true;
    b->cap = cap;
    for (int d = 0; d < 2 && ok; d++) {
        CHECK_CUDA(cudaSetDevice(b->dev[d]));
        ok = CUDA_OK_OR_OOM(cudaMalloc(&b->src[d], cap)) && CUDA_OK_OR_OOM(cudaMalloc(&b->dst[d], cap));
    }
    CHECK_CUDA(cudaSetDevice(b->dev[0]));
    void *h = NULL;
    if (ok) ok = CUDA_OK_OR_OOM(cudaMallocHost(&h, cap));
    b->host = (unsigned char *)h;
    if (!ok) {
        free_buffers(b);
        return false;
    }
    for (int d = 0; d < 2; d++) {
        CHECK_CUDA(cudaSetDevice(b->dev[d]));
        mc_pattern_fill_device(b->src[d], cap, d ? SEED1 : SEED0, b->s[d]);
    }
    sync_both(b);
    return true;
}

/* One copy of `bytes` in direction dir by method m; the destination is
 * poisoned first and checked after. Adds mismatches to *bad. Seconds, by the
 * host clock: the copy through the host spans two GPUs' streams, which no
 * pair of events brackets, and one clock keeps the four methods comparable
 * (and the sweep comparable with the committed reference runs). Below about
 * 1 MiB the figure includes the host's launch and synchronization latency;
 * the matrix (support/peer_matrix.cu) times nvbandwidth's way, by events. */
static double one_copy(bench *b, int m, int dir, uint64_t bytes, uint64_t *bad)
{
    const int from = dir == D01 ? 0 : 1, to = 1 - from;
    CHECK_CUDA(cudaSetDevice(b->dev[to]));
    mc_pattern_poison_device(b->dst[to], bytes, b->s[to]);
    sync_both(b);
    double t0 = mc_now_s();
    switch (m) {
    case PEER_OFF:
    case PEER_ON:
        CHECK_CUDA(cudaSetDevice(b->dev[from]));
        CHECK_CUDA(cudaMemcpyPeerAsync(b->dst[to], b->dev[to], b->src[from], b->dev[from], bytes, b->s[from]));
        break;
    case VIA_HOST:
        CHECK_CUDA(cudaSetDevice(b->dev[from]));
        CHECK_CUDA(cudaMemcpyAsync(b->host, b->src[from], bytes, cudaMemcpyDeviceToHost, b->s[from]));
        CHECK_CUDA(cudaStreamSynchronize(b->s[from]));
        CHECK_CUDA(cudaSetDevice(b->dev[to]));
        CHECK_CUDA(cudaMemcpyAsync(b->dst[to], b->host, bytes, cudaMemcpyHostToDevice, b->s[to]));
        break;
    case KERNEL_READ: /* the reader is the destination's GPU: GPU 0 for dir D10 */
        CHECK_CUDA(cudaSetDevice(b->dev[to]));
        mc_pm_launch_read(b->dst[to], b->src[from], bytes, b->s[to]);
        break;
    }
    sync_both(b);
    double t = mc_now_s() - t0;
    CHECK_CUDA(cudaSetDevice(b->dev[to]));
    mc_pattern_check_device(b->dst[to], bytes, from ? SEED1 : SEED0, b->count[to], b->s[to]);
    *bad += mc_pattern_counter_take(b->count[to], b->s[to]);
    CHECK_CUDA(cudaSetDevice(b->dev[0]));
    return t;
}

static void set_peer(const bench *b, bool on)
{
    for (int d = 0; d < 2; d++) {
        CHECK_CUDA(cudaSetDevice(b->dev[d]));
        if (on) CHECK_CUDA(cudaDeviceEnablePeerAccess(b->dev[1 - d], 0));
        else CHECK_CUDA(cudaDeviceDisablePeerAccess(b->dev[1 - d]));
    }
    CHECK_CUDA(cudaSetDevice(b->dev[0]));
}

/* ------------------------------------------------------------ the link */

/* nvidia-smi nvlink -s -i dev: "Link N: R GB/s" per active link. Sets the
 * count and the sum of rates (GB/s one way); -1 when nvidia-smi says nothing. */
static int nvlink_links(int dev, double *sum_GBps)
{
    char cmd[128], line[256];
    snprintf(cmd, sizeof cmd, "nvidia-smi nvlink -s -i %d 2>/dev/null", dev);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    int n = 0;
    *sum_GBps = 0;
    while (fgets(line, sizeof line, p)) {
        int k;
        double r;
        if (sscanf(line, " Link %d: %lf GB/s", &k, &r) == 2) {
            n++;
            *sum_GBps += r;
        }
    }
    return pclose(p) == 0 ? n : -1;
}

/* nvidia-smi topo -m's GPU0 row, for the report. */
static void topo_row(char *out, size_t len)
{
    snprintf(out, len, "unavailable");
    FILE *p = popen("nvidia-smi topo -m 2>/dev/null", "r");
    if (!p) return;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        if (strncmp(line, "GPU0", 4) == 0 || strncmp(line, "\x1b[4mGPU0", 8) == 0) {
            line[strcspn(line, "\r\n")] = '\0';
            for (char *c = line; *c; c++)
                if (*c == '\t') *c = ' ';
            snprintf(out, len, "%s", line);
        }
    }
    pclose(p);
}

static mc_stats bw[NMETH][NDIR][MAX_SIZES];
static bool measured[NMETH][NDIR];

/* --------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    int ndev = 0;
    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    if (ndev < run.opt.device + 2)
        mc_run_waive(&run, "needs two GPUs (devices %d and %d), this machine has %d", run.opt.device,
                     run.opt.device + 1, ndev);
    bench b;
    memset(&b, 0, sizeof b);
    b.dev[0] = run.opt.device;
    b.dev[1] = run.opt.device + 1;
    int can01 = 0, can10 = 0;
    CHECK_CUDA(cudaDeviceCanAccessPeer(&can01, b.dev[0], b.dev[1]));
    CHECK_CUDA(cudaDeviceCanAccessPeer(&can10, b.dev[1], b.dev[0]));
    const bool peer = can01 && can10;
    for (int d = 0; d < 2; d++) {
        CHECK_CUDA(cudaSetDevice(b.dev[d]));
        CHECK_CUDA(cudaStreamCreateWithFlags(&b.s[d], cudaStreamNonBlocking));
        b.count[d] = mc_pattern_counter_new();
    }
    CHECK_CUDA(cudaSetDevice(b.dev[0]));

    uint64_t max_bytes = max_bytes_opt ? max_bytes_opt : run.opt.quick ? (4ull << 20) : GIB;
    uint64_t sizes[MAX_SIZES];
    int nsizes = 0;
    for (uint64_t s = MIN_BYTES; s <= max_bytes && nsizes < MAX_SIZES; s *= 4) sizes[nsizes++] = s;
    while (nsizes > 0 && !alloc_buffers(&b, sizes[nsizes - 1])) {
        mc_emit(&run, "", "bytes", (double)sizes[nsizes - 1], "allocation", "bytes", mc_stats_of(NULL, 0),
                "oom", "two device buffers on each GPU and one pinned host buffer of this size");
        nsizes--;
    }
    if (nsizes == 0) mc_run_waive(&run, "out of memory even for 4 KiB buffers");

    /* Peer access off first (the default), then on for peer_on and kernel_read. */
    char sz[32], note[256], metric[64];
    uint64_t bad_total = 0;
    for (int m = 0; m < NMETH; m++) {
        if ((m == PEER_ON || m == KERNEL_READ) && !peer) continue;
        if (m == PEER_ON) set_peer(&b, true);
        for (int d = 0; d < NDIR; d++) {
            for (int si = 0; si < nsizes; si++) {
                uint64_t bytes = sizes[si], bad = 0;
                int reps = bytes >= GIB && run.opt.repeats > GIB_REPEATS ? GIB_REPEATS : run.opt.repeats;
                double x[64];
                if (reps > 64) reps = 64;
                for (int w = 0; w < run.opt.warmup; w++) one_copy(&b, m, d, bytes, &bad);
                for (int r = 0; r < reps; r++) x[r] = (double)bytes / one_copy(&b, m, d, bytes, &bad);
                bw[m][d][si] = mc_stats_of(x, (size_t)reps);
                if (bad) {
                    bad_total += bad;
                    mc_verify_failed(&run, METH[m], "%s %s of %llu bytes: %llu words wrong", METH[m],
                                     DIRN[d], (unsigned long long)bytes, (unsigned long long)bad);
                }
                mc_log(&run, "%-11s %s %8s: %7.2f GB/s", METH[m], DIRN[d], mc_bytes_str(bytes, MC_UNIT_GIB, sz, sizeof sz),
                       bw[m][d][si].median / 1e9);
            }
            measured[m][d] = true;
        }
    }
    if (peer) set_peer(&b, false);

    /* ---- rows ---- */
    for (int m = 0; m < NMETH; m++)
        for (int d = 0; d < NDIR; d++) {
            snprintf(metric, sizeof metric, "%s_bandwidth", DIRN[d]);
            if (!measured[m][d]) {
                mc_emit(&run, METH[m], "bytes", 0, metric, "B/s", mc_stats_of(NULL, 0), "waived",
                        "cudaDeviceCanAccessPeer says these GPUs cannot access each other's memory");
                continue;
            }
            for (int si = 0; si < nsizes; si++)
                mc_emit(&run, METH[m], "bytes", (double)sizes[si], metric, "B/s", bw[m][d][si], "ok",
                        m == KERNEL_READ ? "host clock; a kernel on the destination GPU loads the source "
                                           "GPU's memory (16-byte loads)"
                                         : "host clock around the copy and both GPUs' synchronization");
        }
    double links_GBps = 0;
    int links = nvlink_links(b.dev[0], &links_GBps);
    if (links >= 0) {
        mc_emit_value(&run, "link", "", 0, "nvlink_links", "count", links, "nvidia-smi nvlink -s, GPU 0");
        if (links > 0)
            mc_emit_value(&run, "link", "", 0, "nvlink_bandwidth", "B/s", links_GBps * 1e9,
                          "sum of the links' rates, one way (nvidia-smi nvlink -s, GB/s = 1e9 B/s)");
    }
    char topo[512];
    topo_row(topo, sizeof topo);
    mc_emit_finding(&run, "Link from GPU 0 (nvidia-smi topo -m): %s; NVLink links: %d%s.", topo, links,
                    links > 0 ? "" : " (none, or nvidia-smi silent)");

    /* ---- the sweep's findings; its buffers make room for the matrix ---- */
    const int L = nsizes - 1;
    mc_bytes_str(sizes[L], MC_UNIT_GIB, sz, sizeof sz);
    for (int d = 0; d < NDIR; d++)
        mc_emit_finding(&run, "%s at %s (host clock, GB/s = 1e9 B/s): peer access off %.1f, on %s, through "
                        "pinned host memory %.1f.", DIRN[d], sz, bw[PEER_OFF][d][L].median / 1e9,
                        peer ? (snprintf(note, sizeof note, "%.1f", bw[PEER_ON][d][L].median / 1e9), note)
                             : "n/a",
                        bw[VIA_HOST][d][L].median / 1e9);
    free_buffers(&b);
    for (int d = 0; d < 2; d++) {
        CHECK_CUDA(cudaSetDevice(b.dev[d]));
        mc_pattern_counter_free(b.count[d]);
        CHECK_CUDA(cudaStreamDestroy(b.s[d]));
    }

    /* ---- the matrix over every ordered pair ---- */
    static mc_pm_result mx; /* 16 KiB of cells: not on the stack */
    const mc_pm_options mo = {
        .bytes = matrix_bytes_opt ? matrix_bytes_opt : run.opt.quick ? (4ull << 20) : MATRIX_BYTES,
        .samples = run.opt.repeats,
        .warmup = run.opt.warmup,
    };
    mc_pm_measure(&run, &mo, &mx);
    mc_pm_emit(&run, &mx);

    /* ---- verdict ---- */
    mc_pm_sweep sw = {
        .peer = peer,
        .bad = bad_total,
        .off01 = bw[PEER_OFF][D01][L].median,
        .on01 = peer ? bw[PEER_ON][D01][L].median : 0,
        .via_host01 = bw[VIA_HOST][D01][L].median,
        .read_by0 = peer ? bw[KERNEL_READ][D10][L].median : 0,
    };
    snprintf(sw.size, sizeof sw.size, "%s", sz);
    char verdict[2048];
    mc_verdict v = mc_pm_verdict(&sw, &mx, verdict, sizeof verdict);
    mc_emit_verdict(&run, v, "%s", verdict);
    return mc_run_end(&run);
}
