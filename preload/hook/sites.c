/*
 * preload/hook/sites.c: leaks mode's interned call sites. Everything a block
 * shares with the other calls from the same place - frames, function,
 * contexts, alignment - is kept once, in a `struct at_stack`, and a live
 * block points to it: a test suite allocates from few call sites many
 * times, so this is what keeps leaks mode small.
 *
 * Sites live in 16 hash tables (chosen by the hash) with bump-allocated
 * nodes that are never freed. Threads allocating from the same call site
 * hit the same site, so a lookup takes no lock: nodes are published with
 * release stores and old bucket arrays are kept, so a reader that races
 * with a rehash can only miss, and a miss is re-checked under the lock.
 * Memory comes from mmap and the real allocator, never the hooks.
 *
 * Before the tables, each thread looks in a small direct-mapped cache of
 * its own, keyed by a cheap hash of the event (frames rotated by depth
 * and XORed): the shared bucket array is one more cache miss. The same
 * hash places a site in the shared tables (a chain of one multiply per
 * frame, ~40 ns on a 32-frame stack, did until 2026-11: the compilers
 * miss the cache on 40-47% of their allocations, their ~38k sites in 512
 * entries, and paid it on each). A hit is still compared in full
 * (frames, function, contexts, alignment), so two sites whose cheap
 * hashes meet only evict each other. (A key of five sampled frames was
 * tried first: the sites of one library share their innermost and
 * outermost frames, so on sqlite3 most of them met in a few slots.)
 *
 * A thread that misses its cache BIG_AFTER times - a compiler, whose
 * ~38k sites missed 512 entries on 40-47% of its allocations - moves to a
 * cache of 16384 entries in a mapping of its own (untouched entries cost
 * no memory), given back at the thread's exit through a pthread key.
 *
 * On the compilers a hit is memory latency, not work: the cache entry
 * and then the site's node (~300 bytes for 32 frames, ~11 MB for cc1plus's
 * 38k sites) are two dependent cache misses, and the compare reads the
 * node's other lines; hashing is ~10% of the time. 8-byte entries,
 * two-entry sets, prefetching the node and huge pages for the nodes were
 * each measured and bought nothing (docs/benchmarks.md, h13deep).
 *
 * The cache also spares the maps check (maps.c: is every frame in an
 * object whose map line is written?), a binary search per frame that cost
 * 4-8 ns an event. A thread checks a site's frames when it puts the site
 * in its cache, and notes at_maps_epoch() from before the check; a hit
 * counts only while the epoch is the same. Same frames, same objects: only
 * a change of the known ranges (a new object, a dlclose) can make a
 * checked frame unknown, and that moves the epoch.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tracer.h"

#define STACK_STRIPES 16
#define CHUNK (1u << 20)

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

static struct stack_stripe stacks[STACK_STRIPES];

struct site_key {
    void *const *frames;
    int n;
    uint32_t ctx;
    uint16_t fn;
    uint64_t alignment;
};

#define CACHE_SLOTS 512       /* 8 KiB of static TLS a thread */
#define BIG_SLOTS 16384       /* 256 KiB, mapped for a thread with many sites */
#define BIG_AFTER 1024        /* misses before a thread gets the big cache */
struct cache_entry {
    uint32_t key;     /* the cache key's high half (its low bits chose the slot) */
    uint32_t epoch;   /* at_maps_epoch() before the frames were checked */
    const struct at_stack *site;
};
static __thread struct cache_entry site_cache[CACHE_SLOTS] AT_TLS;
static __thread struct cache_entry *big_cache AT_TLS;
static __thread unsigned cache_misses AT_TLS;
static pthread_key_t big_key;
static int big_key_ok;

#define BIG_BYTES (BIG_SLOTS * sizeof(struct cache_entry))

/* At the exit of a thread that had the big cache. */
static void big_release(void *p)
{
    big_cache = NULL;
    munmap(p, BIG_BYTES);
}

void at_sites_init(void)
{
    for (int i = 0; i < STACK_STRIPES; i++)
        pthread_mutex_init(&stacks[i].lock, NULL);
    big_key_ok = pthread_key_create(&big_key, big_release) == 0;
}

/* A thread that keeps missing (a compiler's tens of thousands of sites)
 * moves to a cache 32 times larger, in memory of its own that only the
 * entries used touch; it goes at the thread's exit. Without memory, or
 * without the key to free it, the thread stays on the small one. */
