/*
 * preload/hook/hooks.c: the interposed malloc family.
 *
 * Each hook calls the real allocator (found with dlsym(RTLD_NEXT)) and,
 * when tracing is on and this thread is not already inside the tracer,
 * records the event. Decisions:
 *
 * - Bootstrap: dlsym itself allocates (dlerror state) before the real
 *   functions are known. Those requests are served from a static arena;
 *   arena memory never reaches libc: free of it is a no-op, realloc of it
 *   copies out.
 * - Reentrancy: the thread-local at_guard (initial-exec TLS, so reading it
 *   never allocates) is held while the tracer runs; anything allocated
 *   meanwhile - by the tracer, the loader, a signal handler that interrupts
 *   us - goes straight to libc, untraced. A signal handler can therefore
 *   never wait on a lock its own thread holds. The one exception, inside
 *   unw_backtrace, is explained at enter().
 * - errno: each hook leaves the program's errno as the real allocator
 *   left it (ENOMEM on failure still reaches the caller); what the tracer
 *   does around the call (unwinding, writes, the start) is undone.
 * - The first allocation of the process starts the tracer (lifecycle.c).
 * - A release is recorded (and so numbered and placed in the file) before
 *   the memory goes back to libc; an allocation after libc returned it.
 *   Together that makes index order the true order even when another
 *   thread receives the same address at once. Leaks mode with the keeper
 *   (handoff.c) takes a release's order key at that point instead and
 *   hands the record to the keeper.
 * - Sampling (sample.c): each exported function first asks
 *   at_sample_skip(), one thread-local subtraction and a branch that is
 *   always taken the same way when sampling is off; a call not picked goes
 *   straight to libc. A picked block carries a header (tag.c), so a
 *   release reads the word below its block (glibc's next read anyway) and
 *   is recorded only when the header says picked; over another allocator
 *   the picked set's bitmap (sample.c) answers instead. The
 *   exported functions are small wrappers for that reason, at the end of
 *   the file; the traced bodies are out of line (see there).
 */
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer.h"

/* ---- bootstrap arena ----------------------------------------------------- */

#define ARENA_SIZE (256 * 1024)
static _Alignas(64) char arena[ARENA_SIZE];
static atomic_size_t arena_used;

static int in_arena(const void *p)
{
    return (const char *)p >= arena && (const char *)p < arena + ARENA_SIZE;
}

/* Each arena block is preceded by its size, so realloc can copy it out. */
static void *arena_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    for (;;) {
        size_t used = atomic_load(&arena_used);
        size_t start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
        if (start + n > ARENA_SIZE || start + n < start)
            return NULL;
        if (atomic_compare_exchange_weak(&arena_used, &used, start + n)) {
            /* The top bit: free() with picked blocks tagged sends
             * the block to its slow path, which knows the arena. */
            uint64_t word = (uint64_t)n | AT_TAG_BIT;
            memcpy(arena + start - sizeof word, &word, sizeof word);
            return arena + start;   /* static storage: already zero */
        }
    }
}

static size_t arena_size(const void *p)
{
    uint64_t word;
    memcpy(&word, (const char *)p - sizeof word, sizeof word);
    return (size_t)(word & ~AT_TAG_BIT);
}

static inline int ready(void)
{
    if (__builtin_expect(__atomic_load_n(&at_real.free, __ATOMIC_ACQUIRE) != NULL, 1))
        return 1;
    at_resolve_real();
    return at_real.free != NULL;
}

/* Whether picked blocks carry a header (tag.c): a traced allocation with
 * sampling on is a picked one, and is made with its header. */
static inline int tagging(void)
{
#ifdef AT_ATTACH_BUILD
    return 0;
#else
    return at_sampling == AT_SAMPLE_TAGGED;
#endif
}

/* The rare paths of enter(): the start-up's probe, the first allocation. */
static __attribute__((noinline)) int enter_slow(int g)
{
    if (g == AT_GUARD_PROBE) {   /* at_hooks_shadowed's call reached us */
        at_guard = AT_GUARD_PROBE_SEEN;
        return 0;
    }
    /* The first allocation of the process starts the tracer, and is
     * traced (lifecycle.c); not while the loader is changing the list of
     * objects (inside a dlopen): starting loads libunwind. */
    if (g == 0 && at_state == AT_STATE_UNINIT && _r_debug.r_state == RT_CONSISTENT) {
        int e = errno;
        at_start();
        errno = e;
        return at_state == AT_STATE_ACTIVE && at_enabled;
    }
    return 0;
}

