/* compare: two runs side by side: per claim the two verdicts, per figure
 * B/A with a label that accounts for both runs' spread (same, higher, lower,
 * ambiguous; the rule is in figure_compare.h and docs/RESULTS.md).
 *
 *   build/compare [--tsv FILE] [--chart FILE] [--max N] RUN_A RUN_B
 *
 * A run is a folder with results.json, or an older run folder without one,
 * converted from its CSV files in memory. Markdown on stdout; --tsv writes
 * every matched figure, --chart the changed ones (higher or lower; largest
 * |log(B/A)| first, at most 30) for plots/compare.gp. scripts/compare wraps
 * it (make compare A=... B=...). Exit 0, or 2 with one line on stderr naming
 * the file (and line) when a folder is not a run, a run was interrupted
 * half-way, a file of it is unreadable or malformed (run_read.h), or a
 * results.json is not a document this code reads (run_json_check.h); then
 * nothing is written. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "results/figure_compare.h"
#include "options.h"
#include "results/run_json.h"

#define CHART_MAX 30

typedef struct {
    char *key;          /* claim, experiment, variant, param, param_value, metric, unit[, #k] */
    const char *claim, *experiment, *variant, *param, *metric, *unit;
    char param_value[40];
    long n;
    size_t order;       /* position in the run */
    mc_figure fig;
} figure_row;

typedef struct {
    const char *dir;
    cJSON *doc;
    figure_row *rows;
    size_t nrows;
} run_side;

typedef struct {
    const figure_row *a, *b;  /* either may be NULL: only in one run */
    mc_label label;
    double ratio;             /* B/A, NaN when undefined */
    double distance;          /* |log(B/A)|, infinity when undefined */
} match;

static const char *help_text =
    "usage: compare [--tsv FILE] [--chart FILE] [--max N] RUN_A RUN_B\n"
    "\n"
    "Compares two memclaims runs (folders with results.json, or older run folders,\n"
    "read from their CSV files). Prints markdown: both runs' GPU, commit and time;\n"
    "per claim the verdicts of A and B; per claim the count of figures that are\n"
    "same, higher, lower or ambiguous in B against A, and the figures that are not\n"
    "the same (largest |log(B/A)| first, --max N per claim, default 5).\n"
    "\n"
    "Figures are matched by (claim, experiment, variant, param, param_value, metric,\n"
    "unit); rows found in one run only are counted. With r = median B / median A and\n"
    "each side's spread s = (max - min) / 2 / |median| (0 for n = 1, the model's exact\n"
    "figures): same if |r - 1| <= max(sA, sB) (or both exact and equal); higher or\n"
    "lower if |r - 1| exceeds both spreads and the [min, max] ranges do not overlap;\n"
    "ambiguous otherwise. Verdicts are compared as words, and so is PyTorch's verdict\n"
    "sentence (run-all --pytorch), with the regime it names (launch-bound, partly\n"
    "launch-bound, GPU-bound, mixed: undecided): the same in both, or not; PyTorch's\n"
    "figures (variant pytorch:...) are figures, judged by the same rule.\n"
    "\n"
    "  --tsv FILE     every matched figure, tab-separated, with its label\n"
    "  --chart FILE   the changed figures (higher, lower), largest change first, at most 30\n"
    "  --max N        non-same figures listed per claim (default 5)\n"
    "\n"
    "Exit: 0 compared; 2 bad input (not a run, a run interrupted half-way, a file\n"
    "of it unreadable, empty or malformed, a number out of range, a results.json of\n"
    "a schema this memclaims cannot read): one line naming the file, nothing written.\n";

static int usage(const char *msg)
{
    fprintf(stderr, "compare: %s (see --help)\n", msg);
    return MC_EXIT_USAGE;
}

/* ------------------------------------------------------------ gathering */

static bool number_of(const cJSON *row, const char *name, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, name);
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return true;
    }
    if (cJSON_IsString(v) && (!strcmp(v->valuestring, "inf") || !strcmp(v->valuestring, "-inf"))) {
        *out = v->valuestring[0] == '-' ? -INFINITY : INFINITY;
        return true;
    }
    return false;
}

