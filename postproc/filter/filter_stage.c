/*
 * postproc/filter/filter_stage.c: the filter options and stage (filter_stage.h).
 *
 * An allocation is kept when (there is no keep filter or one matches) and
 * no --exclude-filter matches and no suppression matches; suppressions are
 * asked last, so what they report having taken is what would otherwise
 * have been in the output.
 *
 * Dropped allocations are remembered by (resource, id) until their
 * release comes, so memory grows with the dropped live blocks only. After
 * leak pairing there are no releases and the table stays empty.
 */
#include "filter_stage.h"
#include "xalloc.h"

#include "filter_impl.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------ */

int at_filter_opts_add(at_filter_opts *o, at_filter_opt which, const char *arg)
{
    at_filter_set **set = which == AT_FOPT_EXCLUDE        ? &o->drop
                          : which == AT_FOPT_SUPPRESSIONS ? &o->suppress
                                                          : &o->keep;
    if (!*set)
        *set = at_filter_set_new();
    at_filter_error err;
    int rc;
    if (which == AT_FOPT_FILTER)
        rc = at_filter_set_add_expr(*set, arg, "--filter", &err);
    else if (which == AT_FOPT_EXCLUDE)
        rc = at_filter_set_add_expr(*set, arg, "--exclude-filter", &err);
    else
        rc = at_filter_set_add_file(*set, arg, &err);
    if (rc != 0) {
        at_filter_error_print(stderr, &err, isatty(2));
        at_filter_error_clear(&err);
        return -1;
    }
    return 0;
}

static size_t count(const at_filter_set *s)
{
    return s ? at_filter_set_count(s) : 0;
}

bool at_filter_opts_active(const at_filter_opts *o)
{
    return count(o->keep) || count(o->drop) || count(o->suppress);
}

bool at_filter_opts_needs_names(const at_filter_opts *o)
{
    return (o->keep && at_filter_set_needs_names(o->keep)) || (o->drop && at_filter_set_needs_names(o->drop)) ||
           (o->suppress && at_filter_set_needs_names(o->suppress));
}

static size_t check_set(const at_filter_set *s, const char *what, FILE *out, FILE *warn)
{
    if (!count(s))
        return 0;
    fprintf(out, "# %s\n", what);
    for (size_t i = 0; i < count(s); i++) {
        at_filter_print(out, s, i);
        fputc('\n', out);
    }
    return at_filter_set_lint(s, warn);
}

size_t at_filter_opts_check(const at_filter_opts *o, FILE *out, FILE *warn)
{
    return check_set(o->keep, "kept: --filter, --filter-file", out, warn) +
           check_set(o->drop, "dropped: --exclude-filter", out, warn) +
           check_set(o->suppress, "suppressed: --suppressions", out, warn);
}

void at_filter_opts_free(at_filter_opts *o)
{
    at_filter_set_free(o->keep);
    at_filter_set_free(o->drop);
    at_filter_set_free(o->suppress);
    memset(o, 0, sizeof *o);
}

/* ---- the set of dropped live blocks -------------------------------------- */

typedef struct dropped_slot {
    uint64_t id;
    uint32_t res;
    uint8_t state; /* 0 empty, 1 used, 2 deleted */
} dropped_slot;

typedef struct dropped_set {
    dropped_slot *slots;
    size_t cap, used, deleted; /* cap a power of two */
} dropped_set;

