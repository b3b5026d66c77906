/* max_batch.c: build/whatif's largest batch (whatif.h): snapshots of one
 * program at two or more batches (SNAPSHOT@BATCH) converted at once,
 * parsed, fitted over the batch (common/trace/batch_fit.h), then either
 * one search under --limit (--max-batch: lines on stdout, nothing written)
 * or a search per setting and card for WHATIF.md's table and chart.
 *
 * A limit is PyTorch's memory fraction: reserved bytes under the cap, the
 * CUDA context apart; a card's room is its size less the context, as the
 * sweep has it (the presets that set a limit take the room as the limit). */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "pool.h"
#include "subprocess.h"
#include "whatif.h"

/* ------------------------------------------------------------ the snapshots */

void wi_fit_batches(const wi_options *o, const ca_trace *t, ca_batch_fit *f)
{
    const ca_trace *tp[CA_BATCH_MAX_POINTS];
    int64_t batches[CA_BATCH_MAX_POINTS];
    const char *names[CA_BATCH_MAX_POINTS];
    for (size_t k = 0; k < o->n_snaps; k++) {
        tp[k] = &t[k];
        batches[k] = o->snaps[k].batch;
        names[k] = wi_fmt("'%s'", o->snaps[k].path);
    }
    char err[768];
    if (ca_batch_fit_build(f, tp, batches, names, o->n_snaps, err, sizeof err) != 0) wi_die(2, "%s", err);
    wi_note("fitted %zu snapshots at batches %lld..%lld: %zu operations (the largest batch's), %zu requests grow "
            "with the batch, %zu follow no rule a + s*batch, %zu only the largest batch makes (held at their size), "
            "%zu operations of the smaller batches left out", o->n_snaps, (long long)f->lo, (long long)f->hi,
            f->tmpl.n_ops, f->n_grow, f->n_nonaffine, f->n_only_top, f->n_dropped);
    const char *top = o->snaps[0].path; /* the template: the snapshot at the largest batch */
    for (size_t k = 0; k < o->n_snaps; k++)
        if (o->snaps[k].batch == f->hi) top = o->snaps[k].path;
    for (size_t i = 0; i < f->n_nonaffine && i < CA_BATCH_MAX_NAMED; i++) {
        char sizes[512] = "";
        size_t n = 0;
        for (size_t k = 0; k < o->n_snaps && n < sizeof sizes; k++)
            n += f->named[i].bytes[k] < 0
                     ? (size_t)snprintf(sizes + n, sizeof sizes - n, "%snone at %lld", k ? ", " : "",
                                        (long long)f->batches[k])
                     : (size_t)snprintf(sizes + n, sizeof sizes - n, "%s%lld at %lld", k ? ", " : "",
                                        (long long)f->named[i].bytes[k], (long long)f->batches[k]);
        wi_note("line %llu of the trace of '%s' follows no rule a + s*batch (%s): sized by the line through "
                "its smallest and the largest batch, rounded up", (unsigned long long)f->named[i].line,
                top, sizes);
    }
}

/* ------------------------------------------------------------ --max-batch */

