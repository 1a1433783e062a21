/*
 * postproc/export/export_stage.h: the last stage when --format asks for an export
 * instead of the trace text: it collects the allocations that reach it (or
 * the leaks, when the header says filter=leaks) as samples and, at the end
 * of input, writes the profile in the chosen format (export.h).
 */
#ifndef AT_EXPORT_STAGE_H
#define AT_EXPORT_STAGE_H

#include <stdbool.h>

#include "diag.h"
#include "export.h"
#include "trace.h"

typedef enum at_format {
    AT_FORMAT_TEXT,     /* the trace itself: no export stage */
    AT_FORMAT_CALLGRIND,
    AT_FORMAT_WEBGRIND,
    AT_FORMAT_FOLDED,
    AT_FORMAT_REPORT,   /* built on the analyses (analyze/analyze.h) */
    AT_FORMAT_STATS,    /* the same numbers as JSON */
    AT_FORMAT_FLAMEGRAPH,
    AT_FORMAT_HTML,     /* built on the analyses too */
    AT_FORMAT_PPROF,    /* pprof's profile.proto, gzip'd: on the analyses too (pprof.h) */
} at_format;

typedef struct at_export_opts {
    at_format format;
    at_cost cost;       /* folded, flamegraph: --cost */
    bool short_names;   /* folded, flamegraph, html: --short-names */
    unsigned top;       /* report: --top */
    const char *output; /* -o as given (NULL or "-": out_fd is stdout) */
    int out_fd;         /* where -o points, or stdout */
} at_export_opts;

/* Whether a format is printed from the analyses (analyze/analyze.h) by the
 * analysis stage rather than by this one. */
bool at_format_analysed(at_format f);

/* Parses a --format / --cost value; 0 on success. */
int at_format_parse(const char *s, at_format *f);
int at_cost_parse(const char *s, at_cost *c);

/* The stage. Callgrind without -o goes to cachegrind.out.PROCESS.PID in the
 * current directory; webgrind writes the Callgrind file (to -o FILE, or the
 * default name) and then, next to it, the same name + ".webgrind"; the
 * names written are said on stderr. Errors go through d. */
at_stage *at_export_stage_new(const at_export_opts *o, at_trace *t, at_diag *d);
void at_export_stage_free(at_stage *s);

#endif
