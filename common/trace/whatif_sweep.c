/* whatif_sweep.c: the (setting, card) replays of one trace in threads, and
 * their answer (whatif_sweep.h). */
#define _GNU_SOURCE /* asprintf */
#include "whatif_sweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_model.h"
#include "pool.h"
#include "timeline.h"

#define GiB 1073741824.0
#define MiB (1ULL << 20)

ca_whatif_job *ca_whatif_jobs(char *const cards[], size_t n_cards, uint64_t context, size_t *n)
{
    size_t n_sets;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    ca_whatif_job *jobs = calloc(n_sets * (n_cards + 1), sizeof *jobs);
    if (!jobs) return NULL;
    size_t k = 0;
    for (size_t s = 0; s < n_sets; s++) {
        jobs[k++] = (ca_whatif_job){.set = &sets[s], .card = "none", .room = (double)CA_WHATIF_NO_CARD_BYTES,
                                    .capacity = CA_WHATIF_NO_CARD_BYTES};
        for (size_t c = 0; c < n_cards; c++) {
            double room = strtod(cards[c], NULL) * GiB - (double)context;
            if (room < (double)MiB) continue; /* no room at all on this card */
            room = rint(room);                /* whole bytes, as printf("%.0f") rounds */
            jobs[k++] = (ca_whatif_job){.set = &sets[s], .card = cards[c], .room = room,
                                        .capacity = room <= (double)(1ULL << 62) ? (uint64_t)room : 0,
                                        .limit = sets[s].limit_at_capacity};
        }
    }
    *n = k;
    return jobs;
}

int ca_whatif_replay(const ca_trace *t, const char *conf, const ca_whatif_job *j, uint64_t limit, bool summary,
                     FILE *out, FILE *log, ca_replay_result *res)
{
    ca_config cfg;
    char err[512];
    memset(res, 0, sizeof *res);
    if (!(j->room >= 1 && j->room <= (double)(1ULL << 62))) {
        fprintf(log, "replay: bad --capacity '%.0f' (bytes >= 1, at most 2^62)\n", j->room);
        return -1;
    }
    if (ca_replay_config(t, conf, limit ? &limit : NULL, j->capacity, &cfg, err, sizeof err) != 0) {
        fprintf(log, "replay: %s\n", err);
        return -1;
    }
    ca_replay_opts o = ca_replay_defaults();
    o.warn = log;
    o.debug = ca_debug_default();
    o.summary = summary;
    o.what_if = true;
    o.cfg = &cfg;
    o.capacity = j->capacity;
    int rc = ca_replay(t, &o, out, res, err, sizeof err);
    if (rc != 0) fprintf(log, "%s\n", err);
    ca_replay_notes(t, &cfg, res, log);
    return rc;
}

/* ------------------------------------------------------------ the sweep */

typedef struct {
    const ca_trace *t;
    const ca_whatif_sweep_opts *o;
    FILE *null; /* where summaries go: the figures are read from res */
    ca_whatif_job *jobs;
    size_t n;
} sweep;

static void sweep_one(void *ctx, size_t i)
{
    sweep *s = ctx;
    ca_whatif_job *j = &s->jobs[i];
    char *name = NULL;
    if (asprintf(&name, "%s/replay-%s-%s.log", s->o->log_dir, j->set->name, j->card) < 0) name = NULL;
    FILE *log = name ? fopen(name, "w") : NULL;
    bool trace_limit = s->t->cfg.limit_bytes != CA_UNLIMITED;
    uint64_t limit = j->limit || trace_limit ? j->capacity : 0;
    j->ok = log && ca_whatif_replay(s->t, j->set->conf, j, limit, true, s->null, log, &j->res) == 0;
    if (log && fclose(log) != 0) j->ok = false;
    free(name);
    if (s->o->done) s->o->done(s->o->ctx, j, i, s->n);
}

long ca_whatif_sweep(const ca_trace *t, ca_whatif_job *jobs, size_t n, const ca_whatif_sweep_opts *o)
{
    sweep s = {.t = t, .o = o, .null = fopen("/dev/null", "w"), .jobs = jobs, .n = n};
    if (!s.null) return -1;
    for (size_t i = 0; i < n; i++) jobs[i].ok = false;
    mc_pool_run(sweep_one, &s, n, o->threads, o->stop);
    fclose(s.null);
    long failed = 0;
    for (size_t i = 0; i < n; i++) failed += !jobs[i].ok;
    return failed;
}

int ca_whatif_timeline(const ca_trace *t, const ca_conf_preset *set, uint64_t per_point, FILE *out, FILE *log)
{
    FILE *rows = ca_timeline_open(out, per_point);
    ca_whatif_job none = {.set = set, .card = "none", .room = (double)CA_WHATIF_NO_CARD_BYTES,
                          .capacity = CA_WHATIF_NO_CARD_BYTES};
    bool trace_limit = t->cfg.limit_bytes != CA_UNLIMITED;
    ca_replay_result res;
    bool ok = rows && ca_whatif_replay(t, set->conf, &none, trace_limit ? CA_WHATIF_NO_CARD_BYTES : 0, false,
                                       rows, log, &res) == 0;
    if (rows && fclose(rows) != 0) ok = false;
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------ the answer */

bool ca_whatif_fits(const ca_whatif_job *j) { return j->res.ooms == 0; }

bool ca_whatif_same_card(const char *a, const char *b)
{
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (ea != a && !*ea && eb != b && !*eb) return x == y;
    return !strcmp(a, b);
}

ca_whatif_answer *ca_whatif_answers(const ca_whatif_job *jobs, size_t n_jobs, size_t *best)
{
    size_t n_sets;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    ca_whatif_answer *ans = calloc(n_sets ? n_sets : 1, sizeof *ans);
    if (!ans) return NULL;
    for (size_t i = 0, s = 0; i < n_jobs; i++) {
        const ca_whatif_job *j = &jobs[i];
        while (&sets[s] != j->set) s++; /* jobs come in the settings' order */
        ca_whatif_answer *a = &ans[s];
        a->set = j->set;
        double card = strtod(j->card, NULL);
        if (!strcmp(j->card, "none"))
            a->none = j;
        else if (ca_whatif_fits(j) && (!a->smallest || card < strtod(a->smallest, NULL)))
            a->smallest = j->card;
        else if (!ca_whatif_fits(j) && (!a->largest_failing || card > strtod(a->largest_failing, NULL)))
            a->largest_failing = j->card;
    }
    double best_card = 0, best_reserved = 0;
    for (size_t i = 0; i < n_sets; i++) {
        double card = ans[i].smallest ? strtod(ans[i].smallest, NULL) : 1e18;
        double reserved = (double)ans[i].none->res.peak_reserved;
        if (i == 0 || card < best_card || (card == best_card && reserved < best_reserved)) {
            *best = i;
            best_card = card;
            best_reserved = reserved;
        }
    }
    return ans;
}
