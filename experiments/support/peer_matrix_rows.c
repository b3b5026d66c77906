/* peer_matrix_rows.c: the host side of C22's matrix (peer_matrix.h): metric
 * names, the rows and findings, the host's check of a + b, and the verdict. */
#include "peer_matrix.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "units.h"

const char *const MC_PM_VARIANT[MC_PM_NMETH] = {"matrix_peer_off", "matrix_peer_on", "matrix_kernel_read",
                                                "matrix_combine"};

/* What each method is, for notes and findings. */
static const char *const DOES[MC_PM_NMETH] = {
    "cudaMemcpyPeerAsync on the source GPU's stream, peer access disabled (driver-staged)",
    "cudaMemcpyPeerAsync on the source GPU's stream, peer access enabled both ways",
    "a kernel on the destination GPU loads the source GPU's memory in place (16-byte loads), peer access on",
    "a kernel on the destination GPU computes c = a + b with b on the source GPU, read in place (B/s of b), "
    "peer access on",
};
static const char *const SHORT[MC_PM_NMETH] = {"peer copy, access off", "peer copy, access on",
                                               "kernel reading the other GPU", "a + b with b remote"};

bool mc_pm_pair_peer(const mc_pm_result *m, int i, int j)
{
    return m->can[i][j] && m->can[j][i];
}

uint64_t mc_pm_combine_check_host(const float *c, uint64_t n, uint64_t seed_a, uint64_t seed_b)
{
    uint64_t bad = 0;
    for (uint64_t k = 0; k < n; k++)
        bad += c[k] != mc_pm_value(seed_a, k) + mc_pm_value(seed_b, k);
    return bad;
}

const char *mc_pm_metric(char *buf, size_t len, int src, int dst, const char *what)
{
    snprintf(buf, len, "gpu%d_to_gpu%d_%s", src, dst, what);
    return buf;
}

uint64_t mc_pm_bad_total(const mc_pm_result *m)
{
    uint64_t bad = 0;
    for (int k = 0; k < MC_PM_NMETH; k++)
        for (int i = 0; i < m->n; i++)
            for (int j = 0; j < m->n; j++) bad += m->cell[k][i][j].bad + m->cell[k][i][j].host_bad;
    return bad;
}

/* The measured cells of method k: count, and the lowest, median and highest
 * medians (B/s) with the slowest pair. Returns the count. */
typedef struct {
    int n, slow_src, slow_dst;
    double lo, mid, hi;
} range;

static int range_of(const mc_pm_result *m, int k, range *r)
{
    double v[MC_PM_MAX_GPUS * MC_PM_MAX_GPUS];
    memset(r, 0, sizeof *r);
    for (int i = 0; i < m->n; i++)
        for (int j = 0; j < m->n; j++) {
            const mc_pm_cell *c = &m->cell[k][i][j];
            if (i == j || c->state != MC_PM_OK) continue;
            if (r->n == 0 || c->bw.median < r->lo) {
                r->lo = c->bw.median;
                r->slow_src = i;
                r->slow_dst = j;
            }
            if (r->n == 0 || c->bw.median > r->hi) r->hi = c->bw.median;
            v[r->n++] = c->bw.median;
        }
    if (r->n) r->mid = mc_stats_of(v, (size_t)r->n).median;
    return r->n;
}

void mc_pm_emit(mc_run *run, const mc_pm_result *m)
{
    if (m->n < 2) return;
    char metric[64], note[320], sz[32], csz[32];
    mc_bytes_str(m->bytes, MC_UNIT_GIB, sz, sizeof sz);
    mc_bytes_str(m->combine_bytes, MC_UNIT_GIB, csz, sizeof csz);
    snprintf(note, sizeof note, "GPUs in the bandwidth matrix (of %d visible)", m->visible);
    mc_emit_value(run, "matrix", "", 0, "gpu_count", "count", m->n, note);
    for (int k = 0; k < MC_PM_NMETH; k++)
        for (int i = 0; i < m->n; i++)
            for (int j = 0; j < m->n; j++) {
                const mc_pm_cell *c = &m->cell[k][i][j];
                const double bytes = (double)(k == MC_PM_COMBINE ? m->combine_bytes : m->bytes);
                if (i == j || c->state == MC_PM_NOT_RUN) continue;
                mc_pm_metric(metric, sizeof metric, i, j, "bandwidth");
                if (c->state == MC_PM_NO_PEER) {
                    snprintf(note, sizeof note, "not measurable: cudaDeviceCanAccessPeer(%d, %d) = %d, (%d, %d) = %d",
                             i, j, m->can[i][j], j, i, m->can[j][i]);
                    mc_emit(run, MC_PM_VARIANT[k], "bytes", bytes, metric, "B/s", mc_stats_of(NULL, 0),
                            "no_peer_access", note);
                    continue;
                }
                snprintf(note, sizeof note, "GPU %d -> GPU %d: %s; CUDA events, median of %d samples of %d "
                         "back-to-back operations%s", i, j, DOES[k], m->samples, m->loops,
                         k == MC_PM_PEER_OFF ? "" : " queued behind a spin kernel");
                mc_emit(run, MC_PM_VARIANT[k], "bytes", bytes, metric, "B/s", c->bw,
                        c->state == MC_PM_OK ? "ok" : "failed", note);
                if (c->state == MC_PM_WRONG)
                    mc_verify_failed(run, MC_PM_VARIANT[k], "GPU %d -> GPU %d: %llu words or elements wrong on "
                                     "the device, %llu on the host", i, j, (unsigned long long)c->bad,
                                     (unsigned long long)c->host_bad);
                if (k != MC_PM_COMBINE) continue;
                mc_pm_metric(metric, sizeof metric, i, j, "mismatches");
                snprintf(note, sizeof note, "elements of a + b (b on GPU %d, computed on GPU %d) that differ from "
                         "the host's sum; all %llu checked", i, j,
                         (unsigned long long)(m->combine_bytes / sizeof(float)));
                mc_emit(run, MC_PM_VARIANT[k], "bytes", bytes, metric, "count", mc_stats_one((double)c->host_bad),
                        c->host_bad ? "failed" : "ok", note);
            }
    for (int k = 0; k < MC_PM_NMETH; k++) {
        range r;
        if (!range_of(m, k, &r)) {
            mc_emit_finding(run, "Matrix, %s: no pair measurable.", SHORT[k]);
            continue;
        }
        mc_emit_finding(run, "Matrix at %s, %s (CUDA events, GB/s = 1e9 B/s): %d of %d ordered pairs of %d GPUs; "
                        "median over pairs %.1f, from %.1f (GPU %d -> %d) to %.1f.",
                        k == MC_PM_COMBINE ? csz : sz, SHORT[k], r.n, m->n * (m->n - 1), m->n, r.mid / 1e9,
                        r.lo / 1e9, r.slow_src, r.slow_dst, r.hi / 1e9);
    }
    if (m->visible > m->n)
        mc_emit_finding(run, "The matrix covers the first %d of %d visible GPUs.", m->n, m->visible);
}