/* Every row with a numeric median, except verdict rows (words, compared apart). */
static void gather(run_side *s)
{
    size_t cap = 0;
    const cJSON *e, *row;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(s->doc, "experiments")) {
        cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(e, "rows")) {
            double median;
            if (!strcmp(mc_json_str(row, "metric"), "verdict") || !number_of(row, "median", &median)) continue;
            if (s->nrows == cap) {
                cap = cap ? 2 * cap : 256;
                figure_row *bigger = realloc(s->rows, cap * sizeof *bigger);
                CHECK(bigger != NULL, "out of host memory");
                s->rows = bigger;
            }
            figure_row *f = &s->rows[s->nrows++];
            memset(f, 0, sizeof *f);
            f->order = s->nrows - 1;
            f->claim = mc_json_str(row, "claim");
            f->experiment = mc_json_str(row, "experiment");
            f->variant = mc_json_str(row, "variant");
            f->param = mc_json_str(row, "param");
            f->metric = mc_json_str(row, "metric");
            f->unit = mc_json_str(row, "unit");
            double pv, n = 0;
            if (number_of(row, "param_value", &pv)) snprintf(f->param_value, sizeof f->param_value, "%.10g", pv);
            number_of(row, "n", &n);
            f->n = (long)n; /* a count of 0 to 2^53 - 1: mc_results_load checked it */
            f->fig.median = median;
            f->fig.has_range = number_of(row, "min", &f->fig.min) && number_of(row, "max", &f->fig.max);
            size_t len = strlen(f->claim) + strlen(f->experiment) + strlen(f->variant) + strlen(f->param) +
                         strlen(f->param_value) + strlen(f->metric) + strlen(f->unit) + 32;
            f->key = mc_xmalloc(len);
            snprintf(f->key, len, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", f->claim, f->experiment,
                     f->variant, f->param, f->param_value, f->metric, f->unit);
        }
    }
}

static int by_key(const void *x, const void *y)
{
    return strcmp(((const figure_row *)x)->key, ((const figure_row *)y)->key);
}

/* Same key, then the order in the run (qsort is not stable). */
static int by_key_then_order(const void *x, const void *y)
{
    const figure_row *p = x, *q = y;
    int c = strcmp(p->key, q->key);
    return c ? c : (p->order > q->order) - (p->order < q->order);
}

/* Sorts the rows by key. A key repeated within a run (the same figure
 * twice) is told apart by its occurrence, so the k-th matches the k-th. */
static void sort_keys(run_side *s)
{
    if (s->nrows == 0) return; /* rows is NULL: a run of waived experiments has no figure */
    qsort(s->rows, s->nrows, sizeof *s->rows, by_key_then_order);
    int k = 1;
    for (size_t i = 1; i <= s->nrows; i++) {
        bool repeat = i < s->nrows && !strcmp(s->rows[i].key, s->rows[i - 1].key);
        if (repeat) {
            k++;
            size_t len = strlen(s->rows[i].key) + 16;
            char *key = mc_xmalloc(len);
            snprintf(key, len, "%s\x1f#%d", s->rows[i].key, k);
            free(s->rows[i].key);
            s->rows[i].key = key;
        } else {
            k = 1;
        }
    }
    qsort(s->rows, s->nrows, sizeof *s->rows, by_key);
}


