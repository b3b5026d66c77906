/* run_file.h: opening and reading the files of a run folder, so that what
 * is under a file's name but cannot be read as a file (a directory, a FIFO,
 * a device, a symbolic link that loops or dangles, no permission, a read
 * error, a NUL byte) is refused with one line naming it, never read as an
 * empty or missing file. Nothing under the name at all is "absent": the
 * caller decides whether that file is optional. */
#ifndef MC_RUN_FILE_H
#define MC_RUN_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens path, a regular file, for reading. Returns the stream; or NULL with
 * *absent true when nothing is under that name (err untouched); or NULL with
 * *absent false and "PATH: why" in err. Never blocks (a FIFO is refused
 * before it is read). */
FILE *mc_run_file_open(const char *path, bool *absent, char *err, size_t errlen);

/* Reads the next line of fp into *line (getline's buffer), its line end
 * (\n, \r\n) dropped. Returns 1, 0 at the end of the file, or -1 with
 * "PATH:LINENO: why" in err on a read error or a NUL byte in the line. */
int mc_run_file_line(FILE *fp, char **line, size_t *cap, const char *path, long lineno, char *err,
                     size_t errlen);

/* The whole of fp as one NUL-terminated string (its length in *len), or
 * NULL with "PATH: why" in err on a read error or a NUL byte in it. */
char *mc_run_file_slurp(FILE *fp, const char *path, size_t *len, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
