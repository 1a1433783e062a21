/*
 * postproc/export/webgrind.c: webgrind's preprocessed file (format version 7,
 * docs/exports.md rule 3).
 *
 * webgrind rebuilds this file from the Callgrind file whenever its copy is
 * older or unreadable, so ours must be what webgrind itself would make.
 * Rather than compute the same numbers a second way from the profile, the
 * export renders the Callgrind text and preprocesses it here exactly as
 * webgrind 1.9's PHP preprocessor reads it (written from its behaviour, not
 * its code):
 *
 *   - a line starting "fl=" begins a function block: the next line must be
 *     "fn=NAME", the one after it the self-cost line, of which only the
 *     line number and the first cost are read; functions are keyed by name
 *     and numbered by their first block; a later block of the same name
 *     adds one invocation and its cost;
 *   - a line starting "cfn=" is a call from the current function: the next
 *     line (calls=) is skipped, the one after it gives the call's line and
 *     cost; the cost is added to the caller's inclusive cost; the callee's
 *     "called from" entry and the caller's "sub call" entry are keyed by
 *     the decimal function number and line *concatenated as text* (so
 *     function 1 at line 23 and function 12 at line 3 share one entry, the
 *     first one's number and line, both counts and costs), counted once per
 *     call record;
 *   - "(ID) name" defines a compressed name for its kind (files only on the
 *     "fl=" line of a function's first block), "(ID)" refers to it; names
 *     are trimmed;
 *   - every other line containing ": " is a header, kept verbatim in order;
 *   - numbers are stored little-endian in 32 bits, truncated.
 * The function "{main}" (whose block carries a summary line) and webgrind's
 * proxy functions are not supported: the exports never name a function so.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "xalloc.h"

/* ---- growable byte buffer -------------------------------------------------- */

typedef struct buf {
    unsigned char *data;
    size_t len, cap;
} buf;

static void buf_put(buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t c = b->cap ? b->cap : 4096;
        while (c < b->len + n)
            c *= 2;
        b->data = at_xrealloc(b->data, c);
        b->cap = c;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

/* ---- the model webgrind builds ---------------------------------------------- */

/* Numbers are kept as PHP keeps them (64-bit) but summed modulo 2^64, so
 * that nonsense input cannot overflow a signed type. */
typedef struct wcall {
    char key[48];      /* decimal number and line, concatenated */
    int64_t nr, line;
    uint64_t count, cost;
} wcall;

typedef struct wlist {
    wcall *items;
    size_t n, cap;
} wlist;

typedef struct wfunc {
    char *name, *file;
    int64_t line;
    uint64_t invocations, self, inclusive;
    wlist called_from, sub_calls;
} wfunc;

/* A string-keyed hash index over small integers (function numbers, or
 * positions in a call list), owner-scoped so one table serves all lists. */
typedef struct slot {
    uint64_t hash;
    uint32_t owner; /* UINT32_MAX: empty */
    uint32_t value;
    const char *key;
} slot;

typedef struct smap {
    slot *slots;
    size_t cap, count;
} smap;

static uint64_t hash_key(uint32_t owner, const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull ^ owner;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static slot *smap_find(smap *m, uint32_t owner, const char *key, uint64_t h)
{
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        slot *s = &m->slots[i];
        if (s->owner == UINT32_MAX || (s->hash == h && s->owner == owner && strcmp(s->key, key) == 0))
            return s;
    }
}

static void smap_init(smap *m)
{
    m->cap = 1024;
    m->count = 0;
    m->slots = at_xrealloc(NULL, m->cap * sizeof *m->slots);
    for (size_t i = 0; i < m->cap; i++)
        m->slots[i].owner = UINT32_MAX;
}

/* Returns the slot for (owner, key); a new one has owner set and value
 * UINT32_MAX. key must outlive the map. */
static slot *smap_get(smap *m, uint32_t owner, const char *key)
{
    if ((m->count + 1) * 2 > m->cap) {
        smap old = *m;
        m->cap *= 2;
        m->slots = at_xrealloc(NULL, m->cap * sizeof *m->slots);
        for (size_t i = 0; i < m->cap; i++)
            m->slots[i].owner = UINT32_MAX;
        for (size_t i = 0; i < old.cap; i++)
            if (old.slots[i].owner != UINT32_MAX)
                *smap_find(m, old.slots[i].owner, old.slots[i].key, old.slots[i].hash) = old.slots[i];
        free(old.slots);
    }
    uint64_t h = hash_key(owner, key);
    slot *s = smap_find(m, owner, key, h);
    if (s->owner == UINT32_MAX) {
        *s = (slot){ .hash = h, .owner = owner, .value = UINT32_MAX, .key = key };
        m->count++;
    }
    return s;
}

/* ---- the reader --------------------------------------------------------------- */

typedef struct prep {
    const char *text, *end, *pos;
    size_t lineno;
    wfunc *funcs;
    size_t nfuncs, cap;
    smap names;      /* owner 0: function name -> number */
    smap compressed; /* owner 0 functions, 1 files: id text -> index in strs */
    smap calls;      /* owner 2*nr (+1 for sub calls): key -> position in list */
    char **strs;     /* strings the maps point to */
    size_t nstrs, strs_cap;
    buf headers;
    char *err;
    size_t errlen;
    int64_t current; /* the function of the last block, -1 before any */
} prep;

static char *keep(prep *w, const char *s, size_t n)
{
    char *c = at_xrealloc(NULL, n + 1);
    memcpy(c, s, n);
    c[n] = 0;
    if (w->nstrs == w->strs_cap) {
        w->strs_cap = w->strs_cap ? w->strs_cap * 2 : 256;
        w->strs = at_xrealloc(w->strs, w->strs_cap * sizeof *w->strs);
    }
    w->strs[w->nstrs++] = c;
    return c;
}

static int fail(prep *w, const char *what)
{
    snprintf(w->err, w->errlen, "line %zu: %s", w->lineno, what);
    return -1;
}

/* The next line with its "\n" (fgets); false at the end. */
static bool next_line(prep *w, const char **line, size_t *len)
{
    if (w->pos >= w->end)
        return false;
    const char *nl = memchr(w->pos, '\n', (size_t)(w->end - w->pos));
    const char *stop = nl ? nl + 1 : w->end;
    *line = w->pos;
    *len = (size_t)(stop - w->pos);
    w->pos = stop;
    w->lineno++;
    return true;
}

static bool php_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\0';
}

