/*
 * postproc/analyze/analyze.c: the one-pass analyses (analyze.h).
 *
 * Per call the work is O(1) amortised: a live-block table keyed by id
 * (live_table.c: open addressing, doubled in place), a site per stack id,
 * a context per @CTX bit.
 *
 * Peak contributions without a second pass: every new peak starts a new
 * epoch. A site or context remembers the epoch in which it last saved its
 * value; before it changes, if the epoch moved on since, its current value
 * is what it held at the latest peak (it did not change since), so it is
 * saved then. At the end, whatever did not change since the last peak
 * holds its peak value still. heaptrack gets the same numbers by reading
 * the file twice.
 *
 * Time series: intervals of a fixed width from the first call; when the
 * next call falls beyond AT_AN_MAX_POINTS intervals, neighbours are merged
 * in pairs and the width doubles, so the series spans the whole run in a
 * bounded table whatever its length.
 *
 * Sampled traces (sampling.h): each allocation counts as `weight` blocks
 * of its size, everywhere a block is counted (calls, bytes, live bytes and
 * blocks, sizes, the series, contexts), and its release takes away what it
 * added, so every number is the estimate and no exact count is mixed in.
 * Temporaries are not estimated: whether another call came between an
 * allocation and its release cannot be told from a sample.
 */
#include "analyze.h"
#include "leakkind.h"
#include "live_table.h"
#include "sampling.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define HALF_DAY_US (12ull * 3600 * 1000000)
#define DAY_US (2 * HALF_DAY_US)
#define NCTX 33 /* no context, then bits 0..31 */

/*
 * A live block in 16 bytes (live_table.h), its table at most 3/4 full and
 * doubled in place: about 21 to 43 bytes a live block (32-byte slots at
 * most half full were 64 to 128: a jq run with 260,000 live blocks took
 * 32 MB for them). `packed` holds the size (40 bits) and the site + 1 (24
 * bits); 0 marks an empty slot. A block whose size, site or @CTX bits do
 * not fit, that stands for more than one block (a sampled trace's weight),
 * or of leak kind libc, has SIDE in its site field and the number of its
 * entry in a side array (struct live_info) in its size field: rare, and no
 * slower for the others.
 */
typedef at_live_slot live_block;

#define SITE_BITS 24
#define SIDE ((1ull << SITE_BITS) - 1)

typedef struct live_info {
    uint64_t size;
    uint64_t weight; /* blocks it stands for: 1, or its estimate in a sampled trace */
    uint32_t site;
    uint32_t ctx;    /* the allocation's @CTX bits */
    bool cached;     /* libc's caches by its leak kind (a leaks-mode trace's scan) */
} live_info;

/* What a site or a context carries besides its public cost. */
typedef struct tally {
    at_an_cost *cost;
    uint64_t live, live_blocks;
    uint64_t cached, cached_blocks; /* of live: libc's caches */
    uint64_t saved_epoch;
} tally;

typedef struct size_count {
    uint64_t size, count;
    bool used;
} size_count;

struct at_analyzer {
    at_analysis an;
    bool leaks_only;
    bool finished;
    uint64_t interval; /* sampled every `interval` bytes; 0: exact */
    /* live blocks */
    at_live_table live;
    live_info *side;      /* what does not fit in a slot (see live_block) */
    size_t nside, cside;
    uint64_t side_free;   /* a free side entry + 1 (a list through .size); 0: none */
    uint64_t live_bytes;
    uint64_t live_blocks; /* = live.n in an exact trace; the estimate in a sampled one */
    /* sites, by stack id */
    at_an_site *sites;
    tally *site_tally;
    size_t nsites, csites;
    uint32_t *site_of; /* stack id -> site + 1 */
    size_t nsite_of;
    /* contexts */
    at_an_context ctx[NCTX];
    tally ctx_tally[NCTX];
    at_an_context *ctx_out;
    /* libc's caches */
    at_an_cache_fn is_cache;
    void *cache_ctx;
    uint64_t cached_bytes, cached_blocks;
    /* peak */
    uint64_t epoch;
    /* temporaries: the last call, when it was an allocation */
    bool last_temporary; /* the last release was of a temporary */
    bool last_was_alloc;
    uint64_t last_alloc_id;
    /* exact sizes */
    size_count *sizes;
    size_t sizes_cap, sizes_n;
    at_an_size top_sizes[AT_AN_TOP_SIZES];
    /* time */
    bool started;
    bool by_time;
    uint64_t first_raw, prev_raw, day_offset;
    uint64_t x;        /* axis position of the current call */
    bool have_time_base;
    /* series */
    at_an_point *points; /* AT_AN_MAX_POINTS */
    size_t npoints;
    uint64_t width;
    uint64_t cur_point;  /* the current call's interval of the series */
    at_an_timeline *timeline;
};

