/* options.c: build/whatif's command line (its --help text beside the
 * parser) and the CUDA context a card's room leaves out (whatif.h). */
#define _GNU_SOURCE /* sched_getaffinity */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "results/csv_read.h"
#include "whatif.h"

#define DEFAULT_CARDS "8,12,16,24,32,40,48,80,96,141"
#define MAX_CARDS 32 /* 8 settings x (cards + 1) replays, each with a log */
/* A card no larger than the no-card replay's device (1 TiB), which already
 * says what a card that large would (and keeps a card's room below 2^62). */
#define MAX_CARD_GIB ((double)CA_WHATIF_NO_CARD_BYTES / GiB)
#define MAX_DEVICE 127 /* c10::DeviceIndex is an int8_t */

static const char help_text[] =
    "whatif: replay a PyTorch memory snapshot through the allocator model under\n"
    "each allocator setting and card size, and answer which card it fits and\n"
    "which setting helps (make whatif SNAPSHOT=run.pickle [CONTEXT=BYTES]).\n"
    "\n"
    "  build/whatif [--context BYTES] [--cards 8,12,...] [--device N] [--jobs N]\n"
    "               [--results DIR] [--] SNAPSHOT\n"
    "  build/whatif [options] [--] SNAPSHOT@BATCH SNAPSHOT@BATCH ...\n"
    "  build/whatif --max-batch --limit BYTES [--device N] [--] SNAPSHOT@BATCH SNAPSHOT@BATCH ...\n"
    "\n"
    "SNAPSHOT is what torch.cuda.memory._dump_snapshot() wrote (gzipped or not);\n"
    "--device N picks the device whose history is replayed (default 0; 0..127).\n"
    "Cards: GiB, comma-separated, each above 0 and at most 1024, at most 32 of\n"
    "them; --jobs 1..99; the context must leave the largest card some room.\n"
    "It is converted once (scripts/snapshot2trace) and parsed once, then replayed\n"
    "as build/replay --summary would for each setting (default, expandable\n"
    "segments, max_split_size_mb, roundup_power2_divisions,\n"
    "garbage_collection_threshold) without a size limit and on each card\n"
    "(capacity = card GiB minus the CUDA context), N threads at a time (default:\n"
    "every core). Writes RESULTS/whatif-<UTC time>-<name>/: WHATIF.md (the\n"
    "answer, one page), whatif.csv (one row per setting and card), answer.csv\n"
    "(one row per setting: peaks with no card, smallest card that fits, largest\n"
    "that does not), failed.csv (the first refused requests, at most 10 per\n"
    "replay), timeline_<setting>.csv for the default and the best setting, PNG\n"
    "charts, logs/; then points RESULTS/whatif-latest at it. The folder appears\n"
    "whole or not at all; earlier ones are never touched. Context: --context,\n"
    "else the C11 figure of the latest run (RESULTS/latest/context_cost.csv),\n"
    "else the committed H100 reference's. Progress on stderr. Exit 0; 1 a tool\n"
    "failed; 2 bad input (a snapshot snapshot2trace or the replay refuses: one\n"
    "line naming it and why); 130 interrupted (nothing written).\n"
    "\n"
    "The largest batch: SNAPSHOT@BATCH, two or more snapshots of one program\n"
    "recorded from its start at different batches (or one argument\n"
    "a.pickle@8,b.pickle@16, as make whatif SNAPSHOT= takes it; a file named\n"
    "as given is a plain snapshot). Their requests are paired in order (the\n"
    "same operations, ids and streams, else one line and exit 2), each fitted\n"
    "as a + s*batch before the allocator's rounding (those that follow no such\n"
    "rule are named on stderr, sized by the line through the smallest and\n"
    "largest batch, rounded up), and the program's requests built at any\n"
    "batch. WHATIF.md then adds the largest batch per card and setting (each\n"
    "the largest whose replay refuses nothing; cards as above) and a chart of\n"
    "peak reserved against batch with the cards as lines; the sweep above runs\n"
    "on the snapshot at the largest batch. --max-batch --limit BYTES instead\n"
    "searches the largest batch under one limit with PyTorch's meaning\n"
    "(set_per_process_memory_fraction: reserved bytes under the cap, the CUDA\n"
    "context apart) and prints the peak allocated and reserved at it and at\n"
    "the next batch, then `max_batch N` as its last line; it writes nothing.\n"
    "A request that only a larger batch makes (a reduction's buffer once the\n"
    "rows are many, a workspace of another algorithm) cannot be known from\n"
    "small runs: record the snapshots at batches near the answer to see it.\n";