static int load(run_side *s, const char *dir)
{
    char err[1024];
    s->dir = dir;
    s->doc = mc_results_load(dir, err, sizeof err);
    if (!s->doc) {
        fprintf(stderr, "compare: %s\n", err);
        return -1;
    }
    if (!strcmp(mc_json_str(s->doc, "state"), "interrupted")) {
        fprintf(stderr, "compare: %s: the run was interrupted half-way; compare complete runs only\n", dir);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- matching */

static size_t match_all(const run_side *a, const run_side *b, match **out)
{
    match *m = mc_xmalloc((a->nrows + b->nrows + 1) * sizeof *m);
    size_t n = 0;
    for (size_t i = 0; i < a->nrows; i++) {
        const figure_row *fb = b->nrows ? bsearch(&a->rows[i], b->rows, b->nrows, sizeof *b->rows, by_key) : NULL;
        match *x = &m[n++];
        memset(x, 0, sizeof *x);
        x->a = &a->rows[i];
        x->b = fb;
        x->ratio = NAN;
        if (fb) {
            x->label = mc_figure_label(&x->a->fig, &fb->fig, &x->ratio);
            x->distance = isnan(x->ratio) ? INFINITY : fabs(log(x->ratio));
        }
    }
    for (size_t i = 0; i < b->nrows; i++) {
        if (a->nrows && bsearch(&b->rows[i], a->rows, a->nrows, sizeof *a->rows, by_key)) continue;
        match *x = &m[n++];
        memset(x, 0, sizeof *x);
        x->b = &b->rows[i];
        x->ratio = NAN;
    }
    *out = m;
    return n;
}

static const figure_row *either(const match *x) { return x->a ? x->a : x->b; }

/* Non-same matched figures first, largest |log(B/A)| first; then the rest. */
static int by_change(const void *p, const void *q)
{
    const match *x = p, *y = q;
    bool cx = x->a && x->b && x->label != MC_SAME, cy = y->a && y->b && y->label != MC_SAME;
    if (cx != cy) return cx ? -1 : 1;
    if (x->distance != y->distance) return x->distance > y->distance ? -1 : 1;
    return strcmp(either(x)->key, either(y)->key);
}

/* ------------------------------------------------------------- printing */

/* A markdown cell: | would end the cell. */
static void cell(FILE *fp, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputc('\\', fp);
        fputc(*s, fp);
    }
}

static const char *meta(const run_side *s, const char *key)
{
    const char *v = mc_json_str(cJSON_GetObjectItemCaseSensitive(s->doc, "meta"), key);
    return *v ? v : "-";
}

static void print_header(FILE *fp, const run_side *a, const run_side *b)
{
    const run_side *side[2] = {a, b};
    fprintf(fp, "# memclaims compare: %s (A) vs %s (B)\n\n", mc_json_str(a->doc, "run"), mc_json_str(b->doc, "run"));
    fprintf(fp, "| | A | B |\n|---|---|---|\n");
    fprintf(fp, "| folder | %s | %s |\n", a->dir, b->dir);
    fputs("| GPU |", fp);
    for (int i = 0; i < 2; i++) {
        fputc(' ', fp);
        if (!strcmp(meta(side[i], "gpu_status"), "ok")) cell(fp, meta(side[i], "gpu_name"));
        else {
            fputs("no GPU (", fp);
            cell(fp, meta(side[i], "gpu_status"));
            fputc(')', fp);
        }
        fputs(" |", fp);
    }
    fputs("\n| host CPU |", fp);
    for (int i = 0; i < 2; i++) {
        fputc(' ', fp);
        if (strcmp(meta(side[i], "cpu_model"), "-")) {
            cell(fp, meta(side[i], "cpu_model"));
            fprintf(fp, " (%s CPUs)", meta(side[i], "cpu_count"));
        } else {
            fputs("not recorded", fp);
        }
        fputs(" |", fp);
    }
    fprintf(fp, "\n| driver, CUDA runtime | %s, %s | %s, %s |\n", meta(a, "driver_version"),
            meta(a, "cuda_runtime_version"), meta(b, "driver_version"), meta(b, "cuda_runtime_version"));
    fprintf(fp, "| commit | %.12s | %.12s |\n", meta(a, "git_sha"), meta(b, "git_sha"));
    fprintf(fp, "| time (UTC) | %s | %s |\n", meta(a, "utc_time"), meta(b, "utc_time"));
    fprintf(fp, "| schema | %s | %s |\n\n", mc_json_str(a->doc, "schema"), mc_json_str(b->doc, "schema"));
}

static const cJSON *find_exp(const run_side *s, const char *claim, const char *key)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(s->doc, "experiments"))
        if (!strcmp(mc_json_str(e, "claim"), claim) && !strcmp(mc_json_str(e, "key"), key)) return e;
    return NULL;
}

/* An experiment's verdict as the report gives it: the word, "(model, no GPU)"
 * for a model-only run, else its state. */
static void verdict_text(char *buf, size_t len, const cJSON *e)
{
    if (!e) {
        snprintf(buf, len, "-");
        return;
    }
    const char *v = mc_json_str(e, "verdict");
    const char *state = mc_json_str(e, "state");
    if (!*v) snprintf(buf, len, "%s", *state ? state : "not run");
    else if (!strcmp(mc_json_str(e, "mode"), "model-only")) snprintf(buf, len, "%s (model, no GPU)", v);
    else snprintf(buf, len, "%s", v);
}