/*
 * Whether this call is to be traced; on yes the guard is taken and the
 * frame depth to use is returned through *depth. Guard values: 0 = not in
 * the tracer, 1 = in the tracer (pass through), AT_GUARD_UNWINDING = inside
 * unw_backtrace. An allocation made there is the tracer's own: the
 * loader's lazy allocation of libunwind's thread-local block (16 bytes),
 * the first time a thread unwinds. It passes untraced in both modes. Full
 * mode once recorded it, without frames, so that its release paired with
 * it; but glibc keeps a finished thread's stack, and that block with it,
 * for the next thread, so the release rarely comes, and every threaded
 * program showed one 16-byte "leak" with no stack per thread. A release
 * that does come (pthread_create reusing a cached stack) is one of a block
 * the trace does not know, which readers ignore (TEXT_FORMAT.md).
 */
static inline int enter(int *saved, int *depth)
{
    int g = at_guard;
    if (__builtin_expect(g == 1 || at_state != AT_STATE_ACTIVE || !at_enabled, 0) &&
        !enter_slow(g))
        return 0;
    if (g)
        return 0;
    *saved = g;
    *depth = at_cfg.depth;
    at_guard = 1;
    return 1;
}

/* Releases are followed even while tracing is switched off in leaks mode,
 * so blocks allocated while on and freed while off are not reported. */
static inline int enter_release(int *saved, int *depth)
{
    int g = at_guard;
    if (__builtin_expect(g == 1 || at_state != AT_STATE_ACTIVE, 0))
        return 0;
    if (!at_enabled && !at_cfg.leaks_mode)
        return 0;
    if (g)   /* inside unwinding: the tracer's own (see enter) */
        return 0;
    *saved = g;
    *depth = at_cfg.depth;
    at_guard = 1;
    return 1;
}

static inline void leave(int saved) { at_guard = saved; }

/* ---- recording ----------------------------------------------------------- */

/* Whether a leaks-mode allocation reads the clock: not over an invariant
 * TSC, whose order key carries the time (clock.c). Full mode reads a
 * stamp instead, made a time off the hot path. */
static inline int leaks_reads_clock(void)
{
    return at_cfg.timestamps && !at_clock_tsc();
}

/* Full mode's interned backtrace of an event. sites.c returns NULL only
 * when it cannot map memory for a new site: the record then goes out
 * without frames, and one line says so. */
static const struct at_stack *full_site(const struct at_event *e)
{
    const struct at_stack *st = at_site_intern(e);
    static atomic_int warned;
    if (__builtin_expect(!st, 0) && !atomic_exchange(&warned, 1))
        at_warn("out of memory for backtraces: ",
                "records from new call sites are written without frames", "");
    return st;
}

/* Inlined into each hook, like at_unwind: a frame less for libunwind to
 * step through on every allocation. */
static inline __attribute__((always_inline)) void record_alloc(enum at_fn fn, uint64_t size,
                                                              void *p, uint64_t alignment,
                                                              int depth)
{
    void *raw[depth + AT_SKIP_MAX], **frames;
    struct at_event e = {
        .fn = fn, .size = size, .id = (uintptr_t)p, .alignment = alignment,
        .ctx = at_ctx_mask,
    };
    int keeper = at_cfg.leaks_mode && at_handoff_on;
    if (at_cfg.leaks_mode && !keeper)
        at_shadow_prefetch((uintptr_t)p);
    e.nframes = at_unwind_raw(raw, depth, &frames);   /* no copy: the frames stay in raw */
    e.frames = frames;
    if (keeper) {
        at_handoff_alloc(&e, at_order_key());   /* applied by the keeper (handoff.c) */
    } else if (at_cfg.leaks_mode) {
        if (leaks_reads_clock())
            e.time_us = at_now_us();
        at_live_add(&e, at_order_key());   /* checks the maps on a new site */
    } else {
        if (at_cfg.timestamps)
            e.stamp = at_clock_stamp();   /* made a time by the writer */
        at_commit_event(&e, full_site(&e));   /* checks the maps on a new site */
        if (at_sampling)
            at_sample_add((uintptr_t)p);   /* its release is recorded */
    }
}

