/*
 * postproc/export/profile.c: samples -> the cost graph of profile.h.
 *
 * Work is per distinct (stack, allocation function) pair, a "path": a
 * million samples over a few thousand stacks hash a million times and walk
 * frames a few thousand times.
 *
 * Recursion: walking a stack from the outermost frame in, a call is counted
 * only where its callee appears for the first time. Then every function of
 * a stack but the outermost has exactly one counted call into it, so the
 * inclusive cost callgrind_annotate computes (the sum of calls into a
 * function) is the sum of the samples whose stack holds it, never above the
 * total. Counting each (caller, callee, line) edge once per stack, as
 * docs/exports.md puts it, still counts f -> f and f's own call twice.
 *
 * Names: the formats need unique, one-line function names that do not look
 * like Callgrind's "(ID)" compression and are not webgrind's reserved names
 * ({main}, its proxy functions); two functions with one name get the file's
 * base name appended ("helper [util.c]"), then the full path, then a number.
 */
#include "profile.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

#define ALLOCATOR_FILE "[allocator]"
#define ROOT_NAME "(truncated backtrace)"
#define ROOT_FILE "[alloctrace]"

/* Grows *arr (of *cap elements of `size` bytes) to hold at least `need`. */
static void grow(void **arr, uint32_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    uint32_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    *arr = at_xreallocarray(*arr, c, size);
    *cap = c;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return hash_bytes(h, s, strlen(s) + 1);
}

#define HASH_SEED 0xcbf29ce484222325ull

/* ---- a small open-addressing index: hash -> id, equality by callback ---- */

typedef struct hindex {
    uint64_t *hashes;
    uint32_t *ids; /* AT_PROFILE_NONE: empty */
    uint32_t cap, count;
} hindex;

typedef bool (*eq_fn)(const void *ctx, uint32_t id, const void *key);

static void hindex_init(hindex *x)
{
    x->cap = 256;
    x->count = 0;
    x->hashes = at_xcalloc(x->cap, sizeof *x->hashes);
    x->ids = at_xcalloc(x->cap, sizeof *x->ids);
    memset(x->ids, 0xff, x->cap * sizeof *x->ids);
}

static void hindex_free(hindex *x)
{
    free(x->hashes);
    free(x->ids);
}

static uint32_t hindex_find(const hindex *x, uint64_t h, eq_fn eq, const void *ctx, const void *key)
{
    for (uint32_t i = (uint32_t)h & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
        if (x->ids[i] == AT_PROFILE_NONE)
            return AT_PROFILE_NONE;
        if (x->hashes[i] == h && eq(ctx, x->ids[i], key))
            return x->ids[i];
    }
}

static void hindex_put_raw(hindex *x, uint64_t h, uint32_t id)
{
    uint32_t i = (uint32_t)h & (x->cap - 1);
    while (x->ids[i] != AT_PROFILE_NONE)
        i = (i + 1) & (x->cap - 1);
    x->hashes[i] = h;
    x->ids[i] = id;
}

static void hindex_put(hindex *x, uint64_t h, uint32_t id)
{
    if ((x->count + 1) * 2 > x->cap) {
        hindex old = *x;
        x->cap *= 2;
        x->hashes = at_xcalloc(x->cap, sizeof *x->hashes);
        x->ids = at_xcalloc(x->cap, sizeof *x->ids);
        memset(x->ids, 0xff, x->cap * sizeof *x->ids);
        for (uint32_t i = 0; i < old.cap; i++)
            if (old.ids[i] != AT_PROFILE_NONE)
                hindex_put_raw(x, old.hashes[i], old.ids[i]);
        hindex_free(&old);
    }
    hindex_put_raw(x, h, id);
    x->count++;
}

/* ---- the builder ---------------------------------------------------------- */

typedef struct builder {
    at_profile *p;
    uint32_t funcs_cap, edges_cap, paths_cap;
    hindex func_ix, edge_ix, path_ix;
    /* per stack id: offset of its frame functions and lines in the pools */
    uint32_t *stack_off;
    uint32_t stack_cap;
    uint32_t *fid_pool;
    unsigned *line_pool;
    uint32_t pool_cap, line_cap, pool_used;
    const char **raw_names; /* identity of each function: (raw name, raw file) */
    const char **raw_files;
    uint32_t raw_cap, raw_fcap;
    uint32_t *seen; /* per function: the path that last saw it */
    const at_maps *maps;
    at_stack_table *arena;
} builder;

