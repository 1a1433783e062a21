/*
 * postproc/resolve/resolve_cache.c: open addressing with linear probing, kept at
 * most half full. Entries are never removed one by one (only the whole
 * table is cleared), so no tombstones are needed.
 */
#include "resolve_cache.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct slot {
    uint64_t a, b;
    void *v; /* NULL: empty */
} slot;

struct at_rcache {
    slot *slots;
    size_t nslots, count;
};

at_rcache *at_rcache_new(void)
{
    at_rcache *c = at_xcalloc(1, sizeof *c);
    c->nslots = 256;
    c->slots = at_xcalloc(c->nslots, sizeof *c->slots);
    return c;
}

static void free_values(at_rcache *c, void (*free_value)(void *))
{
    if (!free_value)
        return;
    for (size_t i = 0; i < c->nslots; i++)
        if (c->slots[i].v)
            free_value(c->slots[i].v);
}

void at_rcache_free(at_rcache *c, void (*free_value)(void *))
{
    if (!c)
        return;
    free_values(c, free_value);
    free(c->slots);
    free(c);
}

void at_rcache_clear(at_rcache *c, void (*free_value)(void *))
{
    free_values(c, free_value);
    for (size_t i = 0; i < c->nslots; i++)
        c->slots[i] = (slot){ 0 };
    c->count = 0;
}

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static size_t find(const at_rcache *c, uint64_t a, uint64_t b)
{
    size_t mask = c->nslots - 1;
    size_t i = (size_t)mix(a, b) & mask;
    while (c->slots[i].v && (c->slots[i].a != a || c->slots[i].b != b))
        i = (i + 1) & mask;
    return i;
}

void *at_rcache_get(const at_rcache *c, uint64_t a, uint64_t b)
{
    return c->slots[find(c, a, b)].v;
}

static void grow(at_rcache *c)
{
    slot *old = c->slots;
    size_t n = c->nslots;
    c->nslots = n * 2;
    c->slots = at_xcalloc(c->nslots, sizeof *c->slots);
    for (size_t i = 0; i < n; i++)
        if (old[i].v)
            c->slots[find(c, old[i].a, old[i].b)] = old[i];
    free(old);
}

void at_rcache_put(at_rcache *c, uint64_t a, uint64_t b, void *v)
{
    size_t i = find(c, a, b);
    if (!c->slots[i].v)
        c->count++;
    c->slots[i] = (slot){ a, b, v };
    if (c->count * 2 > c->nslots)
        grow(c);
}

size_t at_rcache_count(const at_rcache *c) { return c->count; }
