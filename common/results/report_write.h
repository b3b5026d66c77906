/* report_write.h: a run's REPORT.md, the one-page report of a run folder
 * read by run_read.h: the GPU and the commit, what was waived or has no
 * verdict, a verdict table (claim, what the seeds say, what this GPU shows,
 * verdict) and, per claim, how it was measured, the rule, the findings, any
 * failed verification, PyTorch's figures beside the suite's (the
 * MC_BESIDE_METRIC rows of scripts/run-all --pytorch, with one sentence
 * under the table where a run has them, and a column "PyTorch beside" in
 * the table, beside the verdict, where a claim has its
 * MC_BESIDE_VERDICT_PARAM row), the chart and the CSV. An experiment without a
 * verdict row (metric "verdict", the first in its CSV) is marked not run,
 * interrupted, or STATE (exit N). */
#ifndef MC_REPORT_WRITE_H
#define MC_REPORT_WRITE_H

#include <stdio.h>

#include "run_read.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the markdown to fp. The caller checks fp's errors. */
void mc_report_write(FILE *fp, const mc_run_data *run);

#ifdef __cplusplus
}
#endif
#endif
