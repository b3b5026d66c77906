/* report: writes a run's REPORT.md (common/results/report_write.h) from its meta.csv,
 * experiments.tsv, runs.tsv, <key>.csv files and <key>.png charts.
 *
 *   build/report RUN_DIR      RUN_DIR/REPORT.md, under a temporary name, then renamed
 *
 * scripts/report wraps it (make report RUN=...); scripts/run-all calls it at
 * the end of a run, interrupted or not. Exit 0, or 2 with one line on stderr
 * when RUN_DIR is not a run, a file in it is malformed, or REPORT.md cannot
 * be written (then the folder has no new or half REPORT.md). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "csv.h"
#include "results/report_write.h"
#include "results/run_read.h"

static int write_report(const char *dir)
{
    char err[1024];
    mc_run_data run;
    if (mc_run_read(dir, &run, err, sizeof err) != 0) {
        fprintf(stderr, "report: %s\n", err);
        return MC_EXIT_USAGE;
    }
    mc_file f;
    if (mc_file_open(&f, dir, "REPORT.md") != 0) {
        fprintf(stderr, "report: cannot write in '%s': %s\n", dir, strerror(errno));
        mc_run_free(&run);
        return MC_EXIT_USAGE;
    }
    mc_report_write(f.fp, &run);
    mc_run_free(&run);
    if (ferror(f.fp)) {
        fprintf(stderr, "report: cannot write %s/REPORT.md: %s\n", dir, strerror(errno));
        mc_file_abort(&f);
        return MC_EXIT_USAGE;
    }
    if (mc_file_commit(&f) != 0) {
        fprintf(stderr, "report: cannot write %s/REPORT.md: %s\n", dir, strerror(errno));
        return MC_EXIT_USAGE;
    }
    printf("report: %s/REPORT.md\n", dir);
    return MC_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--help")) {
        puts("usage: report RUN_DIR   write RUN_DIR/REPORT.md: the run's verdict table and, per claim,\n"
             "                        the rule and the figures behind the verdict");
        return MC_EXIT_OK;
    }
    if (argc == 2 && argv[1][0] != '-') return write_report(argv[1]);
    fprintf(stderr, "report: expected one run folder (usage: report RUN_DIR)\n");
    return MC_EXIT_USAGE;
}
