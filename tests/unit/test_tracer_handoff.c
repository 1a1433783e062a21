/*
 * tests/unit/test_tracer_handoff.c: leaks mode's records applied off the
 * program's threads (preload/hook/handoff.c), alone, over a live set of the
 * test's own (the at_live_* functions below).
 *
 * The rules: whatever order the keeper drains the rings in, the blocks
 * left are those whose address's last event (by order key) is a tracked
 * allocation, with that allocation's key and size. Tested on every merge
 * of two rings, and on random runs of up to four rings where the keeper's
 * passes read each ring's tail at random moments between the program's
 * events (the only order the real keeper can see: a record is published
 * before its block is handed to another thread). Then the rings
 * themselves: two threads handing blocks to each other, the second
 * freeing what the first allocated, the first getting the same addresses
 * again (from an allocator of the test's own, a LIFO under a lock, so
 * that they do come back at once: ASan's quarantine would not give them
 * back), through the real rings and keeper thread.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tracer.h"

struct at_config at_cfg;
volatile int at_state = AT_STATE_ACTIVE;
__thread int at_guard AT_TLS;

/* ---- the live set: address -> (key, size), open addressing ------------- */

#define LIVE_SLOTS (1u << 16)
#define GONE ((uintptr_t)1)
static struct at_live_block live[LIVE_SLOTS];
static size_t live_count;
static int frames_bad;   /* an allocation whose frames did not arrive whole */

static size_t slot_of(uintptr_t id)
{
    return at_mix64(id) & (LIVE_SLOTS - 1);
}

static struct at_live_block *live_find(uintptr_t id)
{
    for (size_t i = slot_of(id);; i = (i + 1) & (LIVE_SLOTS - 1)) {
        if (live[i].id == id)
            return &live[i];
        if (live[i].id == 0)
            return NULL;
    }
}

static void live_put(uintptr_t id, uint64_t key, uint64_t size)
{
    assert_null(live_find(id));   /* the rules never keep two blocks at p */
    size_t i = slot_of(id);
    while (live[i].id != 0 && live[i].id != GONE)
        i = (i + 1) & (LIVE_SLOTS - 1);
    live[i] = (struct at_live_block){ .id = id, .packed = { key, size } };
    live_count++;
}

static void live_reset(void)
{
    memset(live, 0, sizeof live);
    live_count = 0;
    frames_bad = 0;
    /* Two pass ends: every note of the last run no longer counts. */
    at_handoff_end_pass();
    at_handoff_end_pass();
}

void at_live_add(const struct at_event *e, uint64_t key)
{
    for (int i = 0; i < e->nframes; i++)
        if ((uintptr_t)e->frames[i] != (e->id ^ (uintptr_t)i))
            frames_bad = 1;
    live_put(e->id, key, e->size);
}

int at_live_remove(uintptr_t id, struct at_live_block *out)
{
    struct at_live_block *b = live_find(id);
    if (!b)
        return 0;
    if (out)
        *out = *b;
    b->id = GONE;
    live_count--;
    return 1;
}

void at_live_restore(const struct at_live_block *b)
{
    live_put(b->id, b->packed[0], b->packed[1]);
}

uint64_t at_live_key(const struct at_live_block *b)
{
    return b->packed[0];
}

void at_maps_before_dlclose(void (*fn)(void))
{
    (void)fn;
}

void at_live_more_exclusions(void (*fn)(at_range_fn *add, void *ctx))
{
    (void)fn;
}

/* ---- runs of the program's events ---------------------------------------- */

#define MAX_EVENTS 32
#define ADDRS 3
struct ev {
    int ring;
    int release;
    int tracked;     /* an untracked allocation has no record */
    uintptr_t id;
    uint64_t key;    /* the true order */
    uint64_t size;
};

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* A run: each address alternates between allocated and free; some
 * allocations are untracked (made inside the tracer, or while tracing
 * was off), whose releases are releases of unknown blocks. */
static int make_run(struct ev *ev, int n, int rings)
{
    int allocated[ADDRS] = { 0 };
    for (int i = 0; i < n; i++) {
        int a = (int)rnd(ADDRS);
        ev[i] = (struct ev){
            .ring = (int)rnd((unsigned)rings), .release = allocated[a], .tracked = 1,
            .id = 0x1000 + (uintptr_t)a * 0x40, .key = (uint64_t)(i + 1) * 10,
            .size = (uint64_t)(i + 1),
        };
        if (!ev[i].release && rnd(8) == 0)
            ev[i].tracked = 0;
        allocated[a] = !allocated[a];
    }
    return n;
}

