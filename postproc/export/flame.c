/*
 * postproc/export/flame.c: flame graph frames (flame.h).
 *
 * The tree is built per distinct path, so a million samples over a few
 * thousand stacks walk a few thousand stacks. A child is found by a hash
 * on (parent, name), not by scanning siblings: the allocation functions
 * under a busy helper can number in the thousands. Names are interned
 * once per profile function, so the tree compares integers.
 */
#include "flame.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#include <alloctrace/format.h>

#define ALLOCATOR_FILE "[allocator]"

static bool inlined(const at_frame *f)
{
    size_t n = f->text ? strlen(f->text) : 0, k = strlen(AT_FRAME_INLINED);
    return n >= k && memcmp(f->text + n - k, AT_FRAME_INLINED, k) == 0;
}

uint32_t at_flame_frames(const at_profile *p, const at_ppath *q, uint32_t *out)
{
    (void)p;
    uint32_t n = 0;
    const at_frame *fr = q->stack->frames;
    for (uint32_t i = q->stack->nframes; i-- > 0;) {
        /* frames[i] marked inlined is inlined into frames[i + 1] at the
         * same address; the same function there is one call, not two.
         * Without the mark, one address twice is real recursion through
         * one call site, and stays. */
        if (n && fr[i].addr == fr[i + 1].addr && q->fids[i] == q->fids[i + 1] && inlined(&fr[i]))
            continue;
        out[n++] = q->fids[i];
    }
    out[n++] = q->leaf;
    return n;
}

/* "operator" followed by one of < << <= <=> > >> >= -> ->*: those
 * brackets are the name, not template arguments. Returns how many
 * characters of s (which starts at "operator") to copy as they are. */
static size_t operator_len(const char *s)
{
    static const char *const ops[] = { "<=>", "<<=", ">>=", "->*", "<<", ">>", "<=",
                                       ">=",  "->",  "<",   ">" };
    size_t k = strlen("operator");
    if (strncmp(s, "operator", k) != 0)
        return 0;
    const char *t = s + k;
    while (*t == ' ')
        t++;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strncmp(t, ops[i], strlen(ops[i])) == 0)
            return (size_t)(t - s) + strlen(ops[i]);
    return 0;
}

char *at_short_name(const char *name)
{
    size_t len = strlen(name);
    char *out = at_xmalloc(len + 1);
    size_t n = 0;
    unsigned depth = 0;
    bool balanced = true;
    for (size_t i = 0; i < len && balanced;) {
        size_t op = (i == 0 || name[i - 1] == ':' || name[i - 1] == ' ') ? operator_len(name + i) : 0;
        if (op) {
            if (!depth) {
                memcpy(out + n, name + i, op);
                n += op;
            }
            i += op;
            continue;
        }
        char c = name[i++];
        if (c == '<') {
            if (depth++ == 0)
                out[n++] = '<';
        } else if (c == '>') {
            balanced = depth > 0;
            if (balanced && --depth == 0)
                out[n++] = '>';
        } else if (!depth) {
            out[n++] = c;
        }
    }
    if (!balanced || depth) {
        free(out);
        return at_xstrdup(name);
    }
    out[n] = '\0';
    return out;
}

/* ---- the tree ------------------------------------------------------------ */

typedef struct tree {
    at_flame *f;
    uint32_t node_cap, name_cap;
    uint32_t *name_of;    /* per profile function: its name index, or NONE */
    uint32_t *name_ix;    /* open addressing over names: name index or NONE */
    uint32_t name_ix_cap;
    uint32_t *child_ix;   /* open addressing over (parent, name): node or NONE */
    uint32_t child_ix_cap;
} tree;

static uint64_t mix(uint64_t h)
{
    h *= 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 31);
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static uint32_t *ix_new(uint32_t cap)
{
    uint32_t *ix = at_xmalloc(cap * sizeof *ix);
    memset(ix, 0xff, cap * sizeof *ix);
    return ix;
}

