/*
 * postproc/leaks.c: the leaks filter (leaks.h).
 *
 * Pairing rules (TEXT_FORMAT.md section 4, issue 3):
 * - A release removes the live allocation with its (resource, id). A
 *   release with no live allocation (not traced, a double free) and every
 *   free(0x0) vanish.
 * - realloc needs nothing special: the trace writes it as a release of the
 *   old block followed by an allocation of the new one.
 * - Refcounted resources: the first allocation of an id is the block; later
 *   allocations of the same live id add a reference (and are not kept),
 *   releases drop one, and the block is freed when none is left.
 * - An allocation of an id that is still live on a non-refcounted resource
 *   means its release was not traced: the older allocation stays a leak,
 *   the new one takes over the id.
 *
 * Live allocations are copies in an open-addressing table keyed by
 * (resource, id), with backward-shift deletion so that millions of
 * alloc/free pairs leave no tombstones behind. Records other than calls are
 * kept (there are few) with the index of the call they followed, so that at
 * the end each goes out before the first kept call after it.
 *
 * A compressed input is not in index order, so its calls are gathered and
 * sorted first; that costs memory in proportion to the calls, which only
 * such inputs pay, and only when no reorder stage (reorder.c) came first.
 */
#include "leaks.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    uint64_t id;
    uint32_t res;
    uint32_t refs;
    at_call *call; /* NULL: empty */
} slot;

typedef struct kept {
    at_record *rec;
    uint64_t after; /* index of the last call before it (0: none) */
} kept;

typedef struct leaks {
    at_stage stage;
    at_trace *t;
    slot *slots;
    size_t nslots, live;
    at_call **orphans; /* allocations whose id was taken over */
    size_t norphans, corphans;
    kept *others;
    size_t nothers, cothers;
    uint64_t last_index;
    at_call **sorted; /* compressed input: every call, sorted at the end */
    size_t nsorted, csorted;
} leaks;

static void *grow(void *p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return p;
    *cap = *cap ? *cap * 2 : 256;
    p = realloc(p, *cap * sz);
    if (!p)
        at_oom();
    return p;
}

/* Block addresses are aligned and close together: mix every bit in. */
static size_t hash(uint32_t res, uint64_t id)
{
    uint64_t h = id ^ ((uint64_t)res << 56);
    h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdull;
    h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
    return (size_t)(h ^ (h >> 33));
}

static void table_resize(leaks *l, size_t n)
{
    slot *old = l->slots;
    size_t oldn = l->nslots;
    l->slots = calloc(n, sizeof *l->slots);
    if (!l->slots)
        at_oom();
    l->nslots = n;
    for (size_t i = 0; i < oldn; i++) {
        if (!old[i].call)
            continue;
        size_t j = hash(old[i].res, old[i].id) & (n - 1);
        while (l->slots[j].call)
            j = (j + 1) & (n - 1);
        l->slots[j] = old[i];
    }
    free(old);
}

static slot *find(leaks *l, uint32_t res, uint64_t id)
{
    size_t mask = l->nslots - 1;
    for (size_t i = hash(res, id) & mask;; i = (i + 1) & mask) {
        slot *s = &l->slots[i];
        if (!s->call || (s->id == id && s->res == res))
            return s;
    }
}

/* Empties s, moving later entries of its probe run back (no tombstones). */
static void erase(leaks *l, slot *s)
{
    size_t mask = l->nslots - 1;
    size_t i = (size_t)(s - l->slots), j = i;
    l->slots[i].call = NULL;
    for (;;) {
        j = (j + 1) & mask;
        if (!l->slots[j].call)
            break;
        size_t home = hash(l->slots[j].res, l->slots[j].id) & mask;
        /* Can entry j move to i? Only if its home is not in (i, j]. */
        bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (between)
            continue;
        l->slots[i] = l->slots[j];
        l->slots[j].call = NULL;
        i = j;
    }
    l->live--;
}

static bool refcounted(const leaks *l, uint32_t res)
{
    const at_resource *r = at_trace_resource(l->t, res);
    return r && r->refcount;
}

