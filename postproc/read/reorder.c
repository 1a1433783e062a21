/*
 * postproc/read/reorder.c: compressed-form calls back into index order
 * (reorder.h).
 *
 * Decisions:
 * - A call is handed on as soon as every index before it has been:
 *   indices start at 1 and a trace written at once has no gaps, so a trace
 *   compressed chunk by chunk (calls regrouped within each chunk) holds
 *   back at most one chunk's calls. Memory follows that disorder, not the
 *   file. A trace compressed as a whole (sp-rtrace, or alloctrace-postproc
 *   -c), or one with gaps in its indices (leaks mode, a selection), holds
 *   its calls to the end, where the rest goes out in order: what the leaks
 *   stage alone used to do for every such input.
 * - Held calls wait in a window of slots by index (slot = index mod the
 *   window's size, a power of two), copied by value: no allocation per
 *   call, no heap to sift, and the call whose turn it is (index = next) is
 *   handed on from the reader's record without being copied at all. The
 *   window doubles to hold a chunk's index span, up to WINDOW_MAX calls;
 *   a call beyond it (a trace compressed as a whole, a gap), one with
 *   arguments, or a second call with an index already held, goes to a
 *   min-heap of copies as before. Between the two, the smaller index goes
 *   first (the window's at a tie). A min-heap of copies for every call
 *   was a malloc, a free and a sift of log2(held) cache misses each: a
 *   third of `-r --format report`'s time on a 1.7M-call ripgrep trace.
 * - Other records (registries, maps, comments) go on at once: a
 *   compressed trace writes them before the calls that need them. The one
 *   case this gets wrong is a map line that replaces another for the same
 *   range (dlclose, then dlopen at that address) inside a chunk: calls
 *   held from before it are resolved against the new map. (The tracer
 *   ends its groups before every map line, so its traces never do this.)
 * - A trace the tracer's writer made marks the end of each chunk ("# chunk
 *   end: INDEX", reader.c). A SIGKILL during a chunk's writes leaves some
 *   of its groups and not others: a malloc whose address's free is
 *   missing. So at the end the calls after the last mark still held are
 *   dropped, with one warning, and the trace reads as the program's calls
 *   up to the first one missing: it loses the chunk cut short, as the
 *   tracer promises, never a call in the middle. Without marks (other
 *   writers, leaks mode's gaps by design) every held call goes out.
 * - A trace whose header says "time=on change" (the tracer's full mode)
 *   has a time only on a call whose millisecond differs from that of the
 *   last time written before it in index order. Here, where the calls
 *   are in index order, each call without a time is handed on with the
 *   last time before it (carried_time), so every later stage, and the
 *   text written, sees a time on every call: within 1 ms of the true one.
 *   The writer then writes every time and not the key (trace.h), which
 *   stays right whatever a filter or a selection leaves out.
 */
#include "reorder.h"
#include "diag.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define WINDOW_FIRST (1u << 12)
#define WINDOW_MAX (1u << 20)

typedef struct reorder {
    at_stage stage;
    at_trace *t;
    at_diag *d;
    at_call *window;  /* slot index & (cap - 1); index 0: empty */
    size_t cap, held;
    at_call **heap;   /* min-heap by index, of copies */
    size_t n, hcap;
    uint64_t next;    /* the index that can go on next */
    uint64_t last_time; /* the last call's time ("time=on change"); AT_NO_TIME: none */
} reorder;

static void heap_push(reorder *o, at_call *c)
{
    if (o->n == o->hcap) {
        o->hcap = o->hcap ? 2 * o->hcap : 1024;
        o->heap = at_xreallocarray(o->heap, o->hcap, sizeof *o->heap);
    }
    size_t i = o->n++;
    while (i > 0 && o->heap[(i - 1) / 2]->index > c->index) {
        o->heap[i] = o->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    o->heap[i] = c;
}

static at_call *heap_pop(reorder *o)
{
    at_call *top = o->heap[0], *last = o->heap[--o->n];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= o->n)
            break;
        if (k + 1 < o->n && o->heap[k + 1]->index < o->heap[k]->index)
            k++;
        if (o->heap[k]->index >= last->index)
            break;
        o->heap[i] = o->heap[k];
        i = k;
    }
    if (o->n)
        o->heap[i] = last;
    return top;
}

void at_carry_time(uint64_t *last, at_call *c)
{
    if (c->has_time)
        *last = c->time_us;
    else if (*last != AT_NO_TIME) {
        c->has_time = true;
        c->time_us = *last;
    }
}

/* `c`, or its copy in `room` with the time carried to it (at_carry_time). */
static const at_call *carried_time(reorder *o, const at_call *c, at_call *room)
{
    if (!o->t->header.time_on_change)
        return c;
    *room = *c;
    at_carry_time(&o->last_time, room);
    return room;
}

static void hand_on(reorder *o, const at_call *c)
{
    if (c->index >= o->next)
        o->next = c->index + 1;
    at_call room;
    at_record rec;
    at_call_record(&rec, carried_time(o, c, &room), 0);
    at_stage_put(o->stage.next, &rec);
}