static void print_verdicts(FILE *fp, const run_side *a, const run_side *b)
{
    fputs("## Verdicts\n\n| Claim | Experiment | A | B | Changed |\n|---|---|---|---|---|\n", fp);
    const run_side *side[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(side[s]->doc, "experiments")) {
            const char *claim = mc_json_str(e, "claim"), *key = mc_json_str(e, "key");
            if (s == 1 && find_exp(a, claim, key)) continue; /* listed with A */
            const cJSON *ea = find_exp(a, claim, key), *eb = find_exp(b, claim, key);
            char va[128], vb[128];
            verdict_text(va, sizeof va, ea);
            verdict_text(vb, sizeof vb, eb);
            const char *changed = !ea ? "only in B" : !eb ? "only in A"
                                : strcmp(mc_json_str(ea, "verdict"), mc_json_str(eb, "verdict")) ? "**yes**" : "no";
            fprintf(fp, "| %s | %s | %s | %s | %s |\n", claim, key, va, vb, changed);
        }
    }
    fputc('\n', fp);
}

/* PyTorch's verdict sentence of an experiment (run-all --pytorch: the
 * pytorch_beside row of param "verdict"), or NULL. Words, compared apart
 * like the verdicts; PyTorch's figures are matched like any other. */
static const char *beside_verdict(const cJSON *e)
{
    const cJSON *row;
    if (!e) return NULL;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(e, "rows"))
        if (!strcmp(mc_json_str(row, "metric"), MC_BESIDE_METRIC) &&
            !strcmp(mc_json_str(row, "param"), MC_BESIDE_VERDICT_PARAM))
            return mc_json_str(row, "note");
    return NULL;
}

/* The regime a PyTorch sentence names (beside.py's regime_clause): "mixed"
 * (the spread of the median idle share straddles an edge), "partly
 * launch-bound", "launch-bound", "GPU-bound", or "none" named. */
static const char *regime_of(const char *sentence)
{
    if (!sentence) return "none";
    if (strstr(sentence, " is mixed")) return "mixed";
    if (strstr(sentence, "partly launch-bound")) return "partly launch-bound";
    if (strstr(sentence, "launch-bound")) return "launch-bound";
    if (strstr(sentence, "GPU-bound")) return "GPU-bound";
    return "none";
}

/* Where either run has PyTorch's verdict sentences: per claim that has one,
 * A's and B's, whether their words differ, and whether they reach the same
 * conclusion: the same regime (or mixed, undecided, in both). Their
 * figures are compared apart, with their spreads, like the suite's. */
static void print_beside(FILE *fp, const run_side *a, const run_side *b)
{
    const run_side *side[2] = {a, b};
    bool any = false, regimes_differ = false;
    for (int s = 0; s < 2; s++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(side[s]->doc, "experiments")) {
            const char *claim = mc_json_str(e, "claim"), *key = mc_json_str(e, "key");
            if (s == 1 && find_exp(a, claim, key)) continue; /* listed with A */
            const char *pa = beside_verdict(find_exp(a, claim, key)), *pb = beside_verdict(find_exp(b, claim, key));
            if (!pa && !pb) continue;
            if (!any)
                fputs("## PyTorch beside\n\n| Claim | Experiment | A | B | Changed | Same regime |\n"
                      "|---|---|---|---|---|---|\n", fp);
            any = true;
            fprintf(fp, "| %s | %s | ", claim, key);
            cell(fp, pa ? pa : "-");
            fputs(" | ", fp);
            cell(fp, pb ? pb : "-");
            fprintf(fp, " | %s | ", !pa ? "only in B" : !pb ? "only in A" : strcmp(pa, pb) ? "**yes**" : "no");
            const char *ra = regime_of(pa), *rb = regime_of(pb);
            if (!pa || !pb) fputs("- |\n", fp);
            else if (!strcmp(ra, rb)) fprintf(fp, "yes (%s) |\n", ra);
            else {
                fprintf(fp, "**no** (%s, %s) |\n", ra, rb);
                regimes_differ = true;
            }
        }
    }
    if (any) fputc('\n', fp);
    if (regimes_differ)
        fputs("Where the regimes differ: a launch-bound step runs at the pace of the host's CPU (Python, "
              "PyTorch's dispatcher, the launches), not the GPU's, so the same GPU on another host, or a "
              "host that is busier, moves the step across an edge; the host CPU row above says whether "
              "the hosts differ.\n\n",
              fp);
}