/* The program's errno is what the real allocator left: whatever the tracer
 * does after it (unwinding, mincore, writes, mmap) is undone. */
static inline __attribute__((always_inline)) void record_alloc_keep_errno(enum at_fn fn,
                                                                         uint64_t size, void *p,
                                                                         uint64_t alignment,
                                                                         int depth)
{
    int e = errno;
    record_alloc(fn, size, p, alignment, depth);
    errno = e;
}

/* Full mode's release record (leaks mode's is free()'s own). */
static __attribute__((noinline)) void record_release(enum at_fn fn, void *p, int depth)
{
    if (!at_cfg.free_backtraces)
        depth = 0;
    void *frames[depth + 1];
    struct at_event e = {
        .fn = fn, .release = 1, .id = (uintptr_t)p, .ctx = at_ctx_mask, .frames = frames,
    };
    const struct at_stack *st = NULL;
    if (depth) {
        e.nframes = at_unwind(frames, depth);
        st = full_site(&e);
    }
    if (at_cfg.timestamps)
        e.stamp = at_clock_stamp();
    at_commit_event(&e, st);
}

/* The program's errno through a traced realloc: set back to its value at
 * the call just before the real realloc runs (the tracer has unwound and
 * formatted by then), and what the real realloc left is what the caller
 * gets at the end. */
static __thread int realloc_errno AT_TLS;

static void *op_realloc(void *p, size_t n, size_t m)
{
    (void)m;
    errno = realloc_errno;
    void *q = at_real.realloc(p, n);
    realloc_errno = errno;
    return q;
}

static void *op_reallocarray(void *p, size_t n, size_t m)
{
    errno = realloc_errno;
    void *q = at_real.reallocarray(p, n, m);
    realloc_errno = errno;
    return q;
}

/* The real resize with sampling on, errno as op_realloc's: with picked
 * blocks tagged, the header follows the block's layout (tag.c). */
static void *resize_sampled(enum at_fn fn, void *p, size_t n, size_t m, uint64_t total,
                            int tag_new)
{
    if (!tagging() || (!tag_new && !at_tagged(p)))
        return fn == AT_REALLOC ? op_realloc(p, n, m) : op_reallocarray(p, n, m);
    errno = realloc_errno;
    void *q = at_tag_resize(p, total, tag_new);
    realloc_errno = errno;
    return q;
}

/* Both blocks picked, as record_realloc's op. */
static void *op_realloc_tagged(void *p, size_t n, size_t m)
{
    (void)m;
    return resize_sampled(AT_REALLOC, p, n, 0, n, 1);
}

static void *op_reallocarray_tagged(void *p, size_t n, size_t m)
{
    return resize_sampled(AT_REALLOCARRAY, p, n, m, (uint64_t)n * m, 1);   /* checked */
}

