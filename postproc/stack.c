/*
 * postproc/stack.c: the interning table behind stack.h. Open addressing on
 * the stack hash; stacks and frame texts live in an arena that only grows,
 * because interned stacks are never freed before the run ends.
 *
 * A frame text is kept once however many stacks hold it (a table of texts
 * beside the stacks'): resolved C++ stacks are 40-120 frames of 100-200
 * bytes of demangled name and file:line, mostly shared with other stacks,
 * and a copy per stack was 150 MB of a cc1plus trace's 225 MB with -r.
 */
#include "stack.h"
#include "xalloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The arena (at_arena: chunks with their pages present): a cc1plus
 * trace's stacks are 40 MB, and their first copies into calloc'd chunks
 * took 10,000 page faults on the reading thread. */

struct at_stack_table {
    struct stack_slot *slots; /* hash table, power-of-two size */
    uint32_t nslots;
    const at_stack **by_id;
    uint32_t count, cap;
    at_arena arena;
    struct text_slot *texts; /* the frame texts kept, by content */
    size_t ntexts, ctexts;
    const char **own;        /* the same texts by address (see keep_text) */
    size_t cown;
};

/* The hash beside the pointer: a probe that compared s->hash read the stack
 * itself, a cache miss a probe on a big table. */
typedef struct stack_slot {
    uint64_t hash;
    const at_stack *s; /* NULL: empty */
} stack_slot;

typedef struct text_slot {
    uint64_t hash;
    const char *text; /* NULL: empty */
} text_slot;

static void *arena_alloc(at_stack_table *t, size_t n)
{
    return at_arena_alloc(&t->arena, n, sizeof(max_align_t));
}

/* Slots from 2 MiB up are a mapping of their own with its pages present
 * (at_xmap), as the arena's chunks. */
static bool slots_mapped(uint32_t nslots)
{
    return (size_t)nslots * sizeof(stack_slot) >= ((size_t)2 << 20);
}

static stack_slot *new_slots(uint32_t n)
{
    return slots_mapped(n) ? at_xmap((size_t)n * sizeof(stack_slot))
                         : at_xcalloc(n, sizeof(stack_slot));
}

static void free_slots(stack_slot *slots, uint32_t n)
{
    if (slots_mapped(n))
        at_xmap_free(slots, (size_t)n * sizeof *slots);
    else
        free(slots);
}

at_stack_table *at_stacks_new(void)
{
    at_stack_table *t = at_xcalloc(1, sizeof *t);
    t->nslots = 1024;
    t->slots = new_slots(t->nslots);
    return t;
}

void at_stacks_free(at_stack_table *t)
{
    if (!t)
        return;
    at_arena_free(&t->arena);
    free_slots(t->slots, t->nslots);
    free(t->by_id);
    free(t->texts);
    free(t->own);
    free(t);
}

/* One 64-bit word into the hash: a multiply and a shift, as reader.c's
 * frame-list hash does. */