static uint32_t intern(tree *t, char *name, bool allocator)
{
    at_flame *f = t->f;
    if ((f->nnames + 1) * 2 > t->name_ix_cap) {
        free(t->name_ix);
        t->name_ix_cap *= 2;
        t->name_ix = ix_new(t->name_ix_cap);
        for (uint32_t id = 0; id < f->nnames; id++) {
            uint32_t i = (uint32_t)str_hash(f->names[id]) & (t->name_ix_cap - 1);
            while (t->name_ix[i] != AT_PROFILE_NONE)
                i = (i + 1) & (t->name_ix_cap - 1);
            t->name_ix[i] = id;
        }
    }
    uint32_t i = (uint32_t)str_hash(name) & (t->name_ix_cap - 1);
    for (; t->name_ix[i] != AT_PROFILE_NONE; i = (i + 1) & (t->name_ix_cap - 1))
        if (strcmp(f->names[t->name_ix[i]], name) == 0) {
            free(name);
            f->allocator[t->name_ix[i]] |= allocator;
            return t->name_ix[i];
        }
    if (f->nnames == t->name_cap) {
        t->name_cap = t->name_cap ? t->name_cap * 2 : 64;
        f->names = at_xreallocarray(f->names, t->name_cap, sizeof *f->names);
        f->allocator = at_xreallocarray(f->allocator, t->name_cap, sizeof *f->allocator);
    }
    f->names[f->nnames] = name;
    f->allocator[f->nnames] = allocator;
    return t->name_ix[i] = f->nnames++;
}

static uint32_t name_of(tree *t, const at_profile *p, uint32_t fid, bool short_names)
{
    if (t->name_of[fid] == AT_PROFILE_NONE) {
        const at_pfunc *fn = &p->funcs[fid];
        char *name = short_names ? at_short_name(fn->name) : at_xstrdup(fn->name);
        t->name_of[fid] = intern(t, name, strcmp(fn->file, ALLOCATOR_FILE) == 0);
    }
    return t->name_of[fid];
}

static uint64_t child_hash(uint32_t parent, uint32_t name)
{
    return mix(((uint64_t)parent << 32 | name) + 1);
}

static uint32_t new_node(tree *t, uint32_t parent, uint32_t name)
{
    at_flame *f = t->f;
    if (f->nnodes == t->node_cap) {
        t->node_cap = t->node_cap ? t->node_cap * 2 : 256;
        f->nodes = at_xreallocarray(f->nodes, t->node_cap, sizeof *f->nodes);
    }
    uint32_t depth = parent == AT_PROFILE_NONE ? 0 : f->nodes[parent].depth + 1;
    f->nodes[f->nnodes] = (at_fnode){ .name = name, .parent = parent, .depth = depth,
                                      .first_child = AT_PROFILE_NONE,
                                      .next_sibling = AT_PROFILE_NONE };
    if (depth > f->max_depth)
        f->max_depth = depth;
    return f->nnodes++;
}

static void child_ix_grow(tree *t)
{
    free(t->child_ix);
    t->child_ix_cap *= 2;
    t->child_ix = ix_new(t->child_ix_cap);
    for (uint32_t id = 1; id < t->f->nnodes; id++) {
        const at_fnode *c = &t->f->nodes[id];
        uint32_t i = (uint32_t)child_hash(c->parent, c->name) & (t->child_ix_cap - 1);
        while (t->child_ix[i] != AT_PROFILE_NONE)
            i = (i + 1) & (t->child_ix_cap - 1);
        t->child_ix[i] = id;
    }
}

static uint32_t child(tree *t, uint32_t parent, uint32_t name)
{
    if ((t->f->nnodes + 1) * 2 > t->child_ix_cap)
        child_ix_grow(t);
    uint32_t i = (uint32_t)child_hash(parent, name) & (t->child_ix_cap - 1);
    for (; t->child_ix[i] != AT_PROFILE_NONE; i = (i + 1) & (t->child_ix_cap - 1)) {
        const at_fnode *c = &t->f->nodes[t->child_ix[i]];
        if (c->parent == parent && c->name == name)
            return t->child_ix[i];
    }
    return t->child_ix[i] = new_node(t, parent, name);
}

/* qsort has no context argument: the names, or each node's name rank */
static char *const *sort_names;
static const uint32_t *sort_rank;

static int by_name(const void *a, const void *b)
{
    return strcmp(sort_names[*(const uint32_t *)a], sort_names[*(const uint32_t *)b]);
}

static int by_rank(const void *a, const void *b)
{
    uint32_t x = sort_rank[*(const uint32_t *)a], y = sort_rank[*(const uint32_t *)b];
    return (x > y) - (x < y);
}

