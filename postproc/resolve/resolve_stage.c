/*
 * postproc/resolve/resolve_stage.c: the resolver in the chain of stages.
 *
 * Map lines are handed to the resolver when the next call (or group)
 * comes, not when they pass: a "## build-id:" comment may follow its map
 * line, and the reader records it in the trace's map table, so by the time
 * a backtrace can use a map its build id is known. Which maps a call may
 * use is counted from the map records that passed before it (their seq),
 * not from the table, which already holds every map of the trace when an
 * earlier stage (leaks) held the calls back to the end: a library unloaded
 * and replaced by another over the same range must still resolve the calls
 * made before the replacement. Maps are read from the table by index
 * (seq) because the table may move its entries.
 */
#include "resolve_stage.h"

#include <stdlib.h>

typedef struct resolve_stage {
    at_stage base;
    at_trace *t;
    at_resolver *r;
    size_t maps_given; /* maps of t->maps handed to the resolver so far */
    size_t maps_seen;  /* maps whose record has passed: seq + 1 of the last */
} resolve_stage;

static void sync_maps(resolve_stage *s)
{
    for (; s->maps_given < s->maps_seen; s->maps_given++) {
        const at_map *m = at_maps_get(s->t->maps, s->maps_given);
        if (m)
            at_resolver_add_map(s->r, m);
    }
}

static void put(at_stage *self, const at_record *r)
{
    resolve_stage *s = (resolve_stage *)self;
    switch (r->kind) {
    case AT_REC_HEADER: {
        at_header *h = (at_header *)r->u.header;
        h->filter |= AT_F_RESOLVE;
        at_stage_put(self->next, r);
        return;
    }
    case AT_REC_CALL: {
        sync_maps(s);
        /* Resolved before the call is copied: a call the reorder stage has
         * just given its time is read whole only after the resolver's work,
         * by when that store has mostly reached the cache (a load over it
         * waits for it: docs/benchmarks.md, h25pp6). */
        const at_stack *stack = at_resolver_resolve(s->r, s->t->stacks, r->u.call->stack);
        at_call call;
        at_call_copy_fresh(&call, r->u.call);
        call.stack = stack;
        at_record rec;
        at_call_record(&rec, &call, r->line);
        at_stage_put(self->next, &rec);
        return;
    }
    case AT_REC_GROUP: {
        sync_maps(s);
        at_group group = *r->u.group;
        group.stack = at_resolver_resolve(s->r, s->t->stacks, group.stack);
        at_record rec = *r;
        rec.u.group = &group;
        at_stage_put(self->next, &rec);
        return;
    }
    case AT_REC_MAP:
        if (r->u.map->seq + 1 > s->maps_seen)
            s->maps_seen = r->u.map->seq + 1;
        at_stage_put(self->next, r);
        return;
    default:
        at_stage_put(self->next, r);
        return;
    }
}

static void finish(at_stage *self)
{
    at_stage_finish(self->next);
}

at_stage *at_resolve_stage_new(at_stage *next, at_trace *t, const at_resolve_options *opts)
{
    at_resolver *r = at_resolver_new(opts);
    if (!r)
        return NULL;
    resolve_stage *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->base = (at_stage){ .put = put, .finish = finish, .next = next };
    s->t = t;
    s->r = r;
    return &s->base;
}

void at_resolve_stage_free(at_stage *self)
{
    resolve_stage *s = (resolve_stage *)self;
    if (!s)
        return;
    at_resolver_free(s->r);
    free(s);
}
