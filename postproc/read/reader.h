/*
 * postproc/read/reader.h: the streaming reader of the trace text format
 * (TEXT_FORMAT.md). It reads the input (plain or zstd, input.h) in large
 * blocks, parses each line in place and hands every record to a stage as
 * soon as it is complete, so memory does not grow with the file. The compressed form is read as the
 * calls it stands for, each with the group's stack.
 *
 * Problems in the input are reported through at_diag: a malformed line is
 * a warning with its line number (an error under --strict, which stops the
 * read); a truncated last record is one warning and is dropped. Input that
 * is no trace (binary, CR-only, or no header nor record first) is one
 * error under --strict, else one warning and an empty result (the read
 * returns 0); --strict also refuses an empty input.
 */
#ifndef AT_READER_H
#define AT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "trace.h"

typedef struct at_read_opts {
    /* Called now and then with the number of bytes of the file read so far
     * (compressed ones for a zstd input; may be NULL). */
    void (*progress)(void *arg, uint64_t bytes);
    void *progress_arg;
    /* Set at the end (may be NULL): how many line starts were read from
     * the scanner's hints (scan.h), for the tests and benchmarks. */
    uint64_t *hints_used;
} at_read_opts;

/* Reads the whole of fd, handing records to sink (not finishing it).
 * Returns 0, or -1 when the read stopped: an I/O error or a --strict error
 * (both reported through d). opts may be NULL. */
int at_read_fd(int fd, at_trace *t, at_stage *sink, at_diag *d, const at_read_opts *opts);

/* The same over a buffer (tests, the fuzz target). */
int at_read_mem(const char *data, size_t len, at_trace *t, at_stage *sink, at_diag *d);

#endif