/* Links every node's children, in name order. The names are sorted once
 * and the nodes by their name's rank: far fewer string comparisons. */
static void link_children(at_flame *f)
{
    uint32_t *names = at_xmalloc((f->nnames ? f->nnames : 1) * sizeof *names);
    uint32_t *rank = at_xmalloc((f->nnames ? f->nnames : 1) * sizeof *rank);
    for (uint32_t i = 0; i < f->nnames; i++)
        names[i] = i;
    sort_names = f->names;
    qsort(names, f->nnames, sizeof *names, by_name);
    for (uint32_t i = 0; i < f->nnames; i++)
        rank[names[i]] = i;
    uint32_t *order = at_xmalloc((f->nnodes ? f->nnodes : 1) * sizeof *order);
    uint32_t *node_rank = at_xmalloc((f->nnodes ? f->nnodes : 1) * sizeof *node_rank);
    for (uint32_t i = 0; i < f->nnodes; i++) {
        order[i] = i;
        node_rank[i] = rank[f->nodes[i].name];
    }
    sort_rank = node_rank;
    if (f->nnodes > 1)
        qsort(order + 1, f->nnodes - 1, sizeof *order, by_rank);
    free(node_rank);
    free(rank);
    free(names);
    /* reverse name order, each pushed at its parent's head: name order */
    for (uint32_t k = f->nnodes; k-- > 1;) {
        at_fnode *c = &f->nodes[order[k]];
        c->next_sibling = f->nodes[c->parent].first_child;
        f->nodes[c->parent].first_child = order[k];
    }
    free(order);
}

at_flame *at_flame_build(const at_profile *p, bool short_names, unsigned ncosts,
                         at_flame_costs_fn costs, void *ctx)
{
    at_flame *f = at_xcalloc(1, sizeof *f);
    f->ncosts = ncosts < AT_FLAME_MAX_COSTS ? ncosts : AT_FLAME_MAX_COSTS;
    tree t = { .f = f, .name_ix_cap = 64, .child_ix_cap = 256 };
    t.name_ix = ix_new(t.name_ix_cap);
    t.child_ix = ix_new(t.child_ix_cap);
    t.name_of = ix_new(p->nfuncs ? p->nfuncs : 1);
    new_node(&t, AT_PROFILE_NONE, intern(&t, at_xstrdup("all"), false));
    uint32_t *fids = NULL;
    uint32_t fcap = 0;
    f->path_leaf = at_xcalloc(p->npaths ? p->npaths : 1, sizeof *f->path_leaf);
    for (size_t i = 0; i < p->npaths; i++) {
        const at_ppath *q = &p->paths[i];
        if (q->stack->nframes + 1 > fcap) {
            fcap = q->stack->nframes + 1;
            fids = at_xreallocarray(fids, fcap, sizeof *fids);
        }
        uint64_t c[AT_FLAME_MAX_COSTS] = { 0 };
        costs(ctx, i, c);
        uint32_t n = at_flame_frames(p, q, fids), node = 0;
        for (unsigned k = 0; k < f->ncosts; k++)
            f->nodes[0].cost[k] += c[k];
        for (uint32_t j = 0; j < n; j++) {
            node = child(&t, node, name_of(&t, p, fids[j], short_names));
            for (unsigned k = 0; k < f->ncosts; k++)
                f->nodes[node].cost[k] += c[k];
        }
        f->path_leaf[i] = node;
    }
    link_children(f);
    free(fids);
    free(t.name_of);
    free(t.name_ix);
    free(t.child_ix);
    return f;
}

typedef struct one_cost {
    const at_profile *p;
    at_cost cost;
} one_cost;

static void path_cost(void *ctx, size_t path, uint64_t *cost)
{
    const one_cost *c = ctx;
    const at_pcost *pc = &c->p->paths[path].cost;
    cost[0] = c->cost == AT_COST_BLOCKS ? pc->blocks : pc->bytes;
}

at_flame *at_flame_of_cost(const at_profile *p, bool short_names, at_cost cost)
{
    one_cost c = { p, cost };
    return at_flame_build(p, short_names, 1, path_cost, &c);
}

void at_flame_free(at_flame *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->nnames; i++)
        free(f->names[i]);
    free(f->names);
    free(f->allocator);
    free(f->nodes);
    free(f->path_leaf);
    free(f);
}