int wi_max_batch_main(const wi_options *o, const char *convert_path)
{
    const char *tmpdir = getenv("TMPDIR");
    char *work = wi_fmt("%s/memclaims-whatif.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(work)) wi_die(2, "cannot make a temporary folder (%s)", work);
    wi_work = work;
    if (mkdir(wi_fmt("%s/logs", work), 0777) != 0) wi_die(1, "cannot write in %s", work);
    const char *paths[CA_BATCH_MAX_POINTS];
    char *trace_path[CA_BATCH_MAX_POINTS], *log[CA_BATCH_MAX_POINTS];
    for (size_t k = 0; k < o->n_snaps; k++) paths[k] = o->snaps[k].path;
    ca_trace *t = wi_kept_calloc(o->n_snaps, sizeof *t);
    wi_convert(o, convert_path, paths, o->n_snaps, t, trace_path, log);
    ca_batch_fit f;
    wi_fit_batches(o, t, &f);
    for (size_t k = 0; k < o->n_snaps; k++) ca_trace_free(&t[k]);
    ca_config cfg = f.tmpl.cfg;
    cfg.limit_bytes = o->limit;
    ca_trace work_trace;
    ca_batch_work(&f, &work_trace);
    ca_max_batch_result r;
    char err[512];
    /* the device: the limit binds, not the card (a device at least as large) */
    uint64_t capacity = o->limit > CA_REPLAY_DEFAULT_CAPACITY ? o->limit : CA_REPLAY_DEFAULT_CAPACITY;
    if (ca_max_batch(&f, &work_trace, &cfg, capacity, &r, err, sizeof err) != 0)
        wi_die(1, "the replay failed: %s", err);
    wi_note("%d replays", r.replays);
    if (r.max_batch == 0) {
        printf("batch 1: peak allocated %lld, peak reserved %lld (refused under the limit)\n",
               (long long)r.peak_allocated[1], (long long)r.peak_reserved[1]);
    } else {
        printf("batch %lld: peak allocated %lld, peak reserved %lld (fits)\n", (long long)r.max_batch,
               (long long)r.peak_allocated[0], (long long)r.peak_reserved[0]);
        if (r.unbounded)
            printf("batch %lld is as far as the fit goes: every request stays below 1 EiB up to there\n",
                   (long long)r.max_batch);
        else
            printf("batch %lld: peak allocated %lld, peak reserved %lld (refused under the limit)\n",
                   (long long)r.max_batch + 1, (long long)r.peak_allocated[1], (long long)r.peak_reserved[1]);
    }
    printf("max_batch %lld\n", (long long)r.max_batch);
    ca_trace_free(&work_trace);
    ca_batch_fit_free(&f);
    wi_remove_tree(work);
    wi_work = NULL;
    return fflush(stdout) == 0 ? MC_EXIT_OK : MC_EXIT_VERIFY;
}

/* ------------------------------------------------------------ the table */

typedef struct {
    const ca_batch_fit *f;
    const ca_conf_preset *sets;
    size_t n_sets;
    double *room;       /* per card, ascending */
    size_t n_cards;
    wi_batch_cell *cells; /* [set * n_cards + card] */
    bool failed;
    char err[768];
} table_ctx;

/* One setting: its largest batch on each card, smallest card first, each
 * search starting from the last card's answer (a larger card fits at
 * least as much). */
static void table_row(void *ctx, size_t s)
{
    table_ctx *c = ctx;
    ca_trace work;
    ca_batch_work(c->f, &work);
    ca_config cfg;
    char err[512];
    int64_t known = 0;
    for (size_t k = 0; k < c->n_cards; k++) {
        uint64_t room = (uint64_t)c->room[k];
        if (c->room[k] < (double)MiB) continue; /* the context fills the card: nothing fits */
        if (ca_replay_config(&c->f->tmpl, c->sets[s].conf[0] ? c->sets[s].conf : NULL,
                             c->sets[s].limit_at_capacity || c->f->tmpl.cfg.limit_bytes != CA_UNLIMITED ? &room : NULL, room, &cfg, err, sizeof err) != 0) {
            c->failed = true;
            snprintf(c->err, sizeof c->err, "%s: %s", c->sets[s].name, err);
            break;
        }
        ca_max_batch_result r;
        if (ca_max_batch_from(c->f, &work, &cfg, room, known, &r, err, sizeof err) != 0) {
            c->failed = true;
            snprintf(c->err, sizeof c->err, "%s: %s", c->sets[s].name, err);
            break;
        }
        c->cells[s * c->n_cards + k] = (wi_batch_cell){r.max_batch, r.unbounded, r.replays};
        known = r.max_batch;
    }
    ca_trace_free(&work);
}

void wi_batch_table(const ca_batch_fit *f, const double *room, size_t n_cards, int threads, wi_batch_cell *cells)
{
    table_ctx c = {.f = f, .room = (double *)room, .n_cards = n_cards, .cells = cells};
    c.sets = ca_conf_presets(&c.n_sets);
    mc_pool_run(table_row, &c, c.n_sets, threads, mc_spawn_stop_signal);
    wi_stop_if_interrupted();
    if (c.failed) wi_die(1, "a largest-batch replay failed: %s", c.err);
}

/* Peak reserved with no card under the default setting at n batches from 1
 * to top (the chart's curve). */
static void batch_curve(const ca_batch_fit *f, int64_t top, size_t n, int64_t *batch, int64_t *peak_reserved)
{
    ca_trace work;
    ca_batch_work(f, &work);
    ca_config cfg = f->tmpl.cfg;
    char err[512];
    for (size_t i = 0; i < n; i++) {
        batch[i] = 1 + (int64_t)((double)(top - 1) * (double)i / (double)(n - 1));
        bool fits;
        int64_t pa;
        if (ca_batch_replay(f, &work, batch[i], &cfg, CA_WHATIF_NO_CARD_BYTES, &fits, &pa, &peak_reserved[i], err,
                            sizeof err) != 0)
            wi_die(1, "the replay at batch %lld failed: %s", (long long)batch[i], err);
    }
    ca_trace_free(&work);
}

/* ------------------------------------------------------------ WHATIF.md */

#define CURVE_POINTS 40

void wi_batch_section(wi_batch_info *bi, const char *root, const ca_trace *t, int threads)
{
    double t0 = mc_now_s();
    wi_fit_batches(bi->o, t, &bi->fit);
    /* the cards by room, ascending (each search starts from the last answer) */
    size_t n = bi->n_cards, order[64];
    for (size_t k = 0; k < n; k++) order[k] = k;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && bi->room[order[j]] < bi->room[order[j - 1]]; j--) {
            size_t x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    double room[64];
    for (size_t k = 0; k < n; k++) room[k] = bi->room[order[k]];
    size_t n_sets;
    ca_conf_presets(&n_sets);
    wi_batch_cell *sorted = wi_kept_calloc(n_sets * n, sizeof *sorted);
    bi->cells = wi_kept_calloc(n_sets * n, sizeof *bi->cells);
    wi_batch_table(&bi->fit, room, n, threads, sorted);
    for (size_t s = 0; s < n_sets; s++)
        for (size_t k = 0; k < n; k++) bi->cells[s * n + order[k]] = sorted[s * n + k];
    /* the chart: the default's peak reserved up to past the largest card's answer */
    int64_t top = 2;
    for (size_t k = 0; k < n; k++)
        if (bi->cells[k].max_batch + 1 > top) top = bi->cells[k].max_batch + 1;
    top += top / 5;
    if (top > bi->fit.max_batch) top = bi->fit.max_batch;
    int64_t batch[CURVE_POINTS], pr[CURVE_POINTS];
    batch_curve(&bi->fit, top, CURVE_POINTS, batch, pr);
    FILE *f = wi_out_open(".batch_curve.tsv");
    for (size_t i = 0; i < CURVE_POINTS; i++) fprintf(f, "%lld\t%lld\n", (long long)batch[i], (long long)pr[i]);
    wi_out_close(f, ".batch_curve.tsv");
    f = wi_out_open(".batch_cards.tsv");
    for (size_t k = 0; k < n; k++)
        fprintf(f, "%s\t%.0f\t%lld\n", bi->cards[k], bi->room[k], (long long)bi->cells[k].max_batch);
    wi_out_close(f, ".batch_cards.tsv");
    f = wi_out_open("max_batch.csv");
    fputs("setting,card_gib,room_bytes,max_batch,unbounded,replays\n", f);
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    for (size_t s = 0; s < n_sets; s++)
        for (size_t k = 0; k < n; k++) {
            const wi_batch_cell *c = &bi->cells[s * n + k];
            fprintf(f, "%s,%s,%.0f,%lld,%d,%d\n", sets[s].name, bi->cards[k], bi->room[k], (long long)c->max_batch,
                    c->unbounded, c->replays);
        }
    wi_out_close(f, "max_batch.csv");
    bi->drawn = wi_draw_one(root, "max_batch", "curve='.batch_curve.tsv'; cards='.batch_cards.tsv'");
    unlink(wi_fmt("%s/.batch_curve.tsv", wi_work));
    unlink(wi_fmt("%s/.batch_cards.tsv", wi_work));
    bi->seconds = mc_now_s() - t0;
    wi_note("largest batch per card and setting: %zu searches in %.1f s", n_sets * n, bi->seconds);
}

void wi_write_batch_md(FILE *f, const wi_batch_info *bi)
{
    const wi_options *o = bi->o;
    const ca_batch_fit *fit = &bi->fit;
    fprintf(f, "\n## The largest batch per card\n\n"
               "From %zu snapshots of the program at batches ", o->n_snaps);
    for (size_t k = 0; k < o->n_snaps; k++) {
        const char *base = strrchr(o->snaps[k].path, '/');
        fprintf(f, "%s%lld (`%s`)", k ? ", " : "", (long long)o->snaps[k].batch, base ? base + 1 : o->snaps[k].path);
    }
    fprintf(f, ": %zu operations paired in order, %zu requests growing with the batch, each fitted as a + s*batch;"
               " %zu follow no such rule", fit->tmpl.n_ops, fit->n_grow, fit->n_nonaffine);
    if (fit->n_nonaffine)
        fprintf(f, " (sized by the line through batch %lld and %lld, rounded up; whatif names them on stderr)",
                (long long)fit->lo, (long long)fit->hi);
    fprintf(f, ". Each cell is the largest batch whose replay refuses no request on that card (its room: the card"
               " less the CUDA context); a larger batch than the snapshots' is the fit's extrapolation, and a"
               " request only a large batch makes (a reduction's buffer, another algorithm's workspace) is not in"
               " it.\n\n| Setting |");
    for (size_t k = 0; k < bi->n_cards; k++) fprintf(f, " %s GiB |", bi->cards[k]);
    fprintf(f, "\n|---|");
    for (size_t k = 0; k < bi->n_cards; k++) fprintf(f, "---:|");
    fprintf(f, "\n");
    size_t n_sets;
    const ca_conf_preset *sets = ca_conf_presets(&n_sets);
    for (size_t s = 0; s < n_sets; s++) {
        fprintf(f, "| %s |", sets[s].name);
        for (size_t k = 0; k < bi->n_cards; k++) {
            const wi_batch_cell *c = &bi->cells[s * bi->n_cards + k];
            if (c->max_batch == 0) fprintf(f, " none |");
            else fprintf(f, " %s%lld |", c->unbounded ? ">= " : "", (long long)c->max_batch);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
    if (bi->drawn) fprintf(f, "![Peak reserved against batch, the cards as lines](max_batch.png)\n\n");
    fprintf(f, "Per cell: `max_batch.csv`. One limit instead of cards: `scripts/whatif --max-batch --limit BYTES"
               " SNAPSHOT@BATCH ...`. Fit, searches and chart in %.1f s.\n", bi->seconds);
}