/* hand_on for a call held here (the window's, the heap's): its time is
 * carried in its place, without a copy on the stack. (The next stage's
 * first 16-byte load of such a call still waits for the time written
 * just before, a store it cannot be forwarded from: 4-8% of a compiler
 * trace's reading samples fall on that load, in place or in a copy alike;
 * docs/benchmarks.md, h25pp6, says what was tried.) */
static void hand_on_held(reorder *o, at_call *c)
{
    if (c->index >= o->next)
        o->next = c->index + 1;
    if (o->t->header.time_on_change)
        at_carry_time(&o->last_time, c);
    at_record rec;
    at_call_record(&rec, c, 0);
    at_stage_put(o->stage.next, &rec);
}

/* The window's slot for index i. */
static inline at_call *slot(reorder *o, uint64_t i)
{
    return &o->window[i & (o->cap - 1)];
}

/* Doubles the window until index fits in it; false when it cannot. */
static bool widen(reorder *o, uint64_t index)
{
    size_t cap = o->cap ? o->cap : WINDOW_FIRST;
    while (index - o->next >= cap && cap < WINDOW_MAX)
        cap *= 2;
    if (index - o->next >= cap)
        return false;
    if (cap == o->cap)
        return true;
    at_call *w = at_xcalloc(cap, sizeof *w);
    for (size_t i = 0; i < o->cap; i++)
        if (o->window[i].index)
            w[o->window[i].index & (cap - 1)] = o->window[i];
    free(o->window);
    o->window = w;
    o->cap = cap;
    return true;
}

/* Whatever can go on now: the window's call at next, or the heap's top
 * when its index is not above next. */
static bool emit_one(reorder *o, uint64_t drop_after, uint64_t *dropped, uint64_t *first)
{
    at_call *w = o->held ? slot(o, o->next) : NULL;
    if (w && w->index == o->next) {
        if (drop_after && w->index > drop_after) {
            if (!(*dropped)++)
                *first = w->index;
            o->next++;
        } else {
            hand_on_held(o, w);
        }
        w->index = 0;
        o->held--;
        return true;
    }
    if (o->n && o->heap[0]->index <= o->next) {
        at_call *c = heap_pop(o);
        if (drop_after && c->index > drop_after) {
            if (!(*dropped)++)
                *first = c->index;
        } else {
            hand_on_held(o, c);
        }
        free(c);
        return true;
    }
    return false;
}

static void put(at_stage *self, const at_record *r)
{
    reorder *o = (reorder *)self;
    if (r->kind != AT_REC_CALL) {
        at_stage_put(self->next, r);
        return;
    }
    if (!o->t->input_compressed) {   /* in index order already */
        at_call room;
        at_record rec = *r;
        rec.u.call = carried_time(o, r->u.call, &room);
        at_stage_put(self->next, &rec);
        return;
    }
    const at_call *c = r->u.call;
    if (c->index < o->next || (c->index == o->next && !(o->held && slot(o, c->index)->index))) {
        hand_on(o, c);   /* its turn (or late): no copy */
    } else if (!c->nargs && widen(o, c->index) && !slot(o, c->index)->index) {
        at_call *w = slot(o, c->index); /* c was just parsed: see trace.h */
        at_call_copy_fresh(w, c);
        w->stack = c->stack;
        o->held++;
        return;
    } else {
        heap_push(o, at_call_copy(c));
    }
    uint64_t none = 0;
    while (emit_one(o, 0, &none, &none))
        ;
}

static void finish(at_stage *self)
{
    reorder *o = (reorder *)self;
    uint64_t end = o->t->chunk_end, dropped = 0, first = 0;
    while (o->held || o->n) {
        if (emit_one(o, end, &dropped, &first))
            continue;
        /* a gap at next: on to the smallest index held */
        uint64_t to = o->n ? o->heap[0]->index : UINT64_MAX;
        uint64_t i = o->next + 1;
        while (o->held && i < to && slot(o, i)->index != i)
            i++;
        o->next = o->held && i < to ? i : to;
    }
    if (dropped)
        at_diag_warn(o->d,
                     "%llu call(s) from index %llu on dropped: the trace ends inside a "
                     "chunk (cut short, e.g. by SIGKILL), which is not all in the file",
                     (unsigned long long)dropped, (unsigned long long)first);
    at_stage_finish(self->next);
}

at_stage *at_reorder_new(at_stage *next, at_trace *t, at_diag *d)
{
    reorder *o = at_xcalloc(1, sizeof *o);
    o->stage = (at_stage){ .put = put, .finish = finish, .next = next };
    o->t = t;
    o->d = d;
    o->next = 1;
    o->last_time = AT_NO_TIME;
    t->calls_in_order = true;
    return &o->stage;
}

void at_reorder_free(at_stage *s)
{
    reorder *o = (reorder *)s;
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++)
        free(o->heap[i]);
    free(o->heap);
    free(o->window);
    free(o);
}