static void pair(leaks *l, const at_call *c, bool copy)
{
    if (!c->is_alloc) {
        if (c->id == 0)
            return;
        slot *s = find(l, c->res, c->id);
        if (!s->call)
            return; /* unmatched release */
        if (s->refs > 1) {
            s->refs--;
            return;
        }
        free(s->call);
        erase(l, s);
        return;
    }
    if ((l->live + 1) * 2 > l->nslots)
        table_resize(l, l->nslots * 2);
    slot *s = find(l, c->res, c->id);
    if (s->call) {
        if (refcounted(l, c->res)) {
            s->refs++;
            if (!copy)
                free((at_call *)c);
            return;
        }
        l->orphans = grow(l->orphans, &l->corphans, l->norphans, sizeof *l->orphans);
        l->orphans[l->norphans++] = s->call;
    } else {
        l->live++;
    }
    *s = (slot){ .id = c->id, .res = c->res, .refs = 1,
                 .call = copy ? at_call_copy(c) : (at_call *)c };
}

static void put(at_stage *self, const at_record *r)
{
    leaks *l = (leaks *)self;
    switch (r->kind) {
    case AT_REC_HEADER: {
        at_header *h = (at_header *)r->u.header;
        h->filter |= AT_F_LEAKS;
        at_stage_put(self->next, r);
        return;
    }
    case AT_REC_CALL:
        if (l->t->input_compressed && !l->t->calls_in_order) {
            l->sorted = grow(l->sorted, &l->csorted, l->nsorted, sizeof *l->sorted);
            l->sorted[l->nsorted++] = at_call_copy(r->u.call);
        } else {
            pair(l, r->u.call, true);
        }
        if (r->u.call->index > l->last_index)
            l->last_index = r->u.call->index;
        return;
    case AT_REC_GROUP:
        for (size_t i = 0; i < r->u.group->ncalls; i++)
            pair(l, r->u.group->calls[i], true);
        return;
    default:
        l->others = grow(l->others, &l->cothers, l->nothers, sizeof *l->others);
        l->others[l->nothers++] = (kept){ at_record_copy(r), l->last_index };
        return;
    }
}

static int by_index(const void *a, const void *b)
{
    const at_call *x = *(at_call *const *)a, *y = *(at_call *const *)b;
    return x->index < y->index ? -1 : x->index > y->index;
}

static void finish(at_stage *self)
{
    leaks *l = (leaks *)self;
    if (l->nsorted) {
        qsort(l->sorted, l->nsorted, sizeof *l->sorted, by_index);
        for (size_t i = 0; i < l->nsorted; i++) {
            at_call *c = l->sorted[i];
            bool alloc = c->is_alloc;
            pair(l, c, false); /* takes over an allocation, only looks at a release */
            if (!alloc)
                free(c);
        }
    }
    /* What is left: live allocations and orphans, in index order. */
    size_t n = l->live + l->norphans, k = 0;
    at_call **left = malloc((n ? n : 1) * sizeof *left);
    if (!left)
        at_oom();
    for (size_t i = 0; i < l->nslots; i++)
        if (l->slots[i].call)
            left[k++] = l->slots[i].call;
    for (size_t i = 0; i < l->norphans; i++)
        left[k++] = l->orphans[i];
    qsort(left, n, sizeof *left, by_index);

    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        for (; o < l->nothers && l->others[o].after < left[i]->index; o++)
            at_stage_put(self->next, l->others[o].rec);
        at_record rec = { .kind = AT_REC_CALL, .u.call = left[i] };
        at_stage_put(self->next, &rec);
    }
    for (; o < l->nothers; o++)
        at_stage_put(self->next, l->others[o].rec);
    free(left);
    at_stage_finish(self->next);
}

at_stage *at_leaks_new(at_stage *next, at_trace *t)
{
    leaks *l = calloc(1, sizeof *l);
    if (!l)
        at_oom();
    l->stage = (at_stage){ .put = put, .finish = finish, .next = next };
    l->t = t;
    table_resize(l, 1024);
    return &l->stage;
}

void at_leaks_free(at_stage *s)
{
    leaks *l = (leaks *)s;
    if (!l)
        return;
    for (size_t i = 0; i < l->nslots; i++)
        free(l->slots[i].call);
    for (size_t i = 0; i < l->norphans; i++)
        free(l->orphans[i]);
    for (size_t i = 0; i < l->nothers; i++)
        at_record_free(l->others[i].rec);
    free(l->slots);
    free(l->orphans);
    free(l->others);
    free(l->sorted);
    free(l);
}
