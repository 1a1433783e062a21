/*
 * preload/hook/handoff.c: leaks mode's bookkeeping off the program's threads.
 *
 * Per event leaks mode used to intern the call site (sites.c) and keep
 * or drop the block (live.c, shadow.c) on the thread that allocated:
 * two or three dependent cache misses of the tracer's own per event
 * (docs/benchmarks.md, "Leaks mode's per-event cost against the
 * unwinding floor"). Here a thread only appends a record to a ring of its
 * own, and a thread of the tracer's, the keeper, applies the records to
 * the live blocks on the other core.
 *
 * Opt-in (ALLOCTRACE_KEEPER=1), not the default: on the 2-core machine
 * measured it did not pay (docs/benchmarks.md, "Leaks mode's records on
 * a keeper thread"). What it takes off the program's thread (interning
 * and the shadow store, 5-10% of the samples) comes back as the ring's
 * writes and a second rdtsc for each release, glibc's malloc leaves its
 * single-thread fast path once any second thread exists, and whenever
 * the other core is busy the keeper shares the program's CPU. Quiet,
 * 0.01-0.05 of heaptrack's overhead better on python3 and the
 * compilers, 0.02-0.08 worse on perl and bench/tracer's loops; loaded,
 * 0.05-0.11 worse on perl, jq and sqlite3 and more erratic; on one CPU
 * 15-20% slower.
 *
 * Rings. One single-producer single-consumer ring a thread, so the hot
 * path writes no cache line another thread writes: a record, then the
 * ring's tail (release store). Records: an allocation {meta (function,
 * frames, contexts), address, order key, size, alignment, frames[]}, a
 * release {meta, address, key}; realloc is a release and an allocation.
 * A record never wraps: a pad word sends the reader to the ring's start.
 * The tail is published at every record, not in batches: that is what
 * the reasoning below needs.
 *
 * Order without a merge. Every record carries its order key (clock.c, the
 * TSC): a release takes it before the memory goes back to libc, an
 * allocation after libc handed the block out, so for one address the
 * keys follow the true order of its events (the allocator orders them).
 * The keeper applies the rings in whatever order it drains them; per
 * address only the event with the highest key decides, as in a
 * last-writer-wins register:
 *   - allocation(p, k): when a release of p with a higher key was applied
 *     (see "recent releases") or the block kept at p has a higher key,
 *     the record is dropped: p was freed and given out again since. Else
 *     a block still at p is older (its release is in another ring, not yet
 *     applied) and is replaced.
 *   - release(p, k): a block at p with a higher key is newer: the release
 *     is stale and ignored. Else the block at p (if any) is removed and
 *     (p, k) noted as a recent release.
 * Recent releases. A release may be applied before an allocation it
 * follows: the allocation of p in thread A's ring, A hands p to B, B
 * frees it, and the keeper drains B's ring first. Or after a later
 * allocation and release of p were applied. The note (p, k) makes the
 * older allocation drop when it comes. How long a note must stay: the
 * allocation a release follows happened before it, in some thread that
 * published its ring's tail before returning p to the program; the
 * release's record was read with an acquire load of its ring's tail, so
 * every tail the keeper reads after that includes the allocation. A
 * pass reads every ring's tail once and applies what is below it; the
 * pass after the one that applied a release has applied everything that
 * happened before the release. So a note lives for the rest of its pass
 * and the next one (two tables, the older one emptied at each pass's
 * end). Draining all other rings when a release finds no block, and
 * nothing more, was the first design and not enough: with four events
 * on one address in three rings (alloc, free, alloc, free) the last
 * release could find the first block and remove it while the second
 * allocation, the one it really released, was still in flight; that
 * allocation then stayed as a false leak
 * (test_a_release_applied_before_the_allocation_it_ends_drops_it).
 *
 * What the rules meet (hooks.c):
 *   - realloc: its release key is taken before the real realloc and the
 *     release appended after it, only when it succeeded (or freed, with
 *     size 0): a failed realloc appends nothing, p stays the caller's.
 *     Another thread that gets p meanwhile has a higher key: its
 *     allocation wins whichever is applied first.
 *   - tracing switched off (at_enabled 0): allocations are not recorded,
 *     releases are; a release of an unknown block leaves only a note.
 *   - untraced allocations (at_guard: the tracer's own, a signal
 *     handler's inside the tracer, the loader's libunwind block) and the
 *     bootstrap arena (never given to libc, its free is not recorded):
 *     their releases are releases of unknown blocks, as before.
 *   - memalign, posix_memalign, aligned_alloc, valloc: allocations like
 *     any other; the alignment travels in the record.
 *   - keys of two threads can tie within the key's grain; two events on
 *     one address are further apart than that (the allocator's lock or
 *     the hand-over of the pointer lies between them: clock.c).
 *
 * While records come in, the keeper takes a pass every BUSY_US (see
 * keeper_main: batches, so that the ring's lines move between cores once
 * a batch and not once a record); after IDLE_PASSES empty passes it
 * sleeps on a futex (at most IDLE_MS), and a producer wakes it when its
 * ring has WAKE_BYTES more since its last wake. A full ring never drops a
 * record: the producer wakes the keeper and, if no one is applying
 * records, applies them itself (so a machine with one CPU, or a keeper
 * that gets no time, still progresses); else it waits for the one who
 * is. The producer that applies holds the consumer lock, as
 * the keeper does: only one thread applies at a time.
 *
 * Life cycle. A thread's ring is handed back at its exit (a pthread key)
 * and, once drained, to the next thread (short-lived threads reuse
 * rings). fork: the prepare handler takes the consumer lock (the keeper
 * between two records) before any other tracer lock, since the keeper
 * may be waiting for one of them; the parent gives it back. It does not
 * drain the rings first: the parent's keeper goes on with them, and the
 * child drops every ring's records anyway (its report starts empty:
 * live.c) and starts its own keeper when its first ring has WAKE_BYTES,
 * as writer.c starts its thread at a child's first record; until then,
 * or if it cannot, its threads apply their own rings when they fill.
 * dlclose: the records made so far are applied first (maps.c calls
 * apply_before_dlclose), while their frames' objects are still there to
 * get map lines. At
 * exit, quick_exit and from a signal that ends the process lifecycle.c
 * stops the keeper and applies what is left before the report is
 * collected; a signal that interrupted this thread while it was applying
 * (the live blocks half changed, their locks maybe held) cannot, and
 * says so in one line. When the keeper cannot be started at all, or the
 * TSC gives no order keys (a shared count would be a cache line shared
 * again), leaks mode keeps today's inline path (hooks.c).
 *
 * No deadlock: whoever applies records (the keeper, a producer whose
 * ring is full, exit, a signal handler, a dlclose) holds the consumer
 * lock and then takes only the locks the inline path takes (sites,
 * live blocks, maps, the loader's in dl_iterate_phdr, the writer's for
 * map lines); a producer appends holding none of them. A producer
 * waiting for room never waits for the keeper alone: when no one holds
 * the consumer lock it applies the records itself. (Running the keeper
 * at SCHED_IDLE was tried: a keeper starved while holding that lock made
 * python3 wait seconds.) The records apply from a signal handler without
 * malloc (sites.c's bucket arrays come from mmap).
 *
 * Everything here uses mmap and futexes, never the hooks; the keeper
 * blocks every signal and records nothing.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"

#define RING_BYTES (512u << 10)
#define RING_MASK ((uint64_t)RING_BYTES - 1)
#define WAKE_BYTES (RING_BYTES / 4)
#define MAX_RINGS 4096
#define IDLE_MS 20

enum { REC_PAD = 1, REC_ALLOC = 2, REC_RELEASE = 3 };
enum { RING_FREE, RING_OWNED, RING_RETIRED };
#define ALLOC_WORDS 5
#define RELEASE_WORDS 3

struct ring {
    /* The producer's line. */
    _Alignas(64) uint64_t tail;
    uint64_t head_seen;   /* the producer's last look at head */
    uint64_t wake_mark;   /* tail at the last wake */
    int shared;           /* ring 0: threads that found no ring of their own */
    /* The consumer's line. */
    _Alignas(64) uint64_t head;
    int state;
    uint64_t *data;
};

