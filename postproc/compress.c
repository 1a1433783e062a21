/*
 * postproc/compress.c: grouping by backtrace, group order, depth cut
 * (compress.h).
 *
 * Stacks are interned, so "same backtrace" is "same stack pointer", and a
 * group is found by the stack's dense id: no hashing of frames per call.
 * The depth cut interns the first N frames once per distinct stack (cached
 * by id), so stacks that become equal are the same group in the same run.
 *
 * The compressed form lists every call line of a group before its frames,
 * so the calls are kept until the end of input: with -l before it that is
 * the leaks only; -c alone keeps every call (copied compactly). Records
 * other than calls go on at once, ahead of the groups.
 */
#include "compress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <alloctrace/format.h>

typedef struct group {
    const at_stack *stack;
    at_call **calls;
    size_t ncalls, ccalls;
    uint64_t total_size, first_index;
} group;

typedef struct compress {
    at_stage stage;
    at_trace *t;
    bool grouping;
    at_sort sort;
    unsigned depth;
    const at_stack **cut; /* by stack id: the cut stack, NULL until computed */
    size_t ncut;
    uint32_t *group_of;   /* by (cut) stack id: group number + 1, 0: none */
    size_t ngroup_of;
    group *groups;
    size_t ngroups, cgroups;
} compress;

static void oom(void)
{
    fputs("alloctrace-postproc: out of memory\n", stderr);
    abort();
}

int at_sort_parse(const char *s, at_sort *out)
{
    static const struct {
        const char *name;
        at_sort sort;
    } names[] = { { "size", AT_SORT_SIZE },
                  { "size-asc", AT_SORT_SIZE_ASC },
                  { "count", AT_SORT_COUNT },
                  { "count-asc", AT_SORT_COUNT_ASC } };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].sort;
            return 0;
        }
    }
    return -1;
}

/* Grows a zero-filled array indexed by stack id to hold id. */
static void *grow_by_id(void *p, size_t *n, uint32_t id, size_t sz)
{
    if (id < *n)
        return p;
    size_t m = *n ? *n : 1024;
    while (m <= id)
        m *= 2;
    p = realloc(p, m * sz);
    if (!p)
        oom();
    memset((char *)p + *n * sz, 0, (m - *n) * sz);
    *n = m;
    return p;
}

static const at_stack *cut_stack(compress *c, const at_stack *s)
{
    if (!c->depth || s->nframes <= c->depth)
        return s;
    c->cut = grow_by_id(c->cut, &c->ncut, s->id, sizeof *c->cut);
    if (!c->cut[s->id])
        c->cut[s->id] = at_stacks_intern(c->t->stacks, s->frames, c->depth);
    return c->cut[s->id];
}

static void add_to_group(compress *c, const at_call *call)
{
    const at_stack *s = call->stack;
    c->group_of = grow_by_id(c->group_of, &c->ngroup_of, s->id, sizeof *c->group_of);
    if (!c->group_of[s->id]) {
        if (c->ngroups == c->cgroups) {
            c->cgroups = c->cgroups ? c->cgroups * 2 : 256;
            c->groups = realloc(c->groups, c->cgroups * sizeof *c->groups);
            if (!c->groups)
                oom();
        }
        c->groups[c->ngroups] = (group){ .stack = s, .first_index = call->index };
        c->group_of[s->id] = (uint32_t)++c->ngroups;
    }
    group *g = &c->groups[c->group_of[s->id] - 1];
    if (g->ncalls == g->ccalls) {
        g->ccalls = g->ccalls ? g->ccalls * 2 : 4;
        g->calls = realloc(g->calls, g->ccalls * sizeof *g->calls);
        if (!g->calls)
            oom();
    }
    g->calls[g->ncalls++] = at_call_copy(call);
    if (call->is_alloc)
        g->total_size += call->size;
    if (call->index < g->first_index)
        g->first_index = call->index;
}

static void set_depth(at_header *h, unsigned depth)
{
    unsigned long cur = h->depth ? strtoul(h->depth, NULL, 10) : 0;
    if (h->depth && cur && cur <= depth)
        return;
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%u", depth);
    at_header_set(&h->depth, buf, (size_t)n);
}

static void put(at_stage *self, const at_record *r)
{
    compress *c = (compress *)self;
    switch (r->kind) {
    case AT_REC_HEADER: {
        at_header *h = (at_header *)r->u.header;
        if (c->grouping)
            h->filter |= AT_F_COMPRESS;
        if (c->depth)
            set_depth(h, c->depth);
        at_stage_put(self->next, r);
        return;
    }
    case AT_REC_CALL: {
        at_call call = *r->u.call;
        call.stack = cut_stack(c, call.stack);
        if (c->grouping) {
            add_to_group(c, &call);
        } else {
            at_record rec = *r;
            rec.u.call = &call;
            at_stage_put(self->next, &rec);
        }
        return;
    }
    default:
        at_stage_put(self->next, r);
        return;
    }
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

static int by_order(const void *pa, const void *pb, void *order)
{
    const group *a = pa, *b = pb;
    int r = 0;
    switch (*(const at_sort *)order) {
    case AT_SORT_SIZE:
        r = cmp_u64(b->total_size, a->total_size);
        break;
    case AT_SORT_SIZE_ASC:
        r = cmp_u64(a->total_size, b->total_size);
        break;
    case AT_SORT_COUNT:
        r = cmp_u64(b->ncalls, a->ncalls);
        break;
    case AT_SORT_COUNT_ASC:
        r = cmp_u64(a->ncalls, b->ncalls);
        break;
    case AT_SORT_NONE:
        break;
    }
    return r ? r : cmp_u64(a->first_index, b->first_index);
}

static void finish(at_stage *self)
{
    compress *c = (compress *)self;
    if (c->grouping) {
        if (c->ngroups)
            qsort_r(c->groups, c->ngroups, sizeof *c->groups, by_order, &c->sort);
        for (size_t i = 0; i < c->ngroups; i++) {
            group *g = &c->groups[i];
            at_group ag = { .stack = g->stack,
                            .calls = (const at_call *const *)g->calls,
                            .ncalls = g->ncalls,
                            .total_size = g->total_size };
            at_record rec = { .kind = AT_REC_GROUP, .u.group = &ag };
            at_stage_put(self->next, &rec);
        }
    }
    at_stage_finish(self->next);
}

at_stage *at_compress_new(at_stage *next, at_trace *t, bool grouping, at_sort sort,
                          unsigned depth)
{
    compress *c = calloc(1, sizeof *c);
    if (!c)
        oom();
    c->stage = (at_stage){ .put = put, .finish = finish, .next = next };
    c->t = t;
    c->grouping = grouping;
    c->sort = sort;
    c->depth = depth;
    return &c->stage;
}

void at_compress_free(at_stage *s)
{
    compress *c = (compress *)s;
    if (!c)
        return;
    for (size_t i = 0; i < c->ngroups; i++) {
        for (size_t k = 0; k < c->groups[i].ncalls; k++)
            free(c->groups[i].calls[k]);
        free(c->groups[i].calls);
    }
    free(c->groups);
    free(c->cut);
    free(c->group_of);
    free(c);
}
