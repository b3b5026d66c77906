#include "csv_read.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int mc_csv_split(char *line, char **fields, int max)
{
    size_t len = strlen(line);
    if (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
    int n = 0;
    char *r = line; /* reads */
    char *w = line; /* writes: a field never grows when unquoted */
    for (;;) {
        if (n == max) return -1;
        fields[n++] = w;
        if (*r == '"') {
            r++;
            for (;;) {
                if (*r == '\0') return -1; /* unterminated quote */
                if (*r == '"') {
                    if (r[1] == '"') {
                        *w++ = '"';
                        r += 2;
                        continue;
                    }
                    r++;
                    break;
                }
                *w++ = *r++;
            }
            if (*r != ',' && *r != '\0') return -1; /* text after the closing quote */
        } else {
            while (*r != ',' && *r != '\0') {
                if (*r == '"') return -1; /* a quote inside an unquoted field */
                *w++ = *r++;
            }
        }
        if (*r == '\0') {
            *w = '\0';
            return n;
        }
        *w++ = '\0';
        r++; /* the comma */
    }
}

bool mc_csv_parse_number(const char *s, double *out)
{
    if (!s || !*s) return false;
    if (!strcmp(s, "inf")) {
        *out = INFINITY;
        return true;
    }
    if (!strcmp(s, "-inf")) {
        *out = -INFINITY;
        return true;
    }
    /* strtod alone would also take "nan", hex and leading blanks. */
    if (strpbrk(s, "xXnN \t") || (!isdigit((unsigned char)s[0]) && s[0] != '-' && s[0] != '.'))
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || errno == ERANGE) return false;
    *out = v;
    return true;
}

bool mc_csv_parse_count(const char *s, long long max, long long *out)
{
    if (!s || !*s) return false;
    long long v = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s)) return false;
        int d = *s - '0';
        if (d > max || v > (max - d) / 10) return false; /* v * 10 + d > max, without overflow */
        v = v * 10 + d;
    }
    *out = v;
    return true;
}
