/*
 * postproc/filter/filter.h: the callstack filter language of docs/filters.md. A filter
 * set holds parsed filters in order; a filter picks allocations by the list
 * its call stack gives (source locations, files, functions or modules,
 * outermost frame first) and by size.
 *
 * Matching is cached per (filter, distinct stack): the list part of a
 * filter depends only on the stack, so a million allocations over a few
 * thousand stacks cost a few thousand list matches; the size part is
 * checked on every call.
 */
#ifndef AT_FILTER_H
#define AT_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frame.h"
#include "maps.h"
#include "stack.h"

typedef struct at_filter_set at_filter_set; /* parsed filters, in order */

typedef struct at_filter_error {
    char *location;    /* "FILE:LINE:COLUMN", "--filter:COLUMN", or "FILE" when it cannot be read */
    char *message;
    char *source_line; /* the line the error is on (NULL when none) */
    int column;        /* 1-based; 0 when the error has no column */
} at_filter_error;

at_filter_set *at_filter_set_new(void);
void at_filter_set_free(at_filter_set *s);

/* Parses one filter (optionally "NAME: FILTER"). origin names it in errors
 * and labels ("--filter" when NULL). 0 on success; on a syntax error fills
 * err (free with at_filter_error_clear), returns -1 and adds nothing. */
int at_filter_set_add_expr(at_filter_set *s, const char *expr, const char *origin, at_filter_error *err);

/* A filter file: one filter a line, blank lines and '#' comments. A file
 * with any error adds nothing. */
int at_filter_set_add_file(at_filter_set *s, const char *path, at_filter_error *err);

/* The same for a file's contents already in memory (len bytes, may hold
 * NUL bytes, which are an error); `path` names it in errors and labels. */
int at_filter_set_add_text(at_filter_set *s, const char *text, size_t len, const char *path,
                           at_filter_error *err);

void at_filter_error_clear(at_filter_error *err);

/* Prints "LOCATION: message" and, when `tty`, the line and a caret under
 * the column. */
void at_filter_error_print(FILE *out, const at_filter_error *err, bool tty);

size_t at_filter_set_count(const at_filter_set *s);

/* NAME, or "FILE:LINE" for a file's unnamed filter, or the origin
 * ("--filter") for an expression. */
const char *at_filter_label(const at_filter_set *s, size_t i);

/* Whether any sub-filter reads names (callstack, string, functions): the
 * trace must be resolved before such a set can match. */
bool at_filter_set_needs_names(const at_filter_set *s);

/* Does filter i match this stack and size? frames[0 .. stack->nframes)
 * innermost first (from at_frame_read_stack); the matcher reads them
 * outermost first. The list part is cached per (filter, stack->id), so all
 * stacks given to one set must come from one stack table. */
bool at_filter_matches(at_filter_set *s, size_t i, const at_stack *stack,
                       const at_frame_info *frames, uint64_t size);
/* The same without a stack and without the cache. */
bool at_filter_matches_frames(at_filter_set *s, size_t i, const at_frame_info *frames,
                              size_t nframes, uint64_t size);

/* Tests a regex could not decide: PCRE2 stopped at its match, depth or
 * heap limit (a pattern such as (a+)+$ backtracks exponentially). Such a
 * test counts as no match; the first is kept for the report. */
typedef struct at_filter_undecided {
    uint64_t count;  /* (regex, frame) tests that hit a limit */
    char *label;     /* the first one's filter label */
    char *regex;     /* its regex source */
    char *subject;   /* the frame's file, function or module it was tested on */
    char *reason;    /* PCRE2's message */
} at_filter_undecided;

/* What the set's regexes could not decide so far (count 0: nothing). */
const at_filter_undecided *at_filter_set_undecided(const at_filter_set *s);

/* Index of the first filter that matches, or -1. */
long at_filter_set_first_match(at_filter_set *s, const at_stack *stack,
                               const at_frame_info *frames, uint64_t size);

/* The same, reading the frames (from the stack's text and the maps, into
 * `arena`) only when this stack was not seen before: what a run calls per
 * allocation. maps may be NULL. */
long at_filter_set_first_match_stack(at_filter_set *s, const at_stack *stack, const at_maps *maps,
                                     at_stack_table *arena, uint64_t size);

/* Prints filter i in normal form (one line, no newline): canonical
 * predicate spellings, "..." for wildcards (runs merged), ": _" dropped,
 * sizes with the largest exact k/M/G suffix. Parsing it gives the same
 * filter back. */
void at_filter_print(FILE *out, const at_filter_set *s, size_t i);

/* --check-filters warnings: "LABEL: warning: ..." for a filter that can
 * never match or that matches everything; returns the count. */
size_t at_filter_set_lint(const at_filter_set *s, FILE *warnings);

/* What a suppression took, for the report of --suppressions. */
typedef struct at_filter_tally {
    uint64_t blocks;
    uint64_t bytes;
} at_filter_tally;

/* One line per filter "suppressed N block(s), S bytes: LABEL", then the
 * filters that matched nothing. tally has at_filter_set_count entries. */
void at_filter_report_tally(FILE *out, const at_filter_set *s, const at_filter_tally *tally);

#endif
