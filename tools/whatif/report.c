/* report.c: build/whatif's WHATIF.md (the answer, one page) and its CSV
 * files (whatif.h). */
#include <string.h>

#include "whatif.h"

#define FAILED_LISTED 5 /* refused requests WHATIF.md names per setting */

static double gib(int64_t bytes) { return (double)bytes / GiB; }

void wi_write_sweep_csvs(const ca_whatif_job *jobs, size_t n)
{
    FILE *f = wi_out_open("whatif.csv");
    fputs("setting,conf,card_gib,capacity_bytes,limit_bytes,fits,steps,peak_allocated,peak_reserved,"
          "alloc_retries,ooms,first_oom_step,first_oom_bytes,segments_peak,largest_free_at_peak_reserved,"
          "free_at_peak_reserved\n", f);
    for (size_t i = 0; i < n; i++) {
        const ca_whatif_job *j = &jobs[i];
        const ca_replay_result *r = &j->res;
        char limit[24] = "", step[24] = "", bytes[24] = "";
        if (j->limit) snprintf(limit, sizeof limit, "%llu", (unsigned long long)j->capacity);
        if (r->refused) {
            snprintf(step, sizeof step, "%llu", (unsigned long long)r->first_oom_step);
            snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)r->first_oom_bytes);
        }
        fprintf(f, "%s,\"%s\",%s,%llu,%s,%s,%llu,%lld,%lld,%lld,%lld,%s,%s,%lld,%llu,%llu\n", j->set->name,
                j->set->conf, j->card, (unsigned long long)j->capacity, limit, ca_whatif_fits(j) ? "yes" : "no",
                (unsigned long long)r->steps, (long long)r->peak_allocated, (long long)r->peak_reserved,
                (long long)r->alloc_retries, (long long)r->ooms, step, bytes, (long long)r->segments_peak,
                (unsigned long long)r->largest_free_at_peak_reserved,
                (unsigned long long)r->free_at_peak_reserved);
    }
    wi_out_close(f, "whatif.csv");
    f = wi_out_open("failed.csv");
    fputs("setting,card_gib,step,id,bytes\n", f);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < jobs[i].res.n_failed; k++)
            fprintf(f, "%s,%s,%llu,%llu,%llu\n", jobs[i].set->name, jobs[i].card,
                    (unsigned long long)jobs[i].res.failed[k].step, (unsigned long long)jobs[i].res.failed[k].id,
                    (unsigned long long)jobs[i].res.failed[k].bytes);
    wi_out_close(f, "failed.csv");
}

void wi_write_whatif_md(const wi_report_info *ri, const ca_whatif_answer *ans, size_t n_ans, size_t best,
                        const ca_whatif_job *jobs, size_t n_jobs, const bool drawn[WI_N_CHARTS])
{
    FILE *f = wi_out_open("WHATIF.md");
    const char *base = strrchr(ri->snapshot, '/');
    fprintf(f, "# What if: %s\n\n", base ? base + 1 : ri->snapshot);
    const ca_whatif_answer *d = &ans[0], *b = &ans[best];
    if (!d->smallest)
        fprintf(f, "**Under the default settings the run fits none of the cards tried (up to %s GiB).**",
                ri->cards_top);
    else
        fprintf(f, "**Under the default settings the run fits the %s GiB card** (peak reserved %.2f GiB).",
                d->smallest, gib(d->none->res.peak_reserved));
    if (best == 0)
        fprintf(f, " No other setting fits a smaller card or reserves less.\n");
    else if (!b->smallest)
        fprintf(f, " No setting fits any card tried; the least reserved is `%s` (%.2f GiB).\n", b->set->name,
                gib(b->none->res.peak_reserved));
    else
        fprintf(f, " The best setting is `%s`: it fits the %s GiB card (peak reserved %.2f GiB).\n", b->set->name,
                b->smallest, gib(b->none->res.peak_reserved));
    fprintf(f, "\nA card's room = its nominal size in GiB minus the CUDA context: %llu MiB, %s.\n\n",
            (unsigned long long)(ri->context / MiB), ri->context_from);
    fprintf(f, "| Setting | PYTORCH_CUDA_ALLOC_CONF | Peak allocated | Peak reserved | Smallest card that fits |\n"
               "|---|---|---:|---:|---:|\n");
    for (size_t i = 0; i < n_ans; i++) {
        const ca_whatif_answer *a = &ans[i];
        fprintf(f, "| %s | `%s` | %.2f GiB | %.2f GiB | ", a->set->name, a->set->conf[0] ? a->set->conf : "(none)",
                gib(a->none->res.peak_allocated), gib(a->none->res.peak_reserved));
        if (a->smallest) fprintf(f, "%s GiB |\n", a->smallest); else fprintf(f, "none |\n");
    }
    fprintf(f, "\n## The allocations that fail first\n\n"
               "On the largest card each setting does not fit (step = operation number in the replayed trace):\n\n"
               "| Setting | Card | First refused requests (step: size) |\n"
               "|---|---:|---|\n");
    bool any = false;
    for (size_t i = 0; i < n_ans; i++) {
        const ca_whatif_answer *a = &ans[i];
        if (!a->largest_failing) continue;
        any = true;
        fprintf(f, "| %s | %s GiB | ", a->set->name, a->largest_failing);
        int listed = 0;
        for (size_t k = 0; k < n_jobs; k++) {
            const ca_whatif_job *j = &jobs[k];
            if (j->set != a->set || !ca_whatif_same_card(j->card, a->largest_failing)) continue;
            for (size_t e = 0; e < j->res.n_failed && listed < FAILED_LISTED; e++, listed++)
                fprintf(f, "%s%llu: %.1f MiB", listed ? ", " : "", (unsigned long long)j->res.failed[e].step,
                        (double)j->res.failed[e].bytes / (double)MiB);
        }
        fprintf(f, "%s |\n", listed ? "" : "(none listed)");
    }
    if (!any) fprintf(f, "| (every setting fits every card tried) | | |\n");
    fprintf(f, "\n");
    wi_chart_links(f, drawn);
    if (ri->batch) wi_write_batch_md(f, ri->batch);
    fprintf(f, "\nHow: `scripts/snapshot2trace` turned the %llu operations of the snapshot's device %d into a trace;\n"
               "`build/replay --summary` replayed it through the allocator model under each setting,\n"
               "with no card (1 TiB) and on each card (`--capacity`; garbage collection also with `--limit`\n"
               "at the card's capacity, since PyTorch applies it only under a memory fraction). Figures:\n"
               "`whatif.csv`; per setting: `answer.csv`; refused requests: `failed.csv`; timelines: `timeline_*.csv`.\n"
               "%zu replays in %.1f s.\n",
            (unsigned long long)ri->ops, ri->device, ri->n_jobs, ri->seconds);
    wi_out_close(f, "WHATIF.md");
}

void wi_write_answer_csv(const ca_whatif_answer *ans, size_t n)
{
    FILE *f = wi_out_open("answer.csv");
    fputs("setting,peak_allocated,peak_reserved,smallest_card_gib,largest_failing_card_gib\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s,%lld,%lld,%s,%s\n", ans[i].set->name, (long long)ans[i].none->res.peak_allocated,
                (long long)ans[i].none->res.peak_reserved, ans[i].smallest ? ans[i].smallest : "",
                ans[i].largest_failing ? ans[i].largest_failing : "");
    wi_out_close(f, "answer.csv");
}