/* BYTES: digits with an optional fraction, and a K/M/G suffix (KiB/MiB/GiB;
 * also written KB or KiB), rounded to whole bytes; a fraction needs a suffix.
 * Returns the value, or -1 for anything else. */
static double parse_bytes(const char *s)
{
    const char *p = s;
    size_t d = strspn(p, "0123456789");
    if (d == 0) return -1;
    p += d;
    bool frac = *p == '.';
    if (frac) {
        size_t f = strspn(p + 1, "0123456789");
        if (f == 0) return -1;
        p += 1 + f;
    }
    double unit = 1;
    if (*p == 'K' || *p == 'M' || *p == 'G') {
        unit = *p == 'K' ? 1024.0 : *p == 'M' ? 1048576.0 : GiB;
        p++;
        if (!strcmp(p, "B") || !strcmp(p, "iB")) p += strlen(p);
    } else if (frac) {
        return -1;
    }
    if (*p) return -1;
    return rint(strtod(s, NULL) * unit);
}

/* GiB, comma-separated: "16,24,80" or "12.5,16": each a number in
 * (0, MAX_CARD_GIB], at most MAX_CARDS, no two equal (each replay's log is
 * named by its card). Returns NULL and the largest in *largest, or why not. */
static const char *cards_check(const char *s, double *largest)
{
    double seen[MAX_CARDS];
    size_t n = 0;
    *largest = 0;
    for (;;) {
        const char *start = s;
        size_t d = strspn(s, "0123456789");
        if (d == 0) return "GiB, comma-separated, like 16,24,80";
        s += d;
        if (*s == '.') {
            d = strspn(s + 1, "0123456789");
            if (d == 0) return "GiB, comma-separated, like 16,24,80";
            s += 1 + d;
        }
        if (*s != '\0' && *s != ',') return "GiB, comma-separated, like 16,24,80";
        double gib = strtod(start, NULL);
        if (!(gib > 0 && gib <= MAX_CARD_GIB)) return "each card above 0 and at most 1024 GiB";
        if (n == MAX_CARDS) return "at most 32 cards";
        for (size_t i = 0; i < n; i++)
            if (seen[i] == gib) return "a card given twice";
        seen[n++] = gib;
        if (gib > *largest) *largest = gib;
        if (*s++ == '\0') return NULL;
    }
}

/* A snapshot argument: a file as it is named, else a comma-separated list
 * of SNAPSHOT@BATCH (make whatif SNAPSHOT=a.pickle@8,b.pickle@16), each
 * split at its last '@'. */
static void add_snapshot(wi_options *o, const char *a)
{
    struct stat st;
    if (stat(a, &st) == 0 || (!strchr(a, '@'))) {
        if ((o->snapshot && *o->snapshot) || o->n_snaps) wi_die(2, "more than one snapshot given ('%s')", a);
        o->snapshot = a;
        return;
    }
    char *list = wi_fmt("%s", a), *save = NULL;
    for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *at = strrchr(item, '@');
        if (!at) wi_die(2, "'%s': a snapshot of the largest batch is SNAPSHOT@BATCH, like run_b8.pickle@8", item);
        *at = '\0';
        const char *b = at + 1;
        if (!*b || strspn(b, "0123456789") != strlen(b) || strlen(b) > 12 || atoll(b) < 1)
            wi_die(2, "'%s@%s': the batch after '@' must be a whole number >= 1", item, b);
        if (o->snapshot && *o->snapshot) wi_die(2, "more than one snapshot given ('%s')", item);
        if (o->n_snaps == CA_BATCH_MAX_POINTS) wi_die(2, "at most %d snapshots of one program", CA_BATCH_MAX_POINTS);
        for (size_t k = 0; k < o->n_snaps; k++)
            if (o->snaps[k].batch == atoll(b))
                wi_die(2, "'%s' and '%s' are both at batch %s: the fit needs different batches", o->snaps[k].path,
                       item, b);
        o->snaps[o->n_snaps++] = (wi_snap){.path = item, .batch = atoll(b)};
    }
}