/* Every bit of the key into the low bits the tables index by: block
 * addresses differ in their middle bits, and a multiply alone leaves
 * the low bits of the product depending on the key's low bits only
 * (long probe runs: a third of the analysis' time on a ripgrep trace). */
static uint64_t mix(uint64_t v)
{
    v = (v ^ (v >> 33)) * 0xff51afd7ed558ccdull;
    return v ^ (v >> 33);
}

/* ---- live blocks ------------------------------------------------------- */

static live_block *live_find(at_analyzer *a, uint64_t id)
{
    return at_live_find(&a->live, id);
}

/* A block's size, site and context into its slot's word. */
static uint64_t live_pack(at_analyzer *a, uint64_t size, uint64_t weight, uint32_t site,
                          uint32_t ctx, bool cached)
{
    if (!(size >> (64 - SITE_BITS)) && site < SIDE - 1 && !ctx && weight == 1 && !cached)
        return size << SITE_BITS | (site + 1);
    uint64_t k;
    if (a->side_free) {
        k = a->side_free - 1;
        a->side_free = a->side[k].size;
    } else {
        if (a->nside == a->cside) {
            a->cside = a->cside ? 2 * a->cside : 64;
            a->side = at_xreallocarray(a->side, a->cside, sizeof *a->side);
        }
        k = a->nside++;
    }
    a->side[k] = (live_info){ .size = size, .weight = weight, .site = site, .ctx = ctx,
                              .cached = cached };
    return k << SITE_BITS | SIDE;
}

static live_info live_unpack(const at_analyzer *a, const live_block *b)
{
    uint64_t site = b->packed & SIDE, high = b->packed >> SITE_BITS;
    if (site == SIDE)
        return a->side[high];
    return (live_info){ .size = high, .weight = 1, .site = (uint32_t)(site - 1), .ctx = 0 };
}

/* The block leaves the table, and its side entry (if any) the side array. */
static void live_remove(at_analyzer *a, live_block *b)
{
    if ((b->packed & SIDE) == SIDE) {   /* its side entry onto the free list */
        uint64_t k = b->packed >> SITE_BITS;
        a->side[k].size = a->side_free;
        a->side_free = k + 1;
    }
    at_live_remove(&a->live, b);
}

/* ---- sites and contexts ------------------------------------------------ */

/* Before a tally changes: keep its value at the latest peak (see top). */
static void tally_touch(const at_analyzer *a, tally *t)
{
    if (t->saved_epoch != a->epoch) {
        t->cost->peak = t->live;
        t->cost->peak_blocks = t->live_blocks;
        t->saved_epoch = a->epoch;
    }
}

/* `w` blocks of `size` bytes (w = 1 but in a sampled trace); cached: they
 * are libc's caches (a leaks-mode trace's kind). */
static void tally_add(const at_analyzer *a, tally *t, uint64_t size, uint64_t w, bool cached)
{
    tally_touch(a, t);
    t->live += size * w;
    t->live_blocks += w;
    t->cost->calls += w;
    t->cost->bytes += size * w;
    if (cached) {
        t->cached += size * w;
        t->cached_blocks += w;
    }
}

static void tally_release(const at_analyzer *a, tally *t, uint64_t size, uint64_t w,
                          bool temporary, bool cached)
{
    tally_touch(a, t);
    t->live -= size * w;
    t->live_blocks -= w;
    if (temporary)
        t->cost->temporary++;
    if (cached) {
        t->cached -= size * w;
        t->cached_blocks -= w;
    }
}