static size_t slot_of(uint32_t res, uint64_t id, size_t cap)
{
    uint64_t h = (id ^ ((uint64_t)res << 56)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

static dropped_slot *find(dropped_set *d, uint32_t res, uint64_t id)
{
    if (!d->cap)
        return NULL;
    for (size_t i = slot_of(res, id, d->cap);; i = (i + 1) & (d->cap - 1)) {
        dropped_slot *s = &d->slots[i];
        if (s->state == 0)
            return NULL;
        if (s->state == 1 && s->id == id && s->res == res)
            return s;
    }
}

static void insert(dropped_set *d, uint32_t res, uint64_t id);

static void rehash(dropped_set *d, size_t cap)
{
    dropped_set n = { .slots = at_xrealloc(NULL, cap * sizeof *n.slots), .cap = cap };
    memset(n.slots, 0, cap * sizeof *n.slots);
    for (size_t i = 0; i < d->cap; i++)
        if (d->slots[i].state == 1)
            insert(&n, d->slots[i].res, d->slots[i].id);
    free(d->slots);
    *d = n;
}

static void insert(dropped_set *d, uint32_t res, uint64_t id)
{
    if ((d->used + d->deleted + 1) * 2 > d->cap)
        rehash(d, d->used * 4 > d->cap ? d->cap * 2 : (d->cap ? d->cap : 64));
    for (size_t i = slot_of(res, id, d->cap);; i = (i + 1) & (d->cap - 1)) {
        dropped_slot *s = &d->slots[i];
        if (s->state != 1) {
            if (s->state == 2)
                d->deleted--;
            *s = (dropped_slot){ .id = id, .res = res, .state = 1 };
            d->used++;
            return;
        }
        if (s->id == id && s->res == res)
            return;
    }
}

static bool take(dropped_set *d, uint32_t res, uint64_t id)
{
    dropped_slot *s = find(d, res, id);
    if (!s)
        return false;
    s->state = 2;
    d->used--;
    d->deleted++;
    return true;
}

/* ---- the stage ------------------------------------------------------------- */

typedef struct filter_stage {
    at_stage stage;
    at_trace *t;
    const at_filter_opts *o;
    at_diag *d;
    bool undecided_told;    /* the first undecided regex test was reported */
    FILE *report;
    at_filter_tally *tally; /* one per suppression */
    dropped_set dropped;
    const at_call **calls;  /* a group's kept calls */
    size_t ccap;
} filter_stage;

static uint64_t undecided_count(const at_filter_set *set)
{
    return set ? at_filter_set_undecided(set)->count : 0;
}

static uint64_t undecided_total(const filter_stage *s)
{
    return undecided_count(s->o->keep) + undecided_count(s->o->drop) + undecided_count(s->o->suppress);
}

/* The first regex test PCRE2 could not decide, in one line: a silent
 * "no match" would drop or keep allocations without a word. Under
 * --strict it is an error that stops the run (exit 2). */
static void tell_undecided(filter_stage *s, const at_filter_set *set)
{
    const at_filter_undecided *u = at_filter_set_undecided(set);
    if (s->undecided_told || !u->count)
        return;
    s->undecided_told = true;
    at_diag_input(s->d, 0, "filter %s: regex #\"%s\"# could not be decided on \"%.200s%s\" (PCRE2: %s); "
                           "such frames count as not matching",
                  u->label, u->regex, u->subject, strlen(u->subject) > 200 ? "..." : "", u->reason);
}

static long first(filter_stage *s, at_filter_set *set, const at_call *c)
{
    long k = at_filter_set_first_match_stack(set, c->stack, s->t->maps, s->t->stacks, c->size);
    tell_undecided(s, set);
    return k;
}

static bool keep_alloc(filter_stage *s, const at_call *c)
{
    const at_filter_opts *o = s->o;
    if (count(o->keep) && first(s, o->keep, c) < 0)
        return false;
    if (count(o->drop) && first(s, o->drop, c) >= 0)
        return false;
    if (count(o->suppress)) {
        long k = first(s, o->suppress, c);
        if (k >= 0) {
            s->tally[k].blocks++;
            s->tally[k].bytes += c->size;
            return false;
        }
    }
    return true;
}

/* The fate of a call; remembers dropped allocations for their releases. */
static bool keep_call(filter_stage *s, const at_call *c)
{
    if (!c->is_alloc)
        return !take(&s->dropped, c->res, c->id);
    /* A new allocation of an id ends whatever was remembered for it. */
    take(&s->dropped, c->res, c->id);
    if (keep_alloc(s, c))
        return true;
    insert(&s->dropped, c->res, c->id);
    return false;
}

static void put_group(filter_stage *s, const at_record *r)
{
    const at_group *g = r->u.group;
    if (g->ncalls > s->ccap) {
        s->ccap = g->ncalls;
        s->calls = at_xrealloc(s->calls, s->ccap * sizeof *s->calls);
    }
    at_group kept = { .stack = g->stack, .calls = s->calls };
    for (size_t i = 0; i < g->ncalls; i++)
        if (keep_call(s, g->calls[i])) {
            s->calls[kept.ncalls++] = g->calls[i];
            if (g->calls[i]->is_alloc)
                kept.total_size += g->calls[i]->size;
        }
    if (!kept.ncalls)
        return;
    at_record rec = *r;
    rec.u.group = &kept;
    at_stage_put(s->stage.next, &rec);
}

static void put(at_stage *self, const at_record *r)
{
    filter_stage *s = (filter_stage *)self;
    if (r->kind == AT_REC_CALL) {
        if (keep_call(s, r->u.call))
            at_stage_put(self->next, r);
        return;
    }
    if (r->kind == AT_REC_GROUP) {
        put_group(s, r);
        return;
    }
    at_stage_put(self->next, r);
}

static void finish(at_stage *self)
{
    filter_stage *s = (filter_stage *)self;
    uint64_t n = undecided_total(s);
    if (n > 1)
        at_diag_warn(s->d, "filter regexes could not decide %llu frame test(s) in all; each counted "
                           "as not matching", (unsigned long long)n);
    if (count(s->o->suppress) && s->report) {
        at_filter_report_tally(s->report, s->o->suppress, s->tally);
        fflush(s->report);
    }
    at_stage_finish(self->next);
}

at_stage *at_filter_stage_new(at_stage *next, at_trace *t, const at_filter_opts *o, at_diag *d,
                              FILE *report)
{
    filter_stage *s = at_xrealloc(NULL, sizeof *s);
    *s = (filter_stage){ .stage = { .put = put, .finish = finish, .next = next }, .t = t, .o = o,
                         .d = d, .report = report };
    size_t n = count(o->suppress);
    s->tally = at_xrealloc(NULL, (n ? n : 1) * sizeof *s->tally);
    memset(s->tally, 0, (n ? n : 1) * sizeof *s->tally);
    return &s->stage;
}

void at_filter_stage_free(at_stage *st)
{
    filter_stage *s = (filter_stage *)st;
    if (!s)
        return;
    free(s->tally);
    free(s->dropped.slots);
    free(s->calls);
    free(s);
}
