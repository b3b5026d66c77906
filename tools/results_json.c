/* results_json: writes a run's results.json (docs/RESULTS.md) from its
 * meta.csv, experiments.tsv, runs.tsv and <key>.csv files, or prints an
 * experiment's CSV back from a results.json (to check the round trip).
 *
 *   build/results_json [--interrupted] RUN_DIR   RUN_DIR/results.json, atomically
 *   build/results_json --csv KEY RESULTS_JSON     KEY's rows as the tidy CSV, on stdout
 *   build/results_json --csv-dir DIR RESULTS_JSON every experiment's rows as DIR/<key>.csv
 *
 * --interrupted marks the document "state": "interrupted" (the runner says so
 * when it was stopped); a run whose runs.tsv lacks a planned experiment is
 * marked so anyway. Exit 0, or 2 with one line on stderr when RUN_DIR is not
 * a run, a file in it is malformed, or KEY is not in the document. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csv.h"
#include "results/run_json.h"
#include "results/run_read.h"

static int usage(const char *msg)
{
    fprintf(stderr, "results_json: %s\nusage: results_json [--interrupted] RUN_DIR | --csv KEY RESULTS_JSON | --csv-dir DIR RESULTS_JSON\n", msg);
    return MC_EXIT_USAGE;
}

static const char *folder_name(const char *dir)
{
    static char name[256];
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/') start--;
    snprintf(name, sizeof name, "%.*s", (int)(len - start), dir + start);
    return name;
}

static int write_results(const char *dir, bool interrupted)
{
    char err[1024];
    mc_run_data run;
    if (mc_run_read(dir, &run, err, sizeof err) != 0) {
        fprintf(stderr, "results_json: %s\n", err);
        return MC_EXIT_USAGE;
    }
    cJSON *doc = mc_run_to_json(&run, folder_name(dir), interrupted);
    mc_run_free(&run);
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    CHECK(text != NULL, "out of host memory printing JSON");
    mc_file f;
    int rc = MC_EXIT_OK;
    if (mc_file_open(&f, dir, "results.json") != 0) {
        fprintf(stderr, "results_json: cannot write in '%s': %s\n", dir, strerror(errno));
        rc = MC_EXIT_USAGE;
    } else {
        fputs(text, f.fp);
        fputc('\n', f.fp);
        if (mc_file_commit(&f) != 0) {
            fprintf(stderr, "results_json: cannot write %s/results.json: %s\n", dir, strerror(errno));
            rc = MC_EXIT_USAGE;
        }
    }
    free(text);
    if (rc == MC_EXIT_OK) printf("results_json: %s/results.json\n", dir);
    return rc;
}

/* key NULL: every experiment into out_dir/<key>.csv; else key's rows on stdout. */
static int print_csv(const char *key, const char *json_path, const char *out_dir)
{
    char err[1024];
    cJSON *doc = mc_results_read(json_path, err, sizeof err);
    if (!doc) {
        fprintf(stderr, "results_json: %s\n", err);
        return MC_EXIT_USAGE;
    }
    const cJSON *e;
    if (!key) {
        int rc = MC_EXIT_OK;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "experiments")) {
            char path[4096];
            /* mc_results_read let only keys usable as file names through */
            snprintf(path, sizeof path, "%s/%s.csv", out_dir, mc_json_str(e, "key"));
            FILE *out = fopen(path, "w");
            if (!out) {
                fprintf(stderr, "results_json: cannot write %s: %s\n", path, strerror(errno));
                rc = MC_EXIT_USAGE;
                break;
            }
            mc_results_write_csv(out, e);
            if (fclose(out) != 0) {
                fprintf(stderr, "results_json: cannot write %s: %s\n", path, strerror(errno));
                rc = MC_EXIT_USAGE;
                break;
            }
        }
        cJSON_Delete(doc);
        return rc;
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "experiments")) {
        if (strcmp(mc_json_str(e, "key"), key)) continue;
        mc_results_write_csv(stdout, e);
        cJSON_Delete(doc);
        return MC_EXIT_OK;
    }
    fprintf(stderr, "results_json: %s: no experiment '%s'\n", json_path, key);
    cJSON_Delete(doc);
    return MC_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--help")) {
        puts("usage: results_json [--interrupted] RUN_DIR     write RUN_DIR/results.json (docs/RESULTS.md)\n"
             "       results_json --csv KEY RESULTS_JSON      print KEY's rows back as the tidy CSV\n"
             "       results_json --csv-dir DIR RESULTS_JSON  every experiment's rows back as DIR/<key>.csv");
        return MC_EXIT_OK;
    }
    if (argc == 4 && !strcmp(argv[1], "--csv")) return print_csv(argv[2], argv[3], NULL);
    if (argc == 4 && !strcmp(argv[1], "--csv-dir")) return print_csv(NULL, argv[3], argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--interrupted")) return write_results(argv[2], true);
    if (argc == 2 && argv[1][0] != '-') return write_results(argv[1], false);
    return usage("expected a run folder");
}