static void print_figure_name(FILE *fp, const figure_row *f)
{
    cell(fp, f->experiment);
    if (*f->variant) {
        fputc(' ', fp);
        cell(fp, f->variant);
    }
    fputc(' ', fp);
    cell(fp, f->metric);
    if (*f->param) {
        fputc(' ', fp);
        cell(fp, f->param);
        fprintf(fp, "=%s", f->param_value);
    }
}

static void print_value(FILE *fp, const figure_row *f)
{
    fprintf(fp, "%.4g", f->fig.median);
    double s = mc_figure_spread(&f->fig);
    if (s > 0 && isfinite(s)) fprintf(fp, " ±%.2g%%", 100 * s);
    fprintf(fp, " (n=%ld)", f->n);
}

/* Per claim (in A's order, then B's new ones): the counts, then up to max
 * figures that are not the same. m is sorted by by_change. */
static void print_figures(FILE *fp, const run_side *a, const run_side *b, const match *m, size_t nm, int max)
{
    size_t counts[MC_LABELS] = {0}, only_a = 0, only_b = 0;
    for (size_t i = 0; i < nm; i++) {
        if (m[i].a && m[i].b) counts[m[i].label]++;
        else if (m[i].a) only_a++;
        else only_b++;
    }
    fprintf(fp, "## Figures\n\n%zu figures in both runs: %zu same, %zu higher, %zu lower, %zu ambiguous in B "
                "against A; %zu only in A, %zu only in B.\n",
            counts[MC_SAME] + counts[MC_HIGHER] + counts[MC_LOWER] + counts[MC_AMBIGUOUS], counts[MC_SAME],
            counts[MC_HIGHER], counts[MC_LOWER], counts[MC_AMBIGUOUS], only_a, only_b);
    const run_side *side[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(side[s]->doc, "experiments")) {
            const char *claim = mc_json_str(e, "claim"), *key = mc_json_str(e, "key");
            if (s == 1 && find_exp(a, claim, key)) continue;
            size_t c[MC_LABELS] = {0}, oa = 0, ob = 0, shown = 0, listed = 0;
            for (size_t i = 0; i < nm; i++) {
                const figure_row *f = either(&m[i]);
                if (strcmp(f->claim, claim) || strcmp(f->experiment, key)) continue;
                if (m[i].a && m[i].b) c[m[i].label]++;
                else if (m[i].a) oa++;
                else ob++;
            }
            fprintf(fp, "\n**%s %s**: %zu same, %zu higher, %zu lower, %zu ambiguous", claim, key, c[MC_SAME],
                    c[MC_HIGHER], c[MC_LOWER], c[MC_AMBIGUOUS]);
            if (oa || ob) fprintf(fp, "; %zu only in A, %zu only in B", oa, ob);
            fputs(".\n", fp);
            for (size_t i = 0; i < nm; i++) {
                const figure_row *f = either(&m[i]);
                if (!m[i].a || !m[i].b || m[i].label == MC_SAME) continue;
                if (strcmp(f->claim, claim) || strcmp(f->experiment, key)) continue;
                listed++;
                if ((int)shown >= max) continue;
                if (shown++ == 0) fputs("\n| Figure | Unit | A | B | B/A | Label |\n|---|---|---|---|---|---|\n", fp);
                fputs("| ", fp);
                print_figure_name(fp, f);
                fputs(" | ", fp);
                cell(fp, f->unit);
                fputs(" | ", fp);
                print_value(fp, m[i].a);
                fputs(" | ", fp);
                print_value(fp, m[i].b);
                if (isnan(m[i].ratio)) fputs(" | - |", fp);
                else fprintf(fp, " | %.3g |", m[i].ratio);
                fprintf(fp, " %s |\n", mc_label_name(m[i].label));
            }
            if (listed > shown) fprintf(fp, "\n%zu more not the same: see compare.tsv.\n", listed - shown);
        }
    }
}

