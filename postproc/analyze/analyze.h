/*
 * postproc/analyze/analyze.h: the analyses of a full trace, computed in one
 * streaming pass, as heaptrack_print answers them: peak heap and the stacks
 * holding memory at the peak, temporary allocations, the size histogram,
 * costs per allocation site, memory over time, totals per @CTX context.
 * `--format report`, `--format stats` and `--diff` print them; the HTML
 * report and the SVG flame graph draw them. docs/exports.md documents the
 * numbers and their JSON names.
 *
 * Decisions:
 *   - A site is a distinct interned stack (postproc/stack.h): the flame
 *     graph and the tables read its frames with at_frame_read_stack. Only
 *     calls of the memory resource count (or of the only resource when
 *     none or one is registered), as in the other exports.
 *   - Memory is bounded by the live blocks, the distinct stacks and the
 *     distinct sizes, never by the number of calls: the peak's per-site
 *     contributions are snapshotted lazily (a site's value is saved the
 *     first time it changes after a new peak), and the time series keeps
 *     at most AT_AN_MAX_POINTS intervals, merging neighbours and doubling
 *     their width when it runs out of room.
 *   - Temporary allocation, heaptrack's definition as heaptrack 1.x counts
 *     it: a release that comes right after its own allocation, with no other
 *     allocation or release in between.
 *   - A leaks-only trace (filter=leaks) has lost its releases and its order
 *     in time: it has no peak, no temporaries and no time series, and says
 *     so (summary.leaks_only); leaked = allocated there.
 *   - Times are microseconds since the first call that has one; a clock that
 *     goes back by more than 12 hours is taken to have passed midnight.
 *
 * Everything a result points to (sites, points, sizes, contexts) lives as
 * long as the analyzer; stacks and names live as long as the trace.
 */
#ifndef AT_ANALYZE_H
#define AT_ANALYZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "timeline.h"
#include "trace.h"

#define AT_AN_MAX_POINTS 256   /* time series: intervals kept at most */
#define AT_AN_CLASSES 65       /* histogram: size 0, then [2^(k-1), 2^k) for k = 1..64 */
#define AT_AN_TOP_SIZES 10     /* histogram: most frequent exact sizes kept */
#define AT_AN_NO_CONTEXT 0     /* at_an_context.bit of the calls outside any context */

/* What one site (or one context) costs. */
typedef struct at_an_cost {
    uint64_t calls;         /* allocations */
    uint64_t bytes;         /* bytes allocated */
    uint64_t peak;          /* bytes still live at the moment of the peak */
    uint64_t peak_blocks;   /* blocks still live then */
    uint64_t temporary;     /* temporary allocations */
    uint64_t leaked;        /* bytes never released, libc's caches excepted */
    uint64_t leaked_blocks; /* blocks never released, libc's caches excepted */
    uint64_t cached;        /* bytes never released that are the runtime's own caches
                               (runtime.h): valgrind frees them before it counts */
    uint64_t cached_blocks;
} at_an_cost;

/* The cost an at_an_cost is ranked by. */
typedef enum at_an_key {
    AT_AN_CALLS,
    AT_AN_BYTES,
    AT_AN_PEAK,
    AT_AN_TEMPORARY,
    AT_AN_LEAKED,
    AT_AN_CACHED,   /* libc's caches: never released, never leaked */
} at_an_key;

/* One allocation site: a distinct backtrace. */
typedef struct at_an_site {
    const at_stack *stack;  /* interned in the trace; never NULL (may have no frames) */
    const char *alloc_fn;   /* the allocation function of its first call ("malloc") */
    uint64_t first_index;   /* index of its first call */
    bool cache;             /* the runtime's own cache by its stack (runtime.h); asked
                               only of sites holding blocks at the end */
    at_an_cost cost;
} at_an_site;

typedef struct at_an_summary {
    uint64_t allocations;      /* calls that allocated */
    uint64_t releases;         /* calls that released (realloc counts in both) */
    uint64_t allocated_bytes;
    uint64_t temporary;        /* temporary allocations */
    uint64_t leaked_bytes;     /* live at the end of the trace, libc's caches excepted */
    uint64_t leaked_blocks;
    uint64_t cached_bytes;     /* live at the end and the runtime's own caches: a
                                  category of their own, never leaked (runtime.h) */
    uint64_t cached_blocks;
    uint64_t unknown_releases; /* releases of an id that was not live (allocated before
                                  the trace began, or selected away) */
    uint64_t reused_ids;       /* allocations of an id still live: the older block is
                                  taken as released there (a lost release) */
    uint64_t other_calls;      /* calls of other resources, not analysed */
    uint64_t first_index, last_index; /* of the calls analysed; 0 when none */
    bool has_time;             /* the calls carry times */
    uint64_t duration_us;      /* last time - first time */
    bool leaks_only;           /* filter=leaks: no peak, temporaries or time series */
    uint64_t sample_interval;  /* a sampled trace (sampling.h): every number above and
                                  below is an estimate, temporaries are not estimated;
                                  0: exact */
} at_an_summary;

/* The largest total of live bytes (heaptrack's peak heap consumption). */
typedef struct at_an_peak {
    uint64_t bytes;            /* 0 when nothing was ever live */
    uint64_t blocks;           /* live blocks at that moment */
    uint64_t index;            /* index of the call that reached it first; 0 if none.
                                  Indices count every call, releases too */
    uint64_t allocation;       /* that call is the program's allocation number
                                  `allocation` (1 for the first): what a reader
                                  compares with the allocations' count */
    bool has_time;
    uint64_t time_us;          /* its time, since the first call */
} at_an_peak;

