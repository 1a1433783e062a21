/*
 * postproc/trace.c: the shared parts of the record model (trace.h): the
 * registries, interned call names, the header's fields, record copies.
 * Call names are interned because a trace has a handful of distinct ones
 * (malloc, free, ...) and millions of calls: a stage that keeps calls then
 * keeps a pointer, not a string.
 */
#include "trace.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- interned names ----------------------------------------------------- */

typedef struct at_names {
    const char **slots; /* power-of-two open addressing */
    uint32_t nslots, count;
} at_names;

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void names_grow(at_names *n)
{
    uint32_t size = n->nslots ? n->nslots * 2 : 64;
    const char **slots = at_xcalloc(size, sizeof *slots);
    for (uint32_t i = 0; i < n->nslots; i++) {
        const char *s = n->slots[i];
        if (!s)
            continue;
        uint32_t j = (uint32_t)hash_bytes(s, strlen(s)) & (size - 1);
        while (slots[j])
            j = (j + 1) & (size - 1);
        slots[j] = s;
    }
    free(n->slots);
    n->slots = slots;
    n->nslots = size;
}

const char *at_trace_name(at_trace *t, const char *s, size_t len)
{
    at_names *n = t->names;
    if ((n->count + 1) * 2 > n->nslots)
        names_grow(n);
    uint32_t i = (uint32_t)hash_bytes(s, len) & (n->nslots - 1);
    /* strnlen first: never read past a shorter stored name */
    for (; n->slots[i]; i = (i + 1) & (n->nslots - 1))
        if (strnlen(n->slots[i], len + 1) == len && memcmp(n->slots[i], s, len) == 0)
            return n->slots[i];
    const char *copy = at_stacks_strdup(t->stacks, s, len);
    n->slots[i] = copy;
    n->count++;
    return copy;
}

/* ---- the trace ---------------------------------------------------------- */

at_trace *at_trace_new(void)
{
    at_trace *t = at_xcalloc(1, sizeof *t);
    t->maps = at_maps_new();
    t->stacks = at_stacks_new();
    t->names = calloc(1, sizeof *t->names);
    names_grow(t->names);
    return t;
}

void at_header_clear(at_header *h)
{
    char **fields[] = { &h->version, &h->arch,  &h->timestamp, &h->process,
                        &h->pid,     &h->depth, &h->origin,    &h->filter_other,
                        &h->sample,  &h->snapshot };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        free(*fields[i]);
        *fields[i] = NULL;
    }
    for (size_t i = 0; i < h->nunknown; i++) {
        free(h->unknown[i].key);
        free(h->unknown[i].value);
    }
    free(h->unknown);
    h->unknown = NULL;
    h->nunknown = 0;
    h->filter = 0;
    h->sample_interval = 0;
    h->time_on_change = false;
    h->present = false;
}

void at_trace_free(at_trace *t)
{
    if (!t)
        return;
    at_header_clear(&t->header);
    for (uint32_t i = 0; i < t->nresources; i++) {
        free(t->resources[i].name);
        free(t->resources[i].desc);
    }
    for (uint32_t i = 0; i < t->ncontexts; i++)
        free(t->contexts[i].name);
    at_maps_free(t->maps);
    at_stacks_free(t->stacks);
    free(t->names->slots);
    free(t->names);
    free(t);
}

void at_header_set(char **field, const char *value, size_t len)
{
    free(*field);
    *field = value ? at_xstrndup(value, len) : NULL;
}

void at_header_add_unknown(at_header *h, const char *key, size_t klen, const char *value,
                           size_t vlen)
{
    at_kv *kv = at_xreallocarray(h->unknown, h->nunknown + 1, sizeof *kv);
    h->unknown = kv;
    kv[h->nunknown].key = at_xstrndup(key, klen);
    kv[h->nunknown].value = at_xstrndup(value, vlen);
    h->nunknown++;
}

const at_resource *at_trace_resource(const at_trace *t, uint32_t bit)
{
    for (uint32_t i = 0; i < t->nresources; i++)
        if (t->resources[i].bit == bit)
            return &t->resources[i];
    return NULL;
}