static uint32_t site_for(at_analyzer *a, const at_call *c)
{
    uint32_t sid = c->stack->id;
    a->site_of = at_xgrow_to(a->site_of, &a->nsite_of, sid, sizeof *a->site_of, 1024);
    if (a->site_of[sid])
        return a->site_of[sid] - 1;
    if (a->nsites == a->csites) {
        a->csites = a->csites ? a->csites * 2 : 256;
        a->sites = at_xreallocarray(a->sites, a->csites, sizeof *a->sites);
        a->site_tally = at_xreallocarray(a->site_tally, a->csites, sizeof *a->site_tally);
        for (size_t i = 0; i < a->nsites; i++) /* the costs moved */
            a->site_tally[i].cost = &a->sites[i].cost;
    }
    size_t s = a->nsites++;
    a->sites[s] = (at_an_site){ .stack = c->stack, .alloc_fn = c->name, .first_index = c->index };
    /* It held nothing at any earlier peak. */
    a->site_tally[s] = (tally){ .cost = &a->sites[s].cost, .saved_epoch = a->epoch };
    a->site_of[sid] = (uint32_t)s + 1;
    return (uint32_t)s;
}

/* The context slots of @CTX bits: 0 for none, 1 + bit number for each bit. */
static unsigned context_slots(uint32_t bits, unsigned slots[NCTX])
{
    unsigned n = 0;
    if (!bits)
        slots[n++] = 0;
    for (; bits; bits &= bits - 1)
        slots[n++] = 1 + (unsigned)__builtin_ctz(bits);
    return n;
}

/* ---- sizes ------------------------------------------------------------- */

unsigned at_an_size_class(uint64_t size)
{
    return size ? 64u - (unsigned)__builtin_clzll(size) : 0;
}

uint64_t at_an_class_min(unsigned cls)
{
    return cls == 0 ? 0 : 1ull << (cls - 1);
}

static size_count *size_slot(size_count *tab, size_t cap, uint64_t size)
{
    for (size_t i = mix(size) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!tab[i].used || tab[i].size == size)
            return &tab[i];
}

static void count_size(at_analyzer *a, uint64_t size, uint64_t w)
{
    at_an_histogram *h = &a->an.histogram;
    unsigned cls = at_an_size_class(size);
    h->count[cls] += w;
    h->bytes[cls] += size * w;
    if ((a->sizes_n + 1) * 2 > a->sizes_cap) {
        size_t ocap = a->sizes_cap;
        size_count *old = a->sizes;
        a->sizes_cap = ocap ? ocap * 2 : 1024;
        a->sizes = at_xcalloc(a->sizes_cap, sizeof *a->sizes);
        for (size_t i = 0; i < ocap; i++)
            if (old[i].used)
                *size_slot(a->sizes, a->sizes_cap, old[i].size) = old[i];
        free(old);
    }
    size_count *s = size_slot(a->sizes, a->sizes_cap, size);
    if (!s->used) {
        *s = (size_count){ .size = size, .used = true };
        a->sizes_n++;
    }
    s->count += w;
}

/* ---- time and the series ------------------------------------------------ */

/* Microseconds since the first call, across midnight; never going back. */
static void advance_clock(at_analyzer *a, const at_call *c)
{
    if (!a->started) {
        a->started = true;
        a->by_time = c->has_time;
        a->an.summary.has_time = c->has_time;
        a->an.summary.first_index = c->index;
    }
    a->an.summary.last_index = c->index;
    uint64_t x = a->x;
    if (a->by_time && c->has_time) {
        if (!a->have_time_base) {
            a->have_time_base = true;
            a->first_raw = a->prev_raw = c->time_us;
        }
        if (c->time_us + HALF_DAY_US < a->prev_raw)
            a->day_offset += DAY_US;
        a->prev_raw = c->time_us;
        uint64_t t = c->time_us + a->day_offset;
        x = t > a->first_raw ? t - a->first_raw : 0;
    } else if (!a->by_time) {
        x = c->index - a->an.summary.first_index;
    }
    if (x > a->x)
        a->x = x;
    if (a->by_time)
        a->an.summary.duration_us = a->x;
}

static void merge_points(at_analyzer *a)
{
    size_t n = 0;
    for (size_t i = 0; i < a->npoints; i += 2, n++) {
        at_an_point p = a->points[i];
        if (i + 1 < a->npoints) {
            const at_an_point *q = &a->points[i + 1];
            p.live_bytes = q->live_bytes;
            if (q->max_live_bytes > p.max_live_bytes)
                p.max_live_bytes = q->max_live_bytes;
            p.allocations += q->allocations;
            p.allocated_bytes += q->allocated_bytes;
            p.releases += q->releases;
            p.temporary += q->temporary;
        }
        p.start = (uint64_t)n * a->width * 2;
        a->points[n] = p;
    }
    a->npoints = n;
    a->width *= 2;
    at_an_timeline_halve(a->timeline);
}

/* The interval of the current call, opened (with the live total before the
 * call) if it is new. */
