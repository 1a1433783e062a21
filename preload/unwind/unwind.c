/*
 * preload/unwind/unwind.c: backtraces with libunwind's local unwinder.
 *
 * libunwind is loaded with dlopen(RTLD_LOCAL) rather than linked: the
 * Debian libunwind.so.8 exports _Unwind_* and a weak backtrace(), and as a
 * dependency of a preloaded library it would sit in the global symbol scope
 * where it could take those symbols from libgcc_s / libc for a plugin
 * dlopen'ed later (a C++ exception unwound by the wrong unwinder). A local
 * handle keeps it out of the global scope; only unw_backtrace is used, via
 * dlsym on the handle. The static libunwind.a is not built -fPIC here, so
 * linking it in with --exclude-libs is not an option.
 *
 * unw_backtrace reports its own frame and ours first; those leading frames
 * (addresses inside this library or inside libunwind) are dropped, so frame
 * 0 is the code that called the allocation function.
 *
 * Short-lived threads: unw_backtrace's fast path keeps a cache per thread,
 * 256 KiB that libunwind maps and fills on the thread's first call and
 * unmaps at its exit: ~120 us a thread here, mostly page faults. Until
 * 2026-11 a thread's first 512 backtraces came from glibc's backtrace()
 * instead; but that costs ~1.7 us a call against ~0.15 us for libunwind's
 * fast path (14 frames), so it cost more than it saved past ~70 calls.
 * Now unwind_cache.c hands an exited thread's cache to the next thread,
 * already faulted in, and every thread uses libunwind from its first
 * backtrace (docs/benchmarks.md has the numbers). glibc's backtrace() is
 * left only for when libunwind cannot be loaded or its calls redirected.
 *
 * Forks and signals: unwind_locks.c. Memory checks: unwind_probe.c.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <string.h>

#include <libunwind.h>

#include "tracer.h"

uintptr_t at_self_lo, at_self_hi;
uintptr_t at_unw_lo, at_unw_hi;
int (*at_unw_backtrace)(void **, int);

struct range_query {
    uintptr_t base;
    uintptr_t lo, hi;
};

/* The executable segments of the object loaded at `base`. */
static int range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct range_query *q = data;
    if (info->dlpi_addr != q->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!q->lo || lo < q->lo)
            q->lo = lo;
        if (hi > q->hi)
            q->hi = hi;
    }
    return 1;
}

static void code_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
    Dl_info di;
    struct range_query q = { 0, 0, 0 };
    if (dladdr(addr, &di) && di.dli_fbase) {
        q.base = (uintptr_t)di.dli_fbase;
        dl_iterate_phdr(range_cb, &q);
        /* dli_fbase is the load bias only when the first segment is at 0. */
        if (!q.hi) {
            q.base = 0;
            dl_iterate_phdr(range_cb, &q);
        }
    }
    *lo = q.lo;
    *hi = q.hi;
}

/* Asks for per-thread caches of unwind rules, which take no lock. Debian's
 * build has no thread-local storage configured and silently keeps the
 * global cache and its mutex, so fork safety comes from unwind_locks.c
 * instead; the request stays for a libunwind built with it.
 * (UNW_CACHE_PER_THREAD is 2 in libunwind.h; set through dlsym because
 * libunwind is not linked.) */
static void set_per_thread_caching(void *h)
{
    int (*set_policy)(void *, int) = (int (*)(void *, int))dlsym(h, "_ULx86_64_set_caching_policy");
    void **local_as = dlsym(h, "_ULx86_64_local_addr_space");
    if (set_policy && local_as)
        set_policy(*local_as, UNW_CACHE_PER_THREAD);
}

/*
 * The C library's own dlopen, past any other interposer's. The tracer may
 * start inside another tracer's malloc (heaptrack's preload first in
 * LD_PRELOAD: its malloc holds its lock and calls ours), and heaptrack's
 * dlopen takes that same lock: loading libunwind through it never
 * returned (issue 27). Asked by version (dlvsym): a versioned definition
 * wins over an interposer's unversioned one, so no interposer sees the
 * call; the other tracer misses libunwind's load, which allocates nothing
 * of the program's. Falls back to the dlopen in scope.
 */
typedef void *(*dlopen_fn)(const char *, int);

static dlopen_fn libc_dlopen(void)
{
    static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5" };
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++) {
        dlopen_fn fn = (dlopen_fn)dlvsym(RTLD_DEFAULT, "dlopen", versions[i]);
        if (fn)
            return fn;
    }
    return dlopen;
}

/* Whether the program has libunwind loaded already, by the loaded objects'
 * names: a dlopen with RTLD_NOLOAD would search the paths and open the
 * files to compare them (twice, with ld.so.cache mapped and unmapped each
 * time: 10 of the ~40 system calls the tracer adds at start). */
static int named_libunwind(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    return base && strncmp(base, "libunwind.so", 12) == 0;
}

static int load_libunwind(void)
{
    dlopen_fn open_lib = libc_dlopen();
    int was_loaded = dl_iterate_phdr(named_libunwind, NULL) != 0;
    void *h = open_lib("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = open_lib("libunwind.so", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    int (*fn)(void **, int) = (int (*)(void **, int))dlsym(h, "unw_backtrace");
    if (!fn)
        return -1;
    at_unwind_locks_init(was_loaded);
    at_unwind_cache_init(was_loaded);
    /* Before libunwind's first use, which makes its validation "pipe". */
    if (at_unwind_probe_install(h) != 0)
        return -1;
    code_range((const void *)fn, &at_unw_lo, &at_unw_hi);
    set_per_thread_caching(h);
    /* The main thread's first unw_backtrace allocates libunwind's
     * thread-local block: now, untraced. Not when sampling: a sampled
     * process may never pick a block (most short ones do not, at 512k),
     * and that first call maps and fills libunwind's 256 KiB cache (64
     * page faults) and validates its way up the stack (~40 system calls),
     * about half of what a sampled process paid at start over the
     * do-nothing preload. The first pick does it instead, inside the
     * tracer, where the thread-local block's allocation is untraced as
     * it is on every other thread's first backtrace. */
    if (!at_cfg.sample) {
        void *warm[4];
        fn(warm, 4);
    }
    at_unw_backtrace = fn;
    return 0;
}

int at_unwind_init(void)
{
    code_range((const void *)at_unwind_init, &at_self_lo, &at_self_hi);
    if (at_cfg.depth == 0 || load_libunwind() == 0)
        return 0;
    /* Every backtrace will come from glibc's backtrace(), which loads
     * libgcc_s on its first call: now, untraced, rather than inside the
     * first record. */
    void *warm[4];
    backtrace(warm, 4);
    return -1;
}

/* Without libunwind (see the top comment). */
int at_unwind_glibc(void **raw, int n)
{
    return backtrace(raw, n);
}
