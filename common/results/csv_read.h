/* csv_read.h: reading back the suite's own tidy CSV (csv.h), one line at a
 * time. The writer quotes per RFC 4180 and flattens notes to one line, so a
 * record never spans lines; a quoted field may hold commas and "" quotes. */
#ifndef MC_CSV_READ_H
#define MC_CSV_READ_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Splits line (without its newline; a trailing '\r' is dropped) into at most
 * max fields, in place: quotes are removed and "" becomes ", and fields[i]
 * points into line. Returns the number of fields, or -1 when the line has
 * more than max fields or a malformed quote (unterminated, or text after a
 * closing quote). */
int mc_csv_split(char *line, char **fields, int max);

/* Parses a CSV number as mc_csv_write_number writes it: decimal or
 * exponent form, "inf", "-inf". Returns false for "" and for anything else
 * that is not a whole number token. */
bool mc_csv_parse_number(const char *s, double *out);

/* The largest count a reader takes (2^53 - 1): every count up to it is a
 * JSON number that reads back exactly (results.json), and a count past it
 * is no sample count of a run. */
#define MC_COUNT_MAX 9007199254740991LL

/* Parses a count as the suite writes one (%zu: decimal digits only, no sign
 * or blank), at most max. Returns false for "" and for anything else,
 * including a count past max (strtol would clamp it silently). */
bool mc_csv_parse_count(const char *s, long long max, long long *out);

#ifdef __cplusplus
}
#endif
#endif