static void apply(const struct ev *e)
{
    if (!e->tracked)
        return;
    if (e->release) {
        at_handoff_apply_release(e->id, e->key);
    } else {
        struct at_event a = { .fn = AT_MALLOC, .id = e->id, .size = e->size };
        at_handoff_apply_alloc(&a, e->key);
    }
}

/* The live set is what the run leaves: per address, its last event. */
static void assert_truth(const struct ev *ev, int n, const char *what)
{
    size_t want = 0;
    for (int a = 0; a < ADDRS; a++) {
        uintptr_t id = 0x1000 + (uintptr_t)a * 0x40;
        const struct ev *last = NULL;
        for (int i = 0; i < n; i++)
            if (ev[i].id == id)
                last = &ev[i];
        struct at_live_block *b = live_find(id);
        if (last && !last->release && last->tracked) {
            want++;
            if (!b || b->packed[0] != last->key || b->packed[1] != last->size)
                fail_msg("%s: the block at %#lx allocated at %lu is not kept as it was", what,
                         (unsigned long)id, (unsigned long)last->key);
        } else if (b) {
            fail_msg("%s: a block at %#lx (key %lu) is kept, but that address is free", what,
                     (unsigned long)id, (unsigned long)b->packed[0]);
        }
    }
    assert_int_equal(live_count, want);
}

/* Every merge of two rings' records, each ring in its own order, with no
 * pass ending in between: the rules alone must make the order irrelevant. */
static void test_every_merge_of_two_rings_leaves_the_true_live_set(void **state)
{
    (void)state;
    for (int trial = 0; trial < 300; trial++) {
        struct ev ev[MAX_EVENTS];
        int n = make_run(ev, 4 + (int)rnd(9), 2);
        const struct ev *ring[2][MAX_EVENTS];
        int len[2] = { 0, 0 };
        for (int i = 0; i < n; i++)
            ring[ev[i].ring][len[ev[i].ring]++] = &ev[i];
        /* A merge: bit i set = the i-th record applied comes from ring 1. */
        for (unsigned m = 0; m < 1u << n; m++) {
            if (__builtin_popcount(m) != len[1])
                continue;
            live_reset();
            int at[2] = { 0, 0 };
            for (int i = 0; i < n; i++) {
                int r = (int)(m >> i & 1);
                apply(ring[r][at[r]++]);
            }
            assert_false(frames_bad);
            assert_truth(ev, n, "merge");
        }
    }
}

/* The keeper as it runs: a pass reads each ring's tail in turn, at any
 * moment between the program's events, and applies what is below it. */
static void keeper_run(const struct ev *ev, int n, int rings)
{
    int pos = 0, next_ring = 0, applied[4] = { 0 };
    const struct ev *ring[4][MAX_EVENTS];
    int len[4] = { 0 };
    for (;;) {
        int all_done = pos == n;
        for (int r = 0; r < rings; r++)
            all_done &= applied[r] == len[r];
        if (all_done)
            break;
        if (pos < n && rnd(3) != 0) {   /* the program's next event */
            ring[ev[pos].ring][len[ev[pos].ring]++] = &ev[pos];
            pos++;
            continue;
        }
        int r = next_ring, tail = len[r];
        while (applied[r] < tail)
            apply(ring[r][applied[r]++]);
        if (++next_ring == rings) {
            next_ring = 0;
            at_handoff_end_pass();
        }
    }
}

static void test_random_runs_of_up_to_four_rings_leave_the_true_live_set(void **state)
{
    (void)state;
    for (int trial = 0; trial < 100000; trial++) {
        struct ev ev[MAX_EVENTS];
        int rings = 2 + (int)rnd(3);
        int n = make_run(ev, 2 + (int)rnd(MAX_EVENTS - 1), rings);
        live_reset();
        keeper_run(ev, n, rings);
        assert_truth(ev, n, "keeper");
    }
}

/* The case that made releases leave notes: alloc (ring 0), free (ring 1),
 * alloc (ring 2), free (ring 0), and the keeper reading ring 0 before the
 * others catch up. Applying the last free to the first block, with no
 * note, left the second allocation alive. */
static void test_a_release_applied_before_the_allocation_it_ends_drops_it(void **state)
{
    (void)state;
    live_reset();
    struct at_event a1 = { .fn = AT_MALLOC, .id = 0x1000, .size = 1 };
    struct at_event a2 = { .fn = AT_MALLOC, .id = 0x1000, .size = 2 };
    at_handoff_apply_alloc(&a1, 10);        /* ring 0, an earlier pass */
    at_handoff_end_pass();
    at_handoff_apply_release(0x1000, 40);   /* ring 0: the last free */
    at_handoff_apply_release(0x1000, 20);   /* ring 1: the first free */
    at_handoff_apply_alloc(&a2, 30);        /* ring 2: the second allocation */
    at_handoff_end_pass();
    assert_null(live_find(0x1000));
    assert_int_equal(live_count, 0);
}