typedef struct func_key {
    const char *name, *file;
} func_key;

static bool func_eq(const void *ctx, uint32_t id, const void *key)
{
    const builder *b = ctx;
    const func_key *k = key;
    return strcmp(b->raw_names[id], k->name) == 0 && strcmp(b->raw_files[id], k->file) == 0;
}

/* The function (name, file), created on first use. Strings must live as
 * long as the arena. */
static uint32_t func_get(builder *b, const char *name, const char *file, unsigned line)
{
    func_key k = { name, file };
    uint64_t h = hash_str(hash_str(HASH_SEED, name), file);
    uint32_t id = hindex_find(&b->func_ix, h, func_eq, b, &k);
    at_profile *p = b->p;
    if (id == AT_PROFILE_NONE) {
        id = p->nfuncs++;
        grow((void **)&p->funcs, &b->funcs_cap, p->nfuncs, sizeof *p->funcs);
        grow((void **)&b->raw_names, &b->raw_cap, p->nfuncs, sizeof *b->raw_names);
        grow((void **)&b->raw_files, &b->raw_fcap, p->nfuncs, sizeof *b->raw_files);
        p->funcs[id] = (at_pfunc){ .line = line };
        b->raw_names[id] = name;
        b->raw_files[id] = file;
        hindex_put(&b->func_ix, h, id);
    } else if (line && (p->funcs[id].line == 0 || line < p->funcs[id].line)) {
        p->funcs[id].line = line;
    }
    return id;
}

typedef struct edge_key {
    uint32_t caller, callee;
    unsigned line;
} edge_key;

static bool edge_eq(const void *ctx, uint32_t id, const void *key)
{
    const at_pedge *e = &((const builder *)ctx)->p->edges[id];
    const edge_key *k = key;
    return e->caller == k->caller && e->callee == k->callee && e->line == k->line;
}

static void cost_add(at_pcost *to, const at_pcost *c)
{
    to->bytes += c->bytes;
    to->kib += c->kib;
    to->blocks += c->blocks;
}

static void edge_add(builder *b, uint32_t caller, uint32_t callee, unsigned line, const at_pcost *c)
{
    edge_key k = { caller, callee, line };
    uint64_t h = hash_bytes(HASH_SEED, &k, sizeof k);
    uint32_t id = hindex_find(&b->edge_ix, h, edge_eq, b, &k);
    at_profile *p = b->p;
    if (id == AT_PROFILE_NONE) {
        id = p->nedges++;
        grow((void **)&p->edges, &b->edges_cap, p->nedges, sizeof *p->edges);
        p->edges[id] = (at_pedge){ .caller = caller, .callee = callee, .line = line };
        hindex_put(&b->edge_ix, h, id);
    }
    cost_add(&p->edges[id].cost, c);
}

/* ---- samples -> paths ------------------------------------------------------ */

typedef struct path_key {
    const at_stack *stack;
    const char *alloc_fn;
} path_key;

static bool path_eq(const void *ctx, uint32_t id, const void *key)
{
    const at_ppath *q = &((const builder *)ctx)->p->paths[id];
    const path_key *k = key;
    return q->stack == k->stack && strcmp(q->alloc_fn, k->alloc_fn) == 0;
}

static void add_sample(builder *b, const at_sample *s)
{
    const char *fn = s->alloc_fn && *s->alloc_fn ? s->alloc_fn : "??";
    path_key k = { s->stack, fn };
    uint64_t h = hash_str(hash_bytes(HASH_SEED, &s->stack, sizeof s->stack), fn);
    uint32_t id = hindex_find(&b->path_ix, h, path_eq, b, &k);
    at_profile *p = b->p;
    if (id == AT_PROFILE_NONE) {
        id = (uint32_t)p->npaths++;
        grow((void **)&p->paths, &b->paths_cap, p->npaths, sizeof *p->paths);
        p->paths[id] = (at_ppath){ .stack = s->stack,
                                   .alloc_fn = at_stacks_strdup(b->arena, fn, strlen(fn)) };
        hindex_put(&b->path_ix, h, id);
    }
    at_pcost c = { s->bytes, s->bytes / 1024 + (s->bytes % 1024 != 0), s->blocks };
    cost_add(&p->paths[id].cost, &c);
    p->paths[id].samples++;
}

/* ---- frames -> functions --------------------------------------------------- */