/* realloc(p, n) with p != NULL, traced: a release, then an allocation. */
static __attribute__((noinline)) void *record_realloc(enum at_fn fn, void *p, size_t n,
                                                      size_t m, uint64_t total, int depth)
{
    void *(*op)(void *, size_t, size_t) =
        fn == AT_REALLOC ? (tagging() ? op_realloc_tagged : op_realloc)
                         : (tagging() ? op_reallocarray_tagged : op_reallocarray);
    void *frames[depth + 1];
    int nframes = at_unwind(frames, depth);
    uint64_t now = 0, stamp = 0;   /* leaks mode's time, full mode's stamp */
    if (at_cfg.leaks_mode) {
        if (leaks_reads_clock())
            now = at_now_us();
    } else if (at_cfg.timestamps) {
        stamp = at_clock_stamp();
    }
    struct at_event rel = {
        .fn = fn, .release = 1, .id = (uintptr_t)p, .ctx = at_ctx_mask, .stamp = stamp,
        .frames = frames, .nframes = at_cfg.free_backtraces ? nframes : 0,
    };
    struct at_event alloc = {
        .fn = fn, .size = total, .ctx = at_ctx_mask, .time_us = now, .stamp = stamp,
        .frames = frames, .nframes = nframes,
    };
    if (at_cfg.leaks_mode && at_handoff_on) {
        /* The release's key before the real realloc, its record after it
         * and only when p was let go (handoff.c). */
        uint64_t key = at_order_key();
        void *q = op(p, n, m);
        if (!q && total != 0)
            return NULL;
        at_handoff_release((uintptr_t)p, key);
        if (q) {
            alloc.id = (uintptr_t)q;
            at_handoff_alloc(&alloc, at_order_key());
        }
        return q;
    }
    if (at_cfg.leaks_mode) {
        struct at_live_block saved;
        int was_live = at_live_remove((uintptr_t)p, &saved);
        void *q = op(p, n, m);
        if (!q && total != 0) {          /* failed: p is still the caller's */
            if (was_live)
                at_live_restore(&saved);
            return NULL;
        }
        if (q) {
            alloc.id = (uintptr_t)q;
            at_live_add(&alloc, at_order_key());
        }
        return q;
    }
    /* The release's backtrace, when it has one, is the allocation's; its
     * interning checks the maps. */
    return at_commit_realloc(&rel, &alloc, full_site(&alloc), p, n, m, op);
}

/*
 * realloc(p, n), p != NULL, with sampling on. The old block was picked or
 * not (its release is recorded only if it was), and the new one is picked
 * (pick) or not by the countdown, like any allocation of its size:
 *   both: the ordinary pair of records;
 *   the old only: its release, recorded before libc gets it back (should
 *     realloc then fail, the trace has let go of a block the program keeps:
 *     its bytes go out of the estimate early, nothing worse);
 *   the new only: an allocation, recorded after libc returned it;
 *   neither: libc's realloc and nothing else.
 */
static __attribute__((noinline)) void *sampled_realloc(enum at_fn fn, void *p, size_t n,
                                                       size_t m, uint64_t total, int pick)
{
    int was = at_sample_take((uintptr_t)p);
    int saved, depth;
    realloc_errno = errno;
    if ((!was && !pick) || !enter_release(&saved, &depth)) {
        void *q = resize_sampled(fn, p, n, m, total, 0);
        errno = realloc_errno;
        return q;
    }
    void *q;
    if (was && pick) {
        q = record_realloc(fn, p, n, m, total, depth);
        if (q)
            at_sample_add((uintptr_t)q);
        else if (total != 0)
            at_sample_add((uintptr_t)p);   /* failed: p is still the caller's, and picked */
    } else if (was) {
        record_release(fn, p, depth);
        q = resize_sampled(fn, p, n, m, total, 0);
    } else {
        q = resize_sampled(fn, p, n, m, total, 1);
        if (q)
            record_alloc(fn, total, q, 0, depth);   /* and adds q */
    }
    errno = realloc_errno;
    leave(saved);
    return q;
}

/* ---- the interposed functions --------------------------------------------- */

/*
 * The tracer's own blocks (see enter: libunwind's thread-local blocks, one
 * per thread that unwound) are remembered, so that their releases pass
 * untraced too: glibc frees them in whichever thread reclaims the dead
 * thread's stack. A small table, with no lock: a block goes to one of 16
 * slots after its hash (CAS into an empty one); a release looks at those
 * 16 (two cache lines) only while the table holds anything. A block that
 * finds no free slot (over a thousand threads alive at once) is
 * forgotten: its release then shows in the trace as one of an unknown
 * block, which readers ignore.
 */
#define OWN_SLOTS 1024
#define OWN_PROBE 16
static void *own_blocks[OWN_SLOTS];
static int own_count;

static inline size_t own_home(const void *p)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 54) & (OWN_SLOTS - OWN_PROBE);
}

