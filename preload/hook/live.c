/*
 * preload/hook/live.c: leaks mode's live blocks, kept in memory from their
 * allocation to their release; at exit leakreport.c collects the ones
 * still alive (at_live_collect) and writes them. This file only keeps
 * blocks: it calls nothing above it (no writer, no scan).
 *
 * A block is its address, its interned call site (sites.c), and its order
 * key, size and time packed into 16 bytes. (The order comes from clock.c's
 * keys, which are TSC readings where the TSC is invariant: no index shared
 * between threads is drawn per event.) Blocks are kept by shadow.c, at a
 * place computed from the address; what it cannot keep (see there) comes
 * here, to 64 open-addressing hash tables chosen by the address's hash,
 * each behind its own lock, so two threads rarely meet. The tables are
 * slices of one region that grows as a whole (see grow_all).
 * Everything uses the real allocator or mmap, never the hooks.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "tracer.h"

#define STRIPES 64

struct stripe {
    pthread_mutex_t lock;
    struct at_live_block *slots;
    size_t cap, count;
} __attribute__((aligned(64)));

static struct stripe stripes[STRIPES];
/* Set once anything went to the hash table: until then a release that
 * shadow.c does not know is not looked up here at all. */
static int overflow_used;

int at_live_init(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i].lock, NULL);
    at_sites_init();
    return 0;
}

/* ---- live blocks --------------------------------------------------------- */

_Static_assert(sizeof(struct at_live_block) == 32, "two to a cache line");
#define INDEX_BITS 45
#define SIZE_LO_BITS (64 - INDEX_BITS)
#define DAY_US 86400000000ull   /* only the time of day is written */

/* The order key (clock.c): an event index, or a TSC reading whose high
 * bits take the time's place (its time is computed from it at exit). */
static inline uint64_t block_key(const struct at_live_block *b)
{
    uint64_t low = b->packed[0] & ((1ull << INDEX_BITS) - 1);
    return at_clock_tsc() ? low | (b->packed[1] >> 27) << INDEX_BITS : low;
}

static inline uint64_t block_size(const struct at_live_block *b)
{
    return (b->packed[0] >> INDEX_BITS) | (b->packed[1] & ((1ull << 27) - 1)) << SIZE_LO_BITS;
}

static inline uint64_t block_time(const struct at_live_block *b)
{
    return at_clock_tsc() ? at_order_key_us(block_key(b)) : b->packed[1] >> 27;
}

/* A size needs at most 46 bits (user space is 47 bits wide); an index
 * past 2^45 (35 trillion events) is not tracked. A TSC key has 82 bits. */
static inline int block_pack(struct at_live_block *b, uint64_t key, uint64_t size,
                             uint64_t time_us)
{
    int tsc = at_clock_tsc();
    uint64_t high = tsc ? key >> INDEX_BITS : time_us % DAY_US;
    if ((!tsc && key >> INDEX_BITS) || size >> 46)
        return -1;
    b->packed[0] = (key & ((1ull << INDEX_BITS) - 1)) | size << INDEX_BITS;
    b->packed[1] = (size >> SIZE_LO_BITS) | high << 27;
    return 0;
}