/* The "file" of a function known only by its module: the module's path in
 * brackets, like "[allocator]". Not the path itself: callgrind_annotate
 * opens every file name that exists to annotate its lines, and an ELF
 * object with only line 0 makes it warn. */
static const char *module_file(builder *b, const char *module)
{
    if (strcmp(module, AT_UNKNOWN) == 0)
        return module;
    size_t n = strlen(module);
    char *text = at_xcalloc(1, n + 3);
    text[0] = '[';
    memcpy(text + 1, module, n);
    text[n + 1] = ']';
    const char *kept = at_stacks_strdup(b->arena, text, n + 2);
    free(text);
    return kept;
}

/* An unresolved frame is named by its module and its offset in it (the
 * address the ELF file itself uses for PIE and shared objects). */
static void frame_function(builder *b, const at_frame_info *fi, const char **name, const char **file)
{
    if (strcmp(fi->function, AT_UNKNOWN) != 0) {
        *name = fi->function;
        *file = strcmp(fi->file, AT_UNKNOWN) != 0 ? fi->file : module_file(b, fi->module);
        return;
    }
    char buf[512];
    const char *text = at_frame_place(fi, buf, sizeof buf);
    *name = at_stacks_strdup(b->arena, text, strlen(text));
    *file = module_file(b, fi->module);
}

/* Offset in the pools of the stack's frame functions and lines, computed
 * once per distinct stack (stack ids are dense). */
static uint32_t stack_functions(builder *b, const at_stack *st)
{
    if (st->id < b->stack_cap && b->stack_off[st->id] != AT_PROFILE_NONE)
        return b->stack_off[st->id];
    uint32_t old = b->stack_cap;
    grow((void **)&b->stack_off, &b->stack_cap, (size_t)st->id + 1, sizeof *b->stack_off);
    for (uint32_t i = old; i < b->stack_cap; i++)
        b->stack_off[i] = AT_PROFILE_NONE;
    uint32_t off = b->pool_used;
    grow((void **)&b->fid_pool, &b->pool_cap, (size_t)off + st->nframes, sizeof *b->fid_pool);
    grow((void **)&b->line_pool, &b->line_cap, (size_t)off + st->nframes, sizeof *b->line_pool);
    b->pool_used += st->nframes;
    at_frame_info *infos = at_xcalloc(st->nframes, sizeof *infos);
    at_frame_read_stack(st, b->maps, b->arena, infos);
    for (uint32_t i = 0; i < st->nframes; i++) {
        const char *name, *file;
        frame_function(b, &infos[i], &name, &file);
        b->fid_pool[off + i] = func_get(b, name, file, infos[i].line);
        b->line_pool[off + i] = infos[i].line;
    }
    free(infos);
    b->stack_off[st->id] = off;
    return off;
}

/* The calls of one path, counted where their callee first appears from
 * the outermost frame in (see the top of the file). */
static void path_edges(builder *b, uint32_t pi, const uint32_t *fids, const unsigned *lines)
{
    at_ppath *q = &b->p->paths[pi];
    uint32_t n = q->stack->nframes;
    uint32_t mark = pi + 1;
    if (n == 0)
        return;
    b->seen[fids[n - 1]] = mark;
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t callee = fids[i - 1];
        if (b->seen[callee] != mark) {
            b->seen[callee] = mark;
            edge_add(b, fids[i], callee, lines[i], &q->cost);
        }
    }
    if (b->seen[q->leaf] != mark)
        edge_add(b, fids[0], q->leaf, lines[0], &q->cost);
}

/* Stacks whose outermost function is called elsewhere get a synthetic
 * caller, so that function's inclusive cost (the calls into it) holds
 * them too. */
static void add_roots(builder *b)
{
    at_profile *p = b->p;
    bool *called = at_xcalloc(p->nfuncs, sizeof *called);
    for (uint32_t e = 0; e < p->nedges; e++)
        called[p->edges[e].callee] = true;
    uint32_t root = AT_PROFILE_NONE;
    for (size_t i = 0; i < p->npaths; i++) {
        const at_ppath *q = &p->paths[i];
        uint32_t top = q->stack->nframes ? q->fids[q->stack->nframes - 1] : q->leaf;
        if (!called[top])
            continue;
        if (root == AT_PROFILE_NONE)
            root = func_get(b, ROOT_NAME, ROOT_FILE, 0);
        edge_add(b, root, top, 0, &p->paths[i].cost);
    }
    free(called);
}