static at_an_point *current_point(at_analyzer *a)
{
    uint64_t b = a->x / a->width;
    while (b >= AT_AN_MAX_POINTS) {
        merge_points(a);
        b = a->x / a->width;
    }
    while (a->npoints <= b) {
        uint64_t live = a->live_bytes;
        a->points[a->npoints] = (at_an_point){ .start = a->npoints * a->width,
                                               .live_bytes = live, .max_live_bytes = live };
        a->npoints++;
    }
    a->cur_point = b;
    return &a->points[b];
}

/* ---- the calls ---------------------------------------------------------- */

at_analyzer *at_analyzer_new(bool leaks_only)
{
    at_analyzer *a = at_xcalloc(1, sizeof *a);
    a->leaks_only = leaks_only;
    a->an.summary.leaks_only = leaks_only;
    a->width = 1;
    a->points = at_xcalloc(AT_AN_MAX_POINTS, sizeof *a->points);
    a->timeline = at_an_timeline_new();
    for (int i = 0; i < NCTX; i++) {
        a->ctx[i].bit = i ? 1u << (i - 1) : AT_AN_NO_CONTEXT;
        a->ctx_tally[i].cost = &a->ctx[i].cost;
    }
    return a;
}

void at_analyzer_set_cache(at_analyzer *a, at_an_cache_fn fn, void *ctx)
{
    a->is_cache = fn;
    a->cache_ctx = ctx;
}

void at_analyzer_sampled(at_analyzer *a, uint64_t interval)
{
    a->interval = interval;
    a->an.summary.sample_interval = interval;
}

void at_analyzer_free(at_analyzer *a)
{
    if (!a)
        return;
    at_live_free(&a->live);
    free(a->side);
    free(a->sites);
    free(a->site_tally);
    free(a->site_of);
    free(a->sizes);
    free(a->points);
    at_an_timeline_free(a->timeline);
    free(a->ctx_out);
    free(a);
}

/* A block stops being live: released, or replaced by a new block of the
 * same id. */
static void drop_block(at_analyzer *a, live_block *b, bool temporary)
{
    live_info info = live_unpack(a, b);
    tally *st = &a->site_tally[info.site];
    tally_release(a, st, info.size, info.weight, temporary, info.cached);
    if (!a->leaks_only)
        at_an_timeline_note(a->timeline, info.site, a->cur_point, 0, 0, temporary, st->live,
                            st->live_blocks);
    unsigned slots[NCTX], n = context_slots(info.ctx, slots);
    for (unsigned i = 0; i < n; i++)
        tally_release(a, &a->ctx_tally[slots[i]], info.size, info.weight, temporary, info.cached);
    if (info.cached) {
        a->cached_bytes -= info.size * info.weight;
        a->cached_blocks -= info.weight;
    }
    a->live_bytes -= info.size * info.weight;
    a->live_blocks -= info.weight;
    live_remove(a, b);
}

static void new_peak(at_analyzer *a, const at_call *c)
{
    at_an_peak *p = &a->an.peak;
    p->bytes = a->live_bytes;
    p->blocks = a->live_blocks;
    p->index = c->index;
    p->allocation = a->an.summary.allocations;
    p->has_time = a->by_time;
    p->time_us = a->by_time ? a->x : 0;
    a->epoch++;
}

static void allocate(at_analyzer *a, const at_call *c)
{
    at_an_summary *s = &a->an.summary;
    live_block *old = live_find(a, c->id);
    if (old) {
        s->reused_ids++;
        drop_block(a, old, false);
    }
    uint64_t w = at_sampling_weight(a->interval, c->size, c->index);
    s->allocations += w;
    s->allocated_bytes += c->size * w;
    count_size(a, c->size, w);
    uint32_t site = site_for(a, c);
    bool cached = c->kind == AT_LEAK_LIBC; /* by stack: at the end, see find_caches */
    tally_add(a, &a->site_tally[site], c->size, w, cached);
    if (!a->leaks_only)
        at_an_timeline_note(a->timeline, site, a->cur_point, w, c->size * w, false,
                            a->site_tally[site].live, a->site_tally[site].live_blocks);
    unsigned slots[NCTX], n = context_slots(c->context, slots);
    for (unsigned i = 0; i < n; i++)
        tally_add(a, &a->ctx_tally[slots[i]], c->size, w, cached);
    if (cached) {
        a->cached_bytes += c->size * w;
        a->cached_blocks += w;
    }
    at_live_insert(&a->live, c->id, live_pack(a, c->size, w, site, c->context, cached));
    a->live_bytes += c->size * w;
    a->live_blocks += w;
    if (!a->leaks_only && a->live_bytes > a->an.peak.bytes)
        new_peak(a, c);
    a->last_was_alloc = true;
    a->last_alloc_id = c->id;
}

