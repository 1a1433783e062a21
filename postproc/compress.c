/*
 * postproc/compress.c: grouping by backtrace, group order, depth cut
 * (compress.h).
 *
 * Stacks are interned, so "same backtrace" is "same stack pointer", and a
 * group is found by the stack's dense id (and the call's leak kind): no
 * hashing of frames per call.
 * The depth cut interns the first N frames once per distinct stack (cached
 * by id), so stacks that become equal are the same group in the same run.
 *
 * The compressed form lists every call line of a group before its frames,
 * so the calls wait for the end of input. To keep memory in proportion to
 * the distinct backtraces, not to the calls (-c alone keeps every call),
 * each group encodes its calls compactly into a small buffer of its own;
 * a full buffer (GROUP_BUF bytes) goes to an unlinked temporary file as a
 * chunk, and at the end each group's chunks are read back in order and
 * handed on one piece at a time (at_group.more). Records other than calls
 * go on at once, ahead of the groups.
 */
#include "compress.h"
#include "leakkind.h"
#include "xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <alloctrace/format.h>

#define GROUP_BUF (8u << 10)   /* a group's in-memory tail of encoded calls */
#define STAGE_BUF (1u << 20)   /* chunks on their way to the spill file */

/* A call as kept by a group; its arguments follow as "name\0value\0". */
typedef struct enc_call {
    uint64_t index, size, id, time_us;
    const char *name; /* interned: valid as long as the trace */
    const at_stack *stack;
    uint32_t context, res, nargs, len; /* len: of the whole encoding */
    uint8_t is_alloc, has_time, kind;
} enc_call;

typedef struct chunk {
    uint64_t off;
    uint32_t len;
} chunk;

typedef struct group {
    const at_stack *stack;
    size_t ncalls;
    uint64_t total_size, first_index;
    char *buf; /* tail of encoded calls */
    uint32_t blen, bcap;
    chunk *chunks; /* earlier calls, in the spill file */
    uint32_t nchunks, cchunks;
} group;

typedef struct compress {
    at_stage stage;
    at_trace *t;
    at_diag *d;
    bool grouping;
    at_sort sort;
    unsigned depth;
    const at_stack **cut; /* by stack id: the cut stack, NULL until computed */
    size_t ncut;
    uint32_t *group_of;   /* by (cut) stack id: group number + 1, 0: none */
    size_t ngroup_of;
    group *groups;
    size_t ngroups, cgroups;
    FILE *spill;          /* unlinked temporary file, NULL until needed */
    uint64_t spill_len;   /* bytes written to it */
    char *stage_buf;      /* chunks not yet written */
    size_t stage_len;
    bool spill_failed;
} compress;

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
        at_oom();
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

static void stage_flush(compress *c)
{
    if (!c->stage_len || c->spill_failed)
        return;
    if (fwrite(c->stage_buf, 1, c->stage_len, c->spill) != c->stage_len || fflush(c->spill)) {
        at_diag_error(c->d, AT_EXIT_FAIL, "temporary file: %s", strerror(errno));
        c->spill_failed = true;
    }
    c->spill_len += c->stage_len;
    c->stage_len = 0;
}

/* Moves a group's full buffer out of memory, as the next chunk. */
static void spill_group(compress *c, group *g)
{
    if (!c->spill && !c->spill_failed) {
        c->spill = tmpfile();
        c->stage_buf = malloc(STAGE_BUF);
        if (!c->stage_buf)
            at_oom();
        if (!c->spill) {
            at_diag_error(c->d, AT_EXIT_FAIL, "temporary file: %s", strerror(errno));
            c->spill_failed = true;
        }
    }
    if (c->spill_failed)
        return; /* keep it in memory then */
    if (c->stage_len + g->blen > STAGE_BUF)
        stage_flush(c);
    memcpy(c->stage_buf + c->stage_len, g->buf, g->blen);
    if (g->nchunks == g->cchunks) {
        g->cchunks = g->cchunks ? g->cchunks * 2 : 4;
        g->chunks = at_xrealloc(g->chunks, g->cchunks * sizeof *g->chunks);
    }
    g->chunks[g->nchunks++] = (chunk){ c->spill_len + c->stage_len, g->blen };
    c->stage_len += g->blen;
    g->blen = 0;
}

static void encode(compress *c, group *g, const at_call *call)
{
    size_t len = sizeof(enc_call);
    for (uint32_t i = 0; i < call->nargs; i++)
        len += strlen(call->args[i].name) + strlen(call->args[i].value) + 2;
    len = (len + 7) & ~(size_t)7;
    if (g->blen + len > GROUP_BUF && g->blen)
        spill_group(c, g);
    if (g->blen + len > g->bcap) {
        size_t cap = g->bcap ? g->bcap : 256;
        while (cap < g->blen + len)
            cap *= 2;
        g->buf = at_xrealloc(g->buf, cap);
        g->bcap = (uint32_t)cap;
    }
    enc_call e = { .index = call->index, .size = call->size, .id = call->id,
                   .time_us = call->time_us, .name = call->name, .stack = call->stack,
                   .context = call->context, .res = call->res, .nargs = call->nargs,
                   .len = (uint32_t)len, .is_alloc = call->is_alloc, .has_time = call->has_time,
                   .kind = call->kind };
    char *p = g->buf + g->blen;
    memcpy(p, &e, sizeof e);
    p += sizeof e;
    for (uint32_t i = 0; i < call->nargs; i++) {
        size_t n = strlen(call->args[i].name) + 1, v = strlen(call->args[i].value) + 1;
        memcpy(p, call->args[i].name, n);
        memcpy(p + n, call->args[i].value, v);
        p += n + v;
    }
    g->blen += (uint32_t)len;
}

