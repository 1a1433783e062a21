/*
 * postproc/analyze/timeline.c: per-site ticks of the time series
 * (timeline.h).
 *
 * A site's ticks are appended in time order, so its latest tick is the
 * only one that can still change: `open` keeps its position. Halving maps
 * interval k to k / 2 and folds a site's two ticks that land in one
 * (counts add, the later live value stays), in one pass that compacts the
 * array in place and keeps every site's ticks in order.
 *
 * The ticks live in a mapping of their own, AT_AN_MAX_TICKS long from the
 * start, its pages made present in steps as the ticks reach them
 * (at_xmap_lazy, at_xmap_populate): grown by doubling with realloc, a
 * compiler's trace copied 25 MB of them into fresh pages, a page fault
 * every 4 KiB on the analyzer's thread, and the sorted copy faulted again
 * on the reading thread (now one at_xmap).
 */
#include "timeline.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

struct at_an_timeline {
    at_an_tick *v;
    size_t n, cap; /* cap: how many ticks v's mapping holds */
    size_t ready;  /* bytes of v made present */
    uint32_t *open; /* per site: its latest tick, or NONE */
    size_t nopen;
    unsigned shift; /* on top of the series' own merging */
    bool sorted;
};

at_an_timeline *at_an_timeline_new(void)
{
    at_an_timeline *tl = at_xcalloc(1, sizeof(at_an_timeline));
    tl->cap = AT_AN_MAX_TICKS;
    tl->v = at_xmap_lazy(tl->cap * sizeof *tl->v);
    return tl;
}

void at_an_timeline_free(at_an_timeline *tl)
{
    if (!tl)
        return;
    at_xmap_free(tl->v, tl->cap * sizeof *tl->v);
    free(tl->open);
    free(tl);
}

/* The next step of the ticks' mapping made present (at_xmap_step: as
 * much again as is present, from 64 KiB up to 2 MiB at a time). */
static void populate_more(at_an_timeline *tl)
{
    size_t end = tl->ready + at_xmap_step(tl->ready), all = tl->cap * sizeof *tl->v;
    if (end > all)
        end = all;
    at_xmap_populate(tl->v, tl->ready, end);
    tl->ready = end;
}

static void fold(at_an_timeline *tl)
{
    for (size_t i = 0; i < tl->nopen; i++)
        tl->open[i] = NONE;
    size_t w = 0;
    for (size_t r = 0; r < tl->n; r++) {
        at_an_tick t = tl->v[r];
        t.interval /= 2;
        uint32_t o = tl->open[t.site];
        if (o != NONE && tl->v[o].interval == t.interval) {
            at_an_tick *k = &tl->v[o];
            k->allocations += t.allocations;
            k->bytes += t.bytes;
            k->temporary += t.temporary;
            k->live = t.live;
            k->live_blocks = t.live_blocks;
            continue;
        }
        tl->v[w] = t;
        tl->open[t.site] = (uint32_t)w++;
    }
    tl->n = w;
}

void at_an_timeline_halve(at_an_timeline *tl)
{
    fold(tl);
}

void at_an_timeline_note(at_an_timeline *tl, uint32_t site, uint64_t interval, uint64_t allocs,
                         uint64_t bytes, bool temporary, uint64_t live, uint64_t live_blocks)
{
    uint32_t k = (uint32_t)(interval >> tl->shift);
    if (site >= tl->nopen) {
        size_t n = tl->nopen ? tl->nopen : 256;
        while (n <= site)
            n *= 2;
        tl->open = at_xreallocarray(tl->open, n, sizeof *tl->open);
        for (size_t i = tl->nopen; i < n; i++)
            tl->open[i] = NONE;
        tl->nopen = n;
    }
    uint32_t o = tl->open[site];
    if (o == NONE || tl->v[o].interval != k) {
        while (tl->n >= AT_AN_MAX_TICKS) { /* too fine: coarser, then retry */
            tl->shift++;
            fold(tl);
            k = (uint32_t)(interval >> tl->shift);
            o = tl->open[site];
            if (o != NONE && tl->v[o].interval == k)
                break;
        }
        if (o == NONE || tl->v[o].interval != k) {
            if ((tl->n + 1) * sizeof *tl->v > tl->ready)
                populate_more(tl);
            tl->v[tl->n] = (at_an_tick){ .site = site, .interval = k };
            o = tl->open[site] = (uint32_t)tl->n++;
        }
    }
    at_an_tick *t = &tl->v[o];
    t->allocations += allocs;
    t->bytes += bytes;
    t->temporary += temporary;
    t->live = live;
    t->live_blocks = live_blocks;
}

/* The ticks by site, then interval: a stable counting sort by site,
 * since a site's ticks are already in interval order (appended as time
 * goes on, and fold keeps the order). A qsort of them all was 10-15 ms
 * after the last call of a compiler's trace (2^18 ticks, 50,000 sites),
 * for every output, though only the HTML report reads them. */
static void sort_by_site(at_an_timeline *tl)
{
    size_t nsites = 0;
    for (size_t i = 0; i < tl->n; i++)
        if (tl->v[i].site >= nsites)
            nsites = (size_t)tl->v[i].site + 1;
    size_t *start = at_xcalloc(nsites + 1, sizeof *start);
    for (size_t i = 0; i < tl->n; i++)
        start[tl->v[i].site + 1]++;
    for (size_t k = 0; k < nsites; k++)
        start[k + 1] += start[k];
    size_t cap = tl->n ? tl->n : 1;
    at_an_tick *out = at_xmap(cap * sizeof *out);
    for (size_t i = 0; i < tl->n; i++)
        out[start[tl->v[i].site]++] = tl->v[i];
    free(start);
    at_xmap_free(tl->v, tl->cap * sizeof *tl->v);
    tl->v = out;
    tl->cap = cap;
}

const at_an_tick *at_an_timeline_ticks(at_an_timeline *tl, size_t *n, unsigned *shift)
{
    if (!tl->sorted) {
        sort_by_site(tl);
        tl->sorted = true;
    }
    *n = tl->n;
    *shift = tl->shift;
    return tl->v;
}