const at_resource *at_trace_resource_named(const at_trace *t, const char *name, size_t len)
{
    for (uint32_t i = 0; i < t->nresources; i++)
        if (strnlen(t->resources[i].name, len + 1) == len &&
            memcmp(t->resources[i].name, name, len) == 0)
            return &t->resources[i];
    return NULL;
}

const at_resource *at_trace_add_resource(at_trace *t, uint32_t bit, const char *name,
                                         const char *desc, bool refcount)
{
    at_resource *r = (at_resource *)at_trace_resource(t, bit);
    if (r) {
        free(r->name);
        free(r->desc);
    } else {
        if (t->nresources == AT_MAX_RESOURCES)
            return NULL;
        r = &t->resources[t->nresources++];
    }
    r->bit = bit;
    r->name = at_xstrndup(name, strlen(name));
    r->desc = at_xstrndup(desc, strlen(desc));
    r->refcount = refcount;
    return r;
}

const at_context *at_trace_add_context(at_trace *t, uint32_t bit, const char *name)
{
    at_context *c = NULL;
    for (uint32_t i = 0; i < t->ncontexts; i++)
        if (t->contexts[i].bit == bit)
            c = &t->contexts[i];
    if (c) {
        free(c->name);
    } else {
        if (t->ncontexts == sizeof t->contexts / sizeof *t->contexts)
            return NULL;
        c = &t->contexts[t->ncontexts++];
    }
    c->bit = bit;
    c->name = at_xstrndup(name, strlen(name));
    return c;
}

/* ---- copies ------------------------------------------------------------- */

at_call *at_call_copy(const at_call *c)
{
    size_t size = sizeof *c + c->nargs * sizeof(at_arg);
    for (uint32_t i = 0; i < c->nargs; i++)
        size += strlen(c->args[i].name) + strlen(c->args[i].value) + 2;
    at_call *copy = at_xmalloc(size);
    *copy = *c;
    if (c->nargs) {
        at_arg *args = (at_arg *)(copy + 1);
        char *text = (char *)(args + c->nargs);
        for (uint32_t i = 0; i < c->nargs; i++) {
            size_t n = strlen(c->args[i].name) + 1, v = strlen(c->args[i].value) + 1;
            memcpy(text, c->args[i].name, n);
            args[i].name = text;
            text += n;
            memcpy(text, c->args[i].value, v);
            args[i].value = text;
            text += v;
        }
        copy->args = args;
    } else {
        copy->args = NULL;
    }
    return copy;
}

at_record *at_record_copy(const at_record *r)
{
    at_record *copy = at_xmalloc(sizeof *copy);
    *copy = *r;
    switch (r->kind) {
    case AT_REC_COMMENT:
        copy->u.comment.text = at_xstrndup(r->u.comment.text, r->u.comment.len);
        break;
    case AT_REC_ATTACHMENT:
        copy->u.attachment.name = at_xstrndup(r->u.attachment.name, strlen(r->u.attachment.name));
        copy->u.attachment.path = at_xstrndup(r->u.attachment.path, strlen(r->u.attachment.path));
        break;
    case AT_REC_CALL:
        copy->u.call = at_call_copy(r->u.call);
        break;
    case AT_REC_MAP: {
        /* The map table's array moves as it grows: keep a copy of the entry
         * (its path lives as long as the table; the build id may be
         * replaced, so it is copied). */
        at_map *m = at_xmalloc(sizeof *m);
        *m = *r->u.map;
        if (m->build_id)
            m->build_id = at_xstrndup(m->build_id, strlen(m->build_id));
        copy->u.map = m;
        break;
    }
    default:
        break;
    }
    return copy;
}

void at_record_free(at_record *r)
{
    if (!r)
        return;
    switch (r->kind) {
    case AT_REC_COMMENT:
        free((char *)r->u.comment.text);
        break;
    case AT_REC_ATTACHMENT:
        free((char *)r->u.attachment.name);
        free((char *)r->u.attachment.path);
        break;
    case AT_REC_CALL:
        free((at_call *)r->u.call);
        break;
    case AT_REC_MAP:
        free((char *)r->u.map->build_id);
        free((at_map *)r->u.map);
        break;
    default:
        break;
    }
    free(r);
}

void at_stage_pass_put(at_stage *self, const at_record *r)
{
    at_stage_put(self->next, r);
}

void at_stage_pass_finish(at_stage *self)
{
    at_stage_finish(self->next);
}
