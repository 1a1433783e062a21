/*
 * bench/unwind_floor.c: the floor of leaks mode's overhead, for
 * bench/realworld's `floor` mode. A preload that does nothing but what
 * every tracer on libunwind must do: one unw_backtrace per allocation, of
 * the depth the tracer asks for (32 frames + 8 of its own).
 *
 * Decisions:
 * - The malloc family is forwarded to glibc's __libc_* entry points, not
 *   found with dlsym: dlsym allocates, and nothing here may cost what the
 *   tracer's own start-up does not.
 * - Releases pass straight through: leaks mode never unwinds them.
 *   valloc, pvalloc and reallocarray are not counted (rare).
 * - A thread-local guard: libunwind allocates the first time a thread
 *   unwinds, and that allocation must not unwind again.
 * - Linked against libunwind (the tracer loads it with dlopen; the call
 *   costs the same once resolved). It keeps libunwind's signal blocking,
 *   which the tracer skips, so the floor is a little above the tracer's
 *   own unwinding.
 * Not part of the product: built for `make bench` only.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <errno.h>
#include <stddef.h>

#define FRAMES 40

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);

static __thread int busy __attribute__((tls_model("initial-exec")));

static void unwind(void)
{
    if (busy)
        return;
    busy = 1;
    void *frames[FRAMES];
    unw_backtrace(frames, FRAMES);
    busy = 0;
}

#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    unwind();
    return p;
}

EXPORT void *calloc(size_t n, size_t m)
{
    void *p = __libc_calloc(n, m);
    unwind();
    return p;
}

EXPORT void *realloc(void *p, size_t n)
{
    void *q = __libc_realloc(p, n);
    unwind();
    return q;
}

EXPORT void free(void *p)
{
    __libc_free(p);
}

EXPORT void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    unwind();
    return p;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    unwind();
    *out = p;
    return 0;
}
