/*
 * postproc/analyze/live_table.c: the analysis' live blocks by id
 * (live_table.h).
 *
 * Decisions:
 * - Open addressing with linear probing, 16-byte slots, at most 3/4 full;
 *   deletion by backward shift, so no tombstones pile up in a long run.
 * - Every bit of the id reaches the low bits the table indexes by (mix):
 *   block addresses differ in their middle bits, and a multiply alone
 *   leaves the product's low bits depending on the key's low bits only
 *   (long probe runs: a third of the analysis' time on a ripgrep trace).
 * - The table doubles IN PLACE once it is 2 MiB or more: its own mapping,
 *   made longer by mremap (the kernel moves page tables, not bytes, when
 *   it cannot extend where it is), then rehashed where it lies. A copy
 *   into a new table held the old and the new at once: on a python3 trace
 *   with 812,103 blocks live at the peak that was 48 MB for a 32 MB table,
 *   78 bytes a live block where the target is 64. Smaller tables are
 *   copied (a MiB at most, a constant).
 * - The rehash in place: a bitmap marks the slots whose block is already
 *   where the doubled table wants it ("placed"). Each block not yet placed
 *   is taken out and inserted from its new home, stepping over placed
 *   slots only; it lands in the first slot that is empty or holds a block
 *   not yet placed, and that block (if any) is taken out and inserted in
 *   turn. A placed block never moves again and its slot never empties, so
 *   the run from every placed block's home to its slot stays full: every
 *   lookup finds it. Each step places a block, so the chain ends; the
 *   bitmap is 1/64 of the table, freed at once.
 * - From 2 MiB up the mapping is asked for in huge pages (THP "madvise"):
 *   a lookup lands anywhere in tens of MB, and with 4 KiB pages nearly
 *   every one was a TLB miss on top of the cache miss.
 */
#include "live_table.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FIRST_CAP 4096
#define MAP_BYTES (2u << 20) /* from here on: a mapping of its own, in huge pages */

static uint64_t mix(uint64_t v)
{
    v = (v ^ (v >> 33)) * 0xff51afd7ed558ccdull;
    return v ^ (v >> 33);
}

static at_live_slot *probe(at_live_slot *tab, size_t cap, uint64_t id)
{
    for (size_t i = mix(id) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!tab[i].packed || tab[i].id == id)
            return &tab[i];
}

void at_live_init(at_live_table *t)
{
    *t = (at_live_table){ 0 };
}

void at_live_free(at_live_table *t)
{
    if (t->mapped)
        munmap(t->slots, t->cap * sizeof *t->slots);
    else
        free(t->slots);
    at_live_init(t);
}

at_live_slot *at_live_find(const at_live_table *t, uint64_t id)
{
    if (!t->cap)
        return NULL;
    at_live_slot *s = probe(t->slots, t->cap, id);
    return s->packed ? s : NULL;
}

/* A new zeroed mapping of `bytes`, huge pages asked for. */
static at_live_slot *map_slots(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        at_oom();
    madvise(p, bytes, MADV_HUGEPAGE); /* a hint: no harm when refused */
    return p;
}

/* Small tables, and the step onto a mapping: a new table, every block
 * copied into it, the old one freed. */
static void grow_by_copy(at_live_table *t, size_t cap)
{
    size_t bytes = cap * sizeof *t->slots;
    bool mapped = bytes >= MAP_BYTES;
    at_live_slot *tab = mapped ? map_slots(bytes) : at_xcalloc(cap, sizeof *tab);
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].packed)
            *probe(tab, cap, t->slots[i].id) = t->slots[i];
    size_t n = t->n;
    at_live_free(t);
    t->n = n;
    t->slots = tab;
    t->cap = cap;
    t->mapped = mapped;
}

static bool placed(const uint64_t *bits, size_t i)
{
    return bits[i / 64] >> (i % 64) & 1;
}

/* Every block of the first half of a table twice its old size into the
 * slot the doubled table wants (see the top: the rehash in place). */
static void rehash_in_place(at_live_slot *tab, size_t ocap)
{
    size_t cap = 2 * ocap, mask = cap - 1;
    uint64_t *done = at_xcalloc(cap / 64, sizeof *done);
    for (size_t i = 0; i < ocap; i++) {
        if (!tab[i].packed || placed(done, i))
            continue;
        at_live_slot e = tab[i];
        tab[i].packed = 0;
        for (;;) {
            size_t j = mix(e.id) & mask;
            while (tab[j].packed && placed(done, j))
                j = (j + 1) & mask;
            at_live_slot out = tab[j];
            tab[j] = e;
            done[j / 64] |= 1ull << (j % 64);
            if (!out.packed)
                break;
            e = out; /* a block not yet placed: it goes on */
        }
    }
    free(done);
}

static void grow(at_live_table *t)
{
    size_t ocap = t->cap, cap = ocap ? 2 * ocap : FIRST_CAP;
    if (!t->mapped) {
        grow_by_copy(t, cap);
        return;
    }
    size_t obytes = ocap * sizeof *t->slots, bytes = cap * sizeof *t->slots;
    void *p = mremap(t->slots, obytes, bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED)
        at_oom();
    madvise(p, bytes, MADV_HUGEPAGE); /* the new half: zero pages, not yet touched */
    t->slots = p;
    t->cap = cap;
    rehash_in_place(t->slots, ocap);
}

at_live_slot *at_live_insert(at_live_table *t, uint64_t id, uint64_t packed)
{
    if ((t->n + 1) * 4 > t->cap * 3)
        grow(t);
    at_live_slot *s = probe(t->slots, t->cap, id);
    *s = (at_live_slot){ .id = id, .packed = packed };
    t->n++;
    return s;
}

/* Linear probing's deletion: later entries of the same run move back into
 * the hole when their home slot allows it. */
void at_live_remove(at_live_table *t, at_live_slot *s)
{
    at_live_slot *tab = t->slots;
    size_t mask = t->cap - 1, hole = (size_t)(s - tab);
    for (size_t i = (hole + 1) & mask; tab[i].packed; i = (i + 1) & mask) {
        size_t home = mix(tab[i].id) & mask;
        bool movable = hole <= i ? (home <= hole || home > i) : (home <= hole && home > i);
        if (movable) {
            tab[hole] = tab[i];
            hole = i;
        }
    }
    tab[hole].packed = 0;
    t->n--;
}

void at_live_prefetch(const at_live_table *t, uint64_t id)
{
    if (!t->cap)
        return;
    /* the home slot's line and the next: a lookup of an id not in the table
     * (every new block) walks its run to an empty slot, ~8 slots at 3/4 full */
    size_t home = mix(id) & (t->cap - 1);
    __builtin_prefetch(&t->slots[home], 1);
    __builtin_prefetch(&t->slots[(home + 4) & (t->cap - 1)], 1);
}
