/*
 * preload/live.c: leaks mode. The live blocks are kept in memory and only
 * those still alive at exit are written, in index order, with the leak
 * summary of TEXT_FORMAT.md section 8.
 *
 * Blocks live in 64 open-addressing hash tables, chosen by the address's
 * hash, each behind its own lock, so two threads rarely meet; the tables
 * are slices of one region that grows as a whole (see grow_all). Backtraces
 * are interned (one copy per distinct stack, in 16 tables with
 * bump-allocated nodes that are never freed): a test suite allocates from
 * few call sites many times, so this is what keeps leaks mode small.
 * Threads allocating from the same call site hit the same stack, so its
 * lookup takes no lock: nodes are never freed and are published with a
 * release store, old bucket arrays are kept; a reader that races with a
 * rehash can only miss, and a miss is re-checked under the lock.
 * Everything uses the real allocator or mmap, never the hooks.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tracer.h"

/* An interned call site: the frames and what else all its calls share. */
struct at_stack {
    struct at_stack *next;
    uint64_t hash;
    uint64_t alignment;
    uint32_t ctx;
    uint16_t fn;
    uint16_t n;
    void *frames[];
};

struct site_key {
    void *const *frames;
    int n;
    uint32_t ctx;
    uint16_t fn;
    uint64_t alignment;
};

#define STRIPES 64
#define STACK_STRIPES 16
#define CHUNK (1u << 20)

struct stripe {
    pthread_mutex_t lock;
    struct at_live_block *slots;
    size_t cap, count;
} __attribute__((aligned(64)));

struct buckets {
    size_t n;
    struct at_stack *slot[];
};

struct stack_stripe {
    pthread_mutex_t lock;
    struct buckets *table;   /* published with release stores */
    size_t count;
    char *chunk;
    size_t chunk_used;
} __attribute__((aligned(64)));

static struct stripe stripes[STRIPES];
static struct stack_stripe stacks[STACK_STRIPES];

static inline uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

int at_live_init(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i].lock, NULL);
    for (int i = 0; i < STACK_STRIPES; i++)
        pthread_mutex_init(&stacks[i].lock, NULL);
    return 0;
}

/* ---- interned stacks ---------------------------------------------------- */

static void *bump(struct stack_stripe *s, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!s->chunk || s->chunk_used + n > CHUNK) {
        void *m = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        s->chunk = m;
        s->chunk_used = 0;
    }
    void *p = s->chunk + s->chunk_used;
    s->chunk_used += n;
    return p;
}

/* Under the stripe lock. The old array is not freed: lock-free readers
 * may still be walking it. */
static int grow_buckets(struct stack_stripe *s)
{
    struct buckets *old = s->table;
    size_t n = old ? old->n * 2 : 1024;
    struct buckets *b = at_real.calloc(1, sizeof *b + n * sizeof(struct at_stack *));
    if (!b)
        return -1;
    b->n = n;
    for (size_t i = 0; old && i < old->n; i++)
        for (struct at_stack *e = old->slot[i], *next; e; e = next) {
            next = e->next;
            __atomic_store_n(&e->next, b->slot[e->hash & (n - 1)], __ATOMIC_RELEASE);
            b->slot[e->hash & (n - 1)] = e;
        }
    __atomic_store_n(&s->table, b, __ATOMIC_RELEASE);
    return 0;
}

static int same_site(const struct at_stack *e, uint64_t h, const struct site_key *k)
{
    return e->hash == h && e->n == (uint16_t)k->n && e->ctx == k->ctx && e->fn == k->fn &&
           e->alignment == k->alignment &&
           memcmp(e->frames, k->frames, (size_t)k->n * sizeof(void *)) == 0;
}

static const struct at_stack *lookup(const struct buckets *b, uint64_t h, const struct site_key *k)
{
    if (!b)
        return NULL;
    for (struct at_stack *e = __atomic_load_n(&b->slot[h & (b->n - 1)], __ATOMIC_ACQUIRE); e;
         e = __atomic_load_n(&e->next, __ATOMIC_ACQUIRE))
        if (same_site(e, h, k))
            return e;
    return NULL;
}

