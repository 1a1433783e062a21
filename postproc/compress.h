/*
 * postproc/compress.h: grouping calls by backtrace (-c), the order of the
 * groups (-s), and cutting backtraces to a depth (-b). Calls whose
 * backtraces are equal (after the cut) form one group, written in the
 * compressed form; with -b alone every call just gets its cut backtrace.
 */
#ifndef AT_COMPRESS_H
#define AT_COMPRESS_H

#include <stdbool.h>

#include "diag.h"
#include "trace.h"

typedef enum at_sort {
    AT_SORT_NONE,      /* by first index */
    AT_SORT_SIZE,      /* total size, largest first */
    AT_SORT_SIZE_ASC,
    AT_SORT_COUNT,     /* number of calls, most first */
    AT_SORT_COUNT_ASC,
} at_sort;

/* "size", "size-asc", "count", "count-asc" -> 0 and *out; else -1. */
int at_sort_parse(const char *s, at_sort *out);

/* group: compress into groups; depth: cut to that many frames (0: no cut).
 * Groups keep their calls in a temporary file beyond a few KiB each; its
 * I/O errors are reported through d. */
at_stage *at_compress_new(at_stage *next, at_trace *t, at_diag *d, bool group, at_sort sort,
                          unsigned depth);
void at_compress_free(at_stage *s);

#endif
