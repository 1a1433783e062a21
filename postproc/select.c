/*
 * postproc/select.c: the selection options (select.h).
 *
 * An index file is read whole into a sorted list of merged ranges, so each
 * call costs one binary search however the file was written. The address
 * range of --call-address is relative to the load base of the module's
 * map line (TEXT_FORMAT.md section 3), so the same option works across
 * runs with address randomisation; the module is named by its whole path
 * or by a trailing part at a '/' ("libfoo.so"); an empty module means
 * absolute addresses.
 */
#include "leakkind.h"
#include "select.h"
#include "xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct selector {
    at_stage stage;
    at_trace *t;
    at_select_opts o;
    at_index_set include, exclude;
    bool have_include, have_exclude;
} selector;

void at_select_init(at_select_opts *o)
{
    memset(o, 0, sizeof *o);
}

bool at_select_active(const at_select_opts *o)
{
    return o->use_context || o->use_resource || o->include_file || o->exclude_file ||
           o->use_address || o->use_kinds;
}

int at_select_parse_address(at_select_opts *o, const char *spec)
{
    const char *colon = strrchr(spec, ':');
    if (!colon)
        return -1;
    const char *plus = strchr(colon, '+');
    if (!plus || plus == colon + 1 || !plus[1])
        return -1;
    char *end;
    errno = 0;
    uint64_t start = strtoull(colon + 1, &end, 0);
    if (errno || end != plus || colon[1] == '-')
        return -1;
    uint64_t size = strtoull(plus + 1, &end, 0);
    if (errno || *end || plus[1] == '-' || size == 0 || start + size < start)
        return -1;
    free(o->address_module);
    o->address_module = strndup(spec, (size_t)(colon - spec));
    if (!o->address_module)
        return -1;
    o->address_start = start;
    o->address_size = size;
    o->use_address = true;
    return 0;
}

/* ---- index sets ---------------------------------------------------------- */

static int by_start(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

int at_index_set_parse(at_index_set *s, const char *text, size_t len, const char *name,
                       at_diag *d)
{
    memset(s, 0, sizeof *s);
    size_t cap = 0;
    unsigned long line = 1;
    const char *p = text, *end = text + len;
    while (p < end) {
        char ch = *p;
        if (ch == '\n') {
            line++;
            p++;
            continue;
        }
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == ',') {
            p++;
            continue;
        }
        if (ch == '#') {
            while (p < end && *p != '\n')
                p++;
            continue;
        }
        uint64_t lo = 0, hi;
        const char *q = p;
        bool ok = q < end && *q >= '0' && *q <= '9';
        for (; q < end && *q >= '0' && *q <= '9'; q++) {
            if (lo > (UINT64_MAX - 9) / 10)
                ok = false;
            lo = lo * 10 + (uint64_t)(*q - '0');
        }
        hi = lo;
        if (ok && q < end && *q == '-') {
            q++;
            hi = 0;
            ok = q < end && *q >= '0' && *q <= '9';
            for (; q < end && *q >= '0' && *q <= '9'; q++) {
                if (hi > (UINT64_MAX - 9) / 10)
                    ok = false;
                hi = hi * 10 + (uint64_t)(*q - '0');
            }
        }
        if (ok && q < end && !strchr(" \t\r\n,#", *q))
            ok = false;
        if (!ok || hi < lo) {
            const char *e = p;
            while (e < end && !strchr(" \t\r\n,#", *e))
                e++;
            fprintf(d->out, "%s:%lu: not an index or range A-B: '%.*s'\n", name, line,
                    (int)(e - p > 40 ? 40 : e - p), p);
            d->failed = true;
            d->status = AT_EXIT_USAGE;
            at_index_set_free(s);
            return -1;
        }
        if (s->n == cap) {
            cap = cap ? cap * 2 : 64;
            s->ranges = at_xreallocarray(s->ranges, cap, sizeof *s->ranges);
        }
        s->ranges[s->n][0] = lo;
        s->ranges[s->n][1] = hi;
        s->n++;
        p = q;
    }
    if (s->n) {
        qsort(s->ranges, s->n, sizeof *s->ranges, by_start);
        size_t k = 0;
        for (size_t i = 1; i < s->n; i++) {
            if (s->ranges[i][0] <= s->ranges[k][1] + 1 || s->ranges[k][1] == UINT64_MAX) {
                if (s->ranges[i][1] > s->ranges[k][1])
                    s->ranges[k][1] = s->ranges[i][1];
            } else {
                k++;
                s->ranges[k][0] = s->ranges[i][0];
                s->ranges[k][1] = s->ranges[i][1];
            }
        }
        s->n = k + 1;
    }
    return 0;
}

