/*
 * preload/hook/sample.c: sampling by bytes (ALLOCTRACE_SAMPLE), as the
 * production heap profilers do it (jemalloc's prof.lg_sample, tcmalloc,
 * Go's MemProfileRate, heapprofd).
 *
 * Decisions:
 * - Poisson sampling: every allocated byte is picked with probability
 *   1/I (I the interval), so a block of s bytes is recorded with
 *   probability 1 - exp(-s/I). Each thread counts down the bytes left to
 *   its next picked byte, a distance drawn from the exponential
 *   distribution of mean I; by its memorylessness a call of s bytes is
 *   picked when the countdown runs out within it, and a fresh distance is
 *   drawn after each pick. The post-processor weights each sampled block
 *   by 1 / (1 - exp(-s/I)) (postproc/sampling.c).
 * - The hot path of a call that is not picked is at_sample_skip(),
 *   inlined into the hooks: a subtraction on a thread-local counter and a
 *   branch. No unwind, no record, no lock. A thread's first call finds the
 *   counter at 0 and takes the slow path, which seeds the thread.
 * - Releases: only those of picked blocks are recorded. Picked blocks'
 *   addresses are kept in a small open-addressing hash set (under a
 *   spinlock held for a few instructions: a picked block is rare), and in
 *   front of it a bitmap, one bit per bucket of addresses: a free() whose
 *   bit is clear - nearly every one - is known not to be picked after one
 *   load, whatever the number of live blocks (the bitmap is 8 KiB: see
 *   at_sample_bits). Over glibc's allocator the picked blocks carry a
 *   header instead, and free() reads the word below the block (tag.c);
 *   the bitmap then only spares the set's lock on the slow path. The
 *   set holds about live bytes / I addresses, so it stays small.
 * - Randomness: xorshift64* per thread, seeded from
 *   ALLOCTRACE_SAMPLE_SEED (tests fix it) or the clock and the address of
 *   the thread's state, mixed with a count of threads. A forked child
 *   draws a new seed, so parent and child do not pick the same calls.
 * - The set's lock is held across fork (prepare/parent/child handlers of
 *   its own) and never taken by a thread already inside the tracer
 *   (at_guard), so a signal handler cannot wait on a lock its own thread
 *   holds: a release then is not looked up (one stale address at most).
 */
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "tracer.h"

int at_sampling;
__thread uint64_t at_sample_left AT_TLS;
static __thread uint64_t rng AT_TLS;   /* 0: this thread is not seeded yet */
static atomic_uint_fast64_t threads;

/* ---- the countdown -------------------------------------------------------- */

static uint64_t next_random(void)
{
    uint64_t x = rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* A distance to the next picked byte: exponential, of mean the interval;
 * at least 1. */
static int64_t draw(void)
{
    double u = ((double)(next_random() >> 11) + 1.0) * 0x1.0p-53;   /* (0, 1] */
    double d = -log(u) * (double)at_cfg.sample;
    if (d < 1.0)
        return 1;
    if (d > 4e18)
        return (int64_t)4e18;
    return (int64_t)d;
}

static void seed_thread(void)
{
    uint64_t s = at_cfg.sample_seed_set ? at_cfg.sample_seed : 0;
    if (!at_cfg.sample_seed_set) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)&rng;
    }
    s = at_mix64(s + 0x9e3779b97f4a7c15ull * (atomic_fetch_add(&threads, 1) + 1));
    rng = s ? s : 1;
}

static void (*on_threads)(void);

void at_sample_on_threads(void (*fn)(void))
{
    __atomic_store_n(&on_threads, fn, __ATOMIC_RELEASE);
}

int at_sample_pick_slow(uint64_t n)
{
    void (*fn)(void) = __atomic_load_n(&on_threads, __ATOMIC_ACQUIRE);
    if (fn && !at_guard)
        fn();
    if (__builtin_expect(!rng, 0)) {
        /* The thread's first call: its countdown starts now. */
        seed_thread();
        uint64_t left = (uint64_t)draw();
        if (n < left) {
            at_sample_left = left - n;
            return 0;
        }
    }
    at_sample_left = (uint64_t)draw();
    return 1;
}

/* ---- the picked blocks -------------------------------------------------------- */

/* The filter: 65536 bits (8 KiB), read by every free() with sampling
 * on, and behind them a count per bucket (128 KiB, touched only when a
 * block is picked or its release found, under the set's lock, which also
 * orders each bit's changes). The bits were 16-bit counters read
 * directly once: 32 KiB, the whole first-level cache, and perf on perl
 * and sqlite3 showed the load missing on most free()s (free() 2-3% of
 * the run). With L live picked blocks spread over the heap, a free()
 * that was not picked finds its bit set (and takes the lock to look)
 * with probability about L / 65536: 0.25% for 160 blocks, 80 MiB live at
 * 512k. A count would overflow only with 65536 picked blocks in one
 * bucket (four billion live ones, spread evenly); it wraps then, and a
 * picked block's release can go unrecorded: an estimate off, nothing
 * worse. */