/* ---- names ----------------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\v';
}

/* One line, no control characters, no surrounding blanks (webgrind trims),
 * never empty. For function names also no "(DIGITS)"; for files no ": "
 * (webgrind would take the line for a header). */
static char *sanitize(const char *s, bool function)
{
    size_t n = strlen(s);
    char *out = at_xcalloc(1, n + 3);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            c = '_';
        if (function && c == '(' && s[i + 1] >= '0' && s[i + 1] <= '9') {
            size_t j = i + 1;
            while (s[j] >= '0' && s[j] <= '9')
                j++;
            if (s[j] == ')') {
                out[o++] = '[';
                memcpy(out + o, s + i + 1, j - i - 1);
                o += j - i - 1;
                out[o++] = ']';
                i = j;
                continue;
            }
        }
        if (!function && c == ':' && s[i + 1] == ' ')
            c = '_';
        out[o++] = (char)c;
    }
    out[o] = 0;
    size_t start = 0;
    while (start < o && is_space(out[start]))
        start++;
    while (o > start && is_space(out[o - 1]))
        out[--o] = 0;
    if (start == o) {
        free(out);
        out = at_xcalloc(1, 3);
        memcpy(out, "??", 2);
        return out;
    }
    memmove(out, out + start, o - start + 1);
    return out;
}

/* What tells two same-named functions apart: the base name of their file,
 * or of the module for "[MODULE]" ("[allocator]" gives "allocator"). */
static char *file_label(const char *file)
{
    size_t n = strlen(file);
    if (file[0] == '[' && n > 2 && file[n - 1] == ']') {
        char *inner = at_xcalloc(1, n);
        memcpy(inner, file + 1, n - 2);
        const char *base = at_path_base(inner);
        memmove(inner, base, strlen(base) + 1);
        return inner;
    }
    const char *base = at_path_base(file);
    char *label = at_xcalloc(1, strlen(base) + 1);
    memcpy(label, base, strlen(base));
    return label;
}

static const char *const reserved_names[] = { "{main}", "php::call_user_func",
                                              "php::call_user_func_array" };

static bool reserved(const char *name)
{
    for (size_t i = 0; i < sizeof reserved_names / sizeof *reserved_names; i++)
        if (strcmp(name, reserved_names[i]) == 0)
            return true;
    return false;
}

typedef struct name_set {
    hindex ix;
    char **names;
    uint32_t n, cap;
} name_set;

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
    return strcmp(((const name_set *)ctx)->names[id], key) == 0;
}

static uint32_t name_find(name_set *s, const char *name)
{
    return hindex_find(&s->ix, hash_str(HASH_SEED, name), name_eq, s, name);
}

static void name_add(name_set *s, char *name)
{
    grow((void **)&s->names, &s->cap, (size_t)s->n + 1, sizeof *s->names);
    s->names[s->n] = name;
    hindex_put(&s->ix, hash_str(HASH_SEED, name), s->n++);
}