static const struct at_stack *intern(const struct site_key *k)
{
    /* One multiply per frame, one full mix at the end. */
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)k->n ^ ((uint64_t)k->ctx << 32) ^
                 ((uint64_t)k->fn << 16) ^ k->alignment;
    for (int i = 0; i < k->n; i++)
        h = (h ^ (uintptr_t)k->frames[i]) * 0x100000001b3ull;
    h = mix(h);
    struct stack_stripe *s = &stacks[h >> 60];
    const struct at_stack *found = lookup(__atomic_load_n(&s->table, __ATOMIC_ACQUIRE), h, k);
    if (found)
        return found;
    size_t bytes = (size_t)k->n * sizeof(void *);
    pthread_mutex_lock(&s->lock);
    found = lookup(s->table, h, k);
    if (!found && (s->table || grow_buckets(s) == 0)) {
        if (s->count >= s->table->n)
            grow_buckets(s);
        struct at_stack *e = bump(s, sizeof *e + bytes);
        if (e) {
            struct buckets *b = s->table;
            e->hash = h;
            e->n = (uint16_t)k->n;
            e->ctx = k->ctx;
            e->fn = k->fn;
            e->alignment = k->alignment;
            memcpy(e->frames, k->frames, bytes);
            e->next = b->slot[h & (b->n - 1)];
            __atomic_store_n(&b->slot[h & (b->n - 1)], e, __ATOMIC_RELEASE);
            s->count++;
            found = e;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

/* ---- live blocks --------------------------------------------------------- */

_Static_assert(sizeof(struct at_live_block) == 32, "two to a cache line");
#define INDEX_BITS 45
#define SIZE_LO_BITS (64 - INDEX_BITS)
#define DAY_US 86400000000ull   /* only the time of day is written */

static inline uint64_t block_index(const struct at_live_block *b)
{
    return b->packed[0] & ((1ull << INDEX_BITS) - 1);
}

static inline uint64_t block_size(const struct at_live_block *b)
{
    return (b->packed[0] >> INDEX_BITS) | (b->packed[1] & ((1ull << 27) - 1)) << SIZE_LO_BITS;
}

static inline uint64_t block_time(const struct at_live_block *b)
{
    return b->packed[1] >> 27;
}

/* A size needs at most 46 bits (user space is 47 bits wide); an index
 * past 2^45 (35 trillion events) is not tracked. */
static inline int block_pack(struct at_live_block *b, uint64_t index, uint64_t size,
                             uint64_t time_us)
{
    if (index >> INDEX_BITS || size >> 46)
        return -1;
    b->packed[0] = index | size << INDEX_BITS;
    b->packed[1] = (size >> SIZE_LO_BITS) | (time_us % DAY_US) << 27;
    return 0;
}

static inline struct stripe *stripe_of(uintptr_t id, uint64_t *h)
{
    *h = mix(id);
    return &stripes[*h >> 58];
}

static void insert_slot(struct stripe *s, const struct at_live_block *b, uint64_t h)
{
    size_t mask = s->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask)
        if (s->slots[i].id == 0 || s->slots[i].id == b->id) {
            if (s->slots[i].id == 0)
                s->count++;
            s->slots[i] = *b;
            return;
        }
}

/*
 * All stripes' tables are slices of one region, grown together (under all
 * stripe locks, once per doubling), so that the region is large enough for
 * transparent huge pages: with hundreds of thousands of live blocks every
 * lookup is a random access, and 4 KiB pages make it a TLB miss and, when
 * the table grows, a page fault per page.
 */
#define HUGE (2u << 20)
static char *region;
static size_t region_len;

static void *region_map(size_t bytes, size_t *len)
{
    size_t n = (bytes + HUGE - 1) & ~(size_t)(HUGE - 1);
    char *m = mmap(NULL, n + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    char *a = (char *)(((uintptr_t)m + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (a > m)
        munmap(m, (size_t)(a - m));
    if (a + n < m + n + HUGE)
        munmap(a + n, (size_t)(m + n + HUGE - (a + n)));
    madvise(a, n, MADV_HUGEPAGE);
    *len = n;
    return a;
}

/* Doubles every stripe's table, unless another thread did since the
 * caller saw `seen_cap`. No stripe lock held on entry. */
static void grow_all(size_t seen_cap)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_lock(&stripes[i].lock);
    size_t old_cap = stripes[0].cap;
    if (old_cap == seen_cap) {
        size_t cap = old_cap ? old_cap * 2 : 256, len;
        struct at_live_block *base = region_map(STRIPES * cap * sizeof *base, &len);
        if (base) {
            for (int i = 0; i < STRIPES; i++) {
                struct stripe *s = &stripes[i];
                struct at_live_block *old = s->slots;
                s->slots = base + (size_t)i * cap;
                s->cap = cap;
                s->count = 0;
                for (size_t k = 0; k < old_cap; k++)
                    if (old[k].id)
                        insert_slot(s, &old[k], mix(old[k].id));
            }
            if (region)
                munmap(region, region_len);
            region = (char *)base;
            region_len = len;
        }
    }
    for (int i = STRIPES - 1; i >= 0; i--)
        pthread_mutex_unlock(&stripes[i].lock);
}

static void put_block(const struct at_live_block *b)
{
    uint64_t h;
    struct stripe *s = stripe_of(b->id, &h);
    pthread_mutex_lock(&s->lock);
    while ((s->count + 1) * 4 > s->cap * 3) {
        size_t seen = s->cap;
        pthread_mutex_unlock(&s->lock);
        grow_all(seen);
        pthread_mutex_lock(&s->lock);
        if (s->cap == seen)
            break;   /* no memory: the block goes untracked */
    }
    if ((s->count + 1) * 4 <= s->cap * 3)
        insert_slot(s, b, h);
    pthread_mutex_unlock(&s->lock);
}

/* Called before unwinding: the block's slot is a cache miss in a large
 * table, so start loading it while the unwinder runs. A racy read is fine:
 * a prefetch of a stale address never faults. */
void at_live_prefetch(uintptr_t id)
{
    uint64_t h;
    struct stripe *s = stripe_of(id, &h);
    struct at_live_block *slots = __atomic_load_n(&s->slots, __ATOMIC_RELAXED);
    size_t cap = __atomic_load_n(&s->cap, __ATOMIC_RELAXED);
    if (slots && cap)
        __builtin_prefetch(&slots[h & (cap - 1)], 1);
}

void at_live_add(const struct at_event *e, uint64_t index)
{
    struct site_key k = { e->frames, e->nframes, e->ctx, (uint16_t)e->fn, e->alignment };
    struct at_live_block b = { .id = e->id, .stack = intern(&k) };
    if (block_pack(&b, index, e->size, e->time_us) == 0)
        put_block(&b);
}

void at_live_restore(const struct at_live_block *b)
{
    put_block(b);
}

/* Linear probing with backward-shift deletion: no tombstones. */
int at_live_remove(uintptr_t id, struct at_live_block *out)
{
    uint64_t h;
    struct stripe *s = stripe_of(id, &h);
    int found = 0;
    pthread_mutex_lock(&s->lock);
    if (s->cap) {
        size_t mask = s->cap - 1, i = h & mask;
        for (; s->slots[i].id; i = (i + 1) & mask)
            if (s->slots[i].id == id) {
                found = 1;
                break;
            }
        if (found) {
            if (out)
                *out = s->slots[i];
            size_t hole = i;
            for (size_t j = (i + 1) & mask; s->slots[j].id; j = (j + 1) & mask) {
                size_t home = mix(s->slots[j].id) & mask;
                /* Move j into the hole unless its home lies in (hole, j]. */
                int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (!stays) {
                    s->slots[hole] = s->slots[j];
                    hole = j;
                }
            }
            s->slots[hole].id = 0;
            s->count--;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

static int by_index(const void *a, const void *b)
{
    uint64_t x = block_index(a), y = block_index(b);
    return x < y ? -1 : x > y;
}

void at_live_write(void)
{
    size_t total = 0;
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_lock(&stripes[i].lock);
        total += stripes[i].count;
    }
    struct at_live_block *all = total ? at_real.malloc(total * sizeof *all) : NULL;
    size_t n = 0, written = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < STRIPES; i++) {
        for (size_t k = 0; all && k < stripes[i].cap; k++)
            if (stripes[i].slots[k].id)
                all[n++] = stripes[i].slots[k];
        pthread_mutex_unlock(&stripes[i].lock);
    }
    qsort(all, n, sizeof *all, by_index);
    char buf[AT_HEAD_MAX + AT_FRAME_TEXT * AT_MAX_DEPTH + 2];
    for (size_t i = 0; i < n; i++) {
        const struct at_live_block *b = &all[i];
        const struct at_stack *st = b->stack;
        if (!st)
            continue;   /* interning failed (no memory): nothing to write */
        struct at_event e = {
            .fn = (enum at_fn)st->fn, .size = block_size(b), .id = b->id,
            .alignment = st->alignment, .ctx = st->ctx, .time_us = block_time(b),
            .frames = (void **)st->frames, .nframes = st->n,
        };
        at_commit_indexed(block_index(b), buf, at_format_body(buf, &e));
        bytes += e.size;
        written++;
    }
    at_real.free(all);
    char s[256], *p = s;
    const char l1[] = "# Resource - " AT_RES_MEMORY_NAME " (" AT_RES_MEMORY_DESC "):\n# ";
    memcpy(p, l1, sizeof l1 - 1);
    p += sizeof l1 - 1;
    p += at_fmt_dec(p, written);
    const char l2[] = " block(s) leaked with total size of ";
    memcpy(p, l2, sizeof l2 - 1);
    p += sizeof l2 - 1;
    p += at_fmt_dec(p, bytes);
    memcpy(p, " bytes\n", 7);
    p += 7;
    at_append_raw(s, (size_t)(p - s));
}

void at_live_fork_prepare(void)
{
    for (int i = 0; i < STACK_STRIPES; i++)
        pthread_mutex_lock(&stacks[i].lock);
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_lock(&stripes[i].lock);
}

void at_live_fork_parent(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_unlock(&stripes[i].lock);
    for (int i = 0; i < STACK_STRIPES; i++)
        pthread_mutex_unlock(&stacks[i].lock);
}

/* A child's file starts empty: the parent's blocks are the parent's. */
void at_live_fork_child(void)
{
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_init(&stripes[i].lock, NULL);
        if (stripes[i].slots)
            memset(stripes[i].slots, 0, stripes[i].cap * sizeof *stripes[i].slots);
        stripes[i].count = 0;
    }
    for (int i = 0; i < STACK_STRIPES; i++)
        pthread_mutex_init(&stacks[i].lock, NULL);
}