_Atomic uint64_t at_sample_bits[(1u << AT_SAMPLE_FILTER_BITS) / 64];
static uint16_t bucket_count[1u << AT_SAMPLE_FILTER_BITS];

/* Under the lock: one more (d = 1) or one fewer (d = -1) picked block in
 * p's bucket; its bit follows whether the count is 0. */
static void count_bucket(uintptr_t p, int d)
{
    size_t b = at_sample_bucket(p);
    uint16_t was = bucket_count[b];
    bucket_count[b] = (uint16_t)(was + d);
    uint64_t bit = 1ull << (b & 63);
    if (d > 0 && was == 0)
        atomic_fetch_or_explicit(&at_sample_bits[b >> 6], bit, memory_order_relaxed);
    else if (d < 0 && was == 1)
        atomic_fetch_and_explicit(&at_sample_bits[b >> 6], ~bit, memory_order_relaxed);
}

static atomic_flag lock = ATOMIC_FLAG_INIT;
static uintptr_t *set;          /* 0: empty slot */
static size_t set_cap, set_n;   /* set_cap a power of two, 0 before the first block */

/* Held for a few instructions; but with more threads than cores the
 * holder can lose its core with the lock held, and a waiter spinning on
 * then spins out its whole time slice: after a short spin it yields. */
static void lock_set(void)
{
    for (int spins = 0; atomic_flag_test_and_set_explicit(&lock, memory_order_acquire); spins++) {
        if (spins < 64)
            __builtin_ia32_pause();
        else
            sched_yield();
    }
}

static void unlock_set(void) { atomic_flag_clear_explicit(&lock, memory_order_release); }

static size_t home(uintptr_t p, size_t cap) { return at_mix64(p) & (cap - 1); }

static uintptr_t *slot(uintptr_t *tab, size_t cap, uintptr_t p)
{
    for (size_t i = home(p, cap);; i = (i + 1) & (cap - 1))
        if (!tab[i] || tab[i] == p)
            return &tab[i];
}

/* Doubles the set (mmap: no malloc inside the hooks); 0, or -1 when out
 * of memory. */
static int grow(void)
{
    size_t cap = set_cap ? set_cap * 2 : 4096;
    uintptr_t *tab = mmap(NULL, cap * sizeof *tab, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tab == MAP_FAILED)
        return -1;
    for (size_t i = 0; i < set_cap; i++)
        if (set[i])
            *slot(tab, cap, set[i]) = set[i];
    if (set)
        munmap(set, set_cap * sizeof *set);
    set = tab;
    set_cap = cap;
    return 0;
}

int at_sample_add(uintptr_t p)
{
    int ok = 0;
    lock_set();
    if ((set_n + 1) * 2 > set_cap && grow() < 0) {
        ok = -1;
    } else {
        uintptr_t *s = slot(set, set_cap, p);
        if (!*s) {
            *s = p;
            set_n++;
            count_bucket(p, 1);
        }
    }
    unlock_set();
    if (ok < 0) {
        static atomic_int warned;
        if (!atomic_exchange(&warned, 1))
            at_warn("out of memory for sampled blocks: ",
                    "some releases of sampled blocks will not be recorded", "");
    }
    return ok;
}

/* Linear probing's deletion: later entries of the run move back into the
 * hole when their home allows it, so no tombstones pile up. */
static void remove_at(size_t hole)
{
    size_t mask = set_cap - 1;
    for (size_t i = (hole + 1) & mask; set[i]; i = (i + 1) & mask) {
        size_t h = home(set[i], set_cap);
        if (hole <= i ? (h <= hole || h > i) : (h <= hole && h > i)) {
            set[hole] = set[i];
            hole = i;
        }
    }
    set[hole] = 0;
    set_n--;
}

int at_sample_take_slow(uintptr_t p)
{
    int saved = at_guard, found = 0;
    at_guard = 1;   /* a signal handler's free() meanwhile does not lock */
    lock_set();
    if (set_cap) {
        uintptr_t *s = slot(set, set_cap, p);
        if (*s) {
            remove_at((size_t)(s - set));
            count_bucket(p, -1);
            found = 1;
        }
    }
    unlock_set();
    at_guard = saved;
    return found;
}

/* ---- fork ------------------------------------------------------------------------- */

static void fork_prepare(void) { lock_set(); }
static void fork_parent(void) { unlock_set(); }

static void fork_child(void)
{
    unlock_set();
    rng = 0;   /* the child draws a new seed: see the top */
}

void at_sample_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    /* Over glibc's allocator a picked block carries a header, and free()
     * reads that instead of the bitmap (tag.c). */
    at_sampling = at_tag_possible() ? AT_SAMPLE_TAGGED : 1;
}