int at_handoff_on;
static struct ring rings[MAX_RINGS];
static unsigned nrings;            /* published with release stores */
static pthread_mutex_t rings_lock = PTHREAD_MUTEX_INITIALIZER;
static int shared_lock;            /* ring 0's producers */
static __thread struct ring *my_ring AT_TLS;
static pthread_key_t ring_key;

static int consumer;               /* the consumer lock: 1 while applying */
static __thread int holds_consumer AT_TLS;
static int stop_req;               /* the keeper is to stop applying */
static int keeper_asleep;          /* futex word */
enum { KEEPER_NONE, KEEPER_RUNS, KEEPER_TO_START };
static int keeper;                 /* KEEPER_* */
static int finished;               /* the report is made: records are no longer wanted */

static long futex(int *addr, int op, int val, const struct timespec *t)
{
    return syscall(SYS_futex, addr, op, val, t, NULL, 0);
}

/* ---- recent releases ----------------------------------------------------- */

/* Two tables: the notes of this pass and of the one before. At the end of
 * a pass the older one is emptied (only the slots it used) and becomes
 * the current one, so probing never wades through notes that no longer
 * count. */
struct note {
    uintptr_t id;   /* 0: empty */
    uint64_t key;
};
struct notes {
    struct note *slot;
    uint32_t *used;   /* the slots taken, to empty them */
    size_t cap, n;
};
static struct notes tabs[2];
static int cur_tab;

