/*
 * postproc/read/reorder.c: compressed-form calls back into index order
 * (reorder.h).
 *
 * Decisions:
 * - A call is held (a copy: the reader's record is gone after the call)
 *   in a min-heap by index, and handed on as soon as every index before it
 *   has been: indices start at 1 and a trace written at once has no gaps,
 *   so a trace compressed chunk by chunk (calls regrouped within each
 *   chunk) holds back at most one chunk's calls. Memory follows that
 *   disorder, not the file. A trace compressed as a whole (sp-rtrace, or
 *   alloctrace-postproc -c), or one with gaps in its indices (leaks mode,
 *   a selection), holds its calls to the end, where the rest goes out in
 *   order: what the leaks stage alone used to do for every such input.
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
 */
#include "reorder.h"
#include "diag.h"
#include "xalloc.h"

#include <stdlib.h>

typedef struct reorder {
    at_stage stage;
    at_trace *t;
    at_diag *d;
    at_call **heap; /* min-heap by index */
    size_t n, cap;
    uint64_t next;  /* the index that can go on next */
} reorder;

static void heap_push(reorder *o, at_call *c)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 1024;
        o->heap = at_xreallocarray(o->heap, o->cap, sizeof *o->heap);
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

static void emit_top(reorder *o)
{
    at_call *c = heap_pop(o);
    if (c->index >= o->next)
        o->next = c->index + 1;
    at_record rec = { .kind = AT_REC_CALL, .u.call = c };
    at_stage_put(o->stage.next, &rec);
    free(c);
}

static void put(at_stage *self, const at_record *r)
{
    reorder *o = (reorder *)self;
    if (r->kind != AT_REC_CALL || !o->t->input_compressed) {
        at_stage_put(self->next, r);
        return;
    }
    heap_push(o, at_call_copy(r->u.call));
    while (o->n && o->heap[0]->index <= o->next)
        emit_top(o);
}

static void finish(at_stage *self)
{
    reorder *o = (reorder *)self;
    uint64_t end = o->t->chunk_end, dropped = 0, first = 0;
    while (o->n) {
        if (end && o->heap[0]->index > end) {   /* a chunk cut short */
            at_call *c = heap_pop(o);
            if (!dropped++)
                first = c->index;
            free(c);
            continue;
        }
        emit_top(o);
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
    free(o);
}