static inline struct stripe *stripe_of(uintptr_t id, uint64_t *h)
{
    *h = at_mix64(id);
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
                        insert_slot(s, &old[k], at_mix64(old[k].id));
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
    if (at_shadow_put(b) == 0)
        return;
    __atomic_store_n(&overflow_used, 1, __ATOMIC_RELAXED);
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

/* A block whose site could not be interned (no memory) is not kept: it
 * could not be written. */
void at_live_add(const struct at_event *e, uint64_t key)
{
    struct at_live_block b = { .id = e->id, .stack = at_site_intern(e) };
    if (b.stack && block_pack(&b, key, e->size, e->time_us) == 0)
        put_block(&b);
}

void at_live_restore(const struct at_live_block *b)
{
    put_block(b);
}

/* Linear probing with backward-shift deletion: no tombstones. */
static int overflow_remove(uintptr_t id, struct at_live_block *out)
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
                size_t home = at_mix64(s->slots[j].id) & mask;
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

int at_live_remove(uintptr_t id, struct at_live_block *out)
{
    if (at_shadow_take(id, out))
        return 1;
    return __atomic_load_n(&overflow_used, __ATOMIC_RELAXED) && overflow_remove(id, out);
}

uint64_t at_live_size(const struct at_live_block *b)
{
    return block_size(b);
}

uint64_t at_live_key(const struct at_live_block *b)
{
    return block_key(b);
}

uint64_t at_live_time_us(const struct at_live_block *b)
{
    return block_time(b);
}

/* The ranges of a layer above that holds block addresses too (handoff.c's
 * rings), handed down at its start. */
static void (*more_exclusions)(at_range_fn *add, void *ctx);

void at_live_more_exclusions(void (*fn)(at_range_fn *add, void *ctx))
{
    more_exclusions = fn;
}

void at_live_exclusions(at_range_fn *add, void *ctx)
{
    add(ctx, region, region_len);
    at_shadow_exclusions(add, ctx);
    if (more_exclusions)
        more_exclusions(add, ctx);
}

/* A stripe's lock; from a signal handler only tried for a while (the
 * interrupted code may hold it): a stripe not got is left out. */
static int lock_stripe(struct stripe *s, int emergency)
{
    if (!emergency)
        return pthread_mutex_lock(&s->lock) == 0;
    for (int i = 0; i < 100000; i++) {
        if (pthread_mutex_trylock(&s->lock) == 0)
            return 1;
        __builtin_ia32_pause();
    }
    return 0;
}

/* Room for blocks in the first try: reserved, not touched (MAP_NORESERVE),
 * so a shadow holding fewer is read once, not counted first. */
#define FIRST_ROOM (1ul << 20)

/* Past its first 2 MiB the room asks for transparent huge pages: a
 * million blocks fill 32 MB of it, ~7,900 page faults of 4 KiB (24 ms of
 * the exit on perlhash) against 16 of 2 MiB, while a small program's few
 * blocks still touch only a 4 KiB page or two. */
#define ROOM_SMALL (2ul << 20)

static struct at_live_block *map_room(size_t blocks, size_t *len)
{
    *len = blocks * sizeof(struct at_live_block);
    char *m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (*len > 2 * ROOM_SMALL)
        madvise(m + ROOM_SMALL, *len - ROOM_SMALL, MADV_HUGEPAGE);
    return (struct at_live_block *)m;
}

/* Every live block, from shadow.c and from the hash tables. The
 * tables stay locked while copied; the shadow is read as it is (see
 * shadow.c on threads still running). When it holds more blocks than
 * the room (FIRST_ROOM, then what it said it held and some more, for
 * blocks allocated meanwhile), the copy is made again, into more room.
 * Cutting it to the room instead would drop the blocks read last,
 * whichever they are (leaves are read in directory order), not the ones
 * just allocated: a block allocated long before exit went missing. The
 * room left over is given back. */
struct at_live_block *at_live_collect(size_t *n, size_t *map_len, int emergency)
{
    size_t in_tables = 0;
    int locked[STRIPES];
    for (int i = 0; i < STRIPES; i++) {
        locked[i] = lock_stripe(&stripes[i], emergency);
        in_tables += locked[i] ? stripes[i].count : 0;
    }
    struct at_live_block *all = NULL;
    *n = 0;
    for (size_t room = FIRST_ROOM;;) {
        all = map_room(room + in_tables, map_len);
        if (!all && room == FIRST_ROOM) {   /* no such reservation: count first */
            room = at_shadow_collect(NULL, 0) + 64;
            all = map_room(room + in_tables, map_len);
        }
        if (!all)
            break;
        size_t seen = at_shadow_collect(all, room);
        if (seen <= room) {
            *n = seen;
            break;
        }
        munmap(all, *map_len);
        all = NULL;
        room = seen + seen / 8 + 64;
    }
    for (int i = 0; i < STRIPES; i++) {
        if (!locked[i])
            continue;
        for (size_t k = 0; all && k < stripes[i].cap; k++)
            if (stripes[i].slots[k].id)
                all[(*n)++] = stripes[i].slots[k];
        pthread_mutex_unlock(&stripes[i].lock);
    }
    size_t used = (*n * sizeof *all + 4095) & ~(size_t)4095;
    if (all && used < *map_len)
        munmap((char *)all + used, *map_len - used);
    if (all && !used)
        all = NULL;
    *map_len = all ? used : 0;
    return all;
}

/* At exit, after at_live_collect: the shadow's memory given back (see
 * at_shadow_drop). The hash tables are small and stay. */
void at_live_drop(void)
{
    at_shadow_drop();
}

void at_live_fork_prepare(void)
{
    at_sites_fork_prepare();
    at_shadow_fork_prepare();
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_lock(&stripes[i].lock);
}

void at_live_fork_parent(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_unlock(&stripes[i].lock);
    at_shadow_fork_parent();
    at_sites_fork_parent();
}

/* A child's file starts empty: the parent's blocks are the parent's. */
/* The child keeps the blocks it inherits: they are alive in its memory
 * and its own to free or leak (valgrind reports them in the child too);
 * the post-processor keeps the parent from reporting them as well
 * (postproc/read/tree.c). */
void at_live_fork_child(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i].lock, NULL);
    at_shadow_fork_child();
    at_sites_fork_child();
}