static int notes_grow(struct notes *t)
{
    size_t cap = t->cap ? t->cap * 2 : 4096;
    size_t bytes = cap * (sizeof(struct note) + sizeof(uint32_t));
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    struct notes g = { m, (uint32_t *)((struct note *)m + cap), cap, 0 };
    for (size_t i = 0; i < t->n; i++) {
        const struct note *o = &t->slot[t->used[i]];
        size_t j = at_mix64(o->id) & (cap - 1);
        while (g.slot[j].id)
            j = (j + 1) & (cap - 1);
        g.slot[j] = *o;
        g.used[g.n++] = (uint32_t)j;
    }
    if (t->slot)
        munmap(t->slot, t->cap * (sizeof(struct note) + sizeof(uint32_t)));
    *t = g;
    return 0;
}

static struct note *notes_find(const struct notes *t, uintptr_t id, size_t *empty)
{
    if (!t->n)
        return NULL;
    for (size_t i = at_mix64(id) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (t->slot[i].id == id)
            return &t->slot[i];
        if (!t->slot[i].id) {
            *empty = i;
            return NULL;
        }
    }
}

/* The highest key of a release of id noted in this pass or the one before. */
static int note_key(uintptr_t id, uint64_t *key)
{
    size_t e;
    const struct note *a = notes_find(&tabs[cur_tab], id, &e);
    const struct note *b = notes_find(&tabs[cur_tab ^ 1], id, &e);
    if (!a && !b)
        return 0;
    *key = a && b ? (a->key > b->key ? a->key : b->key) : a ? a->key : b->key;
    return 1;
}

static void note_release(uintptr_t id, uint64_t key)
{
    struct notes *t = &tabs[cur_tab];
    if ((t->n + 1) * 2 > t->cap && notes_grow(t) != 0)
        return;   /* no memory: the rare case it covers is not covered */
    size_t e = at_mix64(id) & (t->cap - 1);
    struct note *n = notes_find(t, id, &e);
    if (n) {
        if (key > n->key)
            n->key = key;
        return;
    }
    t->slot[e] = (struct note){ id, key };
    t->used[t->n++] = (uint32_t)e;
}

/* The notes of the pass before the one that just ended no longer count. */
static void notes_rotate(void)
{
    struct notes *old = &tabs[cur_tab ^ 1];
    for (size_t i = 0; i < old->n; i++)
        old->slot[old->used[i]].id = 0;
    old->n = 0;
    cur_tab ^= 1;
}

/* ---- the rules ------------------------------------------------------------ */

