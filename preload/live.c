/*
 * preload/live.c: leaks mode. The live blocks are kept in memory and only
 * those still alive at exit are written, in index order, with the leak
 * summary of TEXT_FORMAT.md section 8.
 *
 * Blocks live in 64 open-addressing hash tables, chosen by the address's
 * hash, each behind its own lock, so two threads rarely meet. Backtraces
 * are interned (one copy per distinct stack, in 16 locked tables with
 * bump-allocated nodes that are never freed): a test suite allocates from
 * few call sites many times, so this is what keeps leaks mode small.
 * Everything uses the real allocator or mmap, never the hooks.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tracer.h"

struct at_stack {
    struct at_stack *next;
    uint64_t hash;
    uint32_t n;
    void *frames[];
};

#define STRIPES 64
#define STACK_STRIPES 16
#define CHUNK (1u << 20)

struct stripe {
    pthread_mutex_t lock;
    struct at_live_block *slots;
    size_t cap, count;
} __attribute__((aligned(64)));

struct stack_stripe {
    pthread_mutex_t lock;
    struct at_stack **buckets;
    size_t nbuckets, count;
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

static int grow_buckets(struct stack_stripe *s)
{
    size_t n = s->nbuckets ? s->nbuckets * 2 : 1024;
    struct at_stack **b = at_real.calloc(n, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < s->nbuckets; i++)
        for (struct at_stack *e = s->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    at_real.free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
    return 0;
}

static const struct at_stack *intern(void *const *frames, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++)
        h = mix(h ^ (uintptr_t)frames[i]);
    struct stack_stripe *s = &stacks[h >> 60];
    size_t bytes = (size_t)n * sizeof(void *);
    const struct at_stack *found = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->nbuckets || grow_buckets(s) == 0) {
        for (struct at_stack *e = s->buckets[h & (s->nbuckets - 1)]; e; e = e->next)
            if (e->hash == h && e->n == (uint32_t)n && memcmp(e->frames, frames, bytes) == 0) {
                found = e;
                break;
            }
        if (!found) {
            if (s->count >= s->nbuckets)
                grow_buckets(s);
            struct at_stack *e = bump(s, sizeof *e + bytes);
            if (e) {
                e->hash = h;
                e->n = (uint32_t)n;
                memcpy(e->frames, frames, bytes);
                e->next = s->buckets[h & (s->nbuckets - 1)];
                s->buckets[h & (s->nbuckets - 1)] = e;
                s->count++;
                found = e;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

/* ---- live blocks --------------------------------------------------------- */

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

static int grow_slots(struct stripe *s)
{
    size_t old_cap = s->cap;
    struct at_live_block *old = s->slots;
    size_t cap = old_cap ? old_cap * 2 : 1024;
    struct at_live_block *slots = at_real.calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    s->slots = slots;
    s->cap = cap;
    s->count = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].id)
            insert_slot(s, &old[i], mix(old[i].id));
    at_real.free(old);
    return 0;
}

static void put_block(const struct at_live_block *b)
{
    uint64_t h;
    struct stripe *s = stripe_of(b->id, &h);
    pthread_mutex_lock(&s->lock);
    if ((s->count + 1) * 4 <= s->cap * 3 || grow_slots(s) == 0)
        insert_slot(s, b, h);
    pthread_mutex_unlock(&s->lock);
}

void at_live_add(const struct at_event *e, uint64_t index)
{
    struct at_live_block b = {
        .id = e->id, .index = index, .size = e->size, .alignment = e->alignment,
        .time_us = e->time_us, .stack = intern(e->frames, e->nframes), .ctx = e->ctx,
        .fn = (uint32_t)e->fn,
    };
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
    const struct at_live_block *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

void at_live_write(void)
{
    size_t total = 0;
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_lock(&stripes[i].lock);
        total += stripes[i].count;
    }
    struct at_live_block *all = total ? at_real.malloc(total * sizeof *all) : NULL;
    size_t n = 0;
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
        struct at_event e = {
            .fn = (enum at_fn)b->fn, .size = b->size, .id = b->id, .alignment = b->alignment,
            .ctx = b->ctx, .time_us = b->time_us,
            .frames = b->stack ? (void **)b->stack->frames : NULL,
            .nframes = b->stack ? (int)b->stack->n : 0,
        };
        at_commit_indexed(b->index, buf, at_format_body(buf, &e));
        bytes += b->size;
    }
    at_real.free(all);
    char s[256], *p = s;
    const char l1[] = "# Resource - " AT_RES_MEMORY_NAME " (" AT_RES_MEMORY_DESC "):\n# ";
    memcpy(p, l1, sizeof l1 - 1);
    p += sizeof l1 - 1;
    p += at_fmt_dec(p, n);
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
