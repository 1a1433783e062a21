/*
 * postproc/read/tree.c: the traces of one process tree read together, so
 * that a block lives in the process that holds it at the end.
 *
 * A forked child starts with its parent's live blocks; the tracer writes
 * each process's calls in its own trace, and a child's header names its
 * parent (ppid) and, in full mode, the parent's last index before the
 * fork (fork index). Read alone, a parent that forks and exits reports as
 * leaked what its child still uses, and a block the child inherited and
 * never freed is reported by no one. Decisions:
 *
 * - One trace is processed and written (the first input); the others are
 *   read first, whole, into a light copy of their calls (index, id, size,
 *   name, stack), and only to adjust it. The output stays one trace.
 * - Full mode: the blocks alive in the parent just after the fork index
 *   (with what the parent inherited itself, up the tree) are the child's
 *   too. Those the child never frees are added to the child's trace at its
 *   end, as allocation calls with the parent's stacks, times and sizes,
 *   numbered after its last call, behind a comment naming the parent.
 * - Leaks mode: the child's report already lists them (the tracer keeps
 *   inherited blocks, as valgrind does); nothing is added.
 * - The parent: an allocation still held by a child at the child's end
 *   (full mode: inherited and not freed; leaks mode: the same address and
 *   size in the child's report) is taken out of the parent's trace, with a
 *   comment saying which child reports it. A block both processes leak is
 *   then reported once, by the child, as the issue asks.
 * - Only when leaks are asked for (-l) or the trace is leaks mode's: a
 *   full trace written whole keeps its own events and nothing else.
 * - Processes are matched by the pid and ppid of their headers; a trace
 *   of another tree, or of no known parent, changes nothing.
 * - A snapshot (`--snapshot N`, `first`): what the process holds at the
 *   mark, whoever holds it at the end. So every block alive in the parent
 *   at the fork comes first, numbered 1 to K, and the process's own calls
 *   follow with their numbers shifted by K: the mark then has them before
 *   it, and a release of an inherited block pairs with it. Nothing is
 *   taken out for a child.
 */
#include "tree.h"

#include "reader.h"
#include "reorder.h"
#include "snapmark.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One trace, read whole. */
typedef struct node {
    at_trace *t;
    long pid, ppid;
    bool has_fork, leaks;
    uint64_t fork_index, max_index;
    at_call *calls; /* in index order; args dropped */
    size_t n, cap;
} node;

typedef struct collector {
    at_stage stage;
    node *nd;
} collector;

static void add_call(node *nd, const at_call *c)
{
    if (nd->n == nd->cap) {
        nd->cap = nd->cap ? nd->cap * 2 : 1024;
        nd->calls = at_xrealloc(nd->calls, nd->cap * sizeof *nd->calls);
    }
    at_call copy = *c;
    copy.nargs = 0;
    copy.args = NULL;
    nd->calls[nd->n++] = copy;
    if (c->index > nd->max_index)
        nd->max_index = c->index;
}

static void collect_put(at_stage *self, const at_record *r)
{
    node *nd = ((collector *)self)->nd;
    if (r->kind == AT_REC_CALL)
        add_call(nd, r->u.call);
    else if (r->kind == AT_REC_GROUP)
        for (size_t i = 0; i < r->u.group->ncalls; i++)
            add_call(nd, r->u.group->calls[i]);
}

static void collect_finish(at_stage *self)
{
    (void)self;
}