/* The largest batch's options agree: two or more snapshots at batches, and
 * --limit with --max-batch; each snapshot readable. In WHATIF.md's mode the
 * sweep runs on the snapshot at the largest batch. */
static void batches_check(wi_options *o)
{
    if (o->have_limit && !o->max_batch) wi_die(2, "--limit goes with --max-batch (see --help)");
    if (o->max_batch && !o->have_limit) wi_die(2, "--max-batch needs --limit BYTES (the cap on reserved memory)");
    if (o->max_batch && o->snapshot && *o->snapshot)
        wi_die(2, "--max-batch needs snapshots at batches, as SNAPSHOT@BATCH, not '%s'", o->snapshot);
    if (o->n_snaps == 1)
        wi_die(2, "one snapshot at a batch ('%s@%lld'): the largest batch needs two or more of one program at "
                  "different batches", o->snaps[0].path, (long long)o->snaps[0].batch);
    if (o->max_batch && o->n_snaps == 0)
        wi_die(2, "--max-batch needs two or more snapshots of one program, as SNAPSHOT@BATCH");
    size_t top = 0;
    for (size_t k = 0; k < o->n_snaps; k++) {
        struct stat st;
        const char *p = o->snaps[k].path;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode) || access(p, R_OK) != 0)
            wi_die(2, "cannot read snapshot '%s'", p);
        if (st.st_size == 0) wi_die(2, "snapshot '%s' is empty", p);
        if (o->snaps[k].batch > o->snaps[top].batch) top = k;
    }
    if (o->n_snaps && !o->max_batch) o->snapshot = o->snaps[top].path;
}

static int core_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 2;
}

void wi_parse_args(int argc, char **argv, wi_options *o)
{
    *o = (wi_options){.cards = wi_fmt("%s", DEFAULT_CARDS), .jobs = core_count()};
    (void)cards_check(o->cards, &o->largest_card);
    bool options = true; /* until "--": a snapshot may start with '-' after it */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!options || a[0] != '-') {
            add_snapshot(o, a);
        } else if (!strcmp(a, "--")) {
            options = false;
        } else if (!strcmp(a, "--context")) {
            if (!v) wi_die(2, "--context needs a number of bytes (K/M/G suffixes allowed)");
            double b = parse_bytes(v);
            if (b < 0) wi_die(2, "bad --context '%s' (bytes, e.g. 549453824 or 524M)", v);
            o->have_context = true;
            o->context_given = b;
            i++;
        } else if (!strcmp(a, "--cards")) {
            if (!v) wi_die(2, "--cards needs a list of GiB like 16,24,80");
            const char *why = cards_check(v, &o->largest_card);
            if (why) wi_die(2, "bad --cards '%.80s' (%s)", v, why);
            o->cards = wi_fmt("%s", v);
            i++;
        } else if (!strcmp(a, "--device")) {
            bool ok = v && v[0] && strspn(v, "0123456789") == strlen(v) && strlen(v) <= 3 && atoi(v) <= MAX_DEVICE;
            if (!ok) wi_die(2, "--device needs a device number, 0..%d", MAX_DEVICE);
            o->device = atoi(v);
            i++;
        } else if (!strcmp(a, "--jobs")) {
            bool ok = v && v[0] >= '1' && v[0] <= '9' &&
                      (v[1] == '\0' || (v[1] >= '0' && v[1] <= '9' && v[2] == '\0'));
            if (!ok) wi_die(2, "--jobs needs 1..99");
            o->jobs = atoi(v);
            i++;
        } else if (!strcmp(a, "--results")) {
            if (!v) wi_die(2, "--results needs a folder");
            o->results = v;
            i++;
        } else if (!strcmp(a, "--max-batch")) {
            o->max_batch = true;
        } else if (!strcmp(a, "--limit")) {
            double b = v ? parse_bytes(v) : -1;
            if (!(b >= (double)MiB && b <= (double)(1ULL << 50)))
                wi_die(2, "--limit needs the cap on reserved bytes, 1 MiB to 1 PiB (e.g. 5960105984 or 22G)");
            o->have_limit = true;
            o->limit = (uint64_t)b;
            i++;
        } else if (!strcmp(a, "--help")) {
            fputs(help_text, stdout);
            exit(MC_EXIT_OK);
        } else {
            wi_die(2, "unknown option '%s' (see --help)", a);
        }
    }
    batches_check(o);
}

