/*
 * postproc/read/progress.h: "N of M MB read, R MB/s, T left" on stderr while a
 * large input is read, for a user watching a terminal.
 */
#ifndef AT_PROGRESS_H
#define AT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Inputs smaller than this are read too fast to need a progress line. */
#define AT_PROGRESS_MIN_BYTES (8u << 20)

typedef struct at_progress {
    FILE *out;
    uint64_t total;      /* the input's size in bytes */
    double start, last;  /* monotonic seconds: the start, the last line drawn */
    uint64_t bytes;      /* read so far */
} at_progress;

/* Whether progress is wanted: an input file of `total` bytes, not quiet,
 * and `out` a terminal. */
bool at_progress_wanted(FILE *out, bool quiet, bool regular_file, uint64_t total);

void at_progress_init(at_progress *p, FILE *out, uint64_t total);

/* The reader's callback (at_read_opts.progress): arg is an at_progress. */
void at_progress_update(void *arg, uint64_t bytes);

/* Draws the last line, "done", and ends it. */
void at_progress_end(at_progress *p);

#endif
