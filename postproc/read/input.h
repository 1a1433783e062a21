/*
 * postproc/read/input.h: the bytes of a trace, whatever way the file holds
 * them. The reader (reader.c) asks for text; this layer finds out from
 * the first bytes (magic numbers, never the file's name) whether the input
 * is plain text or zstd-compressed and decompresses it as a stream, in
 * bounded memory. Other compressed formats (gzip, xz, bzip2, lz4) are one
 * clear error: the user has to decompress them first.
 */
#ifndef AT_INPUT_H
#define AT_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "diag.h"

typedef struct at_input at_input;

/* An input over a descriptor (not closed by at_input_free). */
at_input *at_input_fd(int fd, at_diag *d);

/* An input over len bytes at data (kept, not copied: tests, fuzzing). */
at_input *at_input_mem(const char *data, size_t len, at_diag *d);

/* Decompresses a zstd input on a thread of its own, ahead of the reads
 * (input.c's top says how); the same bytes and messages, in the same order.
 * Before the first at_input_read. */
void at_input_ahead(at_input *in);

/* Work done on the decompression thread on each buffer it fills, before
 * the reader's thread may read its bytes (scan.c lexes lines there): fn
 * gets the buffer's bytes and the stream offset of the first, and `busy`:
 * whether the reader's thread is behind (half the ring or more is filled
 * and waiting for it), the time to take work off it; when it is not, the
 * bytes are better handed on at once. Without the thread (plain text,
 * memory, no thread to be had) fn is not called. Set before the first
 * read. */
typedef void at_input_scan_fn(void *arg, const char *data, size_t len, uint64_t off, bool busy);
void at_input_scan_ahead(at_input *in, at_input_scan_fn *fn, void *arg);

/* Up to cap bytes of text into buf. Returns the count (> 0), 0 at the end
 * of the input, or -1 when the input cannot be read on: an I/O error, a
 * compressed format that is not read, or corrupt zstd data under --strict
 * (each reported through d once). Corrupt zstd data without --strict is a
 * warning and the end of the input; a zstd stream cut inside a frame is a
 * warning and the end. */
ssize_t at_input_read(at_input *in, char *buf, size_t cap);

/* Bytes of the file read so far (compressed ones for zstd): for progress
 * against the file's size. */
uint64_t at_input_file_bytes(const at_input *in);

void at_input_free(at_input *in);

#endif
