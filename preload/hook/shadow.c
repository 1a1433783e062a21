/*
 * preload/hook/shadow.c: leaks mode's store of live blocks, at a place computed
 * from each block's address.
 *
 * Why not a hash table (live.c keeps one, for what does not fit here): a
 * hash scatters neighbouring addresses over the whole table, so with many
 * live blocks every allocation and every free cost the tracer a cache miss
 * and a TLB miss of its own - most of leaks mode's time on a hash table of
 * strings. Here a block's slot sits at a fixed offset from its address:
 * blocks the allocator placed side by side, and that a program usually
 * frees side by side, have their slots side by side, in cached lines.
 *
 * The address space is cut into 4 MiB leaves, found through a small
 * directory. A leaf's slots are one anonymous mapping (MAP_NORESERVE:
 * pages no block maps to are never touched), one 24-byte slot per 32
 * bytes of address, glibc's smallest chunk, so the slots of a heap of
 * tiny blocks take at most 3/4 of its size. A bitmap of the slot pages
 * written lets the exit scan skip the rest.
 *
 * Page faults: a heap growing upwards touches a new slot page every 5.3
 * KiB of heap, one page fault each (~1 us of kernel time on a VM, ~30 ns
 * an event on a JSON run). So when a slot page is first written and the
 * page below it was written before - the heap is growing through this
 * leaf - the next POPULATE_PAGES pages are made present with one
 * madvise(MADV_POPULATE_WRITE) and marked written. Scattered blocks (large
 * ones, mmap'd each) have no written neighbour and cost no more memory
 * than before; a kernel without MADV_POPULATE_WRITE (before 5.14) is
 * asked once.
 *
 * No lock: the allocator orders everything that happens to one address
 * (hooks.c records a release before libc gets the memory back and an
 * allocation after libc handed it out), so no two threads ever write one
 * slot at once. Only creating a leaf takes a lock. The scan at exit may
 * race with threads still running; a slot's word carries a 3-bit
 * generation so the scan can tell a slot it read whole from one that
 * changed under it (and leaves that one out, as an in-flight block).
 *
 * What does not fit returns -1 and live.c keeps it instead: an address not
 * 16-byte aligned, a second block in the same 32 bytes (an allocator with
 * 16-byte size classes), no memory or no directory room for a leaf.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "tracer.h"

#define LEAF_SHIFT 22
#define SLOT_SHIFT 5
#define LEAF_SLOTS (1ul << (LEAF_SHIFT - SLOT_SHIFT))
#define PAGE 4096ul
#define DIR_BITS 13
#define DIR_SIZE (1ul << DIR_BITS)

/* word: 0 when never used; else the interned site (16-byte aligned) | bit
 * 4 of the address (bit 0) | generation (bits 1-3). Empty: site bits 0. */
struct slot {
    uint64_t word;
    uint64_t packed[2];
};
#define SITE_MASK (~(uint64_t)15)
#define LEAF_BYTES (LEAF_SLOTS * sizeof(struct slot))
#define LEAF_PAGES (LEAF_BYTES / PAGE)

struct leaf {
    uint64_t touched[LEAF_PAGES / 64];   /* slot pages ever written */
    struct slot *slots;
};

/* Open addressing, at most half full; a key is published (release) after
 * its leaf, and entries are never removed. Key: leaf number + 1. */
struct dir_entry {
    uintptr_t key;
    struct leaf *leaf;
};

static struct dir_entry dir[DIR_SIZE];
static size_t dir_count;
static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uintptr_t leaf_key(uintptr_t id)
{
    return (id >> LEAF_SHIFT) + 1;
}

static inline size_t dir_home(uintptr_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - DIR_BITS));
}

static struct leaf *find_leaf(uintptr_t key)
{
    for (size_t i = dir_home(key);; i = (i + 1) & (DIR_SIZE - 1)) {
        uintptr_t k = __atomic_load_n(&dir[i].key, __ATOMIC_ACQUIRE);
        if (k == key)
            return dir[i].leaf;
        if (k == 0)
            return NULL;
    }
}