static void tsv_field(FILE *fp, const char *s)
{
    for (; *s; s++) fputc(*s == '\t' || *s == '\n' ? ' ' : *s, fp);
}

static int write_tsv(const char *path, const match *m, size_t nm, bool changed_only)
{
    FILE *fp = fopen(path, "w");
    if (!fp) {
        perror(path);
        return -1;
    }
    fputs("# label\tclaim\texperiment\tvariant\tparam\tparam_value\tmetric\tunit\tmedian_a\tmedian_b\t"
          "ratio_b_over_a\tspread_a\tspread_b\tname\n", fp);
    size_t written = 0;
    for (size_t i = 0; i < nm; i++) {
        const match *x = &m[i];
        const figure_row *f = either(x);
        if (changed_only && (!x->a || !x->b || (x->label != MC_HIGHER && x->label != MC_LOWER) || isnan(x->ratio)))
            continue;
        if (changed_only && written == CHART_MAX) break;
        fprintf(fp, "%s\t", !x->a ? "only-b" : !x->b ? "only-a" : mc_label_name(x->label));
        const char *text[] = {f->claim, f->experiment, f->variant, f->param, f->param_value, f->metric, f->unit};
        for (size_t t = 0; t < sizeof text / sizeof *text; t++) {
            tsv_field(fp, text[t]);
            fputc('\t', fp);
        }
        if (x->a) fprintf(fp, "%.10g", x->a->fig.median);
        fputc('\t', fp);
        if (x->b) fprintf(fp, "%.10g", x->b->fig.median);
        fputc('\t', fp);
        if (!isnan(x->ratio)) fprintf(fp, "%.10g", x->ratio);
        fprintf(fp, "\t%.4g\t%.4g\t", x->a ? mc_figure_spread(&x->a->fig) : 0.0,
                x->b ? mc_figure_spread(&x->b->fig) : 0.0);
        /* A short name for the chart's axis: claim, variant, metric, param. */
        fprintf(fp, "%s %s%s%s", f->claim, f->variant, *f->variant ? " " : "", f->metric);
        if (*f->param) fprintf(fp, " %s=%s", f->param, f->param_value);
        fputc('\n', fp);
        written++;
    }
    if (fclose(fp) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *tsv = NULL, *chart = NULL, *dirs[2];
    int ndirs = 0, max = 5;
    for (int i = 1; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--help")) {
            fputs(help_text, stdout);
            return MC_EXIT_OK;
        } else if (!strcmp(argv[i], "--tsv") && val) {
            tsv = argv[++i];
        } else if (!strcmp(argv[i], "--chart") && val) {
            chart = argv[++i];
        } else if (!strcmp(argv[i], "--max") && val) {
            if (mc_parse_int(val, 1, 100000, &max) != 0) return usage("--max needs a count >= 1");
            i++;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage("unknown or incomplete option");
        } else if (ndirs < 2) {
            dirs[ndirs++] = argv[i];
        } else {
            return usage("expected two run folders");
        }
    }
    if (ndirs != 2) return usage("expected two run folders, RUN_A RUN_B");

    run_side a = {0}, b = {0};
    if (load(&a, dirs[0]) != 0 || load(&b, dirs[1]) != 0) {
        cJSON_Delete(a.doc);
        cJSON_Delete(b.doc);
        return MC_EXIT_USAGE;
    }
    gather(&a);
    gather(&b);
    sort_keys(&a);
    sort_keys(&b);
    match *m;
    size_t nm = match_all(&a, &b, &m);
    qsort(m, nm, sizeof *m, by_change);

    int rc = MC_EXIT_OK;
    if ((tsv && write_tsv(tsv, m, nm, false) != 0) || (chart && write_tsv(chart, m, nm, true) != 0))
        rc = MC_EXIT_USAGE;
    if (rc == MC_EXIT_OK) {
        print_header(stdout, &a, &b);
        print_verdicts(stdout, &a, &b);
        print_beside(stdout, &a, &b);
        print_figures(stdout, &a, &b, m, nm, max);
    }
    free(m);
    run_side *side[2] = {&a, &b};
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < side[s]->nrows; i++) free(side[s]->rows[i].key);
        free(side[s]->rows);
        cJSON_Delete(side[s]->doc);
    }
    return rc;
}