static char *concat(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = at_xcalloc(1, n);
    snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static void assign_names(builder *b)
{
    at_profile *p = b->p;
    char **base = at_xcalloc(p->nfuncs, sizeof *base);
    name_set all = { 0 }, uniq = { 0 }, files = { 0 };
    hindex_init(&all.ix);
    hindex_init(&uniq.ix);
    hindex_init(&files.ix);
    uint32_t *count = at_xcalloc(p->nfuncs, sizeof *count);
    for (uint32_t f = 0; f < p->nfuncs; f++) {
        base[f] = sanitize(b->raw_names[f], true);
        char *file = sanitize(b->raw_files[f], false);
        p->funcs[f].file = at_stacks_strdup(b->arena, file, strlen(file));
        p->funcs[f].file_id = name_find(&files, file);
        if (p->funcs[f].file_id == AT_PROFILE_NONE) {
            p->funcs[f].file_id = files.n;
            name_add(&files, file);
        } else {
            free(file);
        }
        uint32_t id = name_find(&all, base[f]);
        if (id == AT_PROFILE_NONE) {
            name_add(&all, base[f]);
            id = all.n - 1;
        }
        count[id]++;
    }
    for (uint32_t f = 0; f < p->nfuncs; f++) {
        const char *file = p->funcs[f].file;
        bool clash = count[name_find(&all, base[f])] > 1 || reserved(base[f]);
        char *label = file_label(file);
        char *name = clash ? concat(base[f], " [", label) : concat(base[f], "", "");
        free(label);
        if (clash) {
            char *t = concat(name, "]", "");
            free(name);
            name = t;
        }
        if (name_find(&uniq, name) != AT_PROFILE_NONE) {
            free(name);
            char *t = concat(base[f], " [", file);
            name = concat(t, "]", "");
            free(t);
        }
        for (unsigned k = 2; name_find(&uniq, name) != AT_PROFILE_NONE; k++) {
            char num[24];
            snprintf(num, sizeof num, " #%u", k);
            char *t = concat(base[f], num, "");
            free(name);
            name = t;
        }
        name_add(&uniq, name);
        p->funcs[f].name = at_stacks_strdup(b->arena, name, strlen(name));
    }
    for (uint32_t i = 0; i < uniq.n; i++)
        free(uniq.names[i]);
    for (uint32_t f = 0; f < p->nfuncs; f++)
        free(base[f]);
    for (uint32_t i = 0; i < files.n; i++)
        free(files.names[i]);
    p->nfiles = files.n;
    free(files.names);
    hindex_free(&files.ix);
    free(uniq.names);
    free(all.names);
    hindex_free(&uniq.ix);
    hindex_free(&all.ix);
    free(count);
    free(base);
}

/* Each function's calls, in the order the edges were first counted. */
static void index_calls(at_profile *p)
{
    p->out = at_xcalloc(p->nedges, sizeof *p->out);
    for (uint32_t e = 0; e < p->nedges; e++)
        p->funcs[p->edges[e].caller].nout++;
    uint32_t off = 0;
    for (uint32_t f = 0; f < p->nfuncs; f++) {
        p->funcs[f].out_first = off;
        off += p->funcs[f].nout;
        p->funcs[f].nout = 0;
    }
    for (uint32_t e = 0; e < p->nedges; e++) {
        at_pfunc *f = &p->funcs[p->edges[e].caller];
        p->out[f->out_first + f->nout++] = e;
    }
}

at_profile *at_profile_build(const at_sample *samples, size_t n, const at_maps *maps,
                             at_stack_table *arena)
{
    builder b = { .maps = maps, .arena = arena };
    at_profile *p = b.p = at_xcalloc(1, sizeof *p);
    hindex_init(&b.func_ix);
    hindex_init(&b.edge_ix);
    hindex_init(&b.path_ix);
    for (size_t i = 0; i < n; i++)
        add_sample(&b, &samples[i]);
    p->samples = n;

    uint32_t *offs = at_xcalloc(p->npaths, sizeof *offs);
    for (size_t i = 0; i < p->npaths; i++) {
        at_ppath *q = &p->paths[i];
        q->leaf = func_get(&b, q->alloc_fn, ALLOCATOR_FILE, 0);
        p->funcs[q->leaf].self.bytes += q->cost.bytes;
        p->funcs[q->leaf].self.kib += q->cost.kib;
        p->funcs[q->leaf].self.blocks += q->cost.blocks;
        cost_add(&p->total, &q->cost);
        offs[i] = stack_functions(&b, q->stack);
    }
    b.seen = at_xcalloc(p->nfuncs + 1, sizeof *b.seen);
    for (size_t i = 0; i < p->npaths; i++) {
        p->paths[i].fids = b.fid_pool + offs[i]; /* the pool no longer moves */
        path_edges(&b, (uint32_t)i, b.fid_pool + offs[i], b.line_pool + offs[i]);
    }
    add_roots(&b);
    assign_names(&b);
    index_calls(p);

    p->pool = b.fid_pool;
    free(offs);
    free(b.seen);
    free(b.line_pool);
    free(b.stack_off);
    free(b.raw_names);
    free(b.raw_files);
    hindex_free(&b.func_ix);
    hindex_free(&b.edge_ix);
    hindex_free(&b.path_ix);
    return p;
}

void at_profile_free(at_profile *p)
{
    if (!p)
        return;
    free(p->funcs);
    free(p->edges);
    free(p->out);
    free(p->paths);
    free(p->pool);
    free(p);
}

uint64_t at_profile_samples(const at_profile *p)
{
    return p->samples;
}

uint64_t at_profile_bytes(const at_profile *p)
{
    return p->total.bytes;
}

uint64_t at_profile_blocks(const at_profile *p)
{
    return p->total.blocks;
}