void at_handoff_apply_alloc(const struct at_event *e, uint64_t key)
{
    uint64_t rk;
    if (note_key(e->id, &rk) && rk > key)
        return;   /* freed since, maybe given out again */
    struct at_live_block old;
    if (at_live_remove(e->id, &old) && at_live_key(&old) > key) {
        at_live_restore(&old);   /* a newer block is at p */
        return;
    }
    at_live_add(e, key);
}

void at_handoff_apply_release(uintptr_t id, uint64_t key)
{
    struct at_live_block old;
    if (at_live_remove(id, &old) && at_live_key(&old) > key) {
        at_live_restore(&old);   /* stale: p was given out again since */
        return;
    }
    note_release(id, key);
}

void at_handoff_end_pass(void)
{
    notes_rotate();
}

/* ---- draining (the consumer lock held) ------------------------------------ */

/* Applies one record at r->data + (h & mask); returns its length. */
static size_t apply_one(const uint64_t *w, uint64_t h)
{
    uint64_t meta = w[0];
    switch (meta & 15) {
    case REC_PAD:
        return RING_BYTES - (h & RING_MASK);
    case REC_RELEASE:
        at_handoff_apply_release((uintptr_t)w[1], w[2]);
        return RELEASE_WORDS * 8;
    default: {
        int n = (int)(meta >> 8 & 0x3ff);
        struct at_event e = {
            .fn = (enum at_fn)(meta >> 4 & 15), .id = (uintptr_t)w[1], .size = w[3],
            .alignment = w[4], .ctx = (uint32_t)(meta >> 32), .frames = (void **)(w + 5),
            .nframes = n,
        };
        at_handoff_apply_alloc(&e, w[2]);
        return (size_t)(ALLOC_WORDS + n) * 8;
    }
    }
}

/* Applies r's records up to the tail read now; the keeper stops early
 * when asked to. Returns how many bytes it applied. */
static uint64_t drain_ring(struct ring *r, int keeper_thread)
{
    uint64_t t = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE), h = r->head, start = h;
    uint64_t shown = h;
    while (h != t) {
        h += apply_one(r->data + (h & RING_MASK) / 8, h);
        if (keeper_thread && __atomic_load_n(&stop_req, __ATOMIC_RELAXED))
            break;
        if (h - shown >= WAKE_BYTES / 4) {   /* room for a producer that waits */
            __atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
            shown = h;
        }
    }
    __atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
    if (h == t && __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == RING_RETIRED &&
        __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) == h)
        __atomic_store_n(&r->state, RING_FREE, __ATOMIC_RELEASE);
    return h - start;
}

/* One pass: every ring once. */
static uint64_t pass(int keeper_thread)
{
    uint64_t done = 0;
    unsigned n = __atomic_load_n(&nrings, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++) {
        if (keeper_thread && __atomic_load_n(&stop_req, __ATOMIC_RELAXED))
            return done;
        if (rings[i].data)
            done += drain_ring(&rings[i], keeper_thread);
    }
    at_handoff_end_pass();
    return done;
}

static int try_consume(void)
{
    if (__atomic_exchange_n(&consumer, 1, __ATOMIC_ACQUIRE))
        return 0;
    holds_consumer = 1;
    return 1;
}

static void end_consume(void)
{
    holds_consumer = 0;
    __atomic_store_n(&consumer, 0, __ATOMIC_RELEASE);
}

/* One pass on this thread, unless another thread (or this one, below in
 * its stack) is applying records; 1 when it took one. */
static int pass_here(void)
{
    if (holds_consumer || !try_consume())
        return 0;
    pass(0);
    end_consume();
    return 1;
}

static void pause_briefly(int round)
{
    if (round < 64) {
        __builtin_ia32_pause();
    } else if (round < 128) {
        sched_yield();
    } else {
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
    }
}

/* ---- the keeper ------------------------------------------------------------- */

