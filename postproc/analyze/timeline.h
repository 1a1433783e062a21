/*
 * postproc/analyze/timeline.h: what each site did in each interval of the
 * time series (analyze.h): its allocations, bytes, temporaries and the
 * bytes it held at the interval's end. The HTML report reads it to redraw
 * the flame graph and the tables for a range of the chart, and to draw
 * what was live at a chosen moment.
 *
 * Sparse: a site has a tick only for the intervals it changed in, so the
 * size goes with the sites' activity, not with sites x intervals; when the
 * ticks pass AT_AN_MAX_TICKS, the timeline's intervals are made twice as
 * wide as the series' (`shift`), as often as it takes.
 */
#ifndef AT_AN_TIMELINE_H
#define AT_AN_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AT_AN_MAX_TICKS (1u << 18)

typedef struct at_an_tick {
    uint32_t site;
    uint32_t interval;     /* of the timeline: series interval >> shift */
    uint64_t allocations;  /* allocations of the site in the interval */
    uint64_t bytes;        /* their bytes */
    uint64_t temporary;    /* its temporaries released in the interval */
    uint64_t live;         /* bytes the site held at the interval's end */
    uint64_t live_blocks;
} at_an_tick;

typedef struct at_an_timeline at_an_timeline;

at_an_timeline *at_an_timeline_new(void);
void at_an_timeline_free(at_an_timeline *tl);

/* The site changed in series interval `interval`: `allocs` allocations of
 * `bytes` in all (more than 1 in a sampled trace), or a release (allocs 0,
 * temporary or not); live, live_blocks: what it holds after. */
void at_an_timeline_note(at_an_timeline *tl, uint32_t site, uint64_t interval, uint64_t allocs,
                         uint64_t bytes, bool temporary, uint64_t live, uint64_t live_blocks);

/* The series merged its intervals in pairs. */
void at_an_timeline_halve(at_an_timeline *tl);

/* The ticks, by site then interval; *shift: timeline interval k covers
 * series intervals [k << shift, (k + 1) << shift). Valid until freed. */
const at_an_tick *at_an_timeline_ticks(at_an_timeline *tl, size_t *n, unsigned *shift);

#endif