/* ------------------------------------------------------------ verdict */

mc_verdict mc_pm_verdict(const mc_pm_sweep *sw, const mc_pm_result *m, char *note, size_t len)
{
    const bool has_m = m && m->n >= 2;
    const uint64_t bad = sw->bad + (has_m ? mc_pm_bad_total(m) : 0);
    if (bad) {
        snprintf(note, len, "%llu words or elements wrong (copies, kernel reads or a + b): the figures are not "
                 "trusted", (unsigned long long)bad);
        return MC_INCONCLUSIVE;
    }
    char head[512], tail[1024] = "", nopeer[512] = "";
    if (!sw->peer)
        snprintf(head, sizeof head, "no peer access between GPU 0 and GPU 1: data reaches the other GPU only by "
                 "a copy; at %s, %.1f GB/s GPU 0 -> 1 (driver-staged peer copy), %.1f GB/s through pinned host "
                 "memory", sw->size, sw->off01 / 1e9, sw->via_host01 / 1e9);
    else
        snprintf(head, sizeof head, "without peer access a copy is needed (%.1f GB/s GPU 0 -> 1 at %s); with it "
                 "a kernel on GPU 0 reads GPU 1's memory in place at %.1f GB/s, and peer copies run at %.1f GB/s",
                 sw->off01 / 1e9, sw->size, sw->read_by0 / 1e9, sw->on01 / 1e9);
    bool any_peer = sw->peer;
    if (has_m) {
        int pairs = 0, peer_pairs = 0;
        size_t used = 0;
        for (int i = 0; i < m->n; i++)
            for (int j = i + 1; j < m->n; j++) {
                pairs++;
                if (mc_pm_pair_peer(m, i, j)) {
                    peer_pairs++;
                } else if (used + 16 < sizeof nopeer) {
                    used += (size_t)snprintf(nopeer + used, sizeof nopeer - used, "%s%d<->%d", used ? ", " : "",
                                             i, j);
                }
            }
        any_peer = peer_pairs > 0;
        range rd, rc;
        range_of(m, MC_PM_KERNEL_READ, &rd);
        range_of(m, MC_PM_COMBINE, &rc);
        char sz[32];
        mc_bytes_str(m->bytes, MC_UNIT_GIB, sz, sizeof sz);
        if (!any_peer)
            snprintf(tail, sizeof tail, "; no pair of the %d GPUs can access each other's memory", m->n);
        else
            snprintf(tail, sizeof tail, "; over the %d ordered pairs of %d GPUs (CUDA events): a kernel read the "
                     "other GPU's memory in place on %d (%s, %.1f to %.1f GB/s, slowest GPU %d -> %d) and computed "
                     "a + b with b remote, every element right (host check), on %d; %s%s",
                     m->n * (m->n - 1), m->n, rd.n, sz, rd.lo / 1e9, rd.hi / 1e9, rd.slow_src, rd.slow_dst, rc.n,
                     peer_pairs == pairs ? "every pair has peer access" : "no peer access (a copy is needed) "
                     "between ", peer_pairs == pairs ? "" : nopeer);
    }
    snprintf(note, len, "%s%s%s", head, tail,
             any_peer ? "; in PyTorch an operation on tensors of two devices still raises "
                        "(tests/torch/peer_reference.py)" : "");
    return any_peer ? MC_HOLDS_PARTLY : MC_HOLDS;
}