/* The folder this program is in (build/, build/san/), from the harness's
 * mc_self_exe. */
static char *own_folder(void)
{
    char exe[PATH_MAX];
    if (mc_self_exe(exe, sizeof exe) != 0) wi_die(2, "cannot tell where this program is (/proc/self/exe)");
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    return wi_fmt("%s", exe);
}

/* The first folder above this program's with scripts/snapshot2trace
 * (build/whatif, build/san/whatif). */
char *wi_find_root(void)
{
    char *dir = own_folder();
    for (char *slash; (slash = strrchr(dir, '/')) != NULL && slash != dir;) {
        *slash = '\0';
        if (access(wi_fmt("%s/scripts/snapshot2trace", dir), F_OK) == 0) return dir;
    }
    wi_die(2, "no scripts/snapshot2trace in any folder above this program: run the whatif of a memclaims checkout");
}

/* build/replay beside this program (the same build), which snapshot2trace
 * asks for the allocator settings' names (replay --settings). */
char *wi_replay_beside(void)
{
    return wi_fmt("%s/replay", own_folder());
}

/* ------------------------------------------------------------ context */

/* C11's context figure (nvidia-smi's memory.used after cudaFree(0) minus
 * before) in a run's context_cost.csv: its text, or NULL. */
static char *c11_context(const char *csv)
{
    FILE *f = fopen(csv, "r");
    if (!f) return NULL;
    char *line = NULL, *found = NULL;
    size_t cap = 0;
    ssize_t len;
    while (!found && (len = getline(&line, &cap, f)) >= 0) {
        if (len > 0 && line[len - 1] == '\n') line[len - 1] = '\0';
        char *c[64];
        int n = mc_csv_split(line, c, 64);
        if (n >= 14 && !strcmp(c[0], "C11") && !strcmp(c[2], "lazy") && !strcmp(c[3], "stage") &&
            !strcmp(c[4], "1") && !strcmp(c[5], "device_used_delta_nvsmi") && !strcmp(c[13], "ok") &&
            c[8][0] && strspn(c[8], "0123456789") == strlen(c[8]))
            found = wi_fmt("%s", c[8]);
    }
    free(line);
    fclose(f);
    return found;
}

char *wi_find_context(wi_options *o, const char *root)
{
    if (o->have_context) {
        if (!(o->context_given <= o->largest_card * GiB - (double)MiB))
            wi_die(2, "context %.0f bytes leaves no room on the largest card (%g GiB)", o->context_given,
                   o->largest_card);
        o->context = (uint64_t)o->context_given;
        return wi_fmt("given with --context");
    }
    char *csvs[2] = {wi_fmt("%s/latest/context_cost.csv", o->results),
                     wi_fmt("%s/results/reference-h100/context_cost.csv", root)};
    char *from = NULL, *text = NULL;
    for (int i = 0; i < 2 && !text; i++) {
        if ((text = c11_context(csvs[i])) == NULL) continue;
        size_t r = strlen(root);
        const char *shown = !strncmp(csvs[i], root, r) && csvs[i][r] == '/' ? csvs[i] + r + 1 : csvs[i];
        from = wi_fmt("C11's measured CUDA context (%s)", shown);
    }
    if (!text)
        wi_die(2, "no context figure: no C11 result in %s/latest or results/reference-h100; give --context BYTES",
               o->results);
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno || !((double)v <= o->largest_card * GiB - (double)MiB))
        wi_die(2, "context %s bytes (%s) leaves no room on the largest card (%g GiB)", text, from, o->largest_card);
    o->context = v;
    return from;
}