static void wake_keeper(void)
{
    if (__atomic_load_n(&keeper_asleep, __ATOMIC_RELAXED) &&
        __atomic_exchange_n(&keeper_asleep, 0, __ATOMIC_RELAXED))
        futex(&keeper_asleep, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static void keeper_sleep(void)
{
    __atomic_store_n(&keeper_asleep, 1, __ATOMIC_SEQ_CST);
    struct timespec t = { 0, IDLE_MS * 1000000L };
    futex(&keeper_asleep, FUTEX_WAIT_PRIVATE, 1, &t);
    __atomic_store_n(&keeper_asleep, 0, __ATOMIC_RELAXED);
}

/*
 * While records come in the keeper takes a pass every BUSY_US: not right
 * behind the producer (it would read each line while it is still being
 * written, and every store of the producer's to that line would have to
 * take it back from this core), and not in a long sleep that a producer
 * must end with a system call. It sleeps rather than spins between
 * passes: on a machine whose other core is busy the keeper shares the
 * program's CPU, and a spinning keeper took half of it (tracer_work one:
 * 0.24 s instead of 0.12). After IDLE_PASSES empty passes it sleeps on
 * the futex until a producer's ring has WAKE_BYTES more, or IDLE_MS.
 */
#define BUSY_US 200
#define IDLE_PASSES 40

static void *keeper_stack;   /* the keeper's stack: not a root of the scan */
static size_t keeper_stack_len;

static void *keeper_main(void *arg)
{
    (void)arg;
    at_guard = 1;
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, &keeper_stack, &keeper_stack_len);
        pthread_attr_destroy(&a);
    }
    int idle = 0;
    for (;;) {
        uint64_t done = 0;
        if (!__atomic_load_n(&stop_req, __ATOMIC_ACQUIRE) && try_consume()) {
            done = pass(1);
            end_consume();
        }
        idle = done ? 0 : idle + 1;
        if (idle >= IDLE_PASSES || __atomic_load_n(&stop_req, __ATOMIC_RELAXED)) {
            keeper_sleep();
            idle = 0;
        } else {
            struct timespec ts = { 0, BUSY_US * 1000L };
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static int start_keeper(void)
{
    pthread_t t;
    return at_thread_start(keeper_main, "alloctrace-kp", &t) == 0 ? 0 : -1;
}

/* ---- rings of threads ---------------------------------------------------- */

/* At the thread's exit. Its records are applied here when no one else is
 * applying (a drain between two passes is safe: the notes it leaves live
 * through the next whole pass), so its ring is free for the next thread
 * at once; else the keeper frees it after its next pass, and threads
 * started meanwhile map rings of their own (short-lived threads: 0.08 of
 * heaptrack's overhead against 0.04). */
static void ring_retire(void *p)
{
    struct ring *r = p;
    if (r == my_ring)
        my_ring = NULL;
    __atomic_store_n(&r->state, RING_RETIRED, __ATOMIC_RELEASE);
    if (!holds_consumer && !__atomic_load_n(&stop_req, __ATOMIC_RELAXED) && try_consume()) {
        int saved = at_guard;
        at_guard = 1;
        drain_ring(r, 0);
        at_guard = saved;
        end_consume();
    }
}

static int ring_map(struct ring *r)
{
    void *m = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    r->data = m;
    return 0;
}

/* A ring for this thread: a free one, a new one, else the shared one. */
static __attribute__((noinline)) struct ring *ring_get(void)
{
    unsigned n = __atomic_load_n(&nrings, __ATOMIC_ACQUIRE);
    struct ring *r = NULL;
    for (unsigned i = 1; i < n && !r; i++) {
        int expected = RING_FREE;
        if (__atomic_compare_exchange_n(&rings[i].state, &expected, RING_OWNED, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            r = &rings[i];
    }
    if (!r) {
        pthread_mutex_lock(&rings_lock);
        n = nrings;
        if (n < MAX_RINGS && ring_map(&rings[n]) == 0) {
            r = &rings[n];
            r->state = RING_OWNED;
            __atomic_store_n(&nrings, n + 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&rings_lock);
    }
    if (!r)
        return &rings[0];
    /* The producer's view of a recycled ring. */
    r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    r->wake_mark = r->tail;
    my_ring = r;
    pthread_setspecific(ring_key, r);
    return r;
}

/* Waits until r has room for `need` bytes from its tail; 0 when the
 * tracer has finished meanwhile (the record is no longer wanted). */
static __attribute__((noinline)) int wait_room(struct ring *r, uint64_t need)
{
    for (int round = 0;; round++) {
        r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
        if (r->tail + need - r->head_seen <= RING_BYTES)
            return 1;
        if (at_state != AT_STATE_ACTIVE || __atomic_load_n(&finished, __ATOMIC_RELAXED))
            return 0;
        /* Unless the keeper is applying records right now, this thread
         * does: waiting for a keeper that has no CPU (the other core
         * busy, or one CPU) took milliseconds each time. */
        if (__atomic_load_n(&keeper, __ATOMIC_RELAXED) == KEEPER_RUNS)
            wake_keeper();
        if (!__atomic_load_n(&stop_req, __ATOMIC_RELAXED) && pass_here())
            continue;
        pause_briefly(round);
    }
}

/* Room for `len` bytes at the tail, after a pad when they would wrap. */
static inline uint64_t *reserve(struct ring *r, size_t len)
{
    uint64_t pos = r->tail & RING_MASK, pad = pos + len > RING_BYTES ? RING_BYTES - pos : 0;
    if (__builtin_expect(r->tail + pad + len - r->head_seen > RING_BYTES, 0) &&
        !wait_room(r, pad + len))
        return NULL;
    if (pad) {
        r->data[pos / 8] = REC_PAD;
        r->tail += pad;   /* published with the record */
        pos = 0;
    }
    return r->data + pos / 8;
}

static __attribute__((noinline)) void after_wake_mark(struct ring *r)
{
    r->wake_mark = r->tail;
    int k = __atomic_load_n(&keeper, __ATOMIC_RELAXED);
    if (k == KEEPER_RUNS) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);   /* the tail before the flag */
        wake_keeper();
    } else if (k == KEEPER_TO_START) {
        int expected = KEEPER_TO_START;
        if (__atomic_compare_exchange_n(&keeper, &expected, KEEPER_NONE, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED) &&
            start_keeper() == 0)
            __atomic_store_n(&keeper, KEEPER_RUNS, __ATOMIC_RELEASE);
    } else {
        pass_here();   /* no keeper: apply here */
    }
}

static inline void publish(struct ring *r, size_t len)
{
    uint64_t t = r->tail + len;
    __atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
    if (__builtin_expect(t - r->wake_mark >= WAKE_BYTES, 0))
        after_wake_mark(r);
}

static inline struct ring *ring_enter(void)
{
    struct ring *r = my_ring;
    if (__builtin_expect(!r, 0))
        r = ring_get();
    if (__builtin_expect(r->shared, 0))
        while (__atomic_exchange_n(&shared_lock, 1, __ATOMIC_ACQUIRE))
            __builtin_ia32_pause();
    return r;
}

static inline void ring_leave(struct ring *r)
{
    if (__builtin_expect(r->shared, 0))
        __atomic_store_n(&shared_lock, 0, __ATOMIC_RELEASE);
}

void at_handoff_alloc(const struct at_event *e, uint64_t key)
{
    struct ring *r = ring_enter();
    int n = e->nframes;
    size_t len = (size_t)(ALLOC_WORDS + n) * 8;
    uint64_t *w = reserve(r, len);
    if (w) {
        w[0] = REC_ALLOC | (uint64_t)e->fn << 4 | (uint64_t)n << 8 | (uint64_t)e->ctx << 32;
        w[1] = e->id;
        w[2] = key;
        w[3] = e->size;
        w[4] = e->alignment;
        __builtin_memcpy(w + ALLOC_WORDS, e->frames, (size_t)n * 8);
        publish(r, len);
    }
    ring_leave(r);
}

void at_handoff_release(uintptr_t id, uint64_t key)
{
    struct ring *r = ring_enter();
    uint64_t *w = reserve(r, RELEASE_WORDS * 8);
    if (w) {
        w[0] = REC_RELEASE;
        w[1] = id;
        w[2] = key;
        publish(r, RELEASE_WORDS * 8);
    }
    ring_leave(r);
}

/* ---- start, stop, fork ------------------------------------------------------ */

/* Memory of the tracer's that holds block addresses - the rings, the
 * notes, the keeper's stack - is no root for the scan at exit (reach.c):
 * a block whose address is only in a record would pass for reachable. */
static void exclusions(at_range_fn *add, void *ctx)
{
    unsigned n = __atomic_load_n(&nrings, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++)
        if (rings[i].data)
            add(ctx, rings[i].data, RING_BYTES);
    for (int t = 0; t < 2; t++)
        if (tabs[t].slot)
            add(ctx, tabs[t].slot, tabs[t].cap * (sizeof(struct note) + sizeof(uint32_t)));
    if (keeper_stack)
        add(ctx, keeper_stack, keeper_stack_len);
}

/* Before a dlclose (maps.c calls it): one pass applies every record made
 * so far, while the objects of their frames are still loaded and can get
 * their map lines. */
static void apply_before_dlclose(void)
{
    if (holds_consumer)
        return;
    for (int round = 0; !try_consume(); round++) {
        if (__atomic_load_n(&finished, __ATOMIC_RELAXED))
            return;
        pause_briefly(round);
    }
    pass(0);
    end_consume();
}

int at_handoff_start(void)
{
    if (pthread_key_create(&ring_key, ring_retire) != 0 || ring_map(&rings[0]) != 0)
        return -1;
    rings[0].shared = 1;
    rings[0].state = RING_OWNED;
    __atomic_store_n(&nrings, 1, __ATOMIC_RELEASE);
    if (start_keeper() != 0)
        return -1;
    at_maps_before_dlclose(apply_before_dlclose);
    at_live_more_exclusions(exclusions);
    keeper = KEEPER_RUNS;
    __atomic_store_n(&at_handoff_on, 1, __ATOMIC_RELEASE);
    return 0;
}

/* Stops the keeper and takes the consumer lock, waiting for it at most
 * `rounds` of pause_briefly (0: as long as it takes). */
static int stop_keeper(int rounds)
{
    __atomic_store_n(&stop_req, 1, __ATOMIC_RELEASE);
    for (int round = 0; !try_consume(); round++) {
        if (rounds && round > rounds)
            return -1;
        pause_briefly(round);
    }
    return 0;
}

/* Passes until one finds nothing, or at most 64: threads still running
 * at exit may append for ever. The consumer lock stays taken: nothing
 * is applied after the report. */
static void apply_all(void)
{
    for (int i = 0; i < 64 && pass(0); i++)
        ;
    __atomic_store_n(&finished, 1, __ATOMIC_RELEASE);
}

/* Stops the keeper and applies every record there is (lifecycle.c, before
 * the report). */
void at_handoff_finish(void)
{
    if (!at_handoff_on)
        return;
    stop_keeper(0);
    apply_all();
}

/* The same from a signal handler: waits a while for the keeper; when
 * this thread was itself applying records when the signal came, or the
 * keeper does not let go, returns why the report may miss blocks. */
const char *at_handoff_finish_signal(void)
{
    if (!at_handoff_on)
        return NULL;
    if (holds_consumer)
        return "a signal came while records were being applied";
    if (stop_keeper(128 + 20000) != 0)   /* about a second of 50 us sleeps */
        return "the thread applying the records did not stop";
    apply_all();
    return NULL;
}

void at_handoff_fork_prepare(void)
{
    if (at_handoff_on)
        stop_keeper(0);
}

void at_handoff_fork_parent(void)
{
    if (!at_handoff_on)
        return;
    end_consume();
    __atomic_store_n(&stop_req, 0, __ATOMIC_RELEASE);
}

/* The parent's records are the parent's: every ring is emptied, and all
 * but this thread's are free for the child's next threads. */
void at_handoff_fork_child(void)
{
    if (!at_handoff_on)
        return;
    unsigned n = nrings;
    for (unsigned i = 0; i < n; i++) {
        struct ring *r = &rings[i];
        r->head = r->head_seen = r->wake_mark = r->tail;
        if (i > 0)
            r->state = r == my_ring ? RING_OWNED : RING_FREE;
    }
    notes_rotate();
    notes_rotate();
    shared_lock = 0;
    keeper_asleep = 0;
    stop_req = 0;
    finished = 0;
    keeper = KEEPER_TO_START;   /* at the child's first wake mark */
    end_consume();
}