/* Returns the blocks the release stands for (its allocation's weight). */
static uint64_t release(at_analyzer *a, const at_call *c)
{
    at_an_summary *s = &a->an.summary;
    live_block *b = live_find(a, c->id);
    uint64_t w = b ? live_unpack(a, b).weight : 1;
    s->releases += w;
    unsigned slots[NCTX], n = context_slots(c->context, slots);
    for (unsigned i = 0; i < n; i++)
        a->ctx[slots[i]].releases += w;
    a->last_temporary = false;
    if (!b) {
        s->unknown_releases++;
    } else {
        bool temporary = !a->interval && a->last_was_alloc && a->last_alloc_id == c->id;
        a->last_temporary = temporary;
        if (temporary)
            s->temporary++;
        drop_block(a, b, temporary);
    }
    a->last_was_alloc = false;
    return w;
}

void at_analyzer_call(at_analyzer *a, const at_call *c)
{
    advance_clock(a, c);
    at_an_point *p = a->leaks_only ? NULL : current_point(a);
    uint64_t w = c->is_alloc ? at_sampling_weight(a->interval, c->size, c->index)
                             : release(a, c);
    if (c->is_alloc)
        allocate(a, c);
    if (!p)
        return;
    p->live_bytes = a->live_bytes;
    if (a->live_bytes > p->max_live_bytes)
        p->max_live_bytes = a->live_bytes;
    if (c->is_alloc) {
        p->allocations += w;
        p->allocated_bytes += c->size * w;
    } else {
        p->releases += w;
        p->temporary += a->last_temporary;
    }
}

void at_analyzer_prefetch(const at_analyzer *a, uint64_t id)
{
    at_live_prefetch(&a->live, id);
}

void at_analyzer_skip(at_analyzer *a)
{
    a->an.summary.other_calls++;
}

/* ---- the end ------------------------------------------------------------- */

static int by_count(const void *x, const void *y)
{
    const at_an_size *a = x, *b = y;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    return (a->size > b->size) - (a->size < b->size);
}

/* The most frequent sizes: a bounded insertion into AT_AN_TOP_SIZES. */
static void finish_sizes(at_analyzer *a)
{
    at_an_histogram *h = &a->an.histogram;
    size_t n = 0;
    for (size_t i = 0; i < a->sizes_cap; i++) {
        if (!a->sizes[i].used)
            continue;
        at_an_size s = { a->sizes[i].size, a->sizes[i].count };
        if (n == AT_AN_TOP_SIZES && by_count(&s, &a->top_sizes[n - 1]) >= 0)
            continue;
        size_t j = n < AT_AN_TOP_SIZES ? n++ : n - 1;
        while (j > 0 && by_count(&s, &a->top_sizes[j - 1]) < 0) {
            a->top_sizes[j] = a->top_sizes[j - 1];
            j--;
        }
        a->top_sizes[j] = s;
    }
    h->top = a->top_sizes;
    h->ntop = n;
    h->distinct = a->sizes_n;
}

static void finish_tally(at_analyzer *a, tally *t)
{
    if (!a->leaks_only)
        tally_touch(a, t);
    t->cost->leaked = t->live - t->cached;
    t->cost->leaked_blocks = t->live_blocks - t->cached_blocks;
    t->cost->cached = t->cached;
    t->cost->cached_blocks = t->cached_blocks;
}

/* The blocks still live that are the runtime's caches by their site's
 * stack: asked only of the sites that still hold blocks (a few, where every
 * site would cost a walk of its frames), each once. */
