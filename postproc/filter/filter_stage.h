/*
 * postproc/filter/filter_stage.h: the callstack filters as options and as a stage
 * of alloctrace-postproc (trace.h).
 *
 *   --filter EXPR          keep allocations some such filter matches (repeatable)
 *   --filter-file FILE     more of those, one a line
 *   --exclude-filter EXPR  drop allocations it matches (repeatable)
 *   --suppressions FILE    drop what they match; report what each took
 *   --check-filters        print them in normal form, lint, exit
 *
 * The stage runs after resolving (names) and before compressing. A release
 * follows the fate of its allocation: it is dropped when the allocation
 * with its (resource, id) was dropped, and passes otherwise.
 */
#ifndef AT_FILTER_STAGE_H
#define AT_FILTER_STAGE_H

#include <stdbool.h>
#include <stdio.h>

#include "diag.h"
#include "filter.h"
#include "trace.h"

typedef enum at_filter_opt {
    AT_FOPT_FILTER,        /* --filter EXPR */
    AT_FOPT_FILTER_FILE,   /* --filter-file FILE */
    AT_FOPT_EXCLUDE,       /* --exclude-filter EXPR */
    AT_FOPT_SUPPRESSIONS,  /* --suppressions FILE */
} at_filter_opt;

/* Zero-initialised means no filters. */
typedef struct at_filter_opts {
    at_filter_set *keep;     /* --filter, --filter-file */
    at_filter_set *drop;     /* --exclude-filter */
    at_filter_set *suppress; /* --suppressions */
} at_filter_opts;

/* Parses one option's argument into o. 0, or -1 after printing the
 * syntax error ("--filter:COLUMN: ..." or "FILE:LINE:COLUMN: ...", with a
 * caret when stderr is a terminal) to stderr: the run exits with 2. */
int at_filter_opts_add(at_filter_opts *o, at_filter_opt which, const char *arg);

bool at_filter_opts_active(const at_filter_opts *o);

/* Some filter reads functions or files: the run must resolve first. */
bool at_filter_opts_needs_names(const at_filter_opts *o);

/* --check-filters: every filter in normal form on `out` under a comment
 * naming its option, lint warnings on `warn`. Returns the warning count. */
size_t at_filter_opts_check(const at_filter_opts *o, FILE *out, FILE *warn);

void at_filter_opts_free(at_filter_opts *o);

/* The stage. o must outlive it; the suppression report goes to `report`
 * at the end of input. A regex test PCRE2 cannot decide (its limits) is
 * reported once through d: a warning, or an error under --strict. */
at_stage *at_filter_stage_new(at_stage *next, at_trace *t, const at_filter_opts *o, at_diag *d,
                              FILE *report);
void at_filter_stage_free(at_stage *s);

#endif
