/*
 * postproc/export/pprof.h: --format pprof (pprof.c), pprof's profile.proto
 * gzip'd, built on the analyses like the HTML report.
 */
#ifndef AT_PPROF_H
#define AT_PPROF_H

#include <stdio.h>

#include "analyze.h"
#include "outputs.h"
#include "sampling.h"

typedef struct at_pprof_opts {
    int fd; /* where it goes (-o FILE, or stdout when that is no terminal) */
} at_pprof_opts;

/* The profile of the analysis, gzip'd, to out. Returns 0, or -1 (errno). */
int at_export_pprof(FILE *out, const at_analysis *an, at_trace *t);

/* The analysis stage's output (at_an_output) for --format pprof. */
int at_pprof_print(void *opts, const at_analysis *an, at_trace *t);

#endif