static void find_caches(at_analyzer *a)
{
    if (!a->is_cache)
        return;
    uint8_t *asked = at_xcalloc(a->nsites ? a->nsites : 1, 1); /* 1 no, 2 yes */
    for (size_t i = 0; i < a->live.cap; i++) {
        live_block *b = &a->live.slots[i];
        if (!b->packed)
            continue;
        live_info info = live_unpack(a, b);
        if (info.cached)
            continue;
        if (!asked[info.site])
            asked[info.site] = a->is_cache(a->cache_ctx, a->sites[info.site].stack) ? 2 : 1;
        if (asked[info.site] != 2)
            continue;
        a->sites[info.site].cache = true;
        uint64_t bytes = info.size * info.weight;
        tally *st = &a->site_tally[info.site];
        st->cached += bytes;
        st->cached_blocks += info.weight;
        unsigned slots[NCTX], n = context_slots(info.ctx, slots);
        for (unsigned k = 0; k < n; k++) {
            a->ctx_tally[slots[k]].cached += bytes;
            a->ctx_tally[slots[k]].cached_blocks += info.weight;
        }
        a->cached_bytes += bytes;
        a->cached_blocks += info.weight;
    }
    free(asked);
}

const at_analysis *at_analyzer_finish(at_analyzer *a, const at_trace *t)
{
    if (a->finished)
        return &a->an;
    a->finished = true;
    at_analysis *an = &a->an;
    find_caches(a);
    for (size_t i = 0; i < a->nsites; i++)
        finish_tally(a, &a->site_tally[i]);
    a->ctx_out = at_xcalloc(NCTX, sizeof *a->ctx_out);
    for (int i = 0; i < NCTX; i++) {
        finish_tally(a, &a->ctx_tally[i]);
        at_an_context *c = &a->ctx[i];
        if (!c->cost.calls && !c->releases)
            continue;
        if (i && t)
            for (uint32_t k = 0; k < t->ncontexts; k++)
                if (t->contexts[k].bit == c->bit)
                    c->name = t->contexts[k].name;
        a->ctx_out[an->ncontexts++] = *c;
    }
    an->contexts = a->ctx_out;
    an->sites = a->sites;
    an->nsites = a->nsites;
    an->summary.leaked_bytes = a->live_bytes - a->cached_bytes;
    an->summary.leaked_blocks = a->live_blocks - a->cached_blocks;
    an->summary.cached_bytes = a->cached_bytes;
    an->summary.cached_blocks = a->cached_blocks;
    finish_sizes(a);
    if (!a->leaks_only && a->npoints) {
        an->series = (at_an_series){ .by_time = a->by_time, .width = a->width,
                                     .points = a->points, .n = a->npoints };
        an->ticks = at_an_timeline_ticks(a->timeline, &an->nticks, &an->tick_shift);
    }
    return an;
}

/* ---- reading ----------------------------------------------------------- */

uint64_t at_an_cost_get(const at_an_cost *c, at_an_key key)
{
    switch (key) {
    case AT_AN_CALLS:
        return c->calls;
    case AT_AN_BYTES:
        return c->bytes;
    case AT_AN_PEAK:
        return c->peak;
    case AT_AN_TEMPORARY:
        return c->temporary;
    case AT_AN_LEAKED:
        return c->leaked;
    case AT_AN_CACHED:
        return c->cached;
    }
    return 0;
}

const char *at_an_key_name(at_an_key key)
{
    static const char *const names[] = { "calls", "bytes", "peak", "temporary", "leaked",
                                         "cached" };
    return (unsigned)key < 6 ? names[key] : "?";
}

static int rank_cmp(const void *x, const void *y, void *arg)
{
    const at_an_site *a = *(const at_an_site *const *)x, *b = *(const at_an_site *const *)y;
    at_an_key key = *(const at_an_key *)arg;
    uint64_t ka = at_an_cost_get(&a->cost, key), kb = at_an_cost_get(&b->cost, key);
    if (ka != kb)
        return ka < kb ? 1 : -1;
    if (a->cost.bytes != b->cost.bytes)
        return a->cost.bytes < b->cost.bytes ? 1 : -1;
    return (a->first_index > b->first_index) - (a->first_index < b->first_index);
}

/* The top sites by key: a bounded insertion, each site placed after the
 * ones it ties with, which is what the stable sort of them all (glibc's
 * merge sort) gave in its first `top`, without sorting the 50,000 sites of
 * a compiler's trace for each ranking. */
size_t at_an_rank(const at_analysis *an, at_an_key key, const at_an_site **out, size_t top)
{
    size_t n = 0;
    for (size_t i = 0; i < an->nsites && top; i++) {
        const at_an_site *s = &an->sites[i];
        if (!at_an_cost_get(&s->cost, key))
            continue;
        if (n == top && rank_cmp(&s, &out[n - 1], &key) >= 0)
            continue;
        size_t j = n < top ? n++ : n - 1;
        while (j > 0 && rank_cmp(&s, &out[j - 1], &key) < 0) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = s;
    }
    return n;
}
