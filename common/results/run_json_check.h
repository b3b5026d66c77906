/* run_json_check.h: whether a results.json document (run_json.h,
 * docs/RESULTS.md) is one this code reads, checked once where it is read, so
 * that its readers (build/compare, build/results_json --csv) take every
 * field as the type and range it has: a schema of our major version and no
 * newer minor, a state, meta's values as strings, at least one experiment
 * with a key usable as a file name (each once), and rows whose fifteen
 * columns are strings, figures (a finite number, null, "inf" or "-inf") and
 * a count n (an integer 0 to MC_COUNT_MAX). Fields a reader does not need
 * may be absent; a field that is there must have its type. */
#ifndef MC_RUN_JSON_CHECK_H
#define MC_RUN_JSON_CHECK_H

#include <stddef.h>

#include <cjson/cJSON.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 0 when this code reads doc, else -1 with one line in err:
 * "WHAT: why", where WHAT names the document (its path) and why names the
 * field ("experiment 3 'key', row 7: n 1e+300 is not a count ..."). */
int mc_results_check(const cJSON *doc, const char *what, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