/* ---- the rings, with real threads and glibc's addresses ------------------ */

static uint64_t clock_key;   /* the true order: an atomic count */
#define POOL 96
static char pool_mem[POOL][64];
static void *pool_free_list[POOL];
static int pool_n = -1;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* The allocator orders everything done to one address, as glibc's does:
 * a block is handed out only after it came back. */
static void *pool_get(void)
{
    pthread_mutex_lock(&pool_lock);
    if (pool_n < 0)
        for (pool_n = 0; pool_n < POOL; pool_n++)
            pool_free_list[pool_n] = pool_mem[pool_n];
    void *p = pool_n ? pool_free_list[--pool_n] : NULL;
    pthread_mutex_unlock(&pool_lock);
    return p;
}

static void pool_put(void *p)
{
    pthread_mutex_lock(&pool_lock);
    pool_free_list[pool_n++] = p;
    pthread_mutex_unlock(&pool_lock);
}

static uint64_t key_now(void)
{
    return __atomic_add_fetch(&clock_key, 1, __ATOMIC_SEQ_CST);
}

#define ROUND 64
#define ROUNDS 400
static void *handed[ROUND];
static int handed_n;
static pthread_mutex_t hand_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hand_cv = PTHREAD_COND_INITIALIZER;
static int done_producing;

static void record_alloc(void *p, size_t size)
{
    void *frames[32];
    int n = (int)(size % 33);
    for (int i = 0; i < n; i++)
        frames[i] = (void *)((uintptr_t)p ^ (uintptr_t)i);
    struct at_event e = { .fn = AT_MALLOC, .id = (uintptr_t)p, .size = size, .frames = frames,
                          .nframes = n };
    at_handoff_alloc(&e, key_now());
}

/* The other thread: frees what it is handed, each release keyed before
 * the memory goes back to glibc. */
static void *freer(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&hand_lock);
        while (!handed_n && !done_producing)
            pthread_cond_wait(&hand_cv, &hand_lock);
        if (!handed_n && done_producing) {
            pthread_mutex_unlock(&hand_lock);
            return NULL;
        }
        void *p = handed[--handed_n];
        pthread_cond_broadcast(&hand_cv);
        pthread_mutex_unlock(&hand_lock);
        at_handoff_release((uintptr_t)p, key_now());
        pool_put(p);
    }
}

static void test_blocks_freed_by_another_thread_and_reused_leave_exactly_the_live_ones(void **state)
{
    (void)state;
    live_reset();
    assert_int_equal(at_handoff_start(), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, freer, NULL), 0);
    size_t reused = 0;
    void *kept[ROUND / 2];
    size_t kept_size[ROUND / 2];
    static void *seen[ROUND * 4];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < ROUND; i++) {
            size_t size = 1 + (size_t)(round * ROUND + i) % 1000;
            void *p = pool_get();
            assert_non_null(p);
            for (size_t s = 0; s < sizeof seen / sizeof *seen; s++)
                if (seen[s] == p) {
                    reused++;
                    break;
                }
            seen[(round * ROUND + i) % (sizeof seen / sizeof *seen)] = p;
            record_alloc(p, size);
            if (round == ROUNDS - 1 && i % 2) {   /* the last round keeps half */
                kept[i / 2] = p;
                kept_size[i / 2] = size;
                continue;
            }
            pthread_mutex_lock(&hand_lock);
            while (handed_n == ROUND)
                pthread_cond_wait(&hand_cv, &hand_lock);
            handed[handed_n++] = p;
            pthread_cond_broadcast(&hand_cv);
            pthread_mutex_unlock(&hand_lock);
        }
    }
    pthread_mutex_lock(&hand_lock);
    done_producing = 1;
    pthread_cond_broadcast(&hand_cv);
    pthread_mutex_unlock(&hand_lock);
    pthread_join(t, NULL);
    at_handoff_finish();
    assert_true(reused > ROUNDS * ROUND / 2);   /* the addresses did come back */
    assert_false(frames_bad);
    assert_int_equal(live_count, ROUND / 2);
    for (int i = 0; i < ROUND / 2; i++) {
        struct at_live_block *b = live_find((uintptr_t)kept[i]);
        assert_non_null(b);
        assert_int_equal(b->packed[1], kept_size[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_merge_of_two_rings_leaves_the_true_live_set),
        cmocka_unit_test(test_random_runs_of_up_to_four_rings_leave_the_true_live_set),
        cmocka_unit_test(test_a_release_applied_before_the_allocation_it_ends_drops_it),
        cmocka_unit_test(test_blocks_freed_by_another_thread_and_reused_leave_exactly_the_live_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