static uint64_t mix_word(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

/* A text's first, middle and last 8 bytes and its length (shorter texts
 * whole): enough to tell stacks apart, since stacks differ in their
 * addresses nearly always, and same_frames compares every byte anyway.
 * Hashing whole texts was 11-15% of `-r` on cc1plus and clang traces (a
 * resolved C++ frame is 100-200 bytes of demangled name and file:line, 40
 * to 120 frames a stack, every new stack hashed whole, FNV-1a a byte at a
 * time at first, then still ~10% 8 bytes at a time). */
static uint64_t text_sample(const char *s)
{
    size_t len = strlen(s);
    uint64_t a = 0, b = 0, c = 0;
    if (len <= 8) {
        memcpy(&a, s, len);
    } else {
        memcpy(&a, s, 8);
        memcpy(&b, s + len / 2 - 4, 8);
        memcpy(&c, s + len - 8, 8);
    }
    return mix_word(mix_word(a ^ (uint64_t)len << 56, b), c);
}

uint64_t at_stacks_text_hash(const char *text)
{
    return text ? text_sample(text) : UINT64_MAX;
}

static uint64_t hash_start(uint32_t n)
{
    return 0xcbf29ce484222325ull ^ n;
}

static uint64_t hash_frame(uint64_t h, uint64_t addr, uint64_t text_hash)
{
    return mix_word(mix_word(h, addr), text_hash);
}

static uint64_t hash_frames(const at_frame *frames, uint32_t n)
{
    uint64_t h = hash_start(n);
    for (uint32_t i = 0; i < n; i++)
        h = hash_frame(h, frames[i].addr, at_stacks_text_hash(frames[i].text));
    return h;
}

static uint64_t hash_text(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
    size_t k = 0;
    for (; k + 8 <= len; k += 8) {
        uint64_t w;
        memcpy(&w, s + k, 8);
        h = mix_word(h, w);
    }
    uint64_t w = 0;
    memcpy(&w, s + k, len - k);
    return mix_word(h, w);
}

static size_t own_home(const char *text, size_t cap)
{
    return (size_t)mix_word(0, (uint64_t)(uintptr_t)text) & (cap - 1);
}

/* Whether text is one of the table's own copies: a frame text the resolver
 * took from this table (at_stacks_text) is, and then costs one probe here
 * instead of its length, hash and comparison (5-8% of -r on cc1plus: every
 * new resolved stack's 40-120 frames were kept one by one). Only the
 * table's own copies are in the set, and they live as long as it, so an
 * address found is always that text. */
static bool own_text(const at_stack_table *t, const char *text)
{
    if (!t->cown)
        return false;
    for (size_t i = own_home(text, t->cown); t->own[i]; i = (i + 1) & (t->cown - 1))
        if (t->own[i] == text)
            return true;
    return false;
}

static void own_add(at_stack_table *t, const char *text)
{
    if (t->ntexts * 2 > t->cown) {
        size_t n = t->cown ? t->cown * 2 : 1024;
        const char **own = at_xcalloc(n, sizeof *own);
        for (size_t i = 0; i < t->cown; i++) {
            if (!t->own[i])
                continue;
            size_t j = own_home(t->own[i], n);
            while (own[j])
                j = (j + 1) & (n - 1);
            own[j] = t->own[i];
        }
        free(t->own);
        t->own = own;
        t->cown = n;
    }
    size_t i = own_home(text, t->cown);
    while (t->own[i])
        i = (i + 1) & (t->cown - 1);
    t->own[i] = text;
}

/* The table's one copy of text (kept on first sight). */
static const char *keep_text(at_stack_table *t, const char *text)
{
    if (own_text(t, text))
        return text;
    size_t len = strlen(text);
    if ((t->ntexts + 1) * 2 > t->ctexts) {
        size_t n = t->ctexts ? t->ctexts * 2 : 1024;
        text_slot *slots = at_xcalloc(n, sizeof *slots);
        for (size_t i = 0; i < t->ctexts; i++) {
            if (!t->texts[i].text)
                continue;
            size_t j = (size_t)t->texts[i].hash & (n - 1);
            while (slots[j].text)
                j = (j + 1) & (n - 1);
            slots[j] = t->texts[i];
        }
        free(t->texts);
        t->texts = slots;
        t->ctexts = n;
    }
    uint64_t h = hash_text(text, len);
    size_t i = (size_t)h & (t->ctexts - 1);
    for (; t->texts[i].text; i = (i + 1) & (t->ctexts - 1))
        if (t->texts[i].hash == h && strcmp(t->texts[i].text, text) == 0)
            return t->texts[i].text;
    t->texts[i] = (text_slot){ h, at_stacks_strdup(t, text, len) };
    t->ntexts++;
    own_add(t, t->texts[i].text);
    return t->texts[i].text;
}

const char *at_stacks_text(at_stack_table *t, const char *text)
{
    return text ? keep_text(t, text) : NULL;
}

static int same_text(const char *a, const char *b)
{
    if (a == b) /* the resolver hands the same text for the same address */
        return 1;
    if (!a || !b)
        return 0;
    return strcmp(a, b) == 0;
}

static int same_frames(const at_stack *s, const at_frame *frames, uint32_t n)
{
    if (s->nframes != n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (s->frames[i].addr != frames[i].addr || !same_text(s->frames[i].text, frames[i].text))
            return 0;
    return 1;
}

static void grow(at_stack_table *t)
{
    uint32_t n = t->nslots * 2;
    stack_slot *slots = new_slots(n);
    for (uint32_t i = 0; i < t->nslots; i++) {
        if (!t->slots[i].s)
            continue;
        uint32_t j = (uint32_t)t->slots[i].hash & (n - 1);
        while (slots[j].s)
            j = (j + 1) & (n - 1);
        slots[j] = t->slots[i];
    }
    free_slots(t->slots, t->nslots);
    t->slots = slots;
    t->nslots = n;
}

const char *at_stacks_strdup(at_stack_table *t, const char *s, size_t len)
{
    char *copy = arena_alloc(t, len + 1);
    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

/* The slot of the stack equal to frames[0..n) with hash h, or the empty
 * slot where it goes. */
static stack_slot *find_slot(const at_stack_table *t, uint64_t h, const at_frame *frames,
                             uint32_t n)
{
    uint32_t i = (uint32_t)h & (t->nslots - 1);
    for (; t->slots[i].s; i = (i + 1) & (t->nslots - 1))
        if (t->slots[i].hash == h && same_frames(t->slots[i].s, frames, n))
            break;
    return &t->slots[i];
}

/* A new stack of frames[0..n) into the empty slot; kept: its texts are
 * the table's own copies already. */
static const at_stack *add_stack(at_stack_table *t, stack_slot *slot, uint64_t h,
                                 const at_frame *frames, uint32_t n, bool kept)
{
    at_stack *s = arena_alloc(t, sizeof *s + n * sizeof(at_frame));
    s->id = t->count;
    s->nframes = n;
    s->hash = h;
    if (n)
        memcpy(s->frames, frames, n * sizeof *frames);
    if (!kept) /* keep_text touches the texts' tables, not the slots */
        for (uint32_t k = 0; k < n; k++)
            if (s->frames[k].text)
                s->frames[k].text = keep_text(t, s->frames[k].text);
    *slot = (stack_slot){ h, s };
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 256;
        const at_stack **by_id = realloc(t->by_id, t->cap * sizeof *by_id);
        if (!by_id)
            abort();
        t->by_id = by_id;
    }
    t->by_id[t->count++] = s;
    if (t->count * 2 > t->nslots)
        grow(t);
    return s;
}

const at_stack *at_stacks_intern(at_stack_table *t, const at_frame *frames, uint32_t n)
{
    uint64_t h = hash_frames(frames, n);
    stack_slot *slot = find_slot(t, h, frames, n);
    return slot->s ? slot->s : add_stack(t, slot, h, frames, n, false);
}

const at_stack *at_stacks_intern_kept(at_stack_table *t, const at_frame *frames,
                                      const uint64_t *text_hashes, uint32_t n)
{
    uint64_t h = hash_start(n);
    for (uint32_t i = 0; i < n; i++)
        h = hash_frame(h, frames[i].addr, text_hashes[i]);
    stack_slot *slot = find_slot(t, h, frames, n);
    return slot->s ? slot->s : add_stack(t, slot, h, frames, n, true);
}

uint32_t at_stacks_count(const at_stack_table *t) { return t->count; }

const at_stack *at_stacks_get(const at_stack_table *t, uint32_t id)
{
    return id < t->count ? t->by_id[id] : NULL;
}
