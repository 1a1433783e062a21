/*
 * postproc/analyze/outputs.h: what alloctrace-postproc prints from an
 * analysis (analyze.h): the terminal report (--format report), the JSON
 * stats (--format stats) and the comparison of two runs (--diff). The
 * field names and the layout are documented in docs/exports.md.
 */
#ifndef AT_AN_OUTPUTS_H
#define AT_AN_OUTPUTS_H

#include <stdbool.h>
#include <stdio.h>

#include "analyze.h"
#include "frame.h"

/* The report: totals, peak, temporaries, memory over time, sizes,
 * contexts, then the top `top` sites by peak, bytes, calls, temporaries
 * and leaks, each with its frames up to main. Returns 0 or -1 (errno). */
int at_an_write_report(FILE *out, const at_analysis *an, at_trace *t, unsigned top);

/* The same numbers as one JSON object. Returns 0 or -1 (errno). */
int at_an_write_stats(FILE *out, const at_analysis *an, at_trace *t, unsigned top);

/* The frames of a site worth showing: innermost first, cut after main
 * (at_gate_frames_to_main). Fills infos (stack->nframes + 1 of them) and
 * returns how many to show. */
uint32_t at_an_site_frames(const at_an_site *s, at_trace *t, at_frame_info *infos);

/* The names of the rows of one table (site_name.c): each site by its first
 * frame outside the allocator and the standard library, with callers added
 * where two rows would read the same. n malloc'ed strings, freed with
 * at_an_site_names_free. */
char **at_an_site_names(const at_an_site *const *sites, size_t n, at_trace *t);
void at_an_site_names_free(char **names, size_t n);

/* Human sizes: "1.5 MiB", "512 B" into buf (at least 32 bytes). */
const char *at_an_human(uint64_t bytes, char *buf, size_t len);

/* An at_an_output (analyze.h) that prints the report or the stats to a
 * copy of fd, so the caller keeps its own. */
typedef struct at_an_print_opts {
    int fd;
    bool stats;   /* --format stats, else the report */
    unsigned top; /* --top */
} at_an_print_opts;
int at_an_print(void *opts, const at_analysis *an, at_trace *t);

/* What at_an_print does with the descriptor, for any output: write(f, arg)
 * on a FILE over a copy of fd, then closed. Returns 0, or -1 with errno
 * set when writing or closing failed. */
int at_an_print_to(int fd, int (*write)(FILE *f, void *arg), void *arg);

/* --diff: compares the analyses of two runs. A site's key is its frames'
 * functions and file names from main inwards (at_baseline_key), so two
 * builds of one program compare; sites of one key are summed. */
typedef struct at_an_diff at_an_diff;

at_an_diff *at_an_diff_new(void);
void at_an_diff_free(at_an_diff *d);
/* Adds a run: which is 0 for OLD, 1 for NEW. */
void at_an_diff_add(at_an_diff *d, int which, const at_analysis *an, at_trace *t);
/* The comparison, the top `top` changed sites by their largest change.
 * Returns 0 or -1 (errno). */
/* NULL, or why the two runs cannot be compared (one sampled, one exact:
 * estimates are never mixed with exact counts). */
const char *at_an_diff_mixed(const at_an_diff *d);
int at_an_diff_write(FILE *out, const at_an_diff *d, const char *old_name, const char *new_name,
                     unsigned top);

/* The comparison as data, for --diff --format html (export/html_diff.c):
 * the changed sites, largest change first, at most `top` (n set to how
 * many changed in all), and each run's totals. */
typedef struct at_an_diff_row {
    const char *key;      /* frames from main inwards, " -> " between */
    at_an_cost cost[2];   /* OLD, NEW */
    bool seen[2];
} at_an_diff_row;
at_an_diff_row *at_an_diff_rows(const at_an_diff *d, unsigned top, size_t *nrows, size_t *changed,
                                size_t *sites);
void at_an_diff_run(const at_an_diff *d, int which, at_an_summary *s, at_an_peak *p,
                    uint64_t *unnamed);

/* --diff SNAP1 SNAP2 on two snapshots of one process (alloctrace
 * --snapshot): per site, the blocks new since SNAP1 and still live, and
 * the leaks new since (memcheck's "leak_check full increased"). A stage
 * in front of each run's analysis keeps the blocks of a leaks-filtered
 * input; at_snap_diff_ready says whether both inputs were snapshots (else
 * the comparison of totals and sites above applies). */
typedef struct at_snap_diff at_snap_diff;
at_snap_diff *at_snap_diff_new(void);
void at_snap_diff_free(at_snap_diff *d);
at_stage *at_snap_diff_stage_new(at_snap_diff *d, int which, at_trace *t, at_stage *next);
void at_snap_diff_stage_free(at_stage *s);
bool at_snap_diff_ready(const at_snap_diff *d);
int at_snap_diff_write(FILE *out, at_snap_diff *d, const char *old_name, const char *new_name,
                       unsigned top);

#endif
