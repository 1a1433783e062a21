/*
 * preload/hook/real.c: the bottom layer of the tracer: the real allocator
 * (found with dlsym(RTLD_NEXT)) and the tracing state every file reads
 * (on/off, this thread's guard, its context bits).
 *
 * They live here rather than in hooks.c so that the files below the hooks
 * (live blocks, sites, reach, the writer, outfd) can allocate with the
 * real allocator and turn tracing off without calling up into the hooks:
 * calls go down only (docs/layout.md).
 */
#include <dlfcn.h>
#include <stdatomic.h>

#include "tracer.h"

struct at_real at_real;
volatile int at_state = AT_STATE_UNINIT;
volatile int at_enabled = 1;
__thread int at_guard AT_TLS;
__thread uint32_t at_ctx_mask AT_TLS;

static atomic_int resolving;

static void *next_symbol(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

void at_resolve_real(void)
{
    at_resolve_real_with(next_symbol);
}

void at_resolve_real_with(void *(*look)(const char *name))
{
    if (at_real.free)
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&resolving, &expected, 1))
        return;   /* dlsym is allocating: the caller falls back to the arena */
    struct at_real r;
    r.malloc = look("malloc");
    r.calloc = look("calloc");
    r.realloc = look("realloc");
    r.reallocarray = look("reallocarray");
    r.posix_memalign = look("posix_memalign");
    r.aligned_alloc = look("aligned_alloc");
    r.memalign = look("memalign");
    r.valloc = look("valloc");
    r.pvalloc = look("pvalloc");
    r.free = look("free");
    /* For reach.c's scan at exit, which must not call dlsym then: dlsym
     * resets the thread's dlerror state, freeing a string the program
     * still points to. */
    r.usable_size = look("malloc_usable_size");
    /* free last: it is the "resolved" flag. */
    at_real.malloc = r.malloc;
    at_real.calloc = r.calloc;
    at_real.realloc = r.realloc;
    at_real.reallocarray = r.reallocarray;
    at_real.posix_memalign = r.posix_memalign;
    at_real.aligned_alloc = r.aligned_alloc;
    at_real.memalign = r.memalign;
    at_real.valloc = r.valloc;
    at_real.pvalloc = r.pvalloc;
    at_real.usable_size = r.usable_size;
    __atomic_store_n(&at_real.free, r.free, __ATOMIC_RELEASE);
    atomic_store(&resolving, 0);
}
