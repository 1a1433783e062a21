/*
 * postproc/export/export.h: allocation profiles and the formats people read them
 * in (docs/exports.md, "The rules"): Callgrind (KCachegrind, callgrind_annotate),
 * webgrind's preprocessed file and folded stacks (flame graphs). The
 * terminal report and the JSON stats come from the analyses instead
 * (analyze/analyze.h).
 *
 * Exports consume samples, not trace records, so they do not depend on how
 * the trace was read: a sample is one allocation (or one leak) with its
 * interned stack. at_profile_build turns samples into the cost graph once;
 * every format is written from that profile.
 *
 * The cost model (docs/exports.md, rule 1):
 *   - every frame is a function, (function, file) when resolved, module and
 *     address when not; the allocation function is the leaf and carries the
 *     sample as self cost;
 *   - every caller -> callee step of a stack is a call at the caller's line,
 *     counted at the callee's outermost appearance in that stack only, so
 *     recursion never counts a sample twice into a function's inclusive
 *     cost (callgrind_annotate's inclusive is the sum of calls into a
 *     function: it equals the samples whose stack holds the function);
 *   - a stack whose outermost function is called elsewhere (a truncated
 *     backtrace) gets a synthetic caller, "(truncated backtrace)", so that
 *     function's inclusive cost still counts it.
 */
#ifndef AT_EXPORT_H
#define AT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "maps.h"
#include "stack.h"

/* One allocation (or leak) and where it came from. */
typedef struct at_sample {
    const at_stack *stack; /* innermost first; never NULL */
    const char *alloc_fn;  /* "malloc", "calloc", "operator new", ... */
    uint64_t bytes;
    uint64_t blocks;       /* usually 1; a compressed group may carry more */
} at_sample;

/* What the exports say about the run. Any field may be NULL. */
typedef struct at_export_meta {
    const char *process; /* header's process=, for default file names and the report */
    const char *pid;     /* header's pid= (digits) */
    const char *cmd;     /* Callgrind's cmd: line (the process when unknown) */
    bool leaks;          /* the samples are leaks (filter=leaks in the header) */
    uint64_t sample_interval; /* a sampled trace: the costs are estimates (sampling.h); 0: exact */
} at_export_meta;

typedef enum at_cost {
    AT_COST_BYTES,
    AT_COST_BLOCKS,
} at_cost;

typedef struct at_profile at_profile;

/* The cost graph of n samples. Frames are read with at_frame_read_stack
 * (maps may be NULL); names made here are kept in `arena`, which must
 * outlive the profile. Never NULL (aborts on out-of-memory). */
at_profile *at_profile_build(const at_sample *samples, size_t n, const at_maps *maps,
                             at_stack_table *arena);
void at_profile_free(at_profile *p);

/* Totals of the profile: samples given, bytes and blocks. */
uint64_t at_profile_samples(const at_profile *p);
uint64_t at_profile_bytes(const at_profile *p);
uint64_t at_profile_blocks(const at_profile *p);

/* Callgrind format, docs/exports.md rule 2. Returns 0, or -1 on a write
 * error (errno set). The bytes event switches to KiB when webgrind could
 * not hold a cost in 32 bits (section 3). */
int at_export_callgrind(FILE *out, const at_profile *p, const at_export_meta *meta);

/* webgrind's preprocessed file (version 7) for the Callgrind file that
 * at_export_callgrind writes from the same profile and meta: byte for byte
 * what webgrind's preprocessor makes of it. Returns 0 or -1 (errno). */
int at_export_webgrind(FILE *out, const at_profile *p, const at_export_meta *meta);

/* webgrind's preprocessing of any Callgrind text, as webgrind 1.9 does it
 * (see webgrind.c). On success returns 0 and a malloc'ed result in *out;
 * *max_value is the largest number before its truncation to 32 bits.
 * Returns -1 with a message in err (size errlen) when the text is not of
 * the layout webgrind can read. */
int at_webgrind_preprocess(const char *text, size_t len, unsigned char **out, size_t *outlen,
                           uint64_t *max_value, char *err, size_t errlen);

/* Folded stacks: "main;parse;xstrdup;malloc 1536", outermost first, one
 * line per distinct stack, in order of first appearance; an inlined frame
 * that repeats its caller at one address is one frame (flame.h). With
 * short_names, C++ template arguments are cut to "<>". */
int at_export_folded(FILE *out, const at_profile *p, at_cost cost, bool short_names);

/* A standalone SVG flame graph as flamegraph.pl draws one, with its own
 * zoom and search script (flamegraph.c). meta may be NULL. Returns 0 or
 * -1 (errno). */
int at_export_flamegraph(FILE *out, const at_profile *p, const at_export_meta *meta, at_cost cost,
                         bool short_names);

/* Default file names: "cachegrind.out.PROCESS.PID" and the same with
 * ".webgrind" (PROCESS is the base name of the process, made safe for a
 * file name). Returns a malloc'ed string. */
char *at_export_default_name(const at_export_meta *meta, bool webgrind);

#endif