typedef struct at_an_size {
    uint64_t size, count;
} at_an_size;

typedef struct at_an_histogram {
    uint64_t count[AT_AN_CLASSES]; /* allocations per size class (see AT_AN_CLASSES) */
    uint64_t bytes[AT_AN_CLASSES]; /* their bytes */
    const at_an_size *top;         /* most frequent exact sizes, most first; ties: smaller first */
    size_t ntop;                   /* at most AT_AN_TOP_SIZES */
    size_t distinct;               /* distinct sizes seen */
} at_an_histogram;

/* One interval of the time series: [start, start + width) of the axis. */
typedef struct at_an_point {
    uint64_t start;
    uint64_t live_bytes;       /* at the end of the interval */
    uint64_t max_live_bytes;   /* largest within it */
    uint64_t allocations;      /* in it */
    uint64_t allocated_bytes;  /* in it: the allocation rate is this / width */
    uint64_t releases;         /* in it */
    uint64_t temporary;        /* temporary allocations released in it */
} at_an_point;

typedef struct at_an_series {
    bool by_time;              /* axis: microseconds since the first call; else call index */
    uint64_t width;            /* of every interval, in the axis' unit; 0 when n == 0 */
    const at_an_point *points; /* in order; empty intervals are kept (zero counts) */
    size_t n;                  /* 0: no series (leaks-only or empty trace) */
} at_an_series;

/* Totals of one @CTX context; a call in several contexts counts in each. */
typedef struct at_an_context {
    uint32_t bit;              /* AT_AN_NO_CONTEXT for calls outside every context */
    const char *name;          /* registered name; NULL if unregistered or bit 0 */
    uint64_t releases;
    at_an_cost cost;           /* peak: its blocks live at the (global) peak */
} at_an_context;

typedef struct at_analysis {
    at_an_summary summary;
    at_an_peak peak;
    at_an_histogram histogram;
    at_an_series series;
    const at_an_site *sites;   /* every site that allocated, by first call */
    size_t nsites;
    const at_an_context *contexts; /* those with calls; no-context first, then by bit */
    size_t ncontexts;
    const at_an_tick *ticks;   /* per site and interval (timeline.h); none when no series */
    size_t nticks;
    unsigned tick_shift;       /* a tick's interval spans 2^tick_shift series intervals */
} at_analysis;

/* ---- the streaming core (no stage, no trace needed: tests use it) ----- */

typedef struct at_analyzer at_analyzer;

/* leaks_only: the calls are leaks (a filter=leaks trace). */
at_analyzer *at_analyzer_new(bool leaks_only);
/* The calls are a sample taken every `interval` bytes (sampling.h): each
 * allocation counts as the blocks it stands for. Before the first call. */
void at_analyzer_sampled(at_analyzer *a, uint64_t interval);
void at_analyzer_free(at_analyzer *a);

/* Tells which sites are the runtime's own caches (runtime.h), asked at the
 * end of the sites still holding blocks; without it only blocks of the libc
 * leak kind (a leaks-mode trace's exit scan) count as caches. */
typedef bool (*at_an_cache_fn)(void *ctx, const at_stack *s);
void at_analyzer_set_cache(at_analyzer *a, at_an_cache_fn fn, void *ctx);

/* One call of the analysed resource, in index order. */
void at_analyzer_call(at_analyzer *a, const at_call *c);

/* A hint that a call on block `id` comes soon: starts loading its slot of
 * the live-block table, so that the call does not wait on memory (the
 * table outgrows the caches on big traces; see analyze_stage.c's window). */
void at_analyzer_prefetch(const at_analyzer *a, uint64_t id);

/* A call of another resource: only counted (summary.other_calls). */
void at_analyzer_skip(at_analyzer *a);

/* The results; later calls are not allowed. Context names come from t
 * (may be NULL). The analysis lives as long as the analyzer. */
const at_analysis *at_analyzer_finish(at_analyzer *a, const at_trace *t);

/* ---- reading the results ---------------------------------------------- */

uint64_t at_an_cost_get(const at_an_cost *c, at_an_key key);
const char *at_an_key_name(at_an_key key); /* "calls", "bytes", "peak", "temporary", "leaked",
                                              "cached" */

/* The top sites by key, largest first, only those with a non-zero cost;
 * ties by bytes, then by first call. Fills out[0 .. top) and returns how
 * many it filled. */
size_t at_an_rank(const at_analysis *an, at_an_key key, const at_an_site **out, size_t top);

/* The size class of a size (0 for 0, else 1 + floor(log2 size)) and the
 * smallest size of a class. */
unsigned at_an_size_class(uint64_t size);
uint64_t at_an_class_min(unsigned cls);

/* ---- the pipeline stage ----------------------------------------------- */

/* Called once at the end of input with the finished analysis; returns 0,
 * or -1 with errno set when writing failed. */
typedef int (*at_an_output)(void *arg, const at_analysis *an, at_trace *t);

/* The last stage for outputs built on the analysis: it takes every call
 * (also inside compressed groups), and at the end of input calls out.
 * Calls reaching it out of index order (a compressed trace, -c) are kept
 * compactly and replayed in index order at the end, so the numbers never
 * depend on grouping; only then does memory grow with the calls. Errors go
 * through d. */
at_stage *at_analyze_stage_new(at_trace *t, at_diag *d, at_an_output out, void *arg);
void at_analyze_stage_free(at_stage *s);

#endif