static void own_add(void *p)
{
    if (!p)
        return;
    void **slot = own_blocks + own_home(p);
    for (int i = 0; i < OWN_PROBE; i++) {
        void *empty = NULL;
        if (__atomic_compare_exchange_n(&slot[i], &empty, p, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
            __atomic_add_fetch(&own_count, 1, __ATOMIC_RELEASE);
            return;
        }
    }
}

/* Whether p is one of the tracer's own blocks; forgets it if so. */
static inline int own_take(void *p)
{
    if (__builtin_expect(__atomic_load_n(&own_count, __ATOMIC_ACQUIRE) == 0, 1))
        return 0;
    void **slot = own_blocks + own_home(p);
    for (int i = 0; i < OWN_PROBE; i++) {
        void *seen = p;
        if (__atomic_load_n(&slot[i], __ATOMIC_RELAXED) == p &&
            __atomic_compare_exchange_n(&slot[i], &seen, NULL, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            __atomic_sub_fetch(&own_count, 1, __ATOMIC_RELEASE);
            return 1;
        }
    }
    return 0;
}

static __attribute__((noinline)) void *traced_malloc(size_t n)
{
    if (!ready())
        return arena_alloc(n, 16);
    int saved, depth;
    if (!enter(&saved, &depth)) {
        void *p = at_real.malloc(n);
        if (__builtin_expect(at_guard == AT_GUARD_UNWINDING, 0))
            own_add(p);
        return p;
    }
    void *p = tagging() ? at_tag_malloc(n) : at_real.malloc(n);
    if (p)
        record_alloc_keep_errno(AT_MALLOC, n, p, 0, depth);
    leave(saved);
    return p;
}

static __attribute__((noinline)) void *traced_calloc(size_t n, size_t m)
{
    if (!ready()) {
        size_t total;
        return __builtin_mul_overflow(n, m, &total) ? NULL : arena_alloc(total, 16);
    }
    int saved, depth;
    if (!enter(&saved, &depth))
        return at_real.calloc(n, m);
    void *p = tagging() ? at_tag_calloc(n, m) : at_real.calloc(n, m);
    if (p)
        record_alloc_keep_errno(AT_CALLOC, (uint64_t)n * m, p, 0, depth);
    leave(saved);
    return p;
}

/* A release with picked blocks tagged (tag.c), p not the arena's: the
 * wrapper found the header's bit; recorded if p is still in the picked
 * set, and given back to glibc without its header either way. */
static void release_tagged(void *p)
{
    if (!at_tag_is_picked(p)) {   /* not a header of ours: glibc's to judge */
        at_real.free(p);
        return;
    }
    int saved, depth;
    if (at_sample_take((uintptr_t)p) && enter_release(&saved, &depth)) {
        int e = errno;
        record_release(AT_FREE, p, depth);
        errno = e;
        leave(saved);
    }
    at_tag_free(p);
}

static __attribute__((noinline)) void traced_free(void *p)
{
    if (!p || in_arena(p))
        return;
    if (!ready())
        return;
    if (tagging()) {
        release_tagged(p);
        return;
    }
    if (own_take(p)) {
        at_real.free(p);
        return;
    }
    if (__builtin_expect(at_sampling, 0) && !at_sample_take((uintptr_t)p)) {
        at_real.free(p);   /* not picked (the slow path of the lookup said so) */
        return;
    }
    int saved, depth;
    if (enter_release(&saved, &depth)) {
        if (at_cfg.leaks_mode) {
            /* A record in this thread's ring or a store in the shadow, no
             * system call: errno stays. The key comes before libc gets p. */
            if (at_handoff_on)
                at_handoff_release((uintptr_t)p, at_order_key());
            else
                at_live_remove((uintptr_t)p, NULL);
        } else {
            int e = errno;
            record_release(AT_FREE, p, depth);
            errno = e;
        }
        leave(saved);
    }
    at_real.free(p);
}

/* Arena blocks are copied out into real memory; the copy is a new block. */
static void *realloc_from_arena(void *p, size_t total)
{
    void *q = malloc(total);
    if (q) {
        size_t old = arena_size(p);
        memcpy(q, p, old < total ? old : total);
    }
    return q;
}

static __attribute__((noinline)) void *traced_realloc(void *p, size_t n)
{
    if (!ready()) {
        void *q = arena_alloc(n, 16);
        if (q && p)
            memcpy(q, p, arena_size(p) < n ? arena_size(p) : n);
        return q;
    }
    if (in_arena(p))
        return realloc_from_arena(p, n);
    int saved, depth;
    if (!p) {
        if (!enter(&saved, &depth))
            return at_real.realloc(NULL, n);
        void *q = tagging() ? at_tag_malloc(n) : at_real.realloc(NULL, n);
        if (q)
            record_alloc_keep_errno(AT_REALLOC, n, q, 0, depth);
        leave(saved);
        return q;
    }
    if (!enter_release(&saved, &depth))
        return at_real.realloc(p, n);
    realloc_errno = errno;
    void *q = record_realloc(AT_REALLOC, p, n, 0, n, depth);
    errno = realloc_errno;
    leave(saved);
    return q;
}

static __attribute__((noinline)) void *traced_reallocarray(void *p, size_t n, size_t m)
{
    size_t total;
    if (__builtin_mul_overflow(n, m, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!ready() || in_arena(p))
        return realloc(p, total);
    int saved, depth;
    if (!p) {
        if (!enter(&saved, &depth))
            return at_real.reallocarray(NULL, n, m);
        void *q = tagging() ? at_tag_malloc(total) : at_real.reallocarray(NULL, n, m);
        if (q)
            record_alloc_keep_errno(AT_REALLOCARRAY, total, q, 0, depth);
        leave(saved);
        return q;
    }
    if (!enter_release(&saved, &depth))
        return at_real.reallocarray(p, n, m);
    realloc_errno = errno;
    void *q = record_realloc(AT_REALLOCARRAY, p, n, m, total, depth);
    errno = realloc_errno;
    leave(saved);
    return q;
}

static __attribute__((noinline)) int traced_posix_memalign(void **out, size_t align, size_t n)
{
    if (!ready()) {
        void *p = arena_alloc(n, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    int saved, depth;
    if (!enter(&saved, &depth))
        return at_real.posix_memalign(out, align, n);
    int rc = tagging() ? at_tag_posix_memalign(out, align, n)
                       : at_real.posix_memalign(out, align, n);
    if (rc == 0)
        record_alloc_keep_errno(AT_POSIX_MEMALIGN, n, *out, align, depth);
    leave(saved);
    return rc;
}

static __attribute__((noinline)) void *traced_aligned_alloc(size_t align, size_t n)
{
    if (!ready())
        return arena_alloc(n, align);
    int saved, depth;
    if (!enter(&saved, &depth))
        return at_real.aligned_alloc(align, n);
    void *p = tagging() ? at_tag_aligned(at_real.aligned_alloc, align, n)
                        : at_real.aligned_alloc(align, n);
    if (p)
        record_alloc_keep_errno(AT_ALIGNED_ALLOC, n, p, align, depth);
    leave(saved);
    return p;
}

static __attribute__((noinline)) void *traced_memalign(size_t align, size_t n)
{
    if (!ready())
        return arena_alloc(n, align);
    int saved, depth;
    if (!enter(&saved, &depth))
        return at_real.memalign(align, n);
    void *p = tagging() ? at_tag_aligned(at_real.memalign, align, n)
                        : at_real.memalign(align, n);
    if (p)
        record_alloc_keep_errno(AT_MEMALIGN, n, p, align, depth);
    leave(saved);
    return p;
}

static __attribute__((noinline)) void *traced_valloc(size_t n)
{
    if (!ready())
        return arena_alloc(n, 4096);
    int saved, depth;
    if (!enter(&saved, &depth))
        return at_real.valloc(n);
    void *p = tagging() ? at_tag_page_aligned(n, 0) : at_real.valloc(n);
    if (p)
        record_alloc_keep_errno(AT_VALLOC, n, p, 0, depth);
    leave(saved);
    return p;
}

static __attribute__((noinline)) void *traced_pvalloc(size_t n)
{
    if (!ready())
        return arena_alloc(n, 4096);
    int saved, depth;
    if (!enter(&saved, &depth))
        return at_real.pvalloc(n);
    void *p = tagging() ? at_tag_page_aligned(n, 1) : at_real.pvalloc(n);
    if (p)
        record_alloc_keep_errno(AT_PVALLOC, n, p, 0, depth);
    leave(saved);
    return p;
}

/*
 * The exported functions. With sampling on, a call that is not picked goes
 * to libc from here: each is small, so that call pays no more than the
 * countdown (or, for a release, the filter's load) and a jump. The traced
 * bodies above are kept out of line because their frames are large (the
 * backtrace's array, the saved registers of the recording), and a
 * compiler sets up a function's whole frame before its first branch: the
 * calls sampling lets through paid that on every call (cc1plus at 512k
 * ran 1.07-1.19 of plain before). Full mode pays a load of at_sampling
 * and a tail jump more; the frame between is skipped by the unwinder as
 * any of the tracer's own (at_unwind_raw).
 */
AT_EXPORT void *malloc(size_t n)
{
    if (at_sample_skip(n))
        return at_real.malloc(n);
    return traced_malloc(n);
}

AT_EXPORT void *calloc(size_t n, size_t m)
{
    if (at_sample_skip((uint64_t)n * m))
        return at_real.calloc(n, m);
    return traced_calloc(n, m);
}

AT_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (at_sample_skip(n))
        return at_real.posix_memalign(out, align, n);
    return traced_posix_memalign(out, align, n);
}

AT_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    if (at_sample_skip(n))
        return at_real.aligned_alloc(align, n);
    return traced_aligned_alloc(align, n);
}

AT_EXPORT void *memalign(size_t align, size_t n)
{
    if (at_sample_skip(n))
        return at_real.memalign(align, n);
    return traced_memalign(align, n);
}

AT_EXPORT void *valloc(size_t n)
{
    if (at_sample_skip(n))
        return at_real.valloc(n);
    return traced_valloc(n);
}

AT_EXPORT void *pvalloc(size_t n)
{
    if (at_sample_skip(n))
        return at_real.pvalloc(n);
    return traced_pvalloc(n);
}

/* A release with sampling on that needs no look further: not one of the
 * bootstrap arena's, none of the tracer's own blocks outstanding, and the
 * filter's bit for its bucket clear (it was not picked). */
static inline int unpicked_release(void *p)
{
    if (tagging())   /* the word below p, which glibc's free reads next */
        return p && !at_tagged(p);
    return p && !in_arena(p) && !__atomic_load_n(&own_count, __ATOMIC_RELAXED) &&
           !at_sample_maybe((uintptr_t)p);
}

AT_EXPORT void free(void *p)
{
    if (__builtin_expect(at_sampling, 0) && unpicked_release(p)) {
        at_real.free(p);
        return;
    }
    traced_free(p);
}

/* realloc and reallocarray with sampling on: the countdown draws for the
 * new block here, once; a call whose old block was not picked and whose
 * new one is not goes straight to libc. */
static inline __attribute__((always_inline)) void *sampled_resize(enum at_fn fn, void *p,
                                                                  size_t n, size_t m,
                                                                  uint64_t total)
{
    int pick = !at_sample_skip(total);
    if (!p) {
        if (pick)
            return fn == AT_REALLOC ? traced_realloc(NULL, n) : traced_reallocarray(NULL, n, m);
        return fn == AT_REALLOC ? at_real.realloc(NULL, n) : at_real.reallocarray(NULL, n, m);
    }
    if (!pick && unpicked_release(p))
        return fn == AT_REALLOC ? at_real.realloc(p, n) : at_real.reallocarray(p, n, m);
    return sampled_realloc(fn, p, n, m, total, pick);
}

AT_EXPORT void *realloc(void *p, size_t n)
{
    if (__builtin_expect(at_sampling, 0) && !in_arena(p))
        return sampled_resize(AT_REALLOC, p, n, 0, n);
    return traced_realloc(p, n);
}

/* glibc's old alias of free (a compat symbol: only binaries linked long
 * ago call it), interposed so that their releases are seen too, and a
 * picked block never reaches glibc with its header. */
AT_EXPORT void cfree(void *p)
{
    free(p);
}

/* Interposed for picked blocks' headers (tag.c): the program sees its
 * block's usable size, not glibc's chunk's. */
AT_EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (in_arena(p))
        return arena_size(p);
    if (tagging() && at_tag_is_picked(p))
        return at_tag_usable(p);
    if (!ready() || !at_real.usable_size)
        return 0;
    return at_real.usable_size(p);
}

AT_EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
    size_t total;
    if (__builtin_expect(at_sampling, 0) && !in_arena(p) && !__builtin_mul_overflow(n, m, &total))
        return sampled_resize(AT_REALLOCARRAY, p, n, m, total);
    return traced_reallocarray(p, n, m);
}
