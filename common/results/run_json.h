/* run_json.h: a run as one JSON document, results.json (docs/RESULTS.md).
 *
 *   { "schema": "memclaims-results/1.0", "run": NAME, "state": "complete"|"interrupted",
 *     "meta": { meta.csv's key: value, ... },
 *     "experiments": [ { "claim", "key", "title", "seed_claim", "method", "rule",
 *                        "state", "exit_code", "seconds", "mode", "verdict", "note",
 *                        "rows": [ { every CSV column by name } ] } ] }
 *
 * Figures are JSON numbers in the row's unit (base units: bytes, s, B/s,
 * ratio); an empty CSV field is null; +-infinity is the string "inf"/"-inf".
 * Uses Debian's cJSON (libcjson-dev). */
#ifndef MC_RUN_JSON_H
#define MC_RUN_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "run_read.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_RESULTS_SCHEMA_NAME "memclaims-results"
#define MC_RESULTS_SCHEMA_MAJOR 1  /* changes when a reader of the old one would misread */
#define MC_RESULTS_SCHEMA_MINOR 0  /* grows when fields are added */

/* The document of a run read by mc_run_read; name is the run's folder name.
 * The state is "interrupted" when interrupted is true or the run stopped
 * half-way (mc_run_interrupted). The caller owns the result (cJSON_Delete). */
cJSON *mc_run_to_json(const mc_run_data *run, const char *name, bool interrupted);

/* The results.json at path, parsed whole and checked (run_json_check.h:
 * a schema this code reads, every field of the type and range its readers
 * take). Returns NULL with one line in err ("PATH: why", "PATH:LINE: not
 * valid JSON") when it is missing, unreadable, empty, not JSON or not such
 * a document. The caller owns the result (cJSON_Delete). */
cJSON *mc_results_read(const char *path, char *err, size_t errlen);

/* The document of run folder dir: its results.json when anything is under
 * that name (mc_results_read), else its CSV files converted in memory
 * (mc_run_read). Returns NULL with one line in err when dir is not a run, a
 * file is unreadable or malformed, or the schema is not one this code reads. */
cJSON *mc_results_load(const char *dir, char *err, size_t errlen);

/* Writes an experiment object's rows back as the tidy CSV (header first),
 * in csv.c's format: the round trip of a CSV written by the suite is exact. */
void mc_results_write_csv(FILE *fp, const cJSON *experiment);

/* A string member, or "" when missing or not a string. */
const char *mc_json_str(const cJSON *obj, const char *name);

#ifdef __cplusplus
}
#endif
#endif