int at_index_set_load(at_index_set *s, const char *path, at_diag *d)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        at_diag_error(d, AT_EXIT_USAGE, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            text = at_xrealloc(text, cap);
        }
        size_t n = fread(text + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    bool err = ferror(f);
    fclose(f);
    int rc;
    if (err) {
        at_diag_error(d, AT_EXIT_USAGE, "%s: read error", path);
        rc = -1;
    } else {
        rc = at_index_set_parse(s, text, len, path, d);
    }
    free(text);
    return rc;
}

bool at_index_set_has(const at_index_set *s, uint64_t index)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ranges[mid][1] < index)
            lo = mid + 1;
        else if (s->ranges[mid][0] > index)
            hi = mid;
        else
            return true;
    }
    return false;
}

void at_index_set_free(at_index_set *s)
{
    free(s->ranges);
    s->ranges = NULL;
    s->n = 0;
}

/* ---- the stage ------------------------------------------------------------ */

static bool module_matches(const char *path, const char *module)
{
    size_t pl = strlen(path), ml = strlen(module);
    if (pl < ml || strcmp(path + pl - ml, module) != 0)
        return false;
    return pl == ml || path[pl - ml - 1] == '/' || module[0] == '/';
}

static bool in_address_range(const selector *s, const at_call *c)
{
    for (uint32_t i = 0; i < c->stack->nframes; i++) {
        uint64_t a = c->stack->frames[i].addr, base = 0;
        if (s->o.address_module[0]) {
            const at_map *m = at_maps_find(s->t->maps, a);
            if (!m || !module_matches(m->path, s->o.address_module))
                continue;
            base = m->start;
        }
        if (a >= base + s->o.address_start && a - base - s->o.address_start < s->o.address_size)
            return true;
    }
    return false;
}

static bool selected(const selector *s, const at_call *c)
{
    if (s->o.use_context &&
        (s->o.context_mask ? !(c->context & s->o.context_mask) : c->context != 0))
        return false;
    if (s->o.use_resource && !(c->res & s->o.resource_mask))
        return false;
    if (s->have_include && !at_index_set_has(&s->include, c->index))
        return false;
    if (s->have_exclude && at_index_set_has(&s->exclude, c->index))
        return false;
    if (s->o.use_address && !in_address_range(s, c))
        return false;
    if (s->o.use_kinds && c->is_alloc && c->kind && !(s->o.kinds & AT_LEAK_BIT(c->kind)))
        return false;
    return true;
}

static void put(at_stage *self, const at_record *r)
{
    selector *s = (selector *)self;
    if (r->kind == AT_REC_CALL && !selected(s, r->u.call))
        return;
    if (r->kind == AT_REC_GROUP) {
        /* A group is split: its selected calls go on one by one. */
        for (size_t i = 0; i < r->u.group->ncalls; i++) {
            if (!selected(s, r->u.group->calls[i]))
                continue;
            at_record rec = { .kind = AT_REC_CALL, .line = r->line,
                              .u.call = r->u.group->calls[i] };
            at_stage_put(self->next, &rec);
        }
        return;
    }
    at_stage_put(self->next, r);
}

at_stage *at_select_new(at_stage *next, at_trace *t, const at_select_opts *o, at_diag *d)
{
    selector *s = at_xcalloc(1, sizeof *s);
    s->stage = (at_stage){ .put = put, .finish = at_stage_pass_finish, .next = next };
    s->t = t;
    s->o = *o;
    if (o->include_file) {
        if (at_index_set_load(&s->include, o->include_file, d) != 0)
            goto fail;
        s->have_include = true;
    }
    if (o->exclude_file) {
        if (at_index_set_load(&s->exclude, o->exclude_file, d) != 0)
            goto fail;
        s->have_exclude = true;
    }
    return &s->stage;
fail:
    at_index_set_free(&s->include);
    at_index_set_free(&s->exclude);
    free(s);
    return NULL;
}

void at_select_free(at_stage *st)
{
    selector *s = (selector *)st;
    if (!s)
        return;
    at_index_set_free(&s->include);
    at_index_set_free(&s->exclude);
    free(s);
}