static __attribute__((noinline)) void grow_cache(void)
{
    if (!big_key_ok || big_cache)
        return;
    void *m = mmap(NULL, BIG_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return;
    if (pthread_setspecific(big_key, m) != 0) {
        munmap(m, BIG_BYTES);
        return;
    }
    big_cache = m;
}

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
 * may still be walking it. mmap, not the real allocator: leaks mode's
 * records may be applied from a signal handler (handoff.c), which may
 * have interrupted libc's malloc on its thread. */
static int grow_buckets(struct stack_stripe *s)
{
    struct buckets *old = s->table;
    size_t n = old ? old->n * 2 : 1024;
    void *m = mmap(NULL, sizeof(struct buckets) + n * sizeof(struct at_stack *),
                   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    struct buckets *b = m;
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

static inline int same_site_frames(const struct at_stack *e, const struct site_key *k)
{
    return e->n == (uint16_t)k->n && e->ctx == k->ctx && e->fn == k->fn &&
           e->alignment == k->alignment &&
           memcmp(e->frames, k->frames, (size_t)k->n * sizeof(void *)) == 0;
}

static int same_site(const struct at_stack *e, uint64_t h, const struct site_key *k)
{
    return e->hash == h && same_site_frames(e, k);
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

/* Under the stripe lock: a new node for a site not seen before. */
static const struct at_stack *add_site(struct stack_stripe *s, uint64_t h, const struct site_key *k)
{
    if (!s->table && grow_buckets(s) != 0)
        return NULL;
    if (s->count >= s->table->n)
        grow_buckets(s);
    size_t bytes = (size_t)k->n * sizeof(void *);
    struct at_stack *e = bump(s, sizeof *e + bytes);
    if (!e)
        return NULL;
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
    return e;
}

/* The hash of a site, the cache's key and the shared tables' alike:
 * every frame rotated by its depth and XORed, then mixed once. Unlike a
 * chain of multiplies the rotations are independent, so the CPU does them
 * side by side. */
static inline uint64_t cache_key(const struct site_key *k)
{
    uint64_t h = (uint64_t)k->n | (uint64_t)k->fn << 8 | (uint64_t)k->ctx << 32;
    for (int i = 0; i < k->n; i++) {
        uint64_t f = (uintptr_t)k->frames[i];
        unsigned r = (unsigned)(i * 11) & 63;
        h ^= r ? f << r | f >> (64 - r) : f;
    }
    return at_mix64(h ^ k->alignment);
}

/* The shared tables: lock-free lookup, a miss re-checked under the lock.
 * `h` is the cache's key: the same hash serves both. */
static const struct at_stack *intern_shared(const struct site_key *k, uint64_t h)
{
    struct stack_stripe *s = &stacks[h >> 60];
    const struct at_stack *found = lookup(__atomic_load_n(&s->table, __ATOMIC_ACQUIRE), h, k);
    if (found)
        return found;
    pthread_mutex_lock(&s->lock);
    found = lookup(s->table, h, k);
    if (!found)
        found = add_site(s, h, k);
    pthread_mutex_unlock(&s->lock);
    return found;
}

const struct at_stack *at_site_intern(const struct at_event *ev)
{
    struct site_key k = { ev->frames, ev->nframes, ev->ctx, (uint16_t)ev->fn, ev->alignment };
    uint64_t ck = cache_key(&k);
    unsigned epoch = at_maps_epoch();
    struct cache_entry *big = big_cache;
    struct cache_entry *c = big ? &big[ck & (BIG_SLOTS - 1)] : &site_cache[ck & (CACHE_SLOTS - 1)];
    if (c->key == (uint32_t)(ck >> 32) && c->epoch == epoch && c->site &&
        same_site_frames(c->site, &k))
        return c->site;
    if (!big && ++cache_misses == BIG_AFTER) {
        grow_cache();
        if (big_cache)
            c = &big_cache[ck & (BIG_SLOTS - 1)];
    }
    at_maps_check(ev->frames, ev->nframes);
    const struct at_stack *found = intern_shared(&k, ck);
    if (found) {
        c->key = (uint32_t)(ck >> 32);
        c->epoch = epoch;
        c->site = found;
    }
    return found;
}

void at_sites_fork_prepare(void)
{
    for (int i = 0; i < STACK_STRIPES; i++)
        pthread_mutex_lock(&stacks[i].lock);
}

void at_sites_fork_parent(void)
{
    for (int i = 0; i < STACK_STRIPES; i++)
        pthread_mutex_unlock(&stacks[i].lock);
}

/* The sites stay valid in the child (its blocks can use them too). */
void at_sites_fork_child(void)
{
    for (int i = 0; i < STACK_STRIPES; i++)
        pthread_mutex_init(&stacks[i].lock, NULL);
}