/* The leaf header and its slots in one mapping, header first. */
static struct leaf *map_leaf(void)
{
    void *m = mmap(NULL, PAGE + LEAF_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct leaf *l = m;
    l->slots = (struct slot *)((char *)m + PAGE);
    return l;
}

static struct leaf *create_leaf(uintptr_t key)
{
    pthread_mutex_lock(&dir_lock);
    struct leaf *l = find_leaf(key);
    if (!l && dir_count < DIR_SIZE / 2 && (l = map_leaf()) != NULL) {
        size_t i = dir_home(key);
        while (dir[i].key)
            i = (i + 1) & (DIR_SIZE - 1);
        dir[i].leaf = l;
        __atomic_store_n(&dir[i].key, key, __ATOMIC_RELEASE);
        dir_count++;
    }
    pthread_mutex_unlock(&dir_lock);
    return l;
}

static inline size_t slot_of(uintptr_t id)
{
    return (id >> SLOT_SHIFT) & (LEAF_SLOTS - 1);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define POPULATE_PAGES 32
static int populate_refused;

static inline int page_touched(const struct leaf *l, size_t page)
{
    return __atomic_load_n(&l->touched[page / 64], __ATOMIC_RELAXED) >> (page % 64) & 1;
}

static inline void set_touched(struct leaf *l, size_t page)
{
    __atomic_fetch_or(&l->touched[page / 64], 1ull << (page % 64), __ATOMIC_RELAXED);
}

/* Slot page `page` is about to be written for the first time. */
static __attribute__((noinline)) void first_touch(struct leaf *l, size_t page)
{
    set_touched(l, page);
    if (page == 0 || !page_touched(l, page - 1) ||
        __atomic_load_n(&populate_refused, __ATOMIC_RELAXED))
        return;
    size_t n = POPULATE_PAGES;
    if (page + 1 + n > LEAF_PAGES)
        n = LEAF_PAGES - page - 1;
    if (n == 0)
        return;
    if (madvise((char *)l->slots + (page + 1) * PAGE, n * PAGE, MADV_POPULATE_WRITE) != 0) {
        if (errno == EINVAL)
            __atomic_store_n(&populate_refused, 1, __ATOMIC_RELAXED);
        return;   /* no memory now: the pages fault in one by one */
    }
    for (size_t p = page + 1; p <= page + n; p++)
        set_touched(l, p);
}

static inline void mark_touched(struct leaf *l, size_t i)
{
    size_t page = i * sizeof(struct slot) / PAGE;
    if (!page_touched(l, page))
        first_touch(l, page);
}

int at_shadow_put(const struct at_live_block *b)
{
    uint64_t site = (uint64_t)(uintptr_t)b->stack;
    if ((b->id & 15) || (site & ~SITE_MASK) || !site)
        return -1;
    uintptr_t key = leaf_key(b->id);
    struct leaf *l = find_leaf(key);
    if (!l && !(l = create_leaf(key)))
        return -1;
    size_t i = slot_of(b->id);
    struct slot *s = &l->slots[i];
    uint64_t old = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
    if (old & SITE_MASK)
        return -1;   /* another block in these 32 bytes */
    mark_touched(l, i);
    __atomic_store_n(&s->packed[0], b->packed[0], __ATOMIC_RELAXED);
    __atomic_store_n(&s->packed[1], b->packed[1], __ATOMIC_RELAXED);
    uint64_t gen = (old + 2) & 14, tag = (b->id >> 4) & 1;
    __atomic_store_n(&s->word, site | gen | tag, __ATOMIC_RELEASE);
    return 0;
}

/* The block at address `id` held by slot `s`, whose word was read as `w`. */
static void slot_block(const struct slot *s, uint64_t w, uintptr_t id, struct at_live_block *b)
{
    b->id = id;
    b->stack = (const struct at_stack *)(uintptr_t)(w & SITE_MASK);
    b->packed[0] = __atomic_load_n(&s->packed[0], __ATOMIC_RELAXED);
    b->packed[1] = __atomic_load_n(&s->packed[1], __ATOMIC_RELAXED);
}

int at_shadow_take(uintptr_t id, struct at_live_block *out)
{
    if (id & 15)
        return 0;
    struct leaf *l = find_leaf(leaf_key(id));
    if (!l)
        return 0;
    struct slot *s = &l->slots[slot_of(id)];
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
    if (!(w & SITE_MASK) || (w & 1) != ((id >> 4) & 1))
        return 0;
    if (out)
        slot_block(s, w, id, out);
    __atomic_store_n(&s->word, w & 14, __ATOMIC_RELEASE);
    return 1;
}

void at_shadow_prefetch(uintptr_t id)
{
    struct leaf *l = find_leaf(leaf_key(id));
    if (l)
        __builtin_prefetch(&l->slots[slot_of(id)], 1);
}

/* A slot read whole, or 0 when it is empty or changed while being read. */
static int read_slot(const struct slot *s, uintptr_t base, size_t i, struct at_live_block *b)
{
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
    if (!(w & SITE_MASK))
        return 0;
    slot_block(s, w, base | (uintptr_t)i << SLOT_SHIFT | (uintptr_t)(w & 1) << 4, b);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&s->word, __ATOMIC_RELAXED) == w;
}

/* Slots whose first byte lies in slot page `page`. */
static size_t scan_page(const struct leaf *l, uintptr_t base, size_t page,
                        struct at_live_block *out, size_t max, size_t n)
{
    size_t sz = sizeof(struct slot);
    size_t first = (page * PAGE + sz - 1) / sz, end = ((page + 1) * PAGE + sz - 1) / sz;
    if (end > LEAF_SLOTS)
        end = LEAF_SLOTS;
    for (size_t i = first; i < end; i++) {
        struct at_live_block b;
        if (!read_slot(&l->slots[i], base, i, &b))
            continue;
        if (out && n < max)
            out[n] = b;
        n++;
    }
    return n;
}

/* The directory's entries in address order (insertion sort: a few dozen
 * leaves a run, DIR_SIZE / 2 at most). Static: collect runs from a
 * signal handler too, maybe on a small stack. */
static uintptr_t by_address[DIR_SIZE / 2];

static size_t leaves_in_order(void)
{
    size_t k = 0;
    for (size_t d = 0; d < DIR_SIZE && k < DIR_SIZE / 2; d++) {
        uintptr_t key = __atomic_load_n(&dir[d].key, __ATOMIC_ACQUIRE);
        if (!key)
            continue;
        size_t j = k++;
        for (; j > 0 && by_address[j - 1] > key; j--)
            by_address[j] = by_address[j - 1];
        by_address[j] = key;
    }
    return k;
}

/* Every block, in address order: the exit scan sorts them by address,
 * and blocks that come sorted spare it a copy of them all. */
size_t at_shadow_collect(struct at_live_block *out, size_t max)
{
    size_t n = 0, leaves = leaves_in_order();
    for (size_t k = 0; k < leaves; k++) {
        uintptr_t key = by_address[k];
        const struct leaf *l = find_leaf(key);
        uintptr_t base = (key - 1) << LEAF_SHIFT;
        for (size_t page = 0; l && page < LEAF_PAGES; page++)
            if (page_touched(l, page))
                n = scan_page(l, base, page, out, max, n);
    }
    return n;
}

void at_shadow_exclusions(at_range_fn *add, void *ctx)
{
    for (size_t d = 0; d < DIR_SIZE; d++)
        if (__atomic_load_n(&dir[d].key, __ATOMIC_ACQUIRE))
            add(ctx, dir[d].leaf, PAGE + LEAF_BYTES);
}

/* The slots' memory given back, at exit once the blocks are collected:
 * the scan and the report that follow need the room more. A thread still
 * running that frees a block then finds no slot (the release is not
 * recorded: nothing is after the report), one that allocates faults a
 * zero page in. The leaves stay mapped and in the directory. */
void at_shadow_drop(void)
{
    for (size_t d = 0; d < DIR_SIZE; d++) {
        struct leaf *l = __atomic_load_n(&dir[d].key, __ATOMIC_ACQUIRE) ? dir[d].leaf : NULL;
        if (l)
            madvise(l->slots, LEAF_BYTES, MADV_DONTNEED);
    }
}

void at_shadow_fork_prepare(void)
{
    pthread_mutex_lock(&dir_lock);
}

void at_shadow_fork_parent(void)
{
    pthread_mutex_unlock(&dir_lock);
}

/* A child keeps the live blocks it inherits (live.c says why). */
void at_shadow_fork_child(void)
{
    pthread_mutex_init(&dir_lock, NULL);
}