static int by_index(const void *a, const void *b)
{
    const at_call *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

static const char *header_value(const at_header *h, const char *key)
{
    for (size_t i = 0; i < h->nunknown; i++)
        if (strcmp(h->unknown[i].key, key) == 0)
            return h->unknown[i].value;
    return NULL;
}

/* Reads one trace into nd; -1 after an error said through d. */
static int read_node(const char *path, node *nd, at_diag *d)
{
    memset(nd, 0, sizeof *nd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        at_diag_error(d, 1, "%s: %s", path, strerror(errno));
        return -1;
    }
    at_diag nd_diag;
    at_diag_init(&nd_diag, path);
    nd_diag.quiet = d->quiet;
    nd->t = at_trace_new();
    collector c = { { collect_put, collect_finish, NULL }, nd };
    int rc = at_read_fd(fd, nd->t, &c.stage, &nd_diag, NULL);
    close(fd);
    if (rc != 0 || nd_diag.failed) {
        at_diag_error(d, nd_diag.status ? nd_diag.status : 1, "%s: cannot read the trace", path);
        return -1;
    }
    if (nd->n)
        qsort(nd->calls, nd->n, sizeof *nd->calls, by_index);
    /* the parent's calls the child inherits keep their own times */
    if (nd->t->header.time_on_change)
        for (uint64_t last = AT_NO_TIME, i = 0; i < nd->n; i++)
            at_carry_time(&last, &nd->calls[i]);
    const at_header *h = &nd->t->header;
    nd->pid = h->pid ? atol(h->pid) : -1;
    const char *v = header_value(h, "ppid");
    nd->ppid = v ? atol(v) : -1;
    v = header_value(h, "fork index");
    nd->has_fork = v != NULL;
    nd->fork_index = v ? strtoull(v, NULL, 10) : 0;
    nd->leaks = (h->filter & AT_F_LEAKS) != 0;
    return 0;
}

/* ---- live blocks: id -> the allocation call (open addressing) --------- */

typedef struct live {
    const at_call **slots;
    size_t cap, count;
} live;

static size_t home(const live *l, uint64_t id)
{
    return (size_t)((id >> 4) * 0x9e3779b97f4a7c15ull) & (l->cap - 1);
}

static void live_init(live *l)
{
    l->cap = 1024;
    l->count = 0;
    l->slots = at_xcalloc(l->cap, sizeof *l->slots);
}

static void live_put(live *l, const at_call *c);

static void live_grow(live *l)
{
    live old = *l;
    l->cap *= 2;
    l->count = 0;
    l->slots = at_xcalloc(l->cap, sizeof *l->slots);
    for (size_t i = 0; i < old.cap; i++)
        if (old.slots[i])
            live_put(l, old.slots[i]);
    free(old.slots);
}

static void live_put(live *l, const at_call *c)
{
    if (2 * (l->count + 1) > l->cap)
        live_grow(l);
    size_t i = home(l, c->id);
    while (l->slots[i] && l->slots[i]->id != c->id)
        i = (i + 1) & (l->cap - 1);
    if (!l->slots[i])
        l->count++;
    l->slots[i] = c;
}

/* Removes id (backward-shift deletion); whether it was there. */
static bool live_remove(live *l, uint64_t id)
{
    size_t i = home(l, id);
    while (l->slots[i] && l->slots[i]->id != id)
        i = (i + 1) & (l->cap - 1);
    if (!l->slots[i])
        return false;
    size_t hole = i;
    for (size_t j = (i + 1) & (l->cap - 1); l->slots[j]; j = (j + 1) & (l->cap - 1)) {
        size_t h = home(l, l->slots[j]->id);
        bool stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
        if (!stays) {
            l->slots[hole] = l->slots[j];
            hole = j;
        }
    }
    l->slots[hole] = NULL;
    l->count--;
    return true;
}

/* ---- the tree ------------------------------------------------------------ */

typedef struct tree {
    at_stage stage;
    at_trace *t;
    node *nodes; /* [0]: the trace processed */
    size_t n;
    bool active;
    /* indices of the processed trace's calls to take out, sorted */
    uint64_t *drop;
    size_t ndrop;
    const at_call **add; /* inherited blocks to add at the end */
    size_t nadd;
    long add_from;       /* the parent they came from */
    size_t passed_on;    /* inherited blocks a child holds at its end */
    char note[256];      /* the comment about what was taken out */
    const at_stack *open_stack; /* a group whose pieces went out, more to come */
    at_diag *d;
    bool first;          /* a snapshot: inherited blocks first, calls shifted */
    bool sent;           /* ... and they went out */
} tree;

static node *find_pid(tree *tr, long pid)
{
    for (size_t i = 1; i < tr->n; i++)
        if (tr->nodes[i].pid == pid && pid > 0)
            return &tr->nodes[i];
    return NULL;
}

/* The blocks alive in full-mode process nd just after its call `upto`
 * (with what it inherited, up the tree), into l. `depth` bounds a tree
 * whose headers loop. */
static void live_at(tree *tr, node *nd, uint64_t upto, live *l, int depth)
{
    node *parent = nd->has_fork ? find_pid(tr, nd->ppid) : NULL;
    if (parent && !parent->leaks && depth < 64)
        live_at(tr, parent, nd->fork_index, l, depth + 1);
    for (size_t i = 0; i < nd->n && nd->calls[i].index <= upto; i++) {
        const at_call *c = &nd->calls[i];
        if (c->is_alloc)
            live_put(l, c);
        else
            live_remove(l, c->id);
    }
}

/* What of l (inherited) child nd still holds at its end: l is left with it. */
static void held_at_end(const node *nd, live *l)
{
    for (size_t i = 0; i < nd->n; i++)
        live_remove(l, nd->calls[i].id);   /* freed, or taken over by a new block */
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int by_index_ptr(const void *a, const void *b)
{
    const at_call *x = *(const at_call *const *)a, *y = *(const at_call *const *)b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The inherited blocks the processed trace never frees (full mode); for a
 * snapshot, all of them. */
static void plan_inherited(tree *tr)
{
    node *me = &tr->nodes[0];
    node *parent = me->has_fork ? find_pid(tr, me->ppid) : NULL;
    if (me->leaks || !parent || parent->leaks)
        return;
    if (parent->max_index < me->fork_index)
        at_diag_warn(tr->d,
                     "the trace of pid %ld ends at its call %llu, before its fork of pid %ld at "
                     "call %llu: what it allocated in between is not known (not written yet?)",
                     parent->pid, (unsigned long long)parent->max_index, me->pid,
                     (unsigned long long)me->fork_index);
    live l;
    live_init(&l);
    live_at(tr, parent, me->fork_index, &l, 0);
    if (!tr->first)
        held_at_end(me, &l);
    tr->add = at_xcalloc(l.count + 1, sizeof *tr->add);
    for (size_t i = 0; i < l.cap; i++)
        if (l.slots[i])
            tr->add[tr->nadd++] = l.slots[i];
    if (tr->nadd)
        qsort(tr->add, tr->nadd, sizeof *tr->add, by_index_ptr);
    tr->add_from = parent->pid;
    free(l.slots);
}

static void drop_index(tree *tr, uint64_t index, size_t *cap)
{
    if (tr->ndrop == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        tr->drop = at_xrealloc(tr->drop, *cap * sizeof *tr->drop);
    }
    tr->drop[tr->ndrop++] = index;
}

/* An inherited block a child holds at its end is the child's to report. */
static void unadd(tree *tr, const at_call *c)
{
    for (size_t i = 0; i < tr->nadd; i++)
        if (tr->add[i] == c) {
            memmove(tr->add + i, tr->add + i + 1, (tr->nadd - i - 1) * sizeof *tr->add);
            tr->nadd--;
            tr->passed_on++;
            return;
        }
}

/* The processed trace's blocks a child still holds at its end. */
static void plan_children(tree *tr)
{
    node *me = &tr->nodes[0];
    size_t cap = 0;
    long first_child = 0;
    size_t children = 0;
    for (size_t k = 1; k < tr->n; k++) {
        node *c = &tr->nodes[k];
        if (c->ppid != me->pid || me->pid <= 0)
            continue;
        size_t before = tr->ndrop;
        if (!c->leaks && !me->leaks && c->has_fork) {
            live l;
            live_init(&l);
            live_at(tr, me, c->fork_index, &l, 0);
            held_at_end(c, &l);
            for (size_t i = 0; i < l.cap; i++) {
                if (!l.slots[i])
                    continue;
                if (l.slots[i] >= me->calls && l.slots[i] < me->calls + me->n)
                    drop_index(tr, l.slots[i]->index, &cap);
                else
                    unadd(tr, l.slots[i]);   /* inherited, and passed on */
            }
            free(l.slots);
        } else if (c->leaks && me->leaks) {
            /* Both reports: the same address and size in the child's. */
            live l;
            live_init(&l);
            for (size_t i = 0; i < c->n; i++)
                if (c->calls[i].is_alloc)
                    live_put(&l, &c->calls[i]);
            for (size_t i = 0; i < me->n; i++) {
                const at_call *m = &me->calls[i];
                for (size_t j = home(&l, m->id); m->is_alloc && l.slots[j]; j = (j + 1) & (l.cap - 1))
                    if (l.slots[j]->id == m->id) {
                        if (l.slots[j]->size == m->size)
                            drop_index(tr, m->index, &cap);
                        break;
                    }
            }
            free(l.slots);
        }
        if ((tr->ndrop > before || tr->passed_on) && children++ == 0)
            first_child = c->pid;
    }
    if (tr->ndrop)
        qsort(tr->drop, tr->ndrop, sizeof *tr->drop, cmp_u64);
    if (tr->ndrop + tr->passed_on)
        snprintf(tr->note, sizeof tr->note,
                 "## process tree: %zu block(s) left out, still held at its end by child pid %ld%s "
                 "(its trace, or a descendant's, reports them)",
                 tr->ndrop + tr->passed_on, first_child, children > 1 ? " and others" : "");
}

static bool dropped(const tree *tr, uint64_t index)
{
    return tr->ndrop && bsearch(&index, tr->drop, tr->ndrop, sizeof *tr->drop, cmp_u64);
}

static void put_comment(at_stage *next, const char *text)
{
    at_record rec = { .kind = AT_REC_COMMENT };
    rec.u.comment.text = text;
    rec.u.comment.len = strlen(text);
    at_stage_put(next, &rec);
}

/* The inherited blocks as allocation calls numbered from index + 1, with
 * the parent's stacks, times and sizes. */
static void put_inherited(tree *tr, uint64_t index)
{
    for (size_t i = 0; i < tr->nadd; i++) {
        at_call c = *tr->add[i];
        const at_stack *st = c.stack;
        c.index = ++index;
        c.name = at_trace_name(tr->t, c.name, strlen(c.name));
        c.stack = at_stacks_intern(tr->t->stacks, st->frames, st->nframes);
        c.kind = 0;
        at_record rec = { .kind = AT_REC_CALL };
        rec.u.call = &c;
        at_stage_put(tr->stage.next, &rec);
    }
}

/* A snapshot's record: the inherited blocks before the first call or
 * mark, and every call's number shifted past them. */
static void first_put(tree *tr, const at_record *r)
{
    if (!tr->sent && (r->kind == AT_REC_CALL || r->kind == AT_REC_GROUP || at_is_snapshot_mark(r))) {
        char text[200];
        snprintf(text, sizeof text,
                 "## process tree: %zu block(s) inherited from pid %ld at the fork, numbered 1 to "
                 "%zu; this process's calls follow, their numbers %zu higher",
                 tr->nadd, tr->add_from, tr->nadd, tr->nadd);
        put_comment(tr->stage.next, text);
        put_inherited(tr, 0);
        tr->sent = true;
    }
    if (r->kind == AT_REC_CALL) {
        at_call c = *r->u.call;
        c.index += tr->nadd;
        at_record nr = *r;
        nr.u.call = &c;
        at_stage_put(tr->stage.next, &nr);
    } else if (r->kind == AT_REC_GROUP) {
        const at_group *g = r->u.group;
        at_call *calls = at_xcalloc(g->ncalls + 1, sizeof *calls);
        const at_call **ptrs = at_xcalloc(g->ncalls + 1, sizeof *ptrs);
        for (size_t i = 0; i < g->ncalls; i++) {
            calls[i] = *g->calls[i];
            calls[i].index += tr->nadd;
            ptrs[i] = &calls[i];
        }
        at_group ng = *g;
        ng.calls = ptrs;
        at_record nr = *r;
        nr.u.group = &ng;
        at_stage_put(tr->stage.next, &nr);
        free(ptrs);
        free(calls);
    } else {
        at_stage_put(tr->stage.next, r);
    }
}

static void tree_put(at_stage *self, const at_record *r)
{
    tree *tr = (tree *)self;
    if (tr->first && tr->nadd) {
        first_put(tr, r);
        return;
    }
    if (r->kind == AT_REC_HEADER && !tr->active)
        tr->active = tr->nodes[0].leaks;   /* leaks mode's trace: always */
    if (!tr->active || !tr->ndrop || (r->kind != AT_REC_CALL && r->kind != AT_REC_GROUP)) {
        at_stage_put(self->next, r);
        return;
    }
    if (r->kind == AT_REC_CALL) {
        if (!dropped(tr, r->u.call->index))
            at_stage_put(self->next, r);
        return;
    }
    /* A group piece without its dropped calls. */
    const at_group *g = r->u.group;
    const at_call **kept = at_xcalloc(g->ncalls + 1, sizeof *kept);
    size_t k = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < g->ncalls; i++)
        if (!dropped(tr, g->calls[i]->index)) {
            kept[k++] = g->calls[i];
            total += g->calls[i]->is_alloc ? g->calls[i]->size : 0;
        }
    /* An empty piece only closes a group whose earlier pieces went out. */
    bool opened = tr->open_stack == g->stack;
    tr->open_stack = g->more && (k > 0 || opened) ? g->stack : NULL;
    if (k == g->ncalls) {
        at_stage_put(self->next, r);
    } else if (k > 0 || (!g->more && opened)) {
        at_group ng = *g;
        ng.calls = kept;
        ng.ncalls = k;
        ng.total_size = total;
        at_record nr = *r;
        nr.u.group = &ng;
        at_stage_put(self->next, &nr);
    }
    free(kept);
}

static void tree_finish(at_stage *self)
{
    tree *tr = (tree *)self;
    if (tr->active && tr->note[0])
        put_comment(self->next, tr->note);
    if (tr->first && tr->nadd && tr->t->chunk_end)
        tr->t->chunk_end += tr->nadd;   /* the reader's last chunk mark, shifted too */
    if (tr->active && tr->nadd && !tr->first) {
        char text[160];
        snprintf(text, sizeof text,
                 "## process tree: %zu block(s) inherited from pid %ld at the fork, alive at this "
                 "process's end",
                 tr->nadd, tr->add_from);
        put_comment(self->next, text);
        put_inherited(tr, tr->nodes[0].max_index);
    }
    at_stage_finish(self->next);
}

at_stage *at_tree_new(at_stage *next, at_trace *t, const char *main_path,
                      const char *const *others, size_t n, bool leaks, bool first, at_diag *d)
{
    tree *tr = at_xcalloc(1, sizeof *tr);
    tr->stage = (at_stage){ tree_put, tree_finish, next };
    tr->t = t;
    tr->active = leaks;
    tr->first = first;
    tr->d = d;
    tr->nodes = at_xcalloc(n + 1, sizeof *tr->nodes);
    for (size_t i = 0; i <= n; i++) {
        if (read_node(i == 0 ? main_path : others[i - 1], &tr->nodes[i], d) != 0) {
            tr->n = i + 1;
            at_tree_free(&tr->stage);
            return NULL;
        }
        tr->n = i + 1;
    }
    plan_inherited(tr);
    if (!first)
        plan_children(tr);
    return &tr->stage;
}

void at_tree_free(at_stage *s)
{
    if (!s)
        return;
    tree *tr = (tree *)s;
    for (size_t i = 0; i < tr->n; i++) {
        free(tr->nodes[i].calls);
        if (tr->nodes[i].t)
            at_trace_free(tr->nodes[i].t);
    }
    free(tr->nodes);
    free(tr->drop);
    free(tr->add);
    free(tr);
}
