/*
 * postproc/export/html.h: the HTML report (--format html): one self-contained
 * page with the summary, memory over time, an interactive flame graph and
 * the ranked tables, drawn from the analyses (analyze/analyze.h).
 */
#ifndef AT_HTML_H
#define AT_HTML_H

#include <stdbool.h>
#include <stdio.h>

#include "analyze.h"

/* Sites listed per ranked table, unless --top says otherwise. */
#define AT_HTML_TOP 25

/* Writes the page for an. t gives the process, the maps and the stack
 * table the names are read from (at_frame_read_stack). With short_names,
 * C++ template arguments are cut to "<>" in the flame graph and the
 * tables' backtraces. The tables list `top` sites each. Returns 0, or -1
 * on a write error (errno set). */
int at_export_html(FILE *out, const at_analysis *an, at_trace *t, bool short_names, unsigned top);

/* The analysis stage's output (at_an_output) for --format html: the page
 * on a copy of fd, so the caller keeps its own descriptor. */
typedef struct at_html_opts {
    int fd;
    bool short_names;
    unsigned top; /* sites per table */
} at_html_opts;
int at_html_print(void *opts, const at_analysis *an, at_trace *t);

#endif