/* Groups are by stack and leak kind: a stack's lost and reachable blocks
 * are two groups, as in valgrind's loss records. */
static void add_to_group(compress *c, const at_call *call)
{
    const at_stack *s = call->stack;
    uint32_t key = s->id * AT_LEAK_NKINDS + (call->kind < AT_LEAK_NKINDS ? call->kind : 0);
    c->group_of = grow_by_id(c->group_of, &c->ngroup_of, key, sizeof *c->group_of);
    if (!c->group_of[key]) {
        if (c->ngroups == c->cgroups) {
            c->cgroups = c->cgroups ? c->cgroups * 2 : 256;
            c->groups = at_xrealloc(c->groups, c->cgroups * sizeof *c->groups);
        }
        c->groups[c->ngroups] = (group){ .stack = s, .first_index = call->index };
        c->group_of[key] = (uint32_t)++c->ngroups;
    }
    group *g = &c->groups[c->group_of[key] - 1];
    encode(c, g, call);
    g->ncalls++;
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

/* Decodes the calls of data[0..len) and hands them on as one piece of g. */
static void emit_piece(compress *c, const group *g, const char *data, size_t len, bool more)
{
    size_t ncalls = 0, nargs = 0;
    for (size_t p = 0; p < len; p += ((const enc_call *)(data + p))->len) {
        ncalls++;
        nargs += ((const enc_call *)(data + p))->nargs;
    }
    at_call *calls = malloc((ncalls ? ncalls : 1) * sizeof *calls);
    const at_call **ptrs = malloc((ncalls ? ncalls : 1) * sizeof *ptrs);
    at_arg *args = malloc((nargs ? nargs : 1) * sizeof *args);
    if (!calls || !ptrs || !args)
        at_oom();
    size_t k = 0, a = 0;
    uint64_t size = 0;
    for (size_t p = 0; p < len; k++) {
        const enc_call *e = (const enc_call *)(data + p);
        calls[k] = (at_call){ .index = e->index, .context = e->context, .has_time = e->has_time,
                              .time_us = e->time_us, .name = e->name, .res = e->res,
                              .is_alloc = e->is_alloc, .size = e->size, .id = e->id,
                              .nargs = e->nargs, .args = e->nargs ? args + a : NULL,
                              .stack = e->stack, .kind = e->kind };
        const char *q = (const char *)(e + 1);
        for (uint32_t i = 0; i < e->nargs; i++, a++) {
            args[a].name = q;
            q += strlen(q) + 1;
            args[a].value = q;
            q += strlen(q) + 1;
        }
        if (e->is_alloc)
            size += e->size;
        ptrs[k] = &calls[k];
        p += e->len;
    }
    at_group ag = { .stack = g->stack, .calls = ptrs, .ncalls = k, .total_size = size,
                    .more = more };
    at_record rec = { .kind = AT_REC_GROUP, .u.group = &ag };
    at_stage_put(c->stage.next, &rec);
    free(args);
    free(ptrs);
    free(calls);
}

/* Hands a group on: a piece per chunk read back, then the in-memory tail. */
static void emit_group(compress *c, group *g)
{
    char *data = NULL;
    size_t cap = 0;
    for (uint32_t i = 0; i < g->nchunks && !c->spill_failed; i++) {
        if (g->chunks[i].len > cap) {
            cap = g->chunks[i].len;
            data = at_xrealloc(data, cap);
        }
        if (pread(fileno(c->spill), data, g->chunks[i].len, (off_t)g->chunks[i].off) !=
            (ssize_t)g->chunks[i].len) {
            at_diag_error(c->d, AT_EXIT_FAIL, "temporary file: read error");
            c->spill_failed = true;
            break;
        }
        emit_piece(c, g, data, g->chunks[i].len, i + 1 < g->nchunks || g->blen);
    }
    free(data);
    if (!c->spill_failed && (g->blen || !g->nchunks))
        emit_piece(c, g, g->buf, g->blen, false);
}

static void finish(at_stage *self)
{
    compress *c = (compress *)self;
    if (c->grouping) {
        if (c->spill)
            stage_flush(c);
        if (c->ngroups)
            qsort_r(c->groups, c->ngroups, sizeof *c->groups, by_order, &c->sort);
        for (size_t i = 0; i < c->ngroups; i++) {
            emit_group(c, &c->groups[i]);
            free(c->groups[i].buf); /* written: give the memory back as we go */
            c->groups[i].buf = NULL;
        }
    }
    at_stage_finish(self->next);
}

at_stage *at_compress_new(at_stage *next, at_trace *t, at_diag *d, bool grouping, at_sort sort,
                          unsigned depth)
{
    compress *c = calloc(1, sizeof *c);
    if (!c)
        at_oom();
    c->stage = (at_stage){ .put = put, .finish = finish, .next = next };
    c->t = t;
    c->d = d;
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
        free(c->groups[i].buf);
        free(c->groups[i].chunks);
    }
    if (c->spill)
        fclose(c->spill);
    free(c->stage_buf);
    free(c->groups);
    free(c->cut);
    free(c->group_of);
    free(c);
}