static void trim(const char **s, size_t *n)
{
    while (*n && php_space(**s))
        (*s)++, (*n)--;
    while (*n && php_space((*s)[*n - 1]))
        (*n)--;
}

/* "(ID) name" defines, "(ID)" refers (kind 0 functions, 1 files). The
 * first "(DIGITS)" anywhere in the text counts, as in webgrind. */
static const char *uncompress(prep *w, const char *s, size_t n, uint32_t kind)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '(')
            continue;
        size_t j = i + 1;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j == i + 1 || j >= n || s[j] != ')')
            continue;
        const char *id = keep(w, s + i + 1, j - i - 1);
        const char *rest = s + j + 1;
        size_t rn = n - j - 1;
        slot *sl = smap_get(&w->compressed, kind, id);
        if (rn > 0) {
            trim(&rest, &rn);
            keep(w, rest, rn);
            sl->value = (uint32_t)(w->nstrs - 1);
        } else if (sl->value == UINT32_MAX) {
            return keep(w, s, n);
        }
        return w->strs[sl->value];
    }
    return keep(w, s, n);
}

/* PHP's fscanf("%d %d") on the next line: the line number and first cost. */
static int read_costs(prep *w, int64_t *lnr, int64_t *cost)
{
    const char *line;
    size_t len;
    if (!next_line(w, &line, &len))
        return fail(w, "missing cost line");
    const char *p = line, *end = line + len;
    int64_t v[2];
    for (int k = 0; k < 2; k++) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        bool neg = p < end && *p == '-';
        if (p < end && (*p == '-' || *p == '+'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return fail(w, "cost line without two numbers");
        uint64_t x = 0;
        while (p < end && *p >= '0' && *p <= '9')
            x = x * 10 + (uint64_t)(*p++ - '0');
        v[k] = (int64_t)(neg ? 0 - x : x);
    }
    *lnr = v[0];
    *cost = v[1];
    return 0;
}

static int function_block(prep *w, const char *line, size_t len)
{
    const char *fnl;
    size_t fnlen;
    if (!next_line(w, &fnl, &fnlen) || fnlen < 4 || memcmp(fnl, "fn=", 3) != 0)
        return fail(w, "\"fl=\" not followed by \"fn=\"");
    size_t n = 0;
    while (3 + n < fnlen && fnl[3 + n] != '\n' && fnl[3 + n] != '\r')
        n++;
    if (n == 0)
        return fail(w, "empty function name");
    const char *name = uncompress(w, fnl + 3, n, 0);
    if (strcmp(name, "{main}") == 0 || strcmp(name, "php::call_user_func") == 0 ||
        strcmp(name, "php::call_user_func_array") == 0)
        return fail(w, "function names webgrind treats specially are not supported");
    int64_t lnr, cost;
    if (read_costs(w, &lnr, &cost) != 0)
        return -1;
    slot *s = smap_get(&w->names, 0, name);
    if (s->value == UINT32_MAX) {
        if (w->nfuncs == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 64;
            w->funcs = at_xrealloc(w->funcs, w->cap * sizeof *w->funcs);
        }
        s->value = (uint32_t)w->nfuncs;
        const char *f = line;
        size_t fl = len;
        trim(&f, &fl);
        w->funcs[w->nfuncs++] = (wfunc){ .name = (char *)name,
                                         .file = (char *)uncompress(w, f + 3, fl - 3, 1),
                                         .line = lnr, .invocations = 1, .self = (uint64_t)cost,
                                         .inclusive = (uint64_t)cost };
    } else {
        wfunc *fn = &w->funcs[s->value];
        fn->invocations++;
        fn->self += (uint64_t)cost;
        fn->inclusive += (uint64_t)cost;
    }
    w->current = s->value;
    return 0;
}

static void add_call(prep *w, wlist *list, uint32_t owner, int64_t nr, int64_t lnr, int64_t cost)
{
    char key[48];
    snprintf(key, sizeof key, "%lld%lld", (long long)nr, (long long)lnr);
    slot *s = smap_get(&w->calls, owner, keep(w, key, strlen(key)));
    if (s->value == UINT32_MAX) {
        if (list->n == list->cap) {
            list->cap = list->cap ? list->cap * 2 : 4;
            list->items = at_xrealloc(list->items, list->cap * sizeof *list->items);
        }
        s->value = (uint32_t)list->n;
        wcall *c = &list->items[list->n++];
        *c = (wcall){ .nr = nr, .line = lnr };
        memcpy(c->key, key, sizeof key);
    }
    list->items[s->value].count++;
    list->items[s->value].cost += (uint64_t)cost;
}

static int call_record(prep *w, const char *line, size_t len)
{
    if (w->current < 0)
        return fail(w, "call before any function block");
    trim(&line, &len);
    const char *callee = uncompress(w, line + 4, len - 4, 0);
    const char *skip;
    size_t skiplen;
    if (!next_line(w, &skip, &skiplen))
        return fail(w, "call without a calls= line");
    int64_t lnr, cost;
    if (read_costs(w, &lnr, &cost) != 0)
        return -1;
    slot *s = smap_get(&w->names, 0, callee);
    if (s->value == UINT32_MAX)
        return fail(w, "call to a function whose block comes later");
    uint32_t called = s->value, caller = (uint32_t)w->current;
    w->funcs[caller].inclusive += (uint64_t)cost;
    add_call(w, &w->funcs[called].called_from, 2 * called, caller, lnr, cost);
    add_call(w, &w->funcs[caller].sub_calls, 2 * caller + 1, called, lnr, cost);
    return 0;
}

static int read_all(prep *w)
{
    const char *line;
    size_t len;
    while (next_line(w, &line, &len)) {
        int rc = 0;
        if (len >= 3 && memcmp(line, "fl=", 3) == 0)
            rc = function_block(w, line, len);
        else if (len >= 4 && memcmp(line, "cfn=", 4) == 0)
            rc = call_record(w, line, len);
        else if (memmem(line, len, ": ", 2))
            buf_put(&w->headers, line, len);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- the writer ---------------------------------------------------------------- */

/* pack('V'): the low 32 bits. max tracks the largest positive number. */
static void put32(buf *b, uint64_t v, uint64_t *max)
{
    if ((int64_t)v > 0 && v > *max)
        *max = v;
    uint32_t x = (uint32_t)v;
    unsigned char le[4] = { (unsigned char)x, (unsigned char)(x >> 8), (unsigned char)(x >> 16),
                            (unsigned char)(x >> 24) };
    buf_put(b, le, 4);
}

static void set32(buf *b, size_t at, uint32_t x)
{
    b->data[at] = (unsigned char)x;
    b->data[at + 1] = (unsigned char)(x >> 8);
    b->data[at + 2] = (unsigned char)(x >> 16);
    b->data[at + 3] = (unsigned char)(x >> 24);
}

static void put_calls(buf *b, const wlist *l, uint64_t *max)
{
    for (size_t i = 0; i < l->n; i++) {
        put32(b, (uint64_t)l->items[i].nr, max);
        put32(b, (uint64_t)l->items[i].line, max);
        put32(b, l->items[i].count, max);
        put32(b, l->items[i].cost, max);
    }
}

static void write_all(const prep *w, buf *b, uint64_t *max)
{
    put32(b, 7, max);
    put32(b, 0, max);
    put32(b, w->nfuncs, max);
    size_t table = b->len;
    for (size_t i = 0; i < w->nfuncs; i++)
        put32(b, 0, max);
    for (size_t i = 0; i < w->nfuncs; i++) {
        const wfunc *f = &w->funcs[i];
        set32(b, table + 4 * i, (uint32_t)b->len);
        put32(b, (uint64_t)f->line, max);
        put32(b, f->self, max);
        put32(b, f->inclusive, max);
        put32(b, f->invocations, max);
        put32(b, f->called_from.n, max);
        put32(b, f->sub_calls.n, max);
        put_calls(b, &f->called_from, max);
        put_calls(b, &f->sub_calls, max);
        buf_put(b, f->file, strlen(f->file));
        buf_put(b, "\n", 1);
        buf_put(b, f->name, strlen(f->name));
        buf_put(b, "\n", 1);
    }
    set32(b, 4, (uint32_t)b->len);
    buf_put(b, w->headers.data, w->headers.len);
}

int at_webgrind_preprocess(const char *text, size_t len, unsigned char **out, size_t *outlen,
                           uint64_t *max_value, char *err, size_t errlen)
{
    prep w = { .text = text, .end = text + len, .pos = text, .err = err, .errlen = errlen,
               .current = -1 };
    smap_init(&w.names);
    smap_init(&w.compressed);
    smap_init(&w.calls);
    int rc = read_all(&w);
    buf b = { 0 };
    uint64_t max = 0;
    if (rc == 0)
        write_all(&w, &b, &max);
    for (size_t i = 0; i < w.nfuncs; i++) {
        free(w.funcs[i].called_from.items);
        free(w.funcs[i].sub_calls.items);
    }
    for (size_t i = 0; i < w.nstrs; i++)
        free(w.strs[i]);
    free(w.strs);
    free(w.funcs);
    free(w.names.slots);
    free(w.compressed.slots);
    free(w.calls.slots);
    free(w.headers.data);
    if (rc != 0) {
        free(b.data);
        return -1;
    }
    *out = b.data;
    *outlen = b.len;
    if (max_value)
        *max_value = max;
    return 0;
}

int at_export_webgrind(FILE *out, const at_profile *p, const at_export_meta *meta)
{
    at_export_meta none = { 0 };
    const at_export_meta *m = meta ? meta : &none;
    bool kib;
    char *text = NULL;
    size_t len = 0;
    if (at_callgrind_unit(p, m, &kib) != 0 || at_callgrind_render(p, m, kib, &text, &len) != 0)
        return -1;
    unsigned char *bin = NULL;
    size_t blen = 0;
    uint64_t max = 0;
    char err[256];
    int rc = at_webgrind_preprocess(text, len, &bin, &blen, &max, err, sizeof err);
    free(text);
    if (rc != 0) {
        errno = EINVAL;
        return -1;
    }
    if (max > 0x7fffffffull) {
        /* Even KiB does not fit: webgrind would show wrapped numbers. */
        free(bin);
        errno = EOVERFLOW;
        return -1;
    }
    size_t wrote = fwrite(bin, 1, blen, out);
    free(bin);
    return wrote == blen ? 0 : -1;
}
