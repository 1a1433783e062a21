/*
 * postproc/outfile.h: every file the post-processor writes goes through
 * here (-o, the exports' own files, the gate's JSON, JUnit, log, report
 * and baseline). An output is written to a temporary file beside it and
 * renamed over it only when complete, so an interrupted or failed run
 * never leaves a half-written file nor destroys the old one; SIGINT,
 * SIGTERM and SIGHUP remove the temporary files and say so.
 */
#ifndef AT_OUTFILE_H
#define AT_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

/* A descriptor to write `path` through: a new temporary file in its
 * directory for a regular file or a missing one (with the old file's
 * permissions, or 0666 less the umask), the file itself for anything else
 * (a FIFO, a terminal, /dev/null). -1 with errno set when it cannot be
 * created; nothing is touched then. */
int at_outfile_open(const char *path);

/* Done with fd: when ok, the output replaces `path` (renamed over it);
 * else the temporary file is removed and one line on stderr says the old
 * file was left as it was. Returns 0, or -1 with errno set when closing
 * or renaming failed (the temporary file is removed then too). */
int at_outfile_close(int fd, bool ok);

/* The same for a stdio stream on at_outfile_open's descriptor: ok is
 * also false when the stream had an error (errno EIO then). */
FILE *at_outfile_fopen(const char *path);
int at_outfile_fclose(FILE *f, bool ok);

#endif
